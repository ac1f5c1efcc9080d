"""Human output: the answer highlighted in its context, and evidence beyond that context listed after it."""

from rich.console import Console

from components.app.render import CONTEXT_CHARS, print_answer
from components.core.retrieval.loaders import SourceDocument


def _span(text, part, doc_id="api.md"):
    start = text.index(part)
    return {"doc_id": doc_id, "char_start": start, "char_end": start + len(part), "text": part}


def _render(result, doc):
    console = Console(record=True, width=200)
    print_answer(console, result, lambda doc_id: doc)
    return console.export_text()


def test_evidence_outside_the_shown_context_is_listed_and_nearby_evidence_is_not():
    far = "Each token may send the number shown in `rate_limit_per_minute`."
    text = '{"rate_limit_per_minute": 120}\n\n' + "x " * CONTEXT_CHARS + "\n\n" + far
    doc = SourceDocument("api.md", text)
    answer = '"rate_limit_per_minute": 120'
    result = {"query": "How many?", "answer": answer, "verdict": "SUPPORTED", "reason": "supported",
              "route": ["read"], "spans": [_span(text, answer), _span(text, "{" + answer + "}"), _span(text, far)]}
    out = _render(result, doc)
    s = text.index(far)
    assert f"see also: {far} (api.md chars {s}–{s + len(far)})" in out
    assert out.count("see also:") == 1  # the enclosing JSON line overlaps the context shown: not repeated
    assert "source: api.md chars 1–29" in out


def test_not_found_prints_no_span():
    result = {"query": "Q?", "answer": None, "verdict": "NOT_FOUND", "reason": "no_candidates", "route": [],
              "spans": []}
    out = _render(result, SourceDocument("d", "text"))
    assert "A: not found in the source  (NOT_FOUND: no_candidates)" in out and "see also" not in out
