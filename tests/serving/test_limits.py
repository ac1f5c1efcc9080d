"""The serving package's pure rules: question limits, body parsing, failure classification, chat text, passages."""

from __future__ import annotations

import urllib.error

import numpy as np
import pytest

from components.core.errors import SpanQAError
from components.serving.limits import (Refused, check_question, classify_failure, describe_validation_errors,
                                       max_question_chars, parse_body)
from components.serving.passage import MAX_PASSAGE_CHARS, passage_bounds
from components.serving.wrapper import chat_text


def test_check_question():
    assert check_question("  What?  ", 10) == "What?"
    for query, status in [("", 400), ("   ", 400), ("a\x00b", 400), ("x" * 11, 413), (None, 422), (3, 422)]:
        with pytest.raises(Refused) as info:
            check_question(query, 10)
        assert info.value.status == status and "\n" not in info.value.reason


def test_max_question_chars_from_yaml():
    assert max_question_chars({"metadata": {"spanqa": {"max_question_chars": 50}}}) == 50
    assert max_question_chars({}) == 2000


def test_parse_body():
    assert parse_body(b'{"query": "q"}') == {"query": "q"}
    for raw, status in [(b"{", 400), (b"\xff", 400), (b"[]", 422), (b"{}", 422), (b'{"query":"q","x":1}', 422),
                        (b" " * 1_000_001, 413)]:
        with pytest.raises(Refused) as info:
            parse_body(raw)
        assert info.value.status == status


def test_validation_errors_are_one_line():
    assert describe_validation_errors([{"type": "json_invalid", "loc": ("body", 5), "msg": "JSON decode error",
                                        "ctx": {"error": "Expecting value"}}]) == (400, "malformed JSON: Expecting value")
    status, reason = describe_validation_errors([{"type": "missing", "loc": ("body", "model"), "msg": "Field required"}])
    assert status == 422 and reason == "invalid request: model: Field required"


def _chained(outer, inner):
    try:
        try:
            raise inner
        except BaseException as exc:
            raise outer from exc
    except BaseException as exc:
        return exc


def test_classify_failure():
    timeout = _chained(RuntimeError("Component 'reader' failed"),
                       _chained(SpanQAError("The openai backend could not reach http://x (timed out)."), TimeoutError("timed out")))
    status, reason = classify_failure(timeout)
    assert status == 504 and "timed out" in reason and "\n" not in reason
    url_timeout = urllib.error.URLError(TimeoutError("timed out"))
    assert classify_failure(url_timeout)[0] == 504
    assert classify_failure(_chained(RuntimeError("x"), SpanQAError("bad\nkey"))) == (502, "bad key")
    assert classify_failure(ValueError("oops\n  at line 3")) == (500, "internal error (ValueError): oops at line 3")
    assert classify_failure(Refused(413, "too long")) == (413, "too long")


def test_chat_text():
    supported = {"verdict": "SUPPORTED", "answer": "30 days", "reason": "supported",
                 "spans": [{"doc_id": "a.md", "char_start": 3, "char_end": 10}, {"doc_id": "a.md", "char_start": 0, "char_end": 20},
                           {"doc_id": "a.md", "char_start": 3, "char_end": 10}]}
    assert chat_text(supported) == "30 days\n\nSources:\n[1] a.md chars 3–10\n[2] a.md chars 0–20"
    assert chat_text({"verdict": "NOT_FOUND", "answer": None, "reason": "no_candidates"}) == \
        "not found in the source (no_candidates)"
    retrieval = {"documents": [{"doc_id": "b.md", "char_start": 0, "char_end": 5, "text": "hello\nworld"}]}
    assert chat_text(retrieval) == "Top passages:\n[1] b.md (chars 0–5): hello world"
    assert chat_text({"documents": []}) == "not found in the source"


def test_passage_bounds():
    blocks = np.array([[10, 100], [102, 300], [302, 5000]])
    assert passage_bounds(blocks, 10, 5000, 120, 140) == (102, 300)        # the paragraph
    assert passage_bounds(blocks, 10, 5000, 90, 110) == (10, 300)          # spans two paragraphs
    lo, hi = passage_bounds(blocks, 10, 5000, 2000, 2010)                  # a long paragraph is cut around the span
    assert lo <= 2000 and hi >= 2010 and hi - lo <= MAX_PASSAGE_CHARS + 10
    assert passage_bounds(None, 0, 50, 10, 20) == (0, 50)                   # no blocks: span ± context, clipped


def test_malformed_text_and_json_are_400_not_500():
    from components.serving.limits import Refused, check_question, parse_body

    for raw, needle in [(b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
                        (b'{"query": ' + b"9" * 5000 + b"}", "malformed JSON"),
                        (b'{"query": "\\ud800"}', None)]:
        try:
            body = parse_body(raw)
        except Refused as exc:
            assert exc.status == 400 and needle in exc.reason, exc.reason
            continue
        with pytest.raises(Refused) as info:  # a lone surrogate parses: the question check refuses it
            check_question(body["query"], 2000)
        assert info.value.status == 400 and "unpaired surrogate" in info.value.reason


def test_source_passage_never_serves_front_matter_and_a_bad_id_is_404(tmp_path):
    from components.serving.limits import Refused
    from components.serving.passage import source_passage
    from components.stores.span_store import SpanStore

    (tmp_path / "kb").mkdir()
    doc = "---\ntitle: Secret plans\nowner: ops\n---\nThe door opens at nine. It closes at five.\n"
    (tmp_path / "kb" / "door.md").write_text(doc)
    store = SpanStore(data_dir=str(tmp_path / "kb"), cache_dir=str(tmp_path / "cache"), progress=False)
    body = doc.index("The door")
    got = source_passage(store, "door.md", body + 4, body + 8)
    assert got["text"].startswith("The door") and "title:" not in got["text"]
    for start in (0, 5, body - 1):
        with pytest.raises(Refused) as info:
            source_passage(store, "door.md", start, body + 8)
        assert info.value.status == 400 and "front matter" in info.value.reason
    for bad in ("nope.md", "door.md\x00", "x" * 5000):
        with pytest.raises(Refused) as info:
            source_passage(store, bad, 0, 1)
        assert info.value.status == 404
