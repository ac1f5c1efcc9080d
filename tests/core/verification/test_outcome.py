"""What the verifier returns: the NOT_FOUND answer, the conflict reason and the signals of a verified answer."""

from haystack.dataclasses import ExtractedAnswer

from components.core.verification.outcome import conflict_reason, not_found_answer


def answer(text, score, doc_id, **meta):
    return ExtractedAnswer(query="q", score=score, data=text, meta={"doc_id": doc_id, **meta})


def test_not_found_keeps_the_refused_candidate_and_its_score():
    best = answer("30 days", 0.62, "refund-policy.md")
    out = not_found_answer("How long?", "low_confidence: 0.41 below 0.78", ["read", "verify:SUPPORTED"],
                           "SUPPORTED", best, "lexical")
    assert out.data is None and out.score == 0.62
    assert out.meta == {"no_answer": True, "verdict": "NOT_FOUND", "reason": "low_confidence: 0.41 below 0.78",
                        "route": ["read", "verify:SUPPORTED"], "last_verdict": "SUPPORTED", "candidate": "30 days",
                        "served_by": "lexical"}
    empty = not_found_answer("How long?", "no_candidates", [], "UNSUPPORTED", None, None)
    assert empty.score == 0.0 and empty.meta["candidate"] is None


def test_conflict_reason_names_each_source_best_first():
    best = answer("48 hours", 0.8, "billing-update.md")
    other = answer("30 days", 0.6, "refund-policy.md")
    assert conflict_reason(best, [(other, None, None)]) == (
        "conflict: billing-update.md says '48 hours'; refund-policy.md says '30 days'")


def test_judged_once_asks_the_judge_once_per_answer_object():
    from components.core.verification.outcome import judged_once

    calls = []
    a, b = ExtractedAnswer(query="q", score=0.5, data="x"), ExtractedAnswer(query="q", score=0.5, data="x")
    once = judged_once(lambda ans: calls.append(ans) or len(calls))
    assert [once(a), once(b), once(a), once(b)] == [1, 2, 1, 2] and calls == [a, b]


def test_spans_never_run_across_a_heading_or_table_rows():
    from components.core.verification.checks import Piece, locate_extractive, visible_texts
    from components.core.verification.judgements import Judgement
    from components.core.verification.outcome import answer_spans

    text = ("## Drought rules\n\nThe minimum flow is 60 litres. It applies in summer.\n\n"
            "| code | meaning |\n| --- | --- |\n| E1 | low flow |\n| E2 | high flow |\n")
    vis = visible_texts([Piece("d", 0, text, "Rules")])
    start = text.index("summer")
    ev = locate_extractive(vis, "summer", doc_id="d", start=start, end=start + 6, lead_in_units=3)
    spans = answer_spans(ev, Judgement("SUPPORTED", "supported", ev.lead_in))
    texts = [s["text"] for s in spans]
    assert texts[0] == "summer"
    assert "## Drought rules" in texts and "The minimum flow is 60 litres." in texts  # heading and sentence apart
    assert not any("Drought" in t and "minimum" in t for t in texts)
    row = text.index("high flow")
    ev = locate_extractive(vis, "high flow", doc_id="d", start=row, end=row + 9, lead_in_units=3)
    for s in answer_spans(ev, Judgement("SUPPORTED", "supported", ev.lead_in)):
        assert s["text"].count("\n") == 0, s  # one row (or the header) per span
        assert text[s["char_start"]:s["char_end"]] == s["text"]
