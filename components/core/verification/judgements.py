"""Verdicts on an answer located in the read text: the offline lexical rules, an NLI model's probabilities
mapped to a verdict, and the LLM judge's messages and reply (pure functions; ``VerifierRouter`` is the glue).

Lexical rules, in order (thresholds are parameters; nothing here is tuned on a dataset):

1. the answer is not located in the read documents (generative: neither verbatim nor with at least
   ``min_answer_coverage`` of its terms in one cited passage) → UNSUPPORTED ``answer_not_in_documents``;
2. more than ``max_missing_key_terms`` of the key terms occur nowhere in the read documents (titles
   included) → UNSUPPORTED ``key_terms_missing``;
3. the question says the opposite of the evidence (with its lead-in): it is negated ("What can*not* be
   solved ...") and the evidence is not → UNSUPPORTED ``negation_mismatch``; or it uses a word whose
   opposite the evidence uses instead ("decrease" / "increase", "unconnected" / "connected";
   ``analysis.opposite_terms``) → UNSUPPORTED ``opposite_terms`` — SQuAD 2.0's two commonest kinds of
   unanswerable question, which share every other word with the source;
4. some key term is not in the evidence, its lead-in or the document title, but elsewhere (or, for at
   most ``max_missing_key_terms`` of them, nowhere) → PARTIAL ``key_terms_elsewhere``;
5. fewer than ``min_term_coverage`` of the question's content terms (stems, question words removed) are
   in the evidence, lead-in or title → PARTIAL ``low_term_coverage``;
6. the question asks for a quantity ("how many / much / long / far …", "what price / port / year …")
   and the answer holds no number, or it asks "how many <unit>" and the answer never names that unit, or
   it asks when and the answer states no time (a number, a month, "century" …) →
   PARTIAL ``answer_type_missing`` (the value asked for is not there);
7. otherwise SUPPORTED.

Example::

    vis = visible_texts([Piece("d1", 0, "Acme Pro plans. Refunds take 30 days.", "Billing")])
    ev = locate_extractive(vis, "30 days", doc_id="d1", start=29, end=36, lead_in_units=2)
    j = lexical_judgement("How long do refunds take for Acme Pro?", ev, vis, Analyzer())
    j.verdict, j.reason          # ("SUPPORTED", "supported: ...")
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from components.core.text.analysis import (
    Analyzer,
    asked_unit,
    asks_for_quantity,
    asks_for_time,
    has_quantity,
    has_time,
    is_negated,
    mentions_unit,
    opposite_terms,
)
from components.core.reading.keyed_lookup import another_setting
from components.core.text.injection import directive_reason
from components.core.text.key_terms import Vocab, content_terms, has_term, key_terms
from components.core.text.splitting import Span
from components.core.verification.checks import PARTIAL, SUPPORTED, UNSUPPORTED, Evidence, Visible


@dataclass(frozen=True)
class Judgement:
    """A verdict with a short reason (``code`` or ``code: detail``) and the lead-in units it relied on."""

    verdict: str
    reason: str
    used_lead_in: tuple[Span, ...] = ()
    probability: float | None = None  # the trained verifier's P(answer is right), when it judged


def _quote(terms: Iterable[str]) -> str:
    return ", ".join(f"'{t}'" for t in terms)


def lexical_judgement(
    question: str,
    evidence: Evidence | None,
    visibles: list[Visible],
    analyzer: Analyzer,
    *,
    use_title: bool = True,
    min_term_coverage: float = 0.5,
    max_missing_key_terms: float = 0.5,
    min_answer_coverage: float = 0.8,
) -> Judgement:
    """The offline verdict (rules 1-7 of the module docstring)."""
    if evidence is None or evidence.coverage < min_answer_coverage:
        detail = "" if evidence is None else f": only {evidence.coverage:.2f} of its terms in one cited passage"
        return Judgement(UNSUPPORTED, f"answer_not_in_documents{detail}")

    terms = key_terms(question)
    everywhere = Vocab()
    for v in visibles:
        everywhere.add(v.text, analyzer)
        if use_title and v.title:
            everywhere.add(v.title, analyzer)
    local = Vocab().add(evidence.evidence_text, analyzer)
    lead = Vocab().add(evidence.lead_in_text, analyzer).add(evidence.references_text, analyzer)
    if use_title and evidence.visible.title:
        lead.add(evidence.visible.title, analyzer)
    near = Vocab(local.stems | lead.stems, local.words | lead.words)

    missing = [t for t in terms.all() if not has_term(everywhere, terms, t, analyzer)]
    if terms and len(missing) / len(terms) > max_missing_key_terms:
        return Judgement(UNSUPPORTED, f"key_terms_missing: {_quote(missing)} not in the read documents")

    stated = f"{evidence.lead_in_text}\n{evidence.evidence_text}\n{evidence.references_text}"
    if is_negated(question) and not is_negated(stated):
        return Judgement(UNSUPPORTED, "negation_mismatch: the question is negated, the evidence is not")
    opposite = opposite_terms(question, stated, analyzer)
    if opposite:
        said = ", ".join(f"'{q}' where the source says '{e}'" for q, e in opposite)
        return Judgement(UNSUPPORTED, f"opposite_terms: the question says {said}")

    # the lead-in units that supply a question term the evidence itself lacks
    needed = {analyzer.stem(w) for t in terms.all() for w in analyzer.words(t)} | content_terms(question, analyzer)
    needed -= local.stems
    used = tuple(
        u for u in evidence.lead_in if needed & set(analyzer(evidence.visible.slice(u.start, u.end)))
    )

    elsewhere = [t for t in terms.all() if not has_term(near, terms, t, analyzer)]
    if elsewhere:
        found = [t for t in elsewhere if t not in missing]
        parts = []
        if found:
            parts.append(f"{_quote(found)} only elsewhere in the read documents")
        if missing:
            parts.append(f"{_quote(missing)} not found")
        return Judgement(PARTIAL, "key_terms_elsewhere: " + "; ".join(parts), used)

    content = content_terms(question, analyzer)
    if content:
        have = sum(1 for s in content if s in near.stems)
        if have / len(content) < min_term_coverage:
            return Judgement(
                PARTIAL, f"low_term_coverage: {have}/{len(content)} question terms near the answer", used
            )
    answer_text = evidence.visible.slice(*evidence.answer) if evidence.answer is not None else evidence.evidence_text
    if asks_for_quantity(question) and not has_quantity(answer_text):
        return Judgement(PARTIAL, "answer_type_missing: the question asks for a quantity, the answer has none", used)
    if asks_for_time(question) and not has_time(answer_text):
        return Judgement(PARTIAL, "answer_type_missing: the question asks when, the answer states no time", used)
    unit = asked_unit(question)
    if unit and not mentions_unit(answer_text, unit, analyzer):
        return Judgement(PARTIAL, f"answer_type_missing: the question asks for {unit}, the answer does not say", used)
    what = "answer" if evidence.answer is not None else f"{evidence.coverage:.2f} of the answer's terms"
    keys = f" with {_quote(terms.all())}" if terms else ""
    return Judgement(SUPPORTED, f"supported: {what} in the evidence{keys}", used)


# ---------------------------------------------------------------------------------------------- NLI

DEFAULT_HYPOTHESIS = "{question} {answer}"


def nli_label_index(id2label: dict) -> dict[str, int]:
    """``{"entailment": i, "neutral": j, "contradiction": k}`` from a model config's ``id2label``.

    Label names are matched by prefix, case-insensitively (``ENTAILMENT``, ``entail``, ``Contradiction``).
    Raises ``ValueError`` when one of the three is missing (e.g. ``LABEL_0``..).
    """
    index: dict[str, int] = {}
    for i, name in id2label.items():
        low = str(name).casefold()
        for key in ("entailment", "neutral", "contradiction"):
            if low.startswith(key[:6]):
                index[key] = int(i)
    missing = [k for k in ("entailment", "neutral", "contradiction") if k not in index]
    if missing:
        raise ValueError(f"id2label {dict(id2label)} has no {', '.join(missing)} label")
    return index


def nli_judgement(
    probs: dict[str, float], entail_threshold: float = 0.5, contradiction_threshold: float = 0.5
) -> Judgement:
    """SUPPORTED if P(entailment) ≥ ``entail_threshold``; else UNSUPPORTED if P(contradiction) ≥
    ``contradiction_threshold``; else PARTIAL (neutral: the span neither entails nor contradicts)."""
    pe, pn, pc = probs["entailment"], probs["neutral"], probs["contradiction"]
    detail = f"entailment {pe:.2f}, neutral {pn:.2f}, contradiction {pc:.2f}"
    if pe >= entail_threshold:
        return Judgement(SUPPORTED, f"nli: {detail}")
    if pc >= contradiction_threshold:
        return Judgement(UNSUPPORTED, f"nli: {detail}")
    return Judgement(PARTIAL, f"nli: {detail}")


def model_free_refusal(question: str, evidence: Evidence | None) -> Judgement | None:
    """The checks no model does, before any backend judges: UNSUPPORTED ``instruction_in_evidence`` when the answer's
    sentence addresses the reader (``injection.directive_reason``: a document that does so is data, never
    evidence), ``another_setting`` when the answer is the value of a key the question does not name while the key it
    names is not in the read text (``keyed_lookup.another_setting``); None when neither applies or nothing was
    located."""
    if evidence is None:
        return None
    why = directive_reason(evidence.evidence_text)
    if why:
        return Judgement(UNSUPPORTED, f"instruction_in_evidence: the answer's sentence {why}; a document "
                                      f"that addresses the reader is data, not evidence")
    vis = evidence.visible
    other = evidence.answer and another_setting(question, vis.text, evidence.answer[0] - vis.start,
                                                evidence.answer[1] - vis.start, vis.title or "")
    if other:
        return Judgement(UNSUPPORTED, f"another_setting: the question names `{other[0]}`, which the read "
                                      f"text does not hold; the answer is the value of `{other[1]}`")
    return None


def trained_judgement(probability: float, support_threshold: float = 0.5, refute_threshold: float = 0.1) -> Judgement:
    """The trained verifier's P(right) as a verdict: SUPPORTED at or above ``support_threshold``, UNSUPPORTED below
    ``refute_threshold`` (widen to the whole passage), PARTIAL between (widen to the paragraph)."""
    detail = f"verifier P(right) {probability:.2f}"
    if probability >= support_threshold:
        return Judgement(SUPPORTED, f"supported: {detail}", probability=probability)
    if probability < refute_threshold:
        return Judgement(UNSUPPORTED, f"verifier_refuted: {detail}", probability=probability)
    return Judgement(PARTIAL, f"verifier_unsure: {detail}", probability=probability)


# ---------------------------------------------------------------------------------------- LLM judge

JUDGE_SYSTEM = (
    "You check whether a piece of evidence supports an answer to a question.\n"
    "SUPPORTED: the evidence states the answer to this question.\n"
    "PARTIAL: the evidence states the answer, but not for everything the question names.\n"
    "UNSUPPORTED: the evidence does not state the answer, or contradicts it.\n"
    "Return SUPPORTED, PARTIAL or UNSUPPORTED, then one short reason."
)

_VERDICT_WORD = re.compile(r"\b(NOT[\s_-]+SUPPORTED|UNSUPPORTED|SUPPORTED|PARTIAL(?:LY)?)\b")
_VERDICT_WORD_ANY_CASE = re.compile(_VERDICT_WORD.pattern, re.IGNORECASE)


def judge_messages(question: str, answer: str, evidence: str) -> list[dict]:
    """The chat messages of the LLM judge (system rules + one user turn)."""
    user = (
        f"Evidence:\n{evidence}\n\nQuestion: {question}\nAnswer: {answer}\n\n"
        "Return SUPPORTED, PARTIAL or UNSUPPORTED, then one short reason."
    )
    return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": user}]


def parse_judge_reply(text: str | None) -> Judgement:
    """The first verdict word of a judge reply (upper-case words first, then any case) and its reason.

    "NOT SUPPORTED" counts as UNSUPPORTED and "PARTIALLY" as PARTIAL. The reason is the rest of that line
    (at most 200 characters). No verdict word → UNSUPPORTED with reason ``unparseable_judge_reply``.
    """
    text = text or ""
    m = _VERDICT_WORD.search(text) or _VERDICT_WORD_ANY_CASE.search(text)
    if m is None:
        shown = " ".join(text.split())[:80]
        return Judgement(UNSUPPORTED, f"unparseable_judge_reply: {shown!r}")
    word = re.sub(r"[\s_-]+", " ", m.group(1).upper())
    if word in ("UNSUPPORTED", "NOT SUPPORTED"):
        verdict = UNSUPPORTED
    else:
        verdict = PARTIAL if word.startswith("PARTIAL") else SUPPORTED
    reason = ""
    for line in text[m.end() :].split("\n"):  # the rest of the verdict's line, else the next non-empty line
        reason = " ".join(line.lstrip(" \t:;,.-–—*\"'").rstrip(" *\"'").split())[:200]
        if reason:
            break
    return Judgement(verdict, f"llm: {reason}" if reason else "llm: no reason given")
