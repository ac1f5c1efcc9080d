"""A PDF page rendered server-side with the answer's characters highlighted (``GET /{name}/page_image``).

The page is rendered from the very file that was indexed: its path is the store's ``data_dir`` joined with the
document's ``layout["file"]`` (never a path from the request), it must stay inside ``data_dir``, and its SHA-256 must
equal the one recorded at indexing — otherwise 409 (the file changed; re-index). The boxes come from
``components.core.documents.pdf.span_boxes`` (the same PDFium text that made the canonical text), so the highlight
covers exactly ``text[char_start:char_end]``; evidence ranges are painted lighter.
"""

from __future__ import annotations

from pathlib import Path

from components.serving.limits import Refused
from components.serving.passage import check_offsets

ANSWER_RGBA = (255, 200, 0, 110)
EVIDENCE_RGBA = (120, 170, 255, 60)
MAX_EVIDENCE = 20


def parse_ranges(value: str) -> list[tuple[int, int]]:
    """``"12-40,55-80"`` → ``[(12, 40), (55, 80)]`` (at most ``MAX_EVIDENCE``); 400 on anything else."""
    out = []
    for part in filter(None, (value or "").split(",")):
        a, sep, b = part.partition("-")
        if not (sep and a.strip().isdigit() and b.strip().isdigit()):
            raise Refused(400, f"evidence must be ranges like 12-40,55-80 (got {part[:40]!r})")
        out.append((int(a), int(b)))
    if len(out) > MAX_EVIDENCE:
        raise Refused(400, f"at most {MAX_EVIDENCE} evidence ranges")
    return out


def pdf_file(store, document) -> Path:
    """The indexed PDF of ``document`` on disk — checked to be inside ``data_dir`` and unchanged."""
    from components.core.documents.convert import indexed_file

    layout = document.layout or {}
    if layout.get("format") != "pdf" or not layout.get("file"):
        raise Refused(404, f"document {document.doc_id!r} is not a PDF: it has no pages to render")
    path, why = indexed_file(store.data_dir, layout, store.limits.follow_links_outside)
    if path is None:
        status = 404 if why == "outside the data folder" else 409
        raise Refused(status, f"the file of {document.doc_id!r} lies {why}" if status == 404 else why)
    return path


def page_image(store, doc_id: str, page: int, start: int, end: int, evidence: str = "", rule=None,
               groups: list[str] | None = None) -> bytes:
    """PNG bytes of page ``page`` of the PDF ``doc_id`` with ``[start, end)`` highlighted (404 for a document the
    asker may not read, as for one that does not exist)."""
    from components.core.documents.pdf import render_page, span_boxes
    from components.serving.passage import readable_source

    document = readable_source(store, doc_id, rule, groups)[0]
    check_offsets(start, end, len(document.text))
    pages = (document.layout or {}).get("pages") or []
    path = pdf_file(store, document)
    if not 1 <= page <= len(pages):
        raise Refused(400, f"page {page} is not in {doc_id} (it has {len(pages)} pages)")
    ranges = parse_ranges(evidence)
    for s, e in ranges:
        check_offsets(s, e, len(document.text))
    highlights = [(span_boxes(path, document.layout, s, e).get(page, []), EVIDENCE_RGBA) for s, e in ranges]
    highlights.append((span_boxes(path, document.layout, start, end).get(page, []), ANSWER_RGBA))
    return render_page(path, page, highlights)
