"""Where each answer span lies in its original file — page, heading path, table row, a PDF span's character boxes —
added to a result's spans (``components.core.documents.layout`` says where; this reads the indexed PDF for boxes)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from components.core.errors import SpanQAError


def add_locations(spans: list[dict[str, Any]], source, data_dir: str | None = None) -> None:
    """Give each span with offsets its ``location`` in the original file (``components.core.documents.layout``):
    file, format, page (of how many), heading path, table row and ``cite`` — "page 3 of refund-policy.pdf"; for a
    PDF span also ``boxes``: its characters' boxes on the page (PDF points, one per line), read from the indexed
    file when it is still there unchanged. A document that holds sentences addressed to its reader (planted
    instructions) is flagged with their count (``directives``), one with text left out as unseen with
    ``hidden_chars``."""
    from components.core.documents.layout import locate

    for span in spans:
        if span.get("doc_id") is None or span.get("char_start") is None:
            continue
        try:
            document = source(span["doc_id"])[0]
        except SpanQAError:
            continue
        start, end = int(span["char_start"]), int(span["char_end"])
        span["location"] = where = locate(document, start, end)
        planted = directive_count(document.text[getattr(document, "body_start", 0):])
        if planted:  # the document addresses its reader somewhere: the person reading the answer should know
            where["directives"] = planted
        if document.layout.get("hidden_chars"):
            where["hidden_chars"] = document.layout["hidden_chars"]
        if where.get("format") == "pdf" and data_dir is not None:
            where["boxes"] = _pdf_boxes(document, data_dir, start, end, where["page"])


@lru_cache(maxsize=2048)
def directive_count(text: str) -> int:
    """How many sentences of a document's text address the reader (``injection.directive_reason``)."""
    from components.core.text.injection import is_directive
    from components.core.text.splitting import sentence_spans

    return sum(is_directive(text[s.start : s.end]) for s in sentence_spans(text))


def _pdf_boxes(document, data_dir: str, start: int, end: int, page: int) -> list | None:
    """The span's boxes on ``page`` (rounded to 0.1 pt), or None when the indexed file is gone or changed."""
    from components.core.documents.convert import indexed_file
    from components.core.documents.pdf import span_boxes

    try:
        path, _why = indexed_file(data_dir, document.layout)
        if path is None:
            return None
        boxes = span_boxes(path, document.layout, start, end).get(page, [])
    except Exception:  # noqa: BLE001 - the location is a courtesy: an unreadable file never fails an answer
        return None
    return [[round(v, 1) for v in box] for box in boxes]
