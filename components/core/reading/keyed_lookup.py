"""Rows and settings a question names by their key: a table row by its first cell, a config line by its key.

Structured text answers by lookup. "What does error E4031 mean?" names a row of an error-code table by the code in
its first cell; "What is the default max_client_conn?" names the line ``max_client_conn = 100`` of a config block.
A reader model matches such identifiers poorly (WordPiece cuts ``E4031`` into pieces that many rows share), so
when a question names a key *exactly*, the answer is taken from that row's other cells or that line's value — the
model still chooses among them and scores them, and the verifier still judges them.

- ``keyed_lines(text)``: every table row (not the header), every ``key: value`` / ``key = value`` line of a
  code block, and every item of a prose block made only of ``key: value`` items (``- ENOENT: no such file``,
  ``ENOENT — no such file``), as ``Keyed(key, values, line)`` character ranges of ``text``;
- ``named(query, keyed, text)``: those whose key the question names — the key's whole text, case-insensitive,
  between non-word characters, at least two characters with a letter or digit, and not a stop word.

    rows = named("What does error E4031 mean?", keyed_lines(text), text)
    rows[0].values   # ((start, end),) of "Quota for the project is exhausted"
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from components.core.text.analysis import english_stopwords
from components.core.text.splitting import (CODE, PROSE, TABLE, _KEY_LINE, _TABLE_RULE, _lines, split_blocks,
                                            table_header_line)


# a prose line that is a `key: value` item, list-marked or not (``- UV_E2BIG: argument list too long``,
# ``**maxwait**: how long …``, ``404: Not Found``, ``ENOTDIR — not a directory``); the value is the rest of the line
_LIST_KEY_LINE = re.compile(r"[ \t]*(?:[-*+\u2022][ \t]+|\d{1,3}[.)][ \t]+)?[`*\"']*([A-Za-z0-9_][\w.-]*)[`*\"']*"
                            r"(?:[ \t]*[:=](?!//)|[ \t]+[\u2014\u2013-])[ \t]*([^\s{\[].*?)[ \t]*$")


_LIST_MARK = re.compile(r"[ \t]*(?:[-*+\u2022]|\d{1,3}[.)])[ \t]")


@dataclass(frozen=True)
class Keyed:
    key: tuple[int, int]  # the first cell / the key
    values: tuple[tuple[int, int], ...]  # the other non-empty cells / the value (quotes left out)
    line: tuple[int, int]  # the whole row / line
    columns: tuple[int, ...] = ()  # a table row's: the column of each value (the key's is 0)
    header: tuple[int, int] | None = None  # a table row's: the header row of its table, when ``text`` holds it


def row_cells(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """``(start, end)`` of each cell of the pipe-table row ``text[start:end]`` (white space trimmed)."""
    cells, pos = [], text.find("|", start, end) + 1
    while 0 < pos < end:
        nxt = text.find("|", pos, end)
        if nxt == -1:
            break
        s, e = pos, nxt
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        cells.append((s, e))
        pos = nxt + 1
    return cells


@lru_cache(maxsize=512)
def keyed_lines(text: str) -> tuple[Keyed, ...]:
    """The table rows and config lines of ``text`` with their key and values; memoised per text."""
    out: list[Keyed] = []
    for block in split_blocks(text):
        if block.kind == TABLE:
            header = table_header_line(text, block.start, block.end)  # None: the text begins inside the table
            for ls, le in _lines(text, block.start, block.end):
                if (ls, le) == header or _TABLE_RULE.match(text[ls:le]):
                    continue  # the header row names the columns, not a row
                cells = row_cells(text, ls, le)
                columns = tuple(i for i, c in enumerate(cells) if i > 0 and c[1] > c[0])
                if cells and cells[0][1] > cells[0][0] and columns:
                    out.append(Keyed(cells[0], tuple(cells[i] for i in columns), (ls, le), columns, header))
        elif block.kind == PROSE:  # `key: value` items and nothing else (``- E2BIG: argument list too long``): two
            # or more lines, or one list item (a window may hold one item of a longer list)
            lines = [(ls, le) for ls, le in _lines(text, block.start, block.end) if text[ls:le].strip()]
            found = [_LIST_KEY_LINE.match(text, ls, le) for ls, le in lines]
            listed = len(lines) == 1 and _LIST_MARK.match(text, *lines[0]) is not None  # one item a window holds
            if (len(lines) >= 2 or listed) and all(found):
                for m, line in zip(found, lines):
                    out.append(Keyed(m.span(1), (m.span(2),), line))
        elif block.kind == CODE:
            for ls, le in _lines(text, block.start, block.end):
                m = _KEY_LINE.match(text, ls, le)
                if not m:
                    continue
                s, e = m.span(2)
                if e - s >= 2 and text[s] == text[e - 1] and text[s] in "\"'":
                    s, e = s + 1, e - 1
                if e > s:
                    out.append(Keyed(m.span(1), ((s, e),), (ls, le)))
    return tuple(out)


def _norm(text: str) -> str:
    return " ".join(text.strip().strip("`*_\"'").rstrip(":").split()).casefold()


def names_key(query: str, key: str) -> bool:
    """Whether ``query`` names ``key`` exactly (see the module's rules)."""
    k = _norm(key)
    if len(k) < 2 or not any(ch.isalnum() for ch in k) or k in english_stopwords():
        return False
    return re.search(r"(?<!\w)" + re.escape(k) + r"(?!\w)", " ".join(query.split()).casefold()) is not None


def named(query: str, keyed: tuple[Keyed, ...] | list[Keyed], text: str) -> list[Keyed]:
    """The rows and lines of ``keyed`` (of ``text``) whose key ``query`` names."""
    return [k for k in keyed if names_key(query, text[k.key[0] : k.key[1]])]


def asked_column(question_terms: set[str], names: list[str], terms) -> int | None:
    """The column (≥ 1: the first names the row) whose header shares the most content terms with the question, the
    leftmost among equals (under a two-line header the plain name is the first group's); None when no header
    shares a term. ``terms(text)`` makes a text's content terms the way ``question_terms`` were made.

    >>> words = lambda t: set(t.lower().split())
    >>> asked_column({"long", "gun", "pennsylvania"}, ["State", "Handgun", "Long Gun", "Long Gun"], words)
    2
    """
    overlap = [len(terms(name) & question_terms) if i else 0 for i, name in enumerate(names)]
    best = max(range(len(names)), key=lambda i: (overlap[i], -i), default=0)
    return best if best and overlap[best] else None


def in_asked_column(row: Keyed, text: str, header_text: str | None, question_terms: set[str], terms) -> Keyed:
    """``row`` with only its value under the column the question asks about, when a header row names one — the
    table's own (``row.header``) or, for a text that begins inside the table, ``header_text`` (its header row,
    from the source); ``row`` unchanged when no header aligns with the row's cells or none is asked about."""
    if not row.columns:
        return row
    if row.header is not None:
        names = [text[s:e] for s, e in row_cells(text, *row.header)]
    elif header_text:
        names = [header_text[s:e] for s, e in row_cells(header_text, 0, len(header_text))]
    else:
        return row
    if len(names) != len(row_cells(text, *row.line)):
        return row
    column = asked_column(question_terms, names, terms)
    if column is None:
        return row
    if column not in row.columns:  # the column asked about is empty in this row: it answers nothing
        return Keyed(row.key, (), row.line, (), row.header)
    i = row.columns.index(column)
    return Keyed(row.key, (row.values[i],), row.line, (column,), row.header)
