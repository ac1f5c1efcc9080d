"""What the verifier returns, as plain functions: the spans of a verified answer, the NOT_FOUND answer, the reason
that names conflicting sources, the confidence signals of a verified answer and the whole meta of a SUPPORTED one
(``supported_meta``: signals, calibrated confidence, conflicts).

```python
from components.core.verification.outcome import not_found_answer

answer = not_found_answer("When?", "no_candidates", ["read", "verify:UNSUPPORTED"], "UNSUPPORTED", None, "lexical")
answer.data, answer.meta["verdict"], answer.meta["reason"]   # (None, "NOT_FOUND", "no_candidates")
```
"""

from __future__ import annotations

from typing import Any

from haystack.dataclasses import ExtractedAnswer

from components.core.verification.answers import (answer_score, best_rival, conflict_share, find_conflicts,
                                                  is_abstention)
from components.core.verification.checks import NOT_FOUND, TABLE, Evidence, span_dict
from components.core.verification.confidence import verified_signals
from components.core.verification.judgements import Judgement


def answer_spans(evidence: Evidence, judgement: Judgement) -> list[dict[str, Any]]:
    """``[{doc_id, char_start, char_end, text}]``: the exact answer span (if any), then the lead-in the verdict
    relied on, the evidence sentence(s) and the sentences that name the answer's code key; a span is listed once
    (a sentence-level answer is its own evidence)."""
    v = evidence.visible
    ranges = [evidence.answer] if evidence.answer is not None else []
    ranges.extend(block_runs(v, judgement.used_lead_in))
    ranges.extend(block_runs(v, evidence.units))
    ranges.extend((u.start, u.end) for u in evidence.references)
    return [span_dict(v.doc_id, s, e, v.slice(s, e)) for s, e in dict.fromkeys(ranges)]


def block_runs(v, units) -> list[tuple[int, int]]:
    """``(start, end)`` of each run of consecutive ``units`` within one block: a span never runs across a heading
    and the paragraph under it, nor across two table rows (each row is a run of its own)."""
    where = {(u.start, u.end): i for i, u in enumerate(v.units)}
    runs: list[list] = []
    for u in units:
        i = where.get((u.start, u.end))
        block = v.unit_blocks[i] if i is not None and i < len(v.unit_blocks) else None
        own = u.kind == TABLE or block is None
        if runs and not own and runs[-1][2] == block and not runs[-1][3]:
            runs[-1][1] = u.end
        else:
            runs.append([u.start, u.end, block, own])
    return [(start, end) for start, end, _, _ in runs]


def not_found_answer(query: str, reason: str, route: list[str], last_verdict: str, best: Any | None,
                     served_by: str | None) -> ExtractedAnswer:
    """The one NOT_FOUND answer: no text, the reason and route, and the refused candidate's text if any."""
    meta = {"no_answer": True, "verdict": NOT_FOUND, "reason": reason, "route": route, "last_verdict": last_verdict,
            "candidate": None if best is None else best.data, "served_by": served_by}
    return ExtractedAnswer(query=query, score=answer_score(best) if best is not None else 0.0, data=None, meta=meta)


def conflict_reason(best: Any, conflicts: list[tuple]) -> str:
    """``conflict: a.md says '48 hours'; b.md says '30 days'`` — the best answer first, then each conflicting one."""
    return "conflict: " + "; ".join(f"{(a.meta or {}).get('doc_id')} says {str(a.data)!r}"
                                    for a in [best, *(c for c, _, _ in conflicts)])


def verified_answer_signals(query: str, best: Any, answers: list[Any], documents: list, evidence: Evidence | None,
                            level: str, analyzer, rival: Any | None = None,
                            verifier: float | None = None) -> dict[str, float]:
    """The confidence signals of a verified answer (``confidence.verified_signals``) from the reader's answers:
    the other spans' scores, the best no-answer score beside the chosen one and the score of ``rival``, the best
    other answer the verifier also supported (``answers.best_rival``; none when not given)."""
    others = [answer_score(a) for a in answers if a is not best and not is_abstention(a)]
    no_answer = max((answer_score(a) for a in answers if is_abstention(a)), default=0.0)
    return verified_signals(query, best, answer_score(best), others, no_answer, documents, evidence, level, analyzer,
                            rival_score=answer_score(rival) if rival is not None else None, verifier=verifier)


def judged_once(judge):
    """``judge(answer)`` remembered by the answer's identity: each candidate is judged once, however many checks ask
    (the supported rivals and the conflict check both do)."""
    memo: dict[int, Any] = {}

    def once(answer):
        if id(answer) not in memo:
            memo[id(answer)] = judge(answer)
        return memo[id(answer)]

    return once


def supported_meta(query: str, best: Any, answers: list[Any], documents: list, evidence: Evidence,
                   judgement: Judgement, route: list[str], level: str, analyzer, judge, calibrator,
                   conflict_candidates: int, conflict_min_score_ratio: float) -> dict[str, Any]:
    """The ``meta`` of a SUPPORTED answer: its verdict, reason, route and spans, the other sources that state a
    different value (``find_conflicts``: then the reason names them and the confidence is multiplied by the best
    answer's share), the confidence signals (with the ``best_rival`` that ``judge(answer)`` also supports)
    and the calibrated confidence (``None`` without a ``calibrator``)."""
    judge = judged_once(judge)
    rival = best_rival(best, answers, judge)
    signals = verified_answer_signals(query, best, answers, documents, evidence, level, analyzer, rival,
                                      judgement.probability)
    confidence = calibrator.predict(signals) if calibrator is not None else None
    conflicts = find_conflicts(best, answers, judge, conflict_candidates, conflict_min_score_ratio)
    reason = judgement.reason
    if conflicts:  # the sources disagree: both are said, and the confidence falls
        reason = conflict_reason(best, conflicts)
        if confidence is not None:
            confidence *= conflict_share(best, conflicts)
    return {
        **(best.meta or {}),
        "verdict": judgement.verdict,
        "reason": reason,
        "route": route,
        "spans": answer_spans(evidence, judgement),
        "conflicts": [{"answer": c.data, "spans": answer_spans(e, j)} for c, j, e in conflicts],
        "signals": signals,
        "confidence": confidence,
    }
