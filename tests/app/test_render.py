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


def test_the_resplit_spread_line_says_how_many_splits_could_be_fitted():
    from rich.console import Console

    from components.app.render import print_summary

    def line(n):
        console = Console(width=400, record=True)
        print_summary(console, {"confidence_calibration": {
            "saved_to": "cal.json", "min_confidence": 0.759, "target_precision": 0.9,
            "resplits": {"splits": 20, "target_precision": 0.9, "at_target": 0.5,
                         "precision_answered": {"mean": 0.903, "min": 0.864, "max": 0.934, "n": n},
                         "coverage_answered": {"mean": 0.389, "min": 0.228, "max": 0.468, "n": n}}}})
        return console.export_text()

    assert ("refit on 20 other splits, report half at each split's bar: precision_answered mean 0.903 "
            "(0.864–0.934; ≥ 0.9 in 50% of splits)  coverage_answered mean 0.389 (0.228–0.468)") in line(20)
    assert "refit on 20 other splits (18 could be fitted)," in line(18)


def test_a_held_back_reading_says_its_confidence_once_and_apart_from_the_bar():
    result = {"query": "What does ERR-4012 mean?", "answer": None, "verdict": "NOT_FOUND", "confidence": 0.776,
              "reason": "low_confidence: confidence 0.776 below min_confidence 0.782", "route": ["read"], "spans": [],
              "held_back": {"answer": "pairing timed out", "doc_id": "err-4012.md", "confidence": 0.776,
                            "min_confidence": 0.7822}}
    out = " ".join(_render(result, SourceDocument("err-4012.md", "ERR-4012: pairing timed out")).split())
    assert "(NOT_FOUND: low_confidence: confidence 0.776 below min_confidence 0.782)" in out
    assert "held back: found 'pairing timed out' in err-4012.md, confidence 0.776 — below the 0.782 bar" in out
    assert out.count("0.776") == 2
