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


def read_docx(path: Path, max_bytes: int, max_unpacked_bytes: int) -> tuple[str, dict[str, Any]]:
    """``(canonical text, meta)`` of a .docx, or ``ConversionError``."""
    import docx
    from docx.oxml.ns import qn
    from docx.table import Table
    from docx.text.paragraph import Paragraph

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

    for child in document.element.body.iterchildren():
        if child.tag == qn("w:p"):
            para = Paragraph(child, document)
            text = " ".join(para.text.split())
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
            rows = [r for r in ([c.text for c in row.cells] for row in Table(child, document).rows)
                    if any(t.strip() for t in r)]
            if rows:
                blocks.append(pipe_table(rows))
    text = "\n\n".join(blocks)
    if not text.strip():
        raise ConversionError("no text (an empty document, or only images)")
    props = document.core_properties
    meta: dict[str, Any] = {}
    for key, value in (("title", props.title), ("subject", props.subject), ("author", props.author),
                       ("category", props.category), ("status", props.content_status),
                       ("version", props.version), ("created", props.created), ("modified", props.modified)):
        if value:
            meta[key] = plain_value(value)
    meta.update(keyword_fields(props.keywords or ""))
    return text + "\n", meta
