"""What run.py uses: loading a pipeline YAML with clear errors, running queries, evaluating, printing."""
