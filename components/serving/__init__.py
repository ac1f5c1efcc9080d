"""Serve a spanqa pipeline YAML with Hayhooks: REST, OpenAI-compatible chat, MCP and an answer page.

``python run.py pipelines/extractive.yaml --serve`` (README, "Serving (Hayhooks)"):

- ``wrapper.py`` — the Hayhooks ``PipelineWrapper`` around one warmed ``QueryRunner``;
- ``app.py`` — the Hayhooks app with that wrapper deployed, readiness, limits, the page and MCP;
- ``limits.py`` — pure checks of a request and of a failure, each giving an HTTP status and a one-line reason;
- ``page/`` — the answer page (HTML, JS, CSS; no external assets).
"""
