"""Word (.docx): paragraphs, headings (by style), lists and tables in body order as Markdown-shaped text, with the
core properties (title, status, dates) as fields.

Why python-docx: the well-kept reader of the format (Haystack's ``DOCXToDocument`` uses it too); it exposes
paragraph styles, so "Heading 2" becomes a ``##`` line and the one splitter finds the heading path, and tables
cell by cell, so each row becomes a pipe-table row with the header row as its lead-in.

A .docx is a zip: before python-docx opens it, the archive's declared sizes are checked (``max_unpacked_bytes``
and a compression ratio of at most ``MAX_RATIO``), so a zip bomb is refused without being inflated.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

from components.core.documents.errors import ConversionError
from components.core.documents.meta import keyword_fields, pipe_table, plain_value
from components.core.documents.visibility import DEFAULT_MIN_PT, docx_run_hidden

MAX_RATIO = 200  # uncompressed / compressed; real documents stay far below (text XML compresses ~10×)


def check_archive(path: Path, max_unpacked_bytes: int) -> None:
    """``ConversionError`` for a file that is not a zip, or whose members would inflate past the limits."""
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
    except (zipfile.BadZipFile, OSError) as exc:
        raise ConversionError(f"not a readable .docx (not a zip archive: {exc})") from None
    unpacked = sum(i.file_size for i in infos)
    packed = sum(i.compress_size for i in infos) or 1
    if unpacked > max_unpacked_bytes:
        raise ConversionError(f"the archive unpacks to {unpacked:,} bytes, more than max_unpacked_bytes "
                              f"({max_unpacked_bytes:,}) — a zip bomb or a huge file; raise the limit in the "
                              f"store's `conversion:` section if it is genuine")
    if unpacked > 1_000_000 and unpacked / packed > MAX_RATIO:
        raise ConversionError(f"the archive inflates {unpacked / packed:,.0f}× (more than {MAX_RATIO}×): a zip bomb")
    if "word/document.xml" not in {i.filename for i in infos}:
        raise ConversionError("not a Word document (the archive has no word/document.xml)")


def _heading_level(style_name: str) -> int:
    name = (style_name or "").strip().lower()
    if name == "title":
        return 1
    if name.startswith("heading "):
        tail = name.removeprefix("heading ").strip()
        return min(int(tail), 6) if tail.isdigit() else 0
    return 0


def visible_text(paragraph_el, min_pt: float = DEFAULT_MIN_PT) -> tuple[str, int]:
    """``(text, hidden characters)`` of a ``w:p`` element: the text of its runs (hyperlinks' included) that a
    reader sees (``visibility.docx_run_hidden``), tabs and breaks as whitespace."""
    from docx.oxml.ns import qn

    shown, hidden = [], 0
    text_tag, tab, breaks = qn("w:t"), qn("w:tab"), (qn("w:br"), qn("w:cr"))
    for run in paragraph_el.iter(qn("w:r")):
        parts = []
        for el in run:
            if el.tag == text_tag:
                parts.append(el.text or "")
            elif el.tag == tab:
                parts.append("\t")
            elif el.tag in breaks:
                parts.append("\n")
        text = "".join(parts)
        if docx_run_hidden(run.find(qn("w:rPr")), min_pt):
            hidden += len(text.strip())
        else:
            shown.append(text)
    return "".join(shown), hidden


def read_docx(path: Path, max_bytes: int, max_unpacked_bytes: int,
              min_pt: float = DEFAULT_MIN_PT) -> tuple[str, dict[str, Any], int]:
    """``(canonical text, meta, hidden characters left out)`` of a .docx, or ``ConversionError``."""
    import docx
    from docx.oxml.ns import qn
    from docx.table import Table

    if path.stat().st_size > max_bytes:
        raise ConversionError(f"larger than max_document_bytes ({max_bytes:,} bytes)")
    check_archive(path, max_unpacked_bytes)
    try:
        document = docx.Document(str(path))
    except Exception as exc:  # noqa: BLE001 - python-docx raises many kinds for a damaged package
        raise ConversionError(f"not a readable .docx ({type(exc).__name__}: {str(exc)[:120]})") from None
    blocks: list[str] = []
    styles, names = document.styles.element, {}  # ``para.style`` builds a style object per paragraph: slow

    def style_name(style_id: str | None) -> str:
        if style_id not in names:
            found = styles.get_by_id(style_id) if style_id else None
            names[style_id] = (found.name_val or "") if found is not None else ""
        return names[style_id]

    hidden = 0
    for child in document.element.body.iterchildren():
        if child.tag == qn("w:p"):
            shown, left_out = visible_text(child, min_pt)
            hidden += left_out
            text = " ".join(shown.split())
            if not text:
                continue
            style = style_name(child.style)
            level = _heading_level(style)
            if level:
                blocks.append("#" * level + " " + text)
            elif "list" in style.lower():
                if blocks and blocks[-1].startswith("- "):
                    blocks[-1] += "\n- " + text
                else:
                    blocks.append("- " + text)
            else:
                blocks.append(text)
        elif child.tag == qn("w:tbl"):
            rows = []
            for row in Table(child, document).rows:
                cells = []
                for cell in row.cells:
                    seen = [visible_text(p._p, min_pt) for p in cell.paragraphs]
                    hidden += sum(h for _, h in seen)
                    cells.append("\n".join(t for t, _ in seen))
                if any(t.strip() for t in cells):
                    rows.append(cells)
            if rows:
                blocks.append(pipe_table(rows))
    text = "\n\n".join(blocks)
    if not text.strip():
        raise ConversionError("no text (an empty document, or only images)"
                              + (f"; {hidden:,} characters of hidden text left out" if hidden else ""))
    props = document.core_properties
    meta: dict[str, Any] = {}
    for key, value in (("title", props.title), ("subject", props.subject), ("author", props.author),
                       ("category", props.category), ("status", props.content_status),
                       ("version", props.version), ("created", props.created), ("modified", props.modified)):
        if value:
            meta[key] = plain_value(value)
    meta.update(keyword_fields(props.keywords or ""))
    return text + "\n", meta, hidden
