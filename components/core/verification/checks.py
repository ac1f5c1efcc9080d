"""Checking an answer against the text it was read from, and deciding where the query goes next.

Pure functions and small dataclasses, no Haystack components and no models; ``VerifierRouter``
(``components/routers/verifier_router.py``) is the glue. Everything works on character offsets into the
ORIGINAL source documents, and every sentence comes from ``components.core.text.splitting`` (no other splitting).

Pieces:

- ``route_decision(level, verdict, max_level)`` — the routing table of the widening loop:
  SUPPORTED → ``answers``; at ``window`` (or ``chunk``) PARTIAL → widen to ``paragraph`` and UNSUPPORTED →
  widen to ``passage``; at ``paragraph`` anything else → ``passage``; at ``passage`` → ``not_found``.
  ``max_level`` caps the widening (a capped target that is not wider than the current level → not_found).
- ``visible_texts(pieces)`` — the read documents merged per source document into contiguous visible
  stretches (overlapping windows of one document become one stretch), each split into units (sentences,
  table rows, code parts) with ``split_blocks`` / ``split_units``.
- ``locate_extractive`` / ``locate_generative`` — where the answer is: its exact span (by the reader's
  offsets, else a case-insensitive search), the unit(s) containing it (the *evidence*) and up to
  ``lead_in_units`` preceding visible units of the same paragraph, or a heading right above it (the
  *lead-in*, which usually names the subject: "Acme Pro subscriptions. Refunds are available within 30
  days."). The lead-in never reaches into the previous paragraph, which may be about something else.
  An answer that is a ``key: value`` line of a code block also has *references*: the sentences that name
  that key in backticks ("the number shown in `rate_limit_per_minute`"); they count like a lead-in.
  A generative answer that is not verbatim is located by token coverage: the shortest run of units of a
  cited passage holding as many of its terms as that passage holds.
- the verdicts on a located answer are in ``components.core.verification.judgements`` (lexical rules, NLI, LLM judge), and
  the terms a supporting span must mention in ``components.core.text.key_terms``.

Example::

    vis = visible_texts([Piece("d1", 0, "Acme Pro plans. Refunds take 30 days.", "Billing")])
    ev = locate_extractive(vis, "30 days", doc_id="d1", start=29, end=36, lead_in_units=2)
    route_decision("window", "PARTIAL")  # ("widen", "paragraph")
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from components.core.text.analysis import Analyzer
from components.core.text.injection import is_directive
from components.core.text.splitting import CODE, PROSE, TABLE, Span, key_definitions, named_keys, split_blocks, split_units

SUPPORTED, PARTIAL, UNSUPPORTED, NOT_FOUND = "SUPPORTED", "PARTIAL", "UNSUPPORTED", "NOT_FOUND"
VERDICTS = (SUPPORTED, PARTIAL, UNSUPPORTED)

# narrow → wide; a "chunk" (no expander in the pipeline) is treated like a "window"
LEVELS = ("chunk", "window", "paragraph", "passage")
WIDEN_LEVELS = ("paragraph", "passage")

# --------------------------------------------------------------------------------------------- routing


def level_rank(level: str) -> int:
    """Position of ``level`` in ``LEVELS`` (chunk and window share the narrowest rank)."""
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}: use one of {', '.join(LEVELS)}")
    return max(LEVELS.index(level), 1)


def route_decision(level: str, verdict: str, max_level: str = "passage") -> tuple[str, str | None]:
    """Where a verdict at ``level`` sends the query: ``("answers", None)``, ``("widen", target)`` or
    ``("not_found", None)``.

    ``max_level`` ("paragraph" or "passage") caps the widening target; when the capped target is not
    wider than ``level`` the query ends as not found.
    """
    if max_level not in WIDEN_LEVELS:
        raise ValueError(f"max_level must be one of {WIDEN_LEVELS}, got {max_level!r}")
    if verdict == SUPPORTED:
        return "answers", None
    if verdict not in VERDICTS:
        raise ValueError(f"unknown verdict {verdict!r}")
    rank = level_rank(level)
    if rank == 1:
        target = "paragraph" if verdict == PARTIAL else "passage"
    elif level == "paragraph":
        target = "passage"
    else:
        return "not_found", None
    if level_rank(target) > level_rank(max_level):
        target = max_level
    if level_rank(target) <= rank:
        return "not_found", None
    return "widen", target


# ------------------------------------------------------------------------------------- visible text


@dataclass(frozen=True)
class Piece:
    """One read document: ``text`` is the source document ``doc_id`` from offset ``start``."""

    doc_id: str
    start: int
    text: str
    title: str = ""


@dataclass(frozen=True)
class Visible:
    """A contiguous stretch ``[start, end)`` of one source document that the reader saw, with its units."""

    doc_id: str
    start: int
    end: int
    text: str
    title: str
    units: tuple[Span, ...]
    unit_blocks: tuple[int, ...] = ()  # index of the block (``split_blocks``) each unit belongs to
    headings: frozenset[int] = frozenset()  # indexes of blocks that are headings (see ``lead_in``)

    def slice(self, start: int, end: int) -> str:
        """Original text of ``[start, end)`` (absolute offsets inside this stretch)."""
        return self.text[start - self.start : end - self.start]

    def contains(self, start: int, end: int) -> bool:
        return self.start <= start and end <= self.end


def _is_heading(text: str, units: list[Span]) -> bool:
    """A heading block: one prose line that does not end like a sentence ("Acme Pro Billing", "## Refunds")."""
    return (
        len(units) == 1
        and units[0].kind == PROSE
        and "\n" not in text.strip()
        and not text.rstrip().endswith((".", "!", "?"))
    )


def _units(text: str, offset: int) -> tuple[tuple[Span, ...], tuple[int, ...], frozenset[int]]:
    units: list[Span] = []
    owners: list[int] = []
    headings = set()
    for b, block in enumerate(split_blocks(text)):
        mine = split_units(text, block)
        if _is_heading(block.slice(text), mine):
            headings.add(b)
        units.extend(Span(u.start + offset, u.end + offset, u.kind) for u in mine)
        owners.extend([b] * len(mine))
    return tuple(units), tuple(owners), frozenset(headings)


def visible_texts(pieces: Iterable[Piece]) -> list[Visible]:
    """Merge the read pieces per document into contiguous stretches (overlapping or touching pieces join).

    Stretches are returned per document in order of the document's first appearance, then by offset.
    """
    by_doc: dict[str, list[Piece]] = {}
    for p in pieces:
        if p.text:
            by_doc.setdefault(p.doc_id, []).append(p)
    out: list[Visible] = []
    for doc_id, group in by_doc.items():
        group = sorted(group, key=lambda p: p.start)
        title = next((p.title for p in group if p.title), "")
        cur_start, cur_text = group[0].start, group[0].text
        merged: list[tuple[int, str]] = []
        for p in group[1:]:
            cur_end = cur_start + len(cur_text)
            if p.start <= cur_end:
                tail = p.text[cur_end - p.start :]
                cur_text += tail
            else:
                merged.append((cur_start, cur_text))
                cur_start, cur_text = p.start, p.text
        merged.append((cur_start, cur_text))
        for start, text in merged:
            out.append(Visible(doc_id, start, start + len(text), text, title, *_units(text, start)))
    return out


# ------------------------------------------------------------------------------------------ locating


@dataclass(frozen=True)
class Evidence:
    """Where an answer stands: its span (``None`` when located only by term coverage), the unit(s)
    around it and the preceding visible units of the same document."""

    visible: Visible
    answer: tuple[int, int] | None
    units: tuple[Span, ...]
    lead_in: tuple[Span, ...] = ()
    coverage: float = 1.0  # share of the answer's terms found in ``units`` (1.0 when verbatim)
    references: tuple[Span, ...] = ()  # sentences naming (in backticks) the key whose code line is the answer

    @property
    def doc_id(self) -> str:
        return self.visible.doc_id

    @property
    def evidence_span(self) -> tuple[int, int]:
        return self.units[0].start, self.units[-1].end

    @property
    def context_span(self) -> tuple[int, int]:
        """Lead-in + evidence: one contiguous span of the source document."""
        start = self.lead_in[0].start if self.lead_in else self.units[0].start
        return start, self.units[-1].end

    @property
    def evidence_text(self) -> str:
        return self.visible.slice(*self.evidence_span)

    @property
    def lead_in_text(self) -> str:
        return self.visible.slice(self.lead_in[0].start, self.lead_in[-1].end) if self.lead_in else ""

    @property
    def context_text(self) -> str:
        return self.visible.slice(*self.context_span)

    @property
    def references_text(self) -> str:
        return "\n".join(self.visible.slice(u.start, u.end) for u in self.references)


def span_dict(doc_id: str, start: int, end: int, text: str) -> dict:
    return {"doc_id": doc_id, "char_start": start, "char_end": end, "text": text}


def _pattern(text: str) -> re.Pattern | None:
    """Case-insensitive pattern for ``text`` with any run of white space matching any other."""
    words = text.split()
    if not words:
        return None
    return re.compile(r"\s+".join(re.escape(w) for w in words), re.IGNORECASE)


def _same(a: str, b: str) -> bool:
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def evidence_for(visible: Visible, start: int, end: int, lead_in_units: int) -> Evidence:
    """The units of ``visible`` overlapping ``[start, end)`` and up to ``lead_in_units`` units before them."""
    idx = [i for i, u in enumerate(visible.units) if u.start < end and u.end > start]
    if not idx:  # the span lies in white space between units: take the nearest unit
        dist = [min(abs(u.start - start), abs(u.end - end)) for u in visible.units]
        idx = [dist.index(min(dist))]
    units = tuple(visible.units[i] for i in idx)
    return Evidence(visible, (start, end), units, lead_in(visible, idx[0], lead_in_units),
                    references=referring_units(visible, start, end))


def referring_units(visible: Visible, start: int, end: int) -> tuple[Span, ...]:
    """Prose units of ``visible`` that name, in backticks, a key whose code line (``text.key_definitions``)
    overlaps ``[start, end)``: "the limit shown in `rate_limit_per_minute`" for ``"rate_limit_per_minute": 120``."""
    keys = set()
    for u in visible.units:  # code units are code blocks (or their blank-line parts), already split
        if u.kind == CODE:
            local = Span(u.start - visible.start, u.end - visible.start, CODE)
            for key, line in key_definitions(visible.text, local).items():
                if line.start + visible.start < end and start < line.end + visible.start:
                    keys.add(key)
    if not keys:
        return ()
    return tuple(
        u for u in visible.units
        if u.kind == PROSE and keys.intersection(named_keys(visible.slice(u.start, u.end)))
    )


def lead_in(visible: Visible, first: int, n: int) -> tuple[Span, ...]:
    """Up to ``n`` visible units right before unit ``first``, within its block (paragraph); a heading
    block directly before that block (one line, no final . ! ?) is included when the budget reaches it.
    A lead-in never crosses into another paragraph, whose subject may be a different one."""
    block = visible.unit_blocks[first]
    if visible.units[first].kind == TABLE:
        return table_lead_in(visible, first) if n > 0 else ()
    lead: list[Span] = []
    i = first - 1
    while i >= 0 and len(lead) < n:
        owner = visible.unit_blocks[i]
        if owner != block:
            if owner == block - 1 and owner in visible.headings:
                lead.insert(0, visible.units[i])
            break
        if not is_directive(visible.slice(visible.units[i].start, visible.units[i].end)):  # data, never lead-in
            lead.insert(0, visible.units[i])
        i -= 1
    return tuple(lead)


def table_lead_in(visible: Visible, row: int) -> tuple[Span, ...]:
    """A table row's lead-in: the table's heading (a heading block right before it) and its header row —
    never the neighbouring row, which describes another item."""
    block = visible.unit_blocks[row]
    rows = [i for i, b in enumerate(visible.unit_blocks) if b == block]
    lead = [visible.units[rows[0]]] if rows[0] != row else []
    before = rows[0] - 1
    if before >= 0 and visible.unit_blocks[before] == block - 1 and (block - 1) in visible.headings:
        lead.insert(0, visible.units[before])
    return tuple(lead)


def locate_extractive(
    visibles: list[Visible],
    text: str | None,
    *,
    doc_id: str | None = None,
    start: int | None = None,
    end: int | None = None,
    lead_in_units: int = 2,
) -> Evidence | None:
    """Evidence for an answer given by its offsets and/or its text.

    The reader's offsets win when the read text there equals ``text`` (ignoring case and spacing);
    otherwise ``text`` is searched case-insensitively, in the answer's own document first (nearest to
    ``start``), then in the other read documents in order. ``None`` when it is not in the read text.
    """
    visibles = [v for v in visibles if v.units]
    if doc_id is not None and start is not None and end is not None and end > start:
        for v in visibles:
            if v.doc_id == doc_id and v.contains(start, end) and (text is None or _same(v.slice(start, end), text)):
                return evidence_for(v, start, end, lead_in_units)
    pattern = _pattern(text or "")
    if pattern is None:
        return None
    own = [v for v in visibles if v.doc_id == doc_id]
    hits = [(v, m) for v in own for m in pattern.finditer(v.text)]
    if hits:
        ref = start if start is not None else 0
        v, m = min(hits, key=lambda h: abs(h[0].start + h[1].start() - ref))
        return evidence_for(v, v.start + m.start(), v.start + m.end(), lead_in_units)
    for v in visibles:
        if v.doc_id == doc_id:
            continue
        m = pattern.search(v.text)
        if m:
            return evidence_for(v, v.start + m.start(), v.start + m.end(), lead_in_units)
    return None


def _regions(visibles: list[Visible], cited: list[tuple[str, int, int]] | None) -> list[tuple[Visible, int, int]]:
    """The parts of the visible text the answer cites (all of it when it cites nothing visible)."""
    regions = []
    for doc_id, start, end in cited or []:
        for v in visibles:
            s, e = max(start, v.start), min(end, v.end)
            if v.doc_id == doc_id and e > s:
                regions.append((v, s, e))
    return regions or [(v, v.start, v.end) for v in visibles]


def locate_generative(
    visibles: list[Visible],
    text: str | None,
    analyzer: Analyzer,
    *,
    cited: list[tuple[str, int, int]] | None = None,
    lead_in_units: int = 2,
) -> Evidence | None:
    """Evidence for a free-text answer within its cited regions (all visible text when none are cited).

    Verbatim (case-insensitive) first; else, per cited region, the shortest run of consecutive units that
    holds as many of the answer's terms as the whole region does; the region with the highest share wins
    (``Evidence.coverage``). ``None`` when no term of the answer occurs in any cited region.
    """
    visibles = [v for v in visibles if v.units]
    regions = _regions(visibles, cited)
    pattern = _pattern(text or "")
    if pattern is None:
        return None
    for v, s, e in regions:
        m = pattern.search(v.text, s - v.start, e - v.start)
        if m:
            return evidence_for(v, v.start + m.start(), v.start + m.end(), lead_in_units)
    terms = set(analyzer(text or ""))
    if not terms:
        return None
    best: tuple[float, int, Visible, list[Span]] | None = None
    for v, s, e in regions:
        units = [u for u in v.units if u.start < e and u.end > s]
        unit_terms = [set(analyzer(v.slice(u.start, u.end))) & terms for u in units]
        reach = len(set().union(*unit_terms)) if unit_terms else 0
        if reach == 0:
            continue
        run: list[Span] | None = None
        for i in range(len(units)):
            got: set[str] = set()
            for j in range(i, len(units)):
                got |= unit_terms[j]
                if len(got) == reach:
                    if run is None or j + 1 - i < len(run):
                        run = units[i : j + 1]
                    break
        cov = reach / len(terms)
        if run is not None and (best is None or cov > best[0] or (cov == best[0] and len(run) < best[1])):
            best = (cov, len(run), v, run)
    if best is None:
        return None
    cov, _, v, run = best
    return Evidence(v, None, tuple(run), lead_in(v, v.units.index(run[0]), lead_in_units), coverage=cov)
