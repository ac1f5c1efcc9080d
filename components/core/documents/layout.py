"""Where a span lies in the original file: its page, its heading path, its table row — one place for all formats.

A converted document keeps one canonical text (``text[char_start:char_end]`` is always the span shown) and a
``layout`` beside it, plain JSON so both stores keep it unchanged:

- ``layout["headings"]``: ``[[offset, level, title], ...]`` in text order — Markdown ``#`` lines (Markdown,
  HTML and DOCX, which are converted to Markdown-shaped text) or a PDF's outline (bookmarks placed where their
  title appears on their page);
- ``layout["pages"]``: ``[[start, end], ...]`` — page ``n`` (1-based) is ``text[start:end]`` (PDF only);
- ``layout["format"]`` (``pdf`` / ``html`` / ``docx``), ``layout["file"]`` (the name a person knows) and
  ``layout["sha256"]`` of the original file (a page is rendered only from the very file that was indexed).

``heading_path``, ``page_of`` and ``locate`` answer "where is this offset" with a bisection; ``situating_note``
is the model-free contextual-retrieval note indexed with each chunk (title and heading path, never part of the
span).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import Any

from components.core.text.splitting import PROSE, is_rule, split_blocks, table_line_at, table_lines_above

_ATX = re.compile(r"[ \t]{0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
HEADING_SEPARATOR = " › "


def markdown_headings(text: str, start: int = 0) -> list[list]:
    """``[[offset, level, title], ...]`` of the ATX headings (``# Title``) of ``text[start:]`` — lines of prose
    blocks only, so a ``#`` comment inside a fenced code block is never a heading."""
    found = []
    for block in split_blocks(text, start):
        if block.kind != PROSE:
            continue
        pos = block.start
        while pos < block.end:
            nl = text.find("\n", pos, block.end)
            stop = block.end if nl == -1 else nl
            m = _ATX.match(text, pos, stop)
            if m:
                found.append([pos, len(m.group(1)), m.group(2).strip()])
            pos = stop + 1
    return found


def heading_path(layout: dict | None, offset: int) -> list[str]:
    """The titles of the headings in force at ``offset``, outermost first (a heading closes every heading of its
    level or deeper before it)."""
    headings = (layout or {}).get("headings") or []
    n = bisect_right([h[0] for h in headings], offset)
    path: list[tuple[int, str]] = []
    for _off, level, title in headings[:n]:
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, title))
    return [t for _, t in path]


def heading_breaks(layout: dict | None) -> set[int]:
    """Offsets a chunk must not run across: every heading and every page start."""
    layout = layout or {}
    return {int(h[0]) for h in layout.get("headings") or []} | {int(p[0]) for p in (layout.get("pages") or [])[1:]}


def page_of(layout: dict | None, offset: int) -> int | None:
    """The 1-based page holding ``offset`` (a position between two pages belongs to the next one), or None."""
    pages = (layout or {}).get("pages") or []
    if not pages:
        return None
    i = bisect_right([p[0] for p in pages], offset) - 1
    return max(i, 0) + 1


def chunk_location(layout: dict | None, start: int) -> dict[str, Any]:
    """The location fields a chunk's metadata carries (none for a document without layout)."""
    out: dict[str, Any] = {}
    path = heading_path(layout, start)
    if path:
        out["heading_path"] = path
    page = page_of(layout, start)
    if page is not None:
        out["page"] = page
    return out


def table_row(text: str, offset: int) -> int | None:
    """The 1-based data row of the pipe table whose line holds ``offset`` (0: the header row), else None."""
    line = table_line_at(text, offset)
    if line is None:
        return None
    return sum(not is_rule(text[s:e]) for s, e in table_lines_above(text, line[0]))  # the |---| rule is not a row


def locate(document: Any, start: int, end: int) -> dict[str, Any]:
    """Where ``[start, end)`` of ``document`` (a ``SourceDocument``) lies, for people and programs:
    ``{"file", "format", "page", "pages", "heading_path", "table_row", "cite"}`` — ``cite`` reads "page 3 of
    refund-policy.pdf" or "hub-pro.html › Specifications, table row 4"."""
    layout = getattr(document, "layout", None) or {}
    meta = getattr(document, "meta", None) or {}
    name = layout.get("file") or str(meta.get("source") or getattr(document, "doc_id", ""))
    out: dict[str, Any] = {"file": name}
    if layout.get("format"):
        out["format"] = layout["format"]
    path = heading_path(layout, start)
    if path:
        out["heading_path"] = path
    text = getattr(document, "text", "") or ""
    row = table_row(text, start) if 0 <= start < len(text) else None
    if row:
        out["table_row"] = row
    page = page_of(layout, start)
    if page is not None:
        last = page_of(layout, max(start, end - 1))
        out["page"], out["pages"] = page, len(layout["pages"])
        where = f"page {page}" if last == page else f"pages {page}–{last}"
        out["cite"] = f"{where} of {name}" + (f" ({HEADING_SEPARATOR.join(path)})" if path else "")
    else:
        out["cite"] = HEADING_SEPARATOR.join([name, *path])
    if row:
        out["cite"] += f", table row {row}"
    return out


def situating_note(meta: dict, layout: dict | None, start: int) -> str:
    """The model-free note indexed before a chunk (never part of its span): the document's title and the heading
    path at ``start`` — "Refund policy › Annual plans › Exceptions" (a heading equal to the title is not repeated;
    a document without headings gets its title alone, as before notes existed)."""
    title = str(meta.get("title") or "").strip()
    path = [p for p in heading_path(layout, start) if p.strip().lower() != title.lower()]
    return HEADING_SEPARATOR.join([title, *path] if title else path)
