"""The front-matter equivalents of converted files (PDF info, HTML ``<meta>``, DOCX core properties) as the flat
fields that filters and the superseded rule read — the same names a Markdown file's front matter uses."""

from __future__ import annotations

import datetime as _dt
from typing import Any

# <meta name=...> / keyword fields taken as document fields (what the superseded rule and filters use)
FIELDS = ("status", "superseded_by", "version", "date", "effective_date", "product", "audience", "category", "lang",
          "access")


def keyword_fields(keywords: str) -> dict[str, str]:
    """``status: superseded; superseded_by: x.pdf`` (a PDF's Keywords, a DOCX's keywords) → ``{"status": ...}``:
    only ``key: value`` parts, keys of letters, digits and underscores in any case. A key with an empty value is
    kept as ``""`` (``access:`` left empty must close the document, not open it)."""
    out = {}
    for part in str(keywords).replace("\n", ";").split(";"):
        key, sep, value = part.partition(":")
        key = key.strip().lower()
        if sep and key.replace("_", "").isalnum():
            out.setdefault(key, value.strip())
    return out


def plain_value(value: Any) -> Any:
    """A date or time → ISO text (``2025-03-01``); strings stripped; other scalars unchanged."""
    if isinstance(value, _dt.datetime):
        return value.date().isoformat()
    if isinstance(value, _dt.date):
        return value.isoformat()
    return value.strip() if isinstance(value, str) else value


def pipe_table(rows: list[list[str]]) -> str:
    """Rows of cells as a Markdown pipe table (the first row is the header), the shape the one splitter reads as a
    table: every row padded to the widest, cell text on one line, ``|`` inside a cell written ``/``."""
    width = max(len(r) for r in rows)
    cells = [[" ".join(str(c).split()).replace("|", "/") for c in r] + [""] * (width - len(r)) for r in rows]
    lines = ["| " + " | ".join(cells[0]) + " |", "|" + "---|" * width]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in cells[1:]])

