"""Failure taxonomy: one label per question saying where the pipeline lost (or kept) the answer.

``classify(outcome)`` looks at a ``QuestionOutcome`` and returns a ``Diagnosis(label, reason)``; the
reason is one short sentence naming the character spans involved. Labels (``LABELS``):

- ``correct``          -- answerable: the caller judged the answer correct (``is_correct``);
                          unanswerable: the system abstained (``answer is None``).
- ``hallucination``    -- an answer was given that nothing supports: for an unanswerable question, any
                          answer; for an answerable one, a wrong answer with ``corpus_supported is False``
                          (its text is found in no evidence span -- impossible for extractive readers,
                          possible for generative ones).
- ``retrieval_miss``   -- no document holding a gold span was retrieved at all.
- ``rank_failure``     -- a gold document was retrieved, but no window the reader saw contains a gold span
                          (it was cut by the reranker / top-k, or only other parts of it were read).
- ``false_abstention`` -- a window containing a gold span was read and the system said NOT_FOUND.
- ``synthesis_error``  -- a window containing a gold span was read and the answer given is wrong.

Precedence for an answerable question, first match wins::

    correct > hallucination > retrieval_miss > rank_failure > false_abstention | synthesis_error

So ``false_abstention`` and ``synthesis_error`` are only given when the gold span was available to the
reader; a wrong answer or an abstention without the gold in view is blamed on retrieval or ranking.
A fabricated answer is called a ``hallucination`` whatever retrieval did, because it is a fault of the
answer itself. ``corpus_supported=None`` means "not checked" and never yields ``hallucination``.

"The reader saw the gold span" means: some read span ``(doc_id, start, end)`` of the same document
*contains* a gold span (``start <= gold_start and gold_end <= end``); overlapping is not enough. An
abstention is ``answer is None`` (as in ``metrics.squad_summary``). ``is_correct`` is decided by the caller
(EM, F1 >= threshold, or gold-in-span) and is ignored for unanswerable questions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

CORRECT = "correct"
RETRIEVAL_MISS = "retrieval_miss"
RANK_FAILURE = "rank_failure"
SYNTHESIS_ERROR = "synthesis_error"
HALLUCINATION = "hallucination"
FALSE_ABSTENTION = "false_abstention"

LABELS = (CORRECT, RETRIEVAL_MISS, RANK_FAILURE, SYNTHESIS_ERROR, HALLUCINATION, FALSE_ABSTENTION)

SpanTuple = tuple[str, int, int]


@dataclass
class QuestionOutcome:
    """What happened to one question, as plain data (see the module docstring for the field meanings)."""

    answerable: bool
    gold_spans: list[SpanTuple] = field(default_factory=list)
    gold_texts: list[str] = field(default_factory=list)
    retrieved_doc_ids: list[str] = field(default_factory=list)
    read_spans: list[SpanTuple] = field(default_factory=list)
    answer: str | None = None
    answer_span: SpanTuple | None = None
    is_correct: bool = False
    corpus_supported: bool | None = None


@dataclass(frozen=True)
class Diagnosis:
    """A taxonomy label and a one-sentence reason naming the spans involved."""

    label: str
    reason: str


def span_contains(outer: Sequence, inner: Sequence) -> bool:
    """True when span ``inner`` lies inside span ``outer`` of the same document (half-open ranges)."""
    return outer[0] == inner[0] and outer[1] <= inner[1] and inner[2] <= outer[2]


def _fmt(span: Sequence) -> str:
    return f"{span[0]}[{span[1]}:{span[2]}]"


def _fmt_list(spans: Sequence, limit: int = 3) -> str:
    shown = ", ".join(_fmt(s) for s in spans[:limit])
    return shown + (f" (+{len(spans) - limit} more)" if len(spans) > limit else "")


def _answer_text(outcome: QuestionOutcome) -> str:
    where = f" at {_fmt(outcome.answer_span)}" if outcome.answer_span else ""
    return f"answer {outcome.answer!r}{where}"


def _classify_unanswerable(outcome: QuestionOutcome) -> Diagnosis:
    if outcome.answer is None:
        return Diagnosis(CORRECT, "unanswerable question, system abstained")
    return Diagnosis(HALLUCINATION, f"unanswerable question, but system gave {_answer_text(outcome)}")


def classify(outcome: QuestionOutcome) -> Diagnosis:
    """Label one question with the first matching taxonomy bucket (precedence in the module docstring).

    Raises:
        ValueError: an answerable question without gold spans (its failure could not be located).
    """
    if not outcome.answerable:
        return _classify_unanswerable(outcome)
    if not outcome.gold_spans:
        raise ValueError("answerable question without gold_spans: cannot tell where it failed")
    gold = outcome.gold_spans
    if outcome.is_correct:
        return Diagnosis(CORRECT, f"{_answer_text(outcome)} matches gold {_fmt_list(gold)}")
    if outcome.answer is not None and outcome.corpus_supported is False:
        return Diagnosis(HALLUCINATION, f"{_answer_text(outcome)} is supported by no evidence span")
    retrieved = set(outcome.retrieved_doc_ids)
    if not any(g[0] in retrieved for g in gold):
        return Diagnosis(
            RETRIEVAL_MISS, f"gold {_fmt_list(gold)} never retrieved ({len(retrieved)} documents retrieved)"
        )
    seen = [(r, g) for r in outcome.read_spans for g in gold if span_contains(r, g)]
    if not seen:
        return Diagnosis(
            RANK_FAILURE,
            f"gold {_fmt_list(gold)} retrieved but in no window the reader saw "
            f"({_fmt_list(outcome.read_spans) or 'none'})",
        )
    window, gold_span = seen[0]
    if outcome.answer is None:
        return Diagnosis(FALSE_ABSTENTION, f"reader saw gold {_fmt(gold_span)} in window {_fmt(window)} but abstained")
    return Diagnosis(
        SYNTHESIS_ERROR,
        f"reader saw gold {_fmt(gold_span)} in window {_fmt(window)} but gave {_answer_text(outcome)}",
    )


def taxonomy_totals(labels: Iterable[str | Diagnosis]) -> dict[str, int]:
    """Count labels (strings or ``Diagnosis``); every label of ``LABELS`` is present, zeros included.

    Raises:
        ValueError: an unknown label.
    """
    totals = dict.fromkeys(LABELS, 0)
    for item in labels:
        label = item.label if isinstance(item, Diagnosis) else item
        if label not in totals:
            raise ValueError(f"unknown taxonomy label {label!r}; expected one of {', '.join(LABELS)}")
        totals[label] += 1
    return totals
