"""run.py on bad input: one clear paragraph naming the file or component, exit code 2, no traceback."""

import json
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args, stdin=None, cwd=ROOT):
    proc = subprocess.run([sys.executable, str(ROOT / "run.py"), *args], input=stdin, capture_output=True, text=True,
                          cwd=cwd, timeout=600)
    return proc.returncode, proc.stdout, proc.stderr


def assert_clean_error(code, err, *needles):
    assert code == 2, err
    assert "Traceback" not in err
    flat = " ".join(err.split())
    for n in needles:
        assert n in flat, flat


def write_pipeline(tmp_path, mutate):
    import yaml

    spec = yaml.safe_load((ROOT / "pipelines/retrieval.yaml").read_text())
    mutate(spec)
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_missing_data_dir(tmp_path):
    code, _, err = run_cli("pipelines/retrieval.yaml", "--data", str(tmp_path / "nope"), "-q", "x")
    assert_clean_error(code, err, "does not exist", "nope", "--data")


def test_empty_data_dir(tmp_path):
    code, _, err = run_cli("pipelines/retrieval.yaml", "--data", str(tmp_path), "-q", "x")
    assert_clean_error(code, err, "holds no usable documents")


def test_non_utf8_binary_and_empty_files_are_skipped_and_listed(tmp_path):
    data = tmp_path / "kb"
    data.mkdir()
    (data / "good.md").write_text("Good document about ERR-4012 pairing.\n")
    (data / "latin1.txt").write_bytes("caf\xe9 au lait".encode("latin-1"))
    (data / "blob.md").write_bytes(b"\x00\x01\x02binary")
    (data / "empty.md").write_text("---\ntitle: Empty\n---\n\n")
    (data / "image.png").write_bytes(b"\x89PNG")
    code, out, err = run_cli("pipelines/retrieval.yaml", "--data", str(data), "--cache-dir", str(tmp_path / "c"),
                             "-q", "ERR-4012", "--json")
    assert code == 0, err
    flat = " ".join(err.split())
    assert "skipped 4 of 5 file(s)" in flat
    for name, why in [("latin1.txt", "not UTF-8"), ("blob.md", "binary"), ("empty.md", "empty"), ("image.png", "unsupported")]:
        assert name in flat and why in flat
    result = json.loads(out.splitlines()[0])
    assert result["documents"][0]["doc_id"] == "good.md"
    assert set(result["documents"][0]) == {"doc_id", "chunk_id", "char_start", "char_end", "score", "text"}


def test_unknown_component_type(tmp_path):
    path = write_pipeline(tmp_path, lambda s: s["components"]["joiner"].update(type="components.joiners.nope.Nope"))
    code, _, err = run_cli(str(path), "-q", "x")
    assert_clean_error(code, err, "component 'joiner'", "unknown type 'components.joiners.nope.Nope'")


def test_unknown_parameter(tmp_path):
    path = write_pipeline(tmp_path, lambda s: s["components"]["retriever"]["init_parameters"].update(top_kk=3))
    code, _, err = run_cli(str(path), "-q", "x")
    assert_clean_error(code, err, "component 'retriever'", "unknown parameter(s) ['top_kk']", "Valid parameters:")


def test_unknown_nested_store_parameter(tmp_path):
    def mutate(s):
        s["components"]["retriever"]["init_parameters"]["document_store"]["init_parameters"]["chunk_size"] = 3

    code, _, err = run_cli(str(write_pipeline(tmp_path, mutate)), "-q", "x")
    assert_clean_error(code, err, "component 'retriever.document_store'", "['chunk_size']")


def test_missing_pipeline_file_and_bad_yaml(tmp_path):
    code, _, err = run_cli(str(tmp_path / "missing.yaml"), "-q", "x")
    assert_clean_error(code, err, "does not exist")
    bad = tmp_path / "bad.yaml"
    bad.write_text("components: [unclosed\n")
    code, _, err = run_cli(str(bad), "-q", "x")
    assert_clean_error(code, err, "not valid YAML")


def test_questions_from_stdin(tmp_path):
    code, out, err = run_cli("pipelines/retrieval.yaml", "--cache-dir", str(tmp_path / "c"), "--json", "--top-k", "2",
                             stdin="What does ERR-4012 mean?\n\nHow many bulbs does the Hub Mini support?\n")
    assert code == 0, err
    results = [json.loads(line) for line in out.splitlines()]
    assert [r["query"] for r in results] == ["What does ERR-4012 mean?", "How many bulbs does the Hub Mini support?"]
    assert all(len(r["documents"]) == 2 for r in results)


def test_missing_model_without_fallback_is_a_clear_error(tmp_path):
    import yaml

    spec = yaml.safe_load((ROOT / "pipelines/extractive.yaml").read_text())
    spec["components"]["ranker"]["init_parameters"]["fallback"] = None  # no named fallback: must fail loudly
    path = tmp_path / "no-fallback.yaml"
    path.write_text(yaml.safe_dump(spec))
    code, _, err = run_cli(str(path), "--cache-dir", str(tmp_path / "c"), "-q", "x")
    assert_clean_error(code, err, "Model 'cross-encoder/ms-marco-MiniLM-L-6-v2'", "CrossEncoderRanker",
                       "HF_HOME", "name an offline fallback")
