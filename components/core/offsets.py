"""The one place a read text is placed in its source: a window, paragraph or passage ``Document`` carries
``meta["doc_id"]`` and ``meta["char_start"]`` (the offset of its first character in the original document), so
a span at ``[s, e)`` of its content is ``[base + s, base + e)`` of the source."""

from __future__ import annotations

from typing import Any


def doc_origin(doc: Any, index: int = 0) -> tuple[str, int]:
    """``(doc_id, base)`` of a read document: ``meta["doc_id"]`` (else its ``id``, else ``doc<index>``) and
    ``meta["char_start"]`` (0 for a whole document)."""
    meta = getattr(doc, "meta", None) or {}
    doc_id = str(meta.get("doc_id") or getattr(doc, "id", "") or f"doc{index}")
    return doc_id, int(meta.get("char_start") or 0)
