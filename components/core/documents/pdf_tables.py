"""Tables in a PDF's text layer, found from where its characters are drawn (no PDF library here: pure geometry).

A PDF has no tables, only characters at positions. PDFium gives each line of a page in reading order with a box per
character; a table shows as consecutive lines cut into *cells* by gaps much wider than a space. This module finds
them so the converter can write each table as a Markdown pipe table — the same row model as HTML and Word — with a
header row when the first line is one:

- ``line_cells``: a line's cells, cut where the gap between two characters is wider than ``gap_em`` times their
  drawn size (a word space is about a quarter of it; a column gutter one or more);
- ``find_tables``: runs of at least ``min_rows`` consecutive lines of two or more cells; the columns are the union
  of the data rows' cell extents (a right-aligned number and a centred header still overlap their column), and each
  cell goes to the column it overlaps most (two cells of one line in one column are one cell);
- a run's first line is its header when it looks like one: set heavier or at another size than the rows, or
  without a digit when most rows have one; otherwise the table gets an empty header row.

Every cell is a range of PDFium character indices, so the converter keeps an exact index for every character of
the text it writes (inserted pipes and rules have none).

    lines = [[Glyph(0, 10, 16, 8, 400), ...], ...]   # per line, its visible characters along the line
    for table in find_tables(lines):
        table.first_line, table.header, table.rows    # rows: one Cell or None per column
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median

GAP_EM = 1.0  # a gap wider than this many times the drawn size separates two cells
MIN_ROWS = 3  # lines (the header included) a run needs to be read as a table


@dataclass(frozen=True)
class Glyph:
    """One visible character of a line: its PDFium index, its extent along the line, its drawn size (points) and
    its font weight (0: unknown)."""

    index: int
    lo: float
    hi: float
    size: float
    weight: int = 0


@dataclass(frozen=True)
class Cell:
    """Characters ``first..last`` (PDFium indices, inclusive) of one line, spanning ``lo..hi`` along it."""

    first: int
    last: int
    lo: float
    hi: float


@dataclass
class Table:
    first_line: int  # index of its first line in the page's lines
    last_line: int  # inclusive
    header: bool  # whether rows[0] is the first line read as a header (else the table has no header row)
    rows: list[list[Cell | None]]  # one entry per line, one Cell (or None: empty) per column


def line_cells(glyphs: list[Glyph], gap_em: float = GAP_EM) -> list[Cell] | None:
    """The cells of one line (its glyphs in reading order), or None when the glyphs do not run forwards along the
    line (text drawn out of order is never read as a table)."""
    if not glyphs:
        return []
    cells: list[Cell] = []
    start = prev = glyphs[0]
    lo, hi = start.lo, start.hi
    for g in glyphs[1:]:
        if g.lo < prev.lo - 0.5 * max(prev.size, 1.0):
            return None
        if g.lo - prev.hi > gap_em * max(min(prev.size, g.size), 1.0):
            cells.append(Cell(start.index, prev.index, lo, hi))
            start, lo, hi = g, g.lo, g.hi
        else:
            lo, hi = min(lo, g.lo), max(hi, g.hi)
        prev = g
    cells.append(Cell(start.index, prev.index, lo, hi))
    return cells


def _columns(rows: list[list[Cell]]) -> list[tuple[float, float]]:
    """The union of the rows' cell extents, as ``(lo, hi)`` intervals left to right."""
    spans = sorted((c.lo, c.hi) for row in rows for c in row)
    out: list[list[float]] = []
    for lo, hi in spans:
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return [(a, b) for a, b in out]


def _place(row: list[Cell], columns: list[tuple[float, float]]) -> list[Cell | None]:
    """``row``'s cells under their columns (most overlap, else the nearest centre); cells sharing one are merged."""
    placed: list[Cell | None] = [None] * len(columns)
    for c in row:
        overlap = [min(c.hi, b) - max(c.lo, a) for a, b in columns]
        k = max(range(len(columns)), key=lambda i: overlap[i])
        if overlap[k] <= 0:
            mid = (c.lo + c.hi) / 2
            k = min(range(len(columns)), key=lambda i: abs((columns[i][0] + columns[i][1]) / 2 - mid))
        old = placed[k]
        placed[k] = c if old is None else Cell(min(old.first, c.first), max(old.last, c.last),
                                               min(old.lo, c.lo), max(old.hi, c.hi))
    return placed


def _is_header(first: list[Glyph], rest: list[list[Glyph]], first_text: str, rest_texts: list[str]) -> bool:
    weight = median(g.weight for line in rest for g in line)
    size = median(g.size for line in rest for g in line)
    if weight and median(g.weight for g in first) >= weight + 200:
        return True
    if size and abs(median(g.size for g in first) - size) > 0.1 * size:
        return True
    with_digit = sum(any(ch.isdigit() for ch in t) for t in rest_texts)
    return not any(ch.isdigit() for ch in first_text) and with_digit * 2 >= len(rest_texts)


def find_tables(lines: list[list[Glyph]], texts: list[str] | None = None, min_rows: int = MIN_ROWS,
                gap_em: float = GAP_EM) -> list[Table]:
    """The tables among a page's ``lines`` (each its visible glyphs in reading order; ``texts``: each line's text,
    for the header test), in line order."""
    texts = texts if texts is not None else [""] * len(lines)
    cells = [line_cells(g, gap_em) for g in lines]
    tables: list[Table] = []
    i = 0
    while i < len(lines):
        if not cells[i] or len(cells[i]) < 2:
            i += 1
            continue
        j = i
        while j + 1 < len(lines) and cells[j + 1] and len(cells[j + 1]) >= 2:
            j += 1
        if j - i + 1 >= min_rows:
            table = _table(i, j, cells, lines, texts)
            if table is not None:
                tables.append(table)
        i = j + 1
    return tables


def _table(i: int, j: int, cells, lines, texts) -> Table | None:
    header = _is_header(lines[i], lines[i + 1 : j + 1], texts[i], texts[i + 1 : j + 1])
    data = cells[i + 1 : j + 1] if header else cells[i : j + 1]
    columns = _columns(data)
    if len(columns) < 2:
        return None
    rows = [_place(row, columns) for row in cells[i : j + 1]]
    filled = [[c for c in row if c is not None] for row in rows]
    if any(len(r) < 2 for r in (filled[1:] if header else filled)):
        return None  # a data line whose cells all fell into one column is not a row of this grid
    if len(columns) == 2:  # two columns of running prose side by side are a page layout, not a table
        widths = [[(row[k].hi - row[k].lo) for row in rows if row[k] is not None] for k in (0, 1)]
        page_wide = max(c.hi for r in filled for c in r) - min(c.lo for r in filled for c in r)
        if all(w and median(w) > 0.3 * page_wide for w in widths):
            return None
    return Table(i, j, header, rows)
