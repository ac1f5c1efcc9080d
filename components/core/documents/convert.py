"""One door for files that are not plain text: ``.pdf``, ``.html``/``.htm`` and ``.docx`` become a
``SourceDocument`` whose text is canonical (what both stores keep and every span slices) and whose ``layout`` says
where each offset lies in the original (pages, headings). A file that cannot be converted raises
``ConversionError`` with the reason — encrypted, no text layer, corrupt, a zip bomb, over a limit — and the loader
lists it as skipped; nothing else escapes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from components.core.documents.errors import ConversionError
from components.core.documents.layout import markdown_headings

if TYPE_CHECKING:
    from components.core.documents.source import LoadLimits, SourceDocument

CONVERTED_SUFFIXES = {".pdf": "pdf", ".html": "html", ".htm": "html", ".docx": "docx"}


def convert_file(path: Path, rel: str, limits: "LoadLimits") -> "SourceDocument":
    """The converted document of ``path`` (shown as ``rel``), or ``ConversionError``."""
    from components.core.documents.pdf import read_pdf
    from components.core.documents.source import SourceDocument, file_sha256

    kind = CONVERTED_SUFFIXES[path.suffix.lower()]
    try:
        if kind == "pdf":
            text, meta, layout = read_pdf(path, limits.max_document_bytes, limits.max_pages, limits.min_visible_pt)
        elif kind == "html":
            from components.core.documents.html import read_html

            text, meta, hidden = read_html(path, limits.max_document_bytes, limits.min_visible_pt)
            layout = {"format": "html", "hidden_chars": hidden}
        else:
            from components.core.documents.docx import read_docx

            text, meta, hidden = read_docx(path, limits.max_document_bytes, limits.max_unpacked_bytes,
                                           limits.min_visible_pt)
            layout = {"format": "docx", "hidden_chars": hidden}
    except ConversionError:
        raise
    except RecursionError:
        raise ConversionError(f"nested too deeply to convert ({kind})") from None
    except MemoryError:
        raise ConversionError(f"too large to convert in memory ({kind}); split the file") from None
    except Exception as exc:  # noqa: BLE001 - a damaged file must be listed, never crash the whole index
        raise ConversionError(f"could not be converted ({type(exc).__name__}: {str(exc)[:160]})") from None
    if kind != "pdf":  # the PDF's text is normalised character by character as it is read (pdf.page_text)
        from components.core.text.normalise import normalise_text

        text, changed = normalise_text(text)
        if changed:
            layout["normalised_chars"] = changed
        layout["headings"] = markdown_headings(text)
    layout["file"] = rel
    layout["sha256"] = file_sha256(path)
    meta.setdefault("title", path.stem.replace("-", " ").replace("_", " "))
    meta["source"] = rel
    return SourceDocument(rel, text, meta, 0, layout)


_HASHES: dict[tuple, str] = {}  # (path, size, mtime_ns) -> SHA-256: an unchanged file is hashed once, not per answer


def indexed_file(data_dir: str | Path, layout: dict, follow_links_outside: bool = False) -> tuple[Path | None, str]:
    """``(path, "")`` of the original file a converted document was indexed from, when it is still in ``data_dir``
    (inside it, unless links may leave it) and unchanged (its SHA-256 as indexed); else ``(None, why)``. Used to
    read a PDF's boxes and render its pages — never from a path a request names."""
    from components.core.documents.source import file_sha256

    name = layout.get("file")
    if not name:
        return None, "no original file"
    root = Path(data_dir).resolve()
    path = (root / name).resolve()
    if not path.is_relative_to(root) and not follow_links_outside:
        return None, "outside the data folder"
    try:
        st = path.stat()
    except OSError:
        return None, f"{name} is no longer in the data folder {data_dir}; re-index"
    key = (str(path), st.st_size, st.st_mtime_ns)
    digest = _HASHES.get(key)
    if digest is None:
        if len(_HASHES) > 4096:
            _HASHES.clear()
        digest = _HASHES[key] = file_sha256(path)
    if digest != layout.get("sha256"):
        return None, f"{name} changed since it was indexed; re-index to see its pages"
    return path, ""

