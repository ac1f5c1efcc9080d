"""The Python examples of docs/serving.md (linked from the README's "Serving") run as written: the YAML embedded in a Haystack app with a
stock component after it, and the stdlib client against the real server."""

from __future__ import annotations

import contextlib
import io
import re

from tests.serving.conftest import ANSWERABLE, ROOT, http


def _section_blocks() -> list[str]:
    section = (ROOT / "docs" / "serving.md").read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_embedding_example_adds_a_stock_component_after_the_yaml(monkeypatch):
    monkeypatch.chdir(ROOT)
    code = next(b for b in _section_blocks() if "PromptBuilder" in b)
    scope: dict = {}
    exec(compile(code, "docs/serving.md", "exec"), scope)  # noqa: S102 - our own README
    prompt = scope["prompt"]
    assert prompt.startswith("Answer only from these passages.\n[1] ")
    assert "ERR-4012" in prompt and prompt.rstrip().endswith("Question: What does ERR-4012 mean?")


def test_python_client_example_against_the_server(server):
    code = next(b for b in _section_blocks() if "urllib.request" in b)
    assert 'BASE = "http://127.0.0.1:1416"' in code
    code = code.replace('BASE = "http://127.0.0.1:1416"', f'BASE = "{server.url}"')
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/serving.md", "exec"), {})  # noqa: S102 - our own README
    _, api, _ = http("POST", f"{server.url}/extractive/run", {"query": ANSWERABLE})
    span = api["spans"][0]
    assert out.getvalue() == f"{api['answer']} ({span['doc_id']} chars {span['char_start']}–{span['char_end']})\n"
