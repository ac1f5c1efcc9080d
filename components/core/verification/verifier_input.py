"""What the trained verifier reads: the question, and the answer marked inside its sentence with the lead-in.

One function builds the pair at training time (``training/verifier_data.py``) and at query time
(``components/routers/judge_backend.py``), so the model is judged on exactly the text shape it learnt on
(Hu et al. 2019, "Read + Verify": the answer is read in its sentence, not alone).

Example::

    vis = visible_texts([Piece("d1", 0, "Acme Pro plans. Refunds take 30 days.", "Billing")])
    ev = locate_extractive(vis, "30 days", doc_id="d1", start=29, end=36, lead_in_units=2)
    verifier_pair("How long do refunds take?", "30 days", ev)
    # ("How long do refunds take?", "Billing. Acme Pro plans. Refunds take « 30 days ».")
"""

from __future__ import annotations

from components.core.verification.checks import Evidence

OPEN, CLOSE = "«", "»"  # both are single tokens of the MiniLM (BERT uncased) vocabulary


def marked_context(evidence: Evidence, answer_text: str) -> str:
    """Lead-in + evidence (one contiguous stretch of the source) with the answer between « and ».

    An answer located only by its terms (a generative paraphrase: ``evidence.answer is None``) is put marked in
    front of the context, so the model still sees which words are claimed."""
    start, end = evidence.context_span
    vis = evidence.visible
    span = evidence.answer
    # the lead-in, unit by unit: a table row's lead-in is its header row, and the rows between are not read (a row
    # deep in a long table would otherwise push the marked answer past the verifier's 192 tokens)
    lead = " ".join(" ".join(vis.slice(u.start, u.end).split()) for u in evidence.lead_in)
    start = evidence.units[0].start if evidence.units else start
    if span is None or not (start <= span[0] < span[1] <= end):
        body = " ".join(part for part in (lead, " ".join(vis.slice(start, end).split())) if part)
        return f"{OPEN} {' '.join(answer_text.split())} {CLOSE} {body}"
    before = " ".join(vis.slice(start, span[0]).split())
    inside = " ".join(vis.slice(*span).split())
    after = " ".join(vis.slice(span[1], end).split())
    return " ".join(part for part in (lead, before, OPEN, inside, CLOSE, after) if part)


def verifier_pair(question: str, answer_text: str, evidence: Evidence, title: str | None = None) -> tuple[str, str]:
    """``(text_a, text_b)`` for the verifier's cross-encoder: the question, and the document title (when the
    evidence's own document has one) followed by the marked context."""
    title = evidence.visible.title if title is None else title
    context = marked_context(evidence, answer_text)
    return " ".join(question.split()), (f"{' '.join(title.split())}. {context}" if title else context)
