"""The one text splitter of spanqa: blocks, paragraphs, sentences and chunks as character offsets.

Everything here works on offsets into the ORIGINAL text and never copies or normalises it, so that
``text[start:end]`` is always the exact span a user can be shown. Indexing, the sentence-window
expander and the readers all call these functions; nothing else in the project splits text.

- ``split_blocks``  — paragraphs of prose, fenced code blocks and pipe tables (blank-line separated).
- ``split_units``   — the atomic units of a block: sentences (pysbd) for prose, rows for tables, the
  whole block (or its blank-line parts) for code.
- ``key_definitions`` / ``named_keys`` — the ``key: value`` lines of code blocks, and the `keys` a sentence
  names in backticks: prose often says "the limit shown in `rate_limit_per_minute`" while the value sits in
  a JSON or YAML block.
- ``chunk_units``   — runs of units up to ``max_chars`` with ``overlap`` (fraction of characters) shared
  between neighbouring chunks, never crossing a change of block kind.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

PROSE, TABLE, CODE = "prose", "table", "code"

_FENCE = re.compile(r"^[ \t]*(```|~~~)")
_TABLE_ROW = re.compile(r"^[ \t]*\|.*\|[ \t]*$")
_TABLE_RULE = re.compile(r"^[ \t]*\|?[ \t:|-]+\|?[ \t]*$")


@dataclass(frozen=True)
class Span:
    """A half-open character range ``[start, end)`` of one text, with the kind of block it lies in."""

    start: int
    end: int
    kind: str = PROSE

    def slice(self, text: str) -> str:
        return text[self.start : self.end]


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    """Shrink ``[start, end)`` so that it neither starts nor ends with white space."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _lines(text: str, start: int, end: int):
    """Yield ``(line_start, line_end)`` of each line in ``[start, end)`` without its newline."""
    pos = start
    while pos < end:
        nl = text.find("\n", pos, end)
        stop = end if nl == -1 else nl
        yield pos, stop
        pos = stop + 1


def is_rule(line: str) -> bool:
    """Whether ``line`` is a pipe table's rule line (``|---|:--|``)."""
    return "-" in line and _TABLE_RULE.match(line) is not None


def table_header_line(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The header row of the pipe table ``text[start:end]``: its first line when a rule line (``|---|``) follows
    it; None for a table seen from inside (a window that begins at one of its rows)."""
    lines = _lines(text, start, end)
    first, second = next(lines, None), next(lines, None)
    return first if first is not None and second is not None and is_rule(text[second[0]:second[1]]) else None


def table_line_at(text: str, pos: int) -> tuple[int, int] | None:
    """The line holding ``pos`` when it is a row of a pipe table (not its rule line), else None."""
    line_start = text.rfind("\n", 0, pos) + 1
    nl = text.find("\n", pos)
    line_end = len(text) if nl == -1 else nl
    line = text[line_start:line_end]
    return (line_start, line_end) if _TABLE_ROW.match(line) and not is_rule(line) else None


def table_lines_above(text: str, line_start: int) -> list[tuple[int, int]]:
    """The lines of the pipe table above the line beginning at ``line_start`` (rule line included), top first."""
    lines, top = [], line_start
    while top > 0:
        prev = text.rfind("\n", 0, top - 1) + 1
        line = text[prev: top - 1]
        if not (_TABLE_ROW.match(line) or is_rule(line)):
            break
        lines.append((prev, top - 1))
        top = prev
    return lines[::-1]


def header_above(text: str, pos: int) -> tuple[int, int] | None:
    """The header row of the pipe table whose row holds ``pos``, when that header lies above the row (a window that
    begins inside a table does not hold its column names)."""
    row = table_line_at(text, pos)
    above = table_lines_above(text, row[0]) if row else []
    if len(above) >= 2 and is_rule(text[above[1][0]:above[1][1]]):
        return above[0]
    return None


def split_blocks(text: str, start: int = 0, end: int | None = None) -> list[Span]:
    """Split ``text[start:end]`` into blocks: prose paragraphs, fenced code blocks and pipe tables.

    Paragraphs are separated by blank lines; a fenced block (```` ``` ```` or ``~~~``) is one block even
    if it contains blank lines; consecutive ``| ... |`` lines form a table block.
    """
    end = len(text) if end is None else end
    blocks: list[Span] = []
    cur_start: int | None = None
    cur_kind = PROSE
    in_fence = False
    last_end = start

    def close(stop: int) -> None:
        nonlocal cur_start
        if cur_start is not None:
            s, e = _strip(text, cur_start, stop)
            if e > s:
                blocks.append(Span(s, e, cur_kind))
        cur_start = None

    for ls, le in _lines(text, start, end):
        line = text[ls:le]
        if in_fence:
            if _FENCE.match(line):
                in_fence = False
                close(le)
            continue
        if _FENCE.match(line):
            close(last_end)
            cur_start, cur_kind, in_fence = ls, CODE, True
            continue
        if not line.strip():
            close(last_end)
            last_end = le
            continue
        kind = TABLE if _TABLE_ROW.match(line) else PROSE
        if cur_start is not None and kind != cur_kind:
            close(last_end)
        if cur_start is None:
            cur_start, cur_kind = ls, kind
        last_end = le
    close(end if in_fence else last_end)
    return blocks


_LOCAL = threading.local()
# pysbd's cost grows faster than linearly with the length of what it is given (a 200 KB block without blank
# lines took minutes), so longer prose is cut into pieces of at most this many characters first, at a line
# break or at white space after a full stop when there is one: splitting stays linear in the input size.
SEGMENT_CHARS = 10_000
_SOFT_CUT = re.compile(r"[.!?][\"')\]]*\s+|\n")


# pysbd hands ~2,200 distinct pattern strings to the ``re`` functions, more than the 512 that ``re`` keeps
# compiled: with the default cache it recompiles ~5 patterns per sentence, which is most of its time on short
# texts (measured: 1,000 two-sentence documents 1.13 s -> 0.66 s with room for all of them).
RE_CACHE = 4096


def _segmenter():
    """One pysbd Segmenter per thread: a Segmenter keeps per-call state, so a shared one mixes up offsets."""
    seg = getattr(_LOCAL, "segmenter", None)
    if seg is None:
        import pysbd

        if getattr(re, "_MAXCACHE", RE_CACHE) < RE_CACHE:
            re._MAXCACHE = RE_CACHE

        seg = _LOCAL.segmenter = pysbd.Segmenter(language="en", clean=False, char_span=True)
    return seg


def _pieces(text: str, start: int, end: int, limit: int = SEGMENT_CHARS):
    """``(start, end)`` pieces of ``text[start:end]`` of at most ``limit`` characters (a longer run without any
    line break, full stop or space is cut hard), each cut made after the last boundary inside the limit."""
    while end - start > limit:
        cut = None
        for m in _SOFT_CUT.finditer(text, start + limit // 2, start + limit):
            cut = m.end()
        if cut is None:
            space = text.rfind(" ", start + 1, start + limit)
            cut = space + 1 if space > start else start + limit
        yield start, cut
        start = cut
    if end > start:
        yield start, end


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> list[Span]:
    """Sentences of the prose ``text[start:end]`` (pysbd), trimmed, as absolute offsets.

    pysbd reports a span for each sentence; we re-anchor each sentence by searching for it from the
    previous end, so that a rare mismatch in pysbd's own offsets can never shift a span.
    """
    end = len(text) if end is None else end
    spans: list[Span] = []
    for p_start, p_end in _pieces(text, start, end):
        spans.extend(_sentences_of_piece(text, p_start, p_end))
    if spans:  # never lose characters between sentences: the last one runs to the end of the piece
        s, e = _strip(text, spans[-1].start, end)
        spans[-1] = Span(spans[-1].start, e, PROSE)
    return spans


# Version of the units this module cuts, part of every index's settings (``IndexSettings.identity``): an index
# built with other units is rebuilt (files) or refused with what to do (PostgreSQL), never mixed.
# 2: a line that merely wraps inside a paragraph is no longer a sentence end (``wraps_joined``).
SPLITTER_VERSION = 3

_LINE_START_MARK = re.compile(r"[ \t]*(?:[-*+\u2022][ \t]|\d{1,3}[.)][ \t]|#|>|\|)")
_KEY_VALUE_LINE = re.compile(r"[ \t]*[\w.-]+[ \t]*[:=][ \t]*\S")


_QUOTE = re.compile(r"^[ \t]*>")


def _quoted(line: str) -> bool:
    return _QUOTE.match(line) is not None


def wraps_joined(piece: str) -> str:
    """``piece`` (lines of text; a blank line keeps the breaks around it) with every line break that merely wraps a
    paragraph made a space — the same length, so offsets are unchanged — for the sentence splitter, which takes
    each line break for a sentence end (hard-wrapped READMEs, man pages and plain-text files were cut into
    line fragments). A break stays where a line begins a list item, a heading, a quote, a table row or a
    ``key: value`` / ``key = value`` line, and after a heading; a definition's ``:`` line
    joins its term (``maxwait`` / ``:   How long …``). A quote's lines (``> …``) wrap by the same rules as
    the text they quote: a bare ``>`` is its blank line."""
    if "\n" not in piece:
        return piece
    lines = piece.split("\n")
    out = [lines[0]]
    for prev, line in zip(lines, lines[1:]):
        a, b = prev, line
        if _quoted(a) and _quoted(b):  # inside a quote the same rules apply to the quoted lines
            a, b = _QUOTE.sub("", a, count=1), _QUOTE.sub("", b, count=1)
        keep = (_LINE_START_MARK.match(b) is not None or a.lstrip().startswith("#")
                or _KEY_VALUE_LINE.match(b) is not None
                or not a.strip() or not b.strip())
        out.append(("\n" if keep else " ") + line)
    return "".join(out)


def crosses_hard_break(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` runs across a line break that is more than a paragraph's wrap — one
    ``wraps_joined`` keeps: into a list item, a heading, a quote, a table row or a ``key: value`` line, or across a
    blank line. An answer never does (``- E2BIG: argument list too long`` / ``- EACCES: …`` are two answers)."""
    if "\n" not in text[start:end]:
        return False
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end == -1 else line_end
    return "\n" in wraps_joined(text[line_start:line_end])[start - line_start : end - line_start]


def _sentences_of_piece(text: str, start: int, end: int) -> list[Span]:
    piece = wraps_joined(text[start:end])  # same length as text[start:end]: offsets map one to one
    spans: list[Span] = []
    pos = 0
    for seg in _pysbd_spans(piece):
        sent = seg.sent.strip()
        if not sent:
            continue
        found = piece.find(sent, pos)
        if found == -1:  # pysbd altered the text: fall back to its own offsets
            found = max(seg.start, pos)
            s, e = _strip(piece, found, min(seg.end, len(piece)))
        else:
            s, e = found, found + len(sent)
        if e > s:
            spans.append(Span(start + s, start + e, PROSE))
            pos = e
    return spans


def _pysbd_spans(piece: str) -> list:
    """What ``Segmenter.segment`` returns with ``char_span=True`` (pysbd's ``TextSpan`` s), located faster.

    pysbd places each sentence by compiling ``re.escape(sentence) + r"\s*"`` and scanning the text from its
    start for the first match that ends after the previous one: a fresh pattern per sentence (each evicting one
    of pysbd's own from ``re``'s cache) and a quadratic scan — half of its time on CISI abstracts. The same
    rule (the same chain of non-overlapping matches from the start, the first one ending after the previous
    sentence) is followed here with ``str.find``. Only ``Segmenter.processor`` of pysbd's is used (its public
    class); tests/core/test_text.py checks the spans equal ``Segmenter.segment``'s on tricky texts.
    """
    from pysbd.utils import TextSpan

    if not piece:
        return []
    out, prior_end = [], 0
    for sent in _segmenter().processor(piece).process():
        match = _first_match_after(piece, sent, prior_end)
        if match is None:  # pysbd drops a sentence it cannot find in the text
            continue
        out.append(TextSpan(piece[match[0]:match[1]], match[0], match[1]))
        prior_end = match[1]
    return out


def _first_match_after(text: str, sent: str, prior_end: int) -> tuple[int, int] | None:
    """``re.finditer(re.escape(sent) + r"\s*", text)``'s first match ending after ``prior_end``, as ``(start,
    end)``: the same non-overlapping chain of matches from the start of ``text``, found with ``str.find``."""
    if not sent:
        return next(((m.start(), m.end()) for m in re.finditer(r"\s*", text) if m.end() > prior_end), None)
    at = text.find(sent)
    while at != -1:
        stop = at + len(sent)
        while stop < len(text) and text[stop].isspace():  # what \s* takes (both are Py_UNICODE_ISSPACE)
            stop += 1
        if stop > prior_end:
            return at, stop
        at = text.find(sent, stop)  # finditer goes on after the end of this match
    return None


def split_units(text: str, block: Span) -> list[Span]:
    """Atomic units of one block: sentences of prose, rows of a table, blank-line parts of code."""
    if block.kind == PROSE:
        return sentence_spans(text, block.start, block.end)
    if block.kind == TABLE:
        rows = []
        for ls, le in _lines(text, block.start, block.end):
            s, e = _strip(text, ls, le)
            if e > s and not _TABLE_RULE.match(text[s:e]):
                rows.append(Span(s, e, TABLE))
        return rows
    parts, pos = [], block.start  # code: split at blank lines inside the fence, keep the fences attached
    for m in re.finditer(r"\n[ \t]*\n", text[block.start : block.end]):
        s, e = _strip(text, pos, block.start + m.start())
        if e > s:
            parts.append(Span(s, e, CODE))
        pos = block.start + m.end()
    s, e = _strip(text, pos, block.end)
    if e > s:
        parts.append(Span(s, e, CODE))
    return parts


# a `key: value`, "key": value or key = value line whose value is a scalar (not an opening { or [)
_KEY_LINE = re.compile(
    r"""^[ \t]*["']?([A-Za-z_][\w.-]*)["']?[ \t]*[:=](?!//)[ \t]*([^\s{\[].*?)[ \t]*,?[ \t]*$""", re.MULTILINE
)
_NAMED_KEY = re.compile(r"`([A-Za-z_][\w.-]*)`")


def key_definitions(text: str, block: Span) -> dict[str, Span]:
    """``key → span of its line`` for every ``key: value`` / ``"key": value`` / ``key = value`` line of a code
    block or code unit (the first definition of a key wins; the span drops indentation and a trailing comma)."""
    found: dict[str, Span] = {}
    if block.kind != CODE:
        return found
    for ls, le in _lines(text, block.start, block.end):
        m = _KEY_LINE.match(text, ls, le)
        if m and m.group(1) not in found:
            s, e = _strip(text, ls, le)
            if text[e - 1] == ",":
                e -= 1
            found[m.group(1)] = Span(s, e, CODE)
    return found


def named_keys(sentence: str) -> list[str]:
    """The names a sentence quotes in backticks (`` `max_retries` `` → ``max_retries``), in order."""
    return list(dict.fromkeys(_NAMED_KEY.findall(sentence)))


def chunk_units(units: list[Span], max_chars: int = 800, overlap: float = 0.15,
                breaks: frozenset[int] | set[int] = frozenset()) -> list[Span]:
    """Group consecutive units into chunks of at most ``max_chars`` characters (a longer unit stays whole).

    Neighbouring chunks share whole trailing units worth up to ``overlap`` of the chunk's characters (at
    least one unit when the chunk has three or more units and the fraction is positive), so an answer
    that straddles a boundary is whole in one of them. A chunk never mixes block kinds, and never runs across
    an offset in ``breaks`` (a heading or a page start: a unit starting there opens a new chunk, with no overlap
    carried over it), so each chunk lies in one section of one page.
    """
    if not 0 <= overlap < 0.5:
        raise ValueError(f"overlap must be in [0, 0.5), got {overlap}")
    chunks: list[Span] = []
    i, n = 0, len(units)
    while i < n:
        j = i + 1
        while (j < n and units[j].kind == units[i].kind and units[j].end - units[i].start <= max_chars
               and units[j].start not in breaks):
            j += 1
        chunks.append(Span(units[i].start, units[j - 1].end, units[i].kind))
        if j >= n:
            break
        nxt = j
        if overlap > 0 and units[j].kind == units[i].kind and units[j].start not in breaks:
            budget = overlap * (units[j - 1].end - units[i].start)
            k = j
            while k - 1 > i and units[j - 1].end - units[k - 1].start <= budget:
                k -= 1
            if k == j and j - i >= 3:
                k = j - 1
            nxt = k
        i = nxt
    return chunks

