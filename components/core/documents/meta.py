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
    only ``key: value`` parts, keys of letters, digits and underscores."""
    out = {}
    for part in str(keywords).replace("\n", ";").split(";"):
        key, sep, value = part.partition(":")
        key = key.strip().lower()
        if sep and key.replace("_", "").isalnum() and value.strip():
            out[key] = value.strip()
    return out


def plain_value(value: Any) -> Any:
    """A date or time → ISO text (``2025-03-01``); strings stripped; other scalars unchanged."""
    if isinstance(value, _dt.datetime):
        return value.date().isoformat()
    if isinstance(value, _dt.date):
        return value.isoformat()
    return value.strip() if isinstance(value, str) else value
