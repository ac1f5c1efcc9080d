"""Haystack answers as the verifier reads them: abstentions, scores, the best of them, and where one stands.

Pure functions over ``ExtractedAnswer`` / ``GeneratedAnswer`` and the read documents, free of component glue;
``components/routers/verifier_router.py`` routes on them.

**Evidence.** The read documents are merged per source document into the visible text; the answer
is found at its ``meta`` offsets (``doc_id``, ``char_start``, ``char_end``) or else by a
case-insensitive search; its *evidence* is the sentence(s) (``components.core.text.splitting`` units) holding it
and its *lead-in* up to ``lead_in_units`` visible sentences before them in the same paragraph (or a
heading line right above it; never the previous paragraph, which may be about something else). A
``GeneratedAnswer`` is looked up inside its cited spans (``meta["evidence"]``, else its ``documents``):
verbatim, else the shortest run of sentences holding most of its terms (``min_answer_coverage``).
"""

from __future__ import annotations

import re

from typing import Any

from haystack import Document
from haystack.dataclasses import ExtractedAnswer

from components.core.offsets import doc_origin
from components.core.text.analysis import Analyzer
from components.core.verification.checks import Evidence, Piece, Visible, locate_extractive, locate_generative


def is_abstention(answer: Any) -> bool:
    """An answer without text, or one the reader marked ``meta["no_answer"]``."""
    return answer.data is None or not str(answer.data).strip() or bool((answer.meta or {}).get("no_answer"))


def answer_score(answer: Any) -> float:
    """``ExtractedAnswer.score``; for a ``GeneratedAnswer`` its ``meta["score"]`` (0.0 when absent)."""
    score = getattr(answer, "score", None)
    if score is None:
        score = (answer.meta or {}).get("score")
    return float(score) if score is not None else 0.0


def ranked_answers(answers: list[Any]) -> list[Any]:
    """The non-abstaining answers, highest score first (input order on ties)."""
    return sorted((a for a in answers or [] if not is_abstention(a)), key=lambda a: -answer_score(a))


def best_answer(answers: list[Any]) -> Any | None:
    """The highest-scoring non-abstaining answer (the first one on ties), or ``None``."""
    best = None
    for a in answers or []:
        if not is_abstention(a) and (best is None or answer_score(a) > answer_score(best)):
            best = a
    return best


def reader_prefers_no_answer(answers: list[Any], best: Any) -> bool:
    """Whether one of the reader's abstentions scores higher than its best real answer."""
    return any(is_abstention(a) and answer_score(a) > answer_score(best) for a in answers or [])


def document_piece(doc: Document, index: int) -> Piece:
    """A read document as a ``Piece`` of its source: ``meta["doc_id"]`` (else its id, else ``doc<index>``),
    ``meta["char_start"]`` and its text."""
    doc_id, base = doc_origin(doc, index)
    return Piece(doc_id, base, doc.content or "", str((doc.meta or {}).get("title") or ""))


def locate_answer(answer: Any, visibles: list[Visible], analyzer: Analyzer, lead_in_units: int) -> Evidence | None:
    """Where ``answer`` stands in the read text: an extractive answer (or a verbatim generated one) at its
    offsets — ``meta`` ``doc_id`` / ``char_start`` / ``char_end``, else its document and ``document_offset`` —
    or by search; a generated answer inside the spans it cites (``meta["evidence"]``, else its documents)."""
    meta = answer.meta or {}
    doc_id, start, end = meta.get("doc_id"), meta.get("char_start"), meta.get("char_end")
    doc = getattr(answer, "document", None)
    offset = getattr(answer, "document_offset", None)
    if (start is None or doc_id is None) and doc is not None and offset is not None:
        doc_id, base = doc_origin(doc)
        start, end = base + offset.start, base + offset.end
    doc_id = None if doc_id is None else str(doc_id)
    if isinstance(answer, ExtractedAnswer) or meta.get("verbatim"):
        exact = locate_extractive(visibles, answer.data, doc_id=doc_id, start=start, end=end,
                                  lead_in_units=lead_in_units)
        if exact is not None or isinstance(answer, ExtractedAnswer):
            return exact
    cited = [(str(e["doc_id"]), int(e["char_start"]), int(e["char_end"])) for e in meta.get("evidence") or []]
    if not cited:
        cited = [(p.doc_id, p.start, p.start + len(p.text))
                 for p in (document_piece(d, i) for i, d in enumerate(getattr(answer, "documents", None) or []))]
    return locate_generative(visibles, answer.data, analyzer, cited=cited, lead_in_units=lead_in_units)


def _norm(text: Any) -> str:
    return " ".join(str(text or "").lower().split()).strip(" .,;:")


_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def values(text: Any) -> frozenset[str]:
    """The numbers an answer states ("30 days" → {"30"}, "€14.99 per month" → {"14.99"}): what makes it a value
    that another source can contradict."""
    return frozenset(_NUMBER.findall(str(text or "")))


def inside_identifier(evidence: Any) -> bool:
    """Whether the located answer is glued into a longer token — the ``100`` of ``GLN-HUB-MINI-100``, the ``4012``
    of ``ERR-4012``: a name, not a value a source states."""
    if evidence is None or evidence.answer is None:
        return True
    v, (start, end) = evidence.visible, evidence.answer
    before = v.slice(max(v.start, start - 1), start)
    after = v.slice(end, min(v.end, end + 2))
    glued = lambda ch: ch.isalnum() or ch in "-_/"  # noqa: E731
    return bool(before and glued(before)) or bool(after and (after[0].isalnum() or (
        after[0] in "-_/" and len(after) > 1 and after[1].isalnum())))


def source_of(answer: Any) -> tuple:
    """The source an answer comes from: its document's file and title — the paragraphs of one article (a SQuAD
    file's ``Title#n`` documents, the chunks of one PDF) are one source, which does not conflict with itself."""
    meta = getattr(getattr(answer, "document", None), "meta", None) or {}
    doc_id = (answer.meta or {}).get("doc_id")
    return (meta.get("source") or doc_id, meta.get("title")) if meta else (doc_id, None)


def find_conflicts(best: Any, answers: list[Any], judge, max_candidates: int, min_score_ratio: float) -> list[tuple]:
    """Other answers that the sources also support: ``(answer, judgement, evidence)`` for each of the reader's
    ``max_candidates`` best answers that comes from another source (``source_of``), scores at least ``min_score_ratio`` of the
    best, states a different value (both answers state numbers, and not the same ones) and is judged SUPPORTED by
    ``judge(answer)`` — two current sources giving different values for the question. Answers without a number
    (a definition, a procedure) are phrased differently by every source: they are never a conflict here; nor is a
    number that is part of a name (``inside_identifier``)."""
    if not values(best.data):
        return []
    top = answer_score(best)
    best_source = source_of(best)
    said = [_norm(best.data)]
    found = []
    for candidate in ranked_answers(answers)[:max_candidates]:
        text = _norm(candidate.data)
        if candidate is best or (candidate.meta or {}).get("doc_id") is None or source_of(candidate) == best_source \
                or not text:
            continue
        if answer_score(candidate) < min_score_ratio * top or any(text in s or s in text for s in said):
            continue
        if not values(candidate.data) or values(candidate.data) == values(best.data):
            continue
        judgement, evidence = judge(candidate)
        if judgement.verdict == "SUPPORTED" and not inside_identifier(evidence):
            found.append((candidate, judgement, evidence))
            said.append(text)
    return found


def best_rival(best: Any, answers: list[Any], judge) -> Any | None:
    """The reader's highest-scoring other answer that says something else — neither text holds the other, so
    ``30 days`` is not a rival of ``30 days of purchase`` — and that ``judge(answer)`` also finds SUPPORTED: the
    best alternative the verifier could not rule out (None when there is none). A runner-up whose evidence lacks
    the question's key terms (the Hub Pro's ``150`` to a question about the Hub Mini) is no rival, however close
    its reader score. Candidates are judged best first, and the first supported one ends the search."""
    said = _norm(best.data)
    for candidate in ranked_answers(answers):
        text = _norm(candidate.data)
        if candidate is best or not text or text in said or said in text:
            continue
        judgement, _ = judge(candidate)
        if judgement.verdict == "SUPPORTED":
            return candidate
    return None


def conflict_share(best: Any, conflicts: list[tuple]) -> float:
    """The best answer's share of the reader's score among the supported, disagreeing answers: the factor its
    confidence is multiplied by (two equally rated sources that disagree: one half)."""
    top = answer_score(best)
    total = top + sum(answer_score(c) for c, _, _ in conflicts)
    return top / total if total > 0 else 1.0


CHOICES = ("first", "most_probable")


def choose_judged(judged: list[tuple], choice: str = "first") -> tuple | None:
    """Which of the reader's judged answers — ``(answer, judgement, evidence)`` in the reader's score order — the
    verifier passes on: ``first``, the first judged SUPPORTED; ``most_probable``, the SUPPORTED one the trained
    verifier gives the highest P(right) (the earlier on a tie; ``first`` when a SUPPORTED judgement carries no
    probability, as the rules' and the NLI model's do not). None SUPPORTED: the best answer with its own judgement,
    which routes the widening loop; nothing judged: None.

        choose_judged([(a, partial, ev_a), (b, supported_p06, ev_b), (c, supported_p09, ev_c)], "most_probable")
        # -> (c, supported_p09, ev_c); with "first": (b, supported_p06, ev_b)
    """
    if choice not in CHOICES:
        raise ValueError(f"choose_judged: choice must be one of {CHOICES}, not {choice!r}")
    supported = [j for j in judged if j[1].verdict == "SUPPORTED"]
    if not supported:
        return judged[0] if judged else None
    if choice == "first" or any(j[1].probability is None for j in supported):
        return supported[0]
    return max(supported, key=lambda j: j[1].probability)  # max keeps the first of equal ones
