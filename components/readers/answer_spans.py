"""Haystack answers from decoded spans: offsets in the original document, the sentences that are their evidence,
and the units of a window that address the reader (never an answer).

Used by ``ExtractiveReader`` (``extractive_reader.py``); the offsets all come from ``components.core.text.splitting``.

    answer = span_answer("When was it finished?", span, window)   # an ExtractedAnswer with meta["evidence"]
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from typing import Any

from haystack import Document
from haystack.dataclasses import ExtractedAnswer

from components.core.text.injection import is_directive
from components.core.offsets import doc_origin
from components.core.reading.keyed_lookup import in_asked_column, keyed_lines, named
from components.core.reading.span_decoding import SpanCandidate, calibrated, range_logit
from components.core.text.splitting import (PROSE, TABLE, Span, crosses_hard_break, split_blocks, split_units,
                                           table_header_line)


def span_meta(doc: Document, start: int, end: int, evidence: list[tuple[int, int]]) -> dict[str, Any]:
    """``meta`` of an answer at ``[start, end)`` of ``doc.content``: original-document offsets and evidence."""
    doc_id, base = doc_origin(doc)
    return {
        "doc_id": doc_id,
        "char_start": base + start,
        "char_end": base + end,
        "evidence": [{"doc_id": doc_id, "char_start": base + s, "char_end": base + e} for s, e in evidence],
    }


@lru_cache(maxsize=512)
def text_units(text: str) -> tuple[tuple[int, int], ...]:
    """All units (sentences, table rows, code parts) of ``text`` as ``(start, end)``; memoised per text."""
    return tuple((u.start, u.end) for block in split_blocks(text) for u in split_units(text, block))


@lru_cache(maxsize=512)
def directive_units(text: str) -> tuple[tuple[int, int], ...]:
    """The units of ``text`` that address the reader (``components.core.text.injection``); memoised per text."""
    return tuple((s, e) for s, e in text_units(text) if is_directive(text[s:e]))


def in_directive(text: str, start: int, end: int) -> bool:
    return any(s < end and start < e for s, e in directive_units(text))


@lru_cache(maxsize=512)
def structured_blocks(text: str) -> tuple[tuple[int, int, str], ...]:
    """``(start, end, kind)`` of the table and code blocks of ``text``; memoised per text."""
    return tuple((b.start, b.end, b.kind) for b in split_blocks(text) if b.kind != PROSE)


def crosses_structure(text: str, start: int, end: int) -> bool:
    """Whether ``[start, end)`` runs across two cells or two rows of a table, two lines of a code block, or, in
    prose, a line break that is not a wrap (two list items, a heading and its text: ``crosses_hard_break``): an
    answer is one cell's, one line's or one item's text (a header row glued to its value is never an answer)."""
    for s, e, kind in structured_blocks(text):
        if s < end and start < e:
            piece = text[max(s, start):min(e, end)]
            if "\n" in piece.strip("\n") or (kind == TABLE and "|" in piece.strip(" |")):
                return True
    return crosses_hard_break(text, start, end)


def table_header(text: str, row: Span) -> tuple[int, int] | None:
    """The header row (first line, a rule line after it) of the table block that holds ``row``, unless ``row`` is
    that header."""
    for block in split_blocks(text):
        if block.start <= row.start < block.end:
            header = table_header_line(text, block.start, block.end)  # None: the text begins inside the table
            return None if header is None or header[0] == row.start else header
    return None


def containing_units(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The units of ``text`` that overlap ``[start, end)``; the span itself if none does."""
    hits = [(s, e) for s, e in text_units(text) if s < end and start < e]
    return hits or [(start, end)]


def span_answer(query: str, span: SpanCandidate, doc: Document, null_score: float | None = None) -> ExtractedAnswer:
    """The ``ExtractedAnswer`` of a decoded span of ``doc`` (offsets into ``doc.content``); ``null_score``, when
    given, is the no-answer probability of the window it was read from (``meta["null_score"]``)."""
    s, e = span.char_start, span.char_end
    meta = span_meta(doc, s, e, containing_units(doc.content, s, e))
    if null_score is not None:
        meta["null_score"] = float(null_score)
    if span.keyed:
        meta["keyed_lookup"] = True  # the value of a row the question names by its key
    return ExtractedAnswer(
        query=query,
        score=span.score,
        data=doc.content[s:e],
        document=doc,
        document_offset=ExtractedAnswer.Span(s, e),
        meta=meta,
    )


def no_answer_answer(query: str, score: float) -> ExtractedAnswer:
    """The abstention: ``data=None``, ``meta["no_answer"]=True``, ``score`` the no-answer probability."""
    return ExtractedAnswer(query=query, score=float(score), data=None, document=None, meta={"no_answer": True, "evidence": []})


def named_rows_only(query: str, pooled: list, windows: list[Document], per_window: list[list],
                    calibration_factor: float, terms=None) -> list:
    """When ``query`` names a table row or a config line by its key (``keyed_lookup``): the structured-text spans
    of ``pooled`` (``(span, window, null logit)``) are replaced by the whole value cells of the named rows; a cell
    scores what the reader gives the best span inside it (or the whole cell, ``range_logit``, when that is more) on
    the window that holds it — the cell is what is shown, the reader's choice among cells stands. When the table's
    header row (the window's own, or ``meta["table_header"]`` for a window that begins inside the table) names the
    column asked about (``terms``: a text's content terms), only that column's cell is a candidate. Spans in the
    items of a ``key: value`` list go too; other prose spans stay. A question that names no key gets ``pooled``
    unchanged."""
    hits = [named(query, keyed_lines(w.content), w.content) for w in windows]
    if not any(hits):
        return pooled
    if terms is not None:
        asked = terms(query)
        hits = [[in_asked_column(row, w.content, (w.meta or {}).get("table_header"), asked, terms) for row in rows]
                for w, rows in zip(windows, hits)]
    out = [p for p in pooled  # spans inside tables, code and key: value lists give way to the named rows' cells
           if not any(s <= p[0].char_start < e for s, e, _kind in structured_blocks(p[1].content))
           and not any(k.line[0] <= p[0].char_start < k.line[1] for k in keyed_lines(p[1].content))]
    for i, rows in enumerate(hits):
        for row in rows:
            for s, e in row.values:
                scored = []
                for d in per_window[i]:
                    whole = range_logit(d, s, e, calibration_factor)
                    if whole is None:
                        continue
                    best = max([whole.logit] + [c.logit for c in d.spans if s <= c.char_start and c.char_end <= e])
                    scored.append((replace(whole, logit=best, score=float(calibrated(best, calibration_factor)),
                                           keyed=True), d.null_logit))
                if scored:
                    cell, null = max(scored, key=lambda x: x[0].logit)
                    out.append((cell, windows[i], null))
    out.sort(key=lambda p: p[0].logit, reverse=True)
    return out
