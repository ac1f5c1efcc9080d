"""Rows and settings a question names by their key: a table row by its first cell, a config line by its key.

Structured text answers by lookup. "What does error E4031 mean?" names a row of an error-code table by the code in
its first cell; "What is the default max_client_conn?" names the line ``max_client_conn = 100`` of a config block.
A reader model matches such identifiers poorly (WordPiece cuts ``E4031`` into pieces that many rows share), so
when a question names a key *exactly*, the answer is taken from that row's other cells or that line's value — the
model still chooses among them and scores them, and the verifier still judges them.

- ``keyed_lines(text)``: every table row (not the header) and every ``key: value`` / ``key = value`` line of a
  code block, as ``Keyed(key, values, line)`` character ranges of ``text``;
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
from components.core.text.splitting import CODE, TABLE, _KEY_LINE, _TABLE_RULE, _lines, split_blocks


@dataclass(frozen=True)
class Keyed:
    key: tuple[int, int]  # the first cell / the key
    values: tuple[tuple[int, int], ...]  # the other non-empty cells / the value (quotes left out)
    line: tuple[int, int]  # the whole row / line


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
            for n, (ls, le) in enumerate(_lines(text, block.start, block.end)):
                if n == 0 or _TABLE_RULE.match(text[ls:le]):
                    continue  # the header row names the columns, not a row
                cells = row_cells(text, ls, le)
                values = tuple(c for c in cells[1:] if c[1] > c[0])
                if cells and cells[0][1] > cells[0][0] and values:
                    out.append(Keyed(cells[0], values, (ls, le)))
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

