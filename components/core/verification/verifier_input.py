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

from components.core.reading.keyed_lookup import row_cells
from components.core.text.splitting import TABLE
from components.core.verification.checks import Evidence

OPEN, CLOSE = "«", "»"  # both are single tokens of the MiniLM (BERT uncased) vocabulary


def _flat(text: str) -> str:
    return " ".join(text.split())


def cells_by_column(evidence: Evidence) -> str | None:
    """A table row read cell by cell under its column: ``Code: ERR-4012 | Meaning: « Payment declined »`` — or
    ``None`` when the evidence is not one row whose header row is in its lead-in with as many cells, and an answer
    inside one cell. A wide row read beside its header leaves the model to count columns (the 16,297 under the
    third "Long Gun" of a 25-column table); paired, each value says its column."""
    span, vis = evidence.answer, evidence.visible
    if span is None or len(evidence.units) != 1 or evidence.units[0].kind != TABLE:
        return None
    header = next((u for u in evidence.lead_in if u.kind == TABLE), None)
    if header is None:
        return None
    row = evidence.units[0]
    names = row_cells(vis.text, header.start - vis.start, header.end - vis.start)
    cells = row_cells(vis.text, row.start - vis.start, row.end - vis.start)
    start, end = span[0] - vis.start, span[1] - vis.start
    inside = [i for i, (s, e) in enumerate(cells) if s <= start and end <= e]
    if len(names) != len(cells) or not inside:
        return None
    parts = []
    for i, ((hs, he), (s, e)) in enumerate(zip(names, cells)):
        name = _flat(vis.text[hs:he])
        if i == inside[0]:
            value = " ".join(p for p in (_flat(vis.text[s:start]), OPEN, _flat(vis.text[start:end]), CLOSE,
                                         _flat(vis.text[end:e])) if p)
        elif s == e:
            continue  # an empty cell says nothing
        else:
            value = _flat(vis.text[s:e])
        parts.append(f"{name}: {value}" if name else value)
    heading = [_flat(vis.slice(u.start, u.end)) for u in evidence.lead_in if u.kind != TABLE]
    return " ".join(heading + [" | ".join(parts)])


def marked_context(evidence: Evidence, answer_text: str) -> str:
    """Lead-in + evidence (one contiguous stretch of the source) with the answer between « and ».

    An answer located only by its terms (a generative paraphrase: ``evidence.answer is None``) is put marked in
    front of the context, so the model still sees which words are claimed."""
    by_column = cells_by_column(evidence)
    if by_column is not None:
        return by_column
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
