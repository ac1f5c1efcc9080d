"""The source passage around a span, for the answer page to highlight the span in (``GET /{name}/source``).

The passage is the paragraph(s) of the original document that the span touches (the store's block offsets),
cut to at most ``MAX_PASSAGE_CHARS`` around the span; offsets are those of the original file, so
``text[char_start - start : char_end - start]`` is exactly the span.
"""

from __future__ import annotations

from typing import Any

from components.serving.limits import Refused

MAX_PASSAGE_CHARS = 1200
CONTEXT_CHARS = 300  # each side of the span when its paragraph is longer than MAX_PASSAGE_CHARS


def passage_bounds(blocks, body_start: int, length: int, start: int, end: int) -> tuple[int, int]:
    """``(from, to)`` of the passage around ``[start, end)``: the paragraphs it overlaps, else the span ± context,
    never before the body (front matter) nor longer than ``MAX_PASSAGE_CHARS`` plus the span."""
    touched = [(int(b0), int(b1)) for b0, b1 in blocks if int(b0) < end and int(b1) > start] if blocks is not None else []
    if touched:
        lo, hi = min(start, *(b[0] for b in touched)), max(end, *(b[1] for b in touched))
    else:
        lo, hi = start - CONTEXT_CHARS, end + CONTEXT_CHARS
    if hi - lo > MAX_PASSAGE_CHARS + (end - start):
        lo, hi = max(lo, start - CONTEXT_CHARS), min(hi, end + CONTEXT_CHARS)
    lo = max(lo, body_start if body_start <= start else 0, 0)
    return lo, min(hi, length)


def check_offsets(start: int, end: int, length: int) -> None:
    """``Refused(400)`` unless ``0 <= start <= end <= length``."""
    if not (0 <= start <= end <= length):
        raise Refused(400, f"char_start {start} and char_end {end} must satisfy 0 ≤ char_start ≤ char_end ≤ "
                           f"{length} (the document's length)")


def readable_source(store, doc_id: str, rule=None, groups: list[str] | None = None):
    """``store.source(doc_id)`` for an asker of ``groups`` under the access ``rule``; 404 — the same as for an id
    that does not exist — for a document the asker may not read, so a forbidden id is never confirmed."""
    from components.core.errors import SpanQAError

    if "\x00" in doc_id or len(doc_id) > 4096:  # no stored id holds these: the same 404 from both stores
        raise Refused(404, f"document {doc_id[:80]!r} is not in the index")
    try:
        found = store.source(doc_id)
    except SpanQAError:
        raise Refused(404, f"document {doc_id!r} is not in the index") from None
    if rule is not None and not rule.readable(found[0].meta, None if groups is None else frozenset(groups)):
        raise Refused(404, f"document {doc_id!r} is not in the index")
    return found


def source_passage(store, doc_id: str, start: int, end: int, rule=None,
                   groups: list[str] | None = None) -> dict[str, Any]:
    """``{doc_id, start, end, text, location}``: the passage of ``doc_id`` around ``[start, end)``; 404 for an unknown
    id or one the asker may not read."""
    document, _units, blocks = readable_source(store, doc_id, rule, groups)
    text = document.text
    check_offsets(start, end, len(text))
    body_start = getattr(document, "body_start", 0)
    if start < body_start:  # the front matter is metadata, never a passage
        raise Refused(400, f"char_start {start} lies in the document's front matter (metadata, never a passage); "
                           f"its text starts at {body_start}")
    lo, hi = passage_bounds(blocks, body_start, len(text), start, end)
    from components.core.documents.layout import locate

    return {"doc_id": doc_id, "start": lo, "end": hi, "text": text[lo:hi], "location": locate(document, start, end)}
