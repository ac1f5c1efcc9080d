"""PDF: the text layer page by page (PDFium, through pypdfium2), its outline as headings, the character boxes of a
span and the page rendered with the span highlighted.

Why pypdfium2: one well-kept library (Google's PDFium, the engine of Chromium's viewer) gives all four things
spanqa needs — the text layer, each character's box on its page, the outline, and a renderer — so the boxes we
highlight come from the same engine that extracted the text (pypdf has no renderer; pdfminer has no renderer and is
~10× slower).

Canonical text: each page's text as PDFium reads it, with ``\\r\\n`` line ends made ``\\n`` and a blank line after
a line that is an outline heading (so the one splitter sees the heading as its own block); pages are joined with a
blank line. ``page_text`` returns, with the text, the PDFium character index of every canonical character (−1
for one it inserted), so a span's boxes are found again from the file at any time without storing them.
"""

from __future__ import annotations

import functools
import io
import threading
from pathlib import Path
import ctypes
import math
from dataclasses import dataclass
from typing import Any

from components.core.documents.errors import ConversionError
from components.core.documents.meta import keyword_fields
from components.core.documents.pdf_tables import Glyph, find_tables
from components.core.documents.visibility import DEFAULT_MIN_PT, pdf_char_hidden
from components.core.text.normalise import composed, normalise_char

PAGE_SEPARATOR = "\n\n"
PDFIUM_LOCK = threading.RLock()  # PDFium is not thread-safe: one call into it at a time per process


def _locked(fn):
    @functools.wraps(fn)
    def call(*args, **kwargs):
        with PDFIUM_LOCK:
            return fn(*args, **kwargs)
    return call


def _open(path: Path, max_bytes: int):
    import pypdfium2 as pdfium

    if path.stat().st_size > max_bytes:
        raise ConversionError(f"larger than max_document_bytes ({max_bytes:,} bytes)")
    try:
        return pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        text = str(exc)
        if "password" in text.lower():
            raise ConversionError("encrypted PDF (a password is needed to read it); index a decrypted copy "
                                  "(e.g. `qpdf --decrypt in.pdf out.pdf`)") from None
        raise ConversionError(f"not a readable PDF ({text.split('(', 1)[-1].rstrip(').') or text})") from None


def _line_breaks(raw: str, textpage) -> dict[int, bool]:
    """For each ``\\r\\n`` / ``\\n`` line end of PDFium's text (raw index of the ``\\n``): True when it ends a
    paragraph — the next line's baseline lies further below than 1.3× the pitch of wrapping lines (the page's
    lower quartile: a blank line, a heading's space) — False for a line that merely wraps."""
    import ctypes

    import pypdfium2.raw as pdfium_c

    def baseline(index: int) -> float:
        x, y = ctypes.c_double(), ctypes.c_double()
        pdfium_c.FPDFText_GetCharOrigin(textpage.raw, index, ctypes.byref(x), ctypes.byref(y))
        return y.value

    ends = [k for k, ch in enumerate(raw) if ch == "\n"]
    pitch: dict[int, float] = {}
    for k in ends:
        a = k - 2 if k >= 1 and raw[k - 1] == "\r" else k - 1
        while a >= 0 and raw[a].isspace():
            a -= 1
        b = k + 1
        while b < len(raw) and raw[b].isspace():
            b += 1
        if a < 0 or b >= len(raw):
            continue
        pitch[k] = baseline(a) - baseline(b)  # baseline of the line above − the line below
    usual = sorted(v for v in pitch.values() if v > 0)
    wrap = usual[len(usual) // 4] if usual else 0.0  # the lower quartile: the pitch of lines that wrap
    return {k: (wrap <= 0 or pitch.get(k, 0) <= 0 or pitch[k] > 1.3 * wrap) for k in ends}


def drawn_size(textpage, i: int) -> float:
    """The size a character is drawn at, in points: PDFium's font size (the ``Tf`` operand) times the vertical
    scale of the character's matrix (text and graphics state). Many producers set ``1 Tf`` and scale with the
    matrix, so the font size alone says 1 pt for 7-pt text (0: PDFium does not know)."""
    import pypdfium2.raw as pdfium_c

    font = pdfium_c.FPDFText_GetFontSize(textpage.raw, i)
    matrix = pdfium_c.FS_MATRIX()
    if font > 0 and pdfium_c.FPDFText_GetMatrix(textpage.raw, i, ctypes.byref(matrix)):
        return font * math.hypot(matrix.c, matrix.d)
    return font


@dataclass(frozen=True)
class PageChars:
    """What one pass over a page's characters learns (``page_chars``): PDFium's indices of the characters no reader
    sees, and for each other non-space character its box (left, right, bottom, top), drawn size in points and font
    weight (0: unknown)."""

    invisible: set[int]
    boxes: dict[int, tuple[float, float, float, float]]
    sizes: dict[int, float]
    weights: dict[int, int]


def page_chars(textpage, raw: str, min_pt: float = DEFAULT_MIN_PT) -> PageChars:
    """One pass over a page's characters: a box per character, and the rest per text object. Render mode, fill,
    font size, matrix and font belong to the text object a character was drawn by (PDFium reads every one of them
    from it), so they are asked once per object; a character with no object is asked alone. Visibility is
    ``visibility.pdf_char_hidden``: invisible or clip-only render mode, white or transparent fill, under ``min_pt``
    points, outside the page."""
    import pypdfium2.raw as pdfium_c

    try:
        page_box = textpage.page.get_bbox()  # media ∩ crop box, unrotated like the boxes (get_size is turned)
    except Exception:  # noqa: BLE001 - no page box: the box test is skipped, the others still hold
        page_box = None
    r, g, b, a = (ctypes.c_uint() for _ in range(4))
    left, right, bottom, top = (ctypes.c_double() for _ in range(4))
    rgba = tuple(ctypes.byref(c) for c in (r, g, b, a))
    ltrb = tuple(ctypes.byref(c) for c in (left, right, bottom, top))
    raw_page = textpage.raw
    per_object: dict[int, tuple] = {}

    def object_facts(i: int, obj) -> tuple:
        mode = pdfium_c.FPDFTextObj_GetTextRenderMode(obj) if obj else None
        fill = (r.value, g.value, b.value, a.value) if pdfium_c.FPDFText_GetFillColor(raw_page, i, *rgba) else None
        size = drawn_size(textpage, i)
        hidden = pdf_char_hidden(mode, fill, size, None, None, min_pt) is not None  # the object's part of the test
        return hidden, size, max(int(pdfium_c.FPDFText_GetFontWeight(raw_page, i)), 0)

    out = PageChars(set(), {}, {}, {})
    for i, ch in enumerate(raw):
        if ch.isspace() or ch in "\x00\x02":
            continue
        obj = pdfium_c.FPDFText_GetTextObject(raw_page, i)
        key = ctypes.cast(obj, ctypes.c_void_p).value if obj else None
        facts = per_object.get(key) if key is not None else None
        if facts is None:
            facts = object_facts(i, obj)
            if key is not None:
                per_object[key] = facts
        hidden, size, weight = facts
        box = (left.value, right.value, bottom.value, top.value) if pdfium_c.FPDFText_GetCharBox(raw_page, i, *ltrb) \
            else None
        if hidden or (box is not None and page_box is not None and pdf_char_hidden(None, None, 0, box, page_box)):
            out.invisible.add(i)
        elif box is not None:
            out.boxes[i], out.sizes[i], out.weights[i] = box, size, weight
    return out


def _line_ranges(raw: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each line of PDFium's page text, without its ``\\r\\n`` / ``\\n``."""
    out, pos = [], 0
    while pos <= len(raw):
        nl = raw.find("\n", pos)
        stop = len(raw) if nl == -1 else nl
        out.append((pos, stop - 1 if stop > pos and raw[stop - 1] == "\r" else stop))
        if nl == -1:
            break
        pos = nl + 1
    return out


def _glyphs(textpage, raw: str, lines: list[tuple[int, int]], chars: PageChars) -> list[list[Glyph]]:
    """Each line's visible characters with their extent along the page's text direction (the direction most
    lines run in: a page turned 90° has its rows running up the page); a line running another way has none."""
    import pypdfium2.raw as pdfium_c

    x, y = ctypes.c_double(), ctypes.c_double()

    def origin(i: int) -> tuple[float, float]:
        pdfium_c.FPDFText_GetCharOrigin(textpage.raw, i, ctypes.byref(x), ctypes.byref(y))
        return x.value, y.value

    visible = [[i for i in range(s, e) if not raw[i].isspace() and raw[i] not in "\x00\x02" and i not in chars.invisible]
               for s, e in lines]
    angles = []
    for idx in visible:
        (x0, y0), (x1, y1) = (origin(idx[0]), origin(idx[-1])) if len(idx) > 1 else ((0.0, 0.0), (0.0, 0.0))
        angles.append(round(math.degrees(math.atan2(y1 - y0, x1 - x0)) / 90) % 4 if (x0, y0) != (x1, y1) else None)
    known = [a for a in angles if a is not None]
    if not known:
        return [[] for _ in lines]
    turn = max(set(known), key=known.count)
    dx, dy = [(1, 0), (0, 1), (-1, 0), (0, -1)][turn]
    out = []
    for idx, angle in zip(visible, angles):
        glyphs = []
        if angle == turn:
            for i in idx:
                box = chars.boxes.get(i)
                if box is None:
                    continue
                lo, hi = box[0] * dx + box[2] * dy, box[1] * dx + box[3] * dy
                glyphs.append(Glyph(i, min(lo, hi), max(lo, hi), chars.sizes[i], chars.weights[i]))
        out.append(glyphs)
    return out


def page_text(textpage, heading_titles: list[str] = (), min_pt: float = DEFAULT_MIN_PT) -> tuple[str, list[int], int]:
    """``(text, index)`` of one page: the canonical text and, for each of its characters, PDFium's character index
    (−1 where a character was inserted), and the count of characters left out because no reader sees them
    (``page_chars``). A line that wraps inside a paragraph ends in a space (same length), a line
    that ends a paragraph — or is a heading title — is followed by a blank line, so the one splitter sees the
    paragraphs; lines that form a table (``pdf_tables.find_tables``: cells from the characters' positions) are
    written as a Markdown pipe table, a row per line under its header; the rest is PDFium's text unchanged."""
    raw = textpage.get_text_range()
    n = textpage.count_chars()
    if len(raw) != n:  # characters outside the BMP: PDFium's UTF-16 text is longer than its char count
        import pypdfium2.raw as pdfium_c

        raw = "".join(chr(pdfium_c.FPDFText_GetUnicode(textpage.raw, i) or 32) for i in range(n))
    breaks = _line_breaks(raw, textpage)
    chars = page_chars(textpage, raw, min_pt)
    invisible = chars.invisible
    titles = {t.strip().lower() for t in heading_titles if t.strip()}
    lines = _line_ranges(raw)
    tables = {t.first_line: t for t in find_tables(_glyphs(textpage, raw, lines, chars),
                                                  [raw[s:e] for s, e in lines])}
    out: list[str] = []
    index: list[int] = []

    def put(i: int, ch: str) -> None:
        if i in invisible:  # drawn so no reader sees it: never text, never an answer (counted)
            return
        if ch in "\x00\x02":  # PDFium's marks for an unknown glyph / a soft hyphen at a line end
            ch = "-" if ch == "\x02" else " "
        accented = composed(out[-1], ch) if out and index[-1] == i - 1 else None
        if accented is not None:  # a spacing accent typeset after its letter: the letter takes it
            out[-1] = accented
            return
        for kept in normalise_char(ch):  # marker characters dropped, ligatures spelled out: index stays exact
            out.append(kept)
            index.append(i)

    def insert(text: str) -> None:
        out.extend(text)
        index.extend([-1] * len(text))

    li = 0
    while li < len(lines):
        table = tables.get(li)
        if table is not None:
            width = len(table.rows[0])
            if not table.header:  # an empty header row: the first line is a row, never a header
                insert("|" + " |" * width + "\n" + "|---" * width + "|\n")
            for k, row in enumerate(table.rows):
                insert("|")
                for cell in row:
                    insert(" ")
                    for i in range(cell.first, cell.last + 1) if cell is not None else ():
                        put(i, "/" if raw[i] == "|" else raw[i])  # as pipe_table writes it
                    insert(" |")
                insert("\n")
                if k == 0 and table.header:
                    insert("|---" * width + "|\n")
            li = table.last_line
            out.pop()
            index.pop()
        else:
            s, e = lines[li]
            line_start = len(out)
            for i in range(s, e):
                put(i, raw[i])
        s, e = lines[li]
        nl = e + (1 if e < len(raw) and raw[e] == "\r" else 0)
        if nl < len(raw):  # the line's end: a wrap is a space, a paragraph's end (or a table's edge) a blank line
            line = "".join(out[line_start:]).strip().lower() if table is None else ""
            if table is not None or li + 1 in tables or breaks.get(nl, True) or (line and line in titles):
                out += ["\n", "\n"]
                index += [nl, -1]
            else:
                out.append(" ")
                index.append(nl)
        li += 1
    return "".join(out), index, len(invisible)


def _outline(pdf) -> list[tuple[int, int, str]]:
    """``(page index, level, title)`` of each outline entry with a destination page."""
    items = []
    try:
        for bm in pdf.get_toc(max_depth=8):
            dest = bm.get_dest()
            page = dest.get_index() if dest is not None else None
            title = (bm.get_title() or "").strip()
            if page is not None and title:
                items.append((page, bm.level + 1, title))
    except Exception:  # noqa: BLE001 - a damaged outline never stops the text from being read
        return []
    return items


def _pdf_date(value: str) -> str:
    """``D:20250301120000Z`` → ``2025-03-01`` (what filters compare); anything else unchanged."""
    v = value[2:] if value.startswith("D:") else value
    return f"{v[0:4]}-{v[4:6]}-{v[6:8]}" if len(v) >= 8 and v[:8].isdigit() else value


@_locked
def read_pdf(path: Path, max_bytes: int, max_pages: int,
             min_pt: float = DEFAULT_MIN_PT) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """``(canonical text, meta, layout)`` of a PDF, or ``ConversionError`` with the reason it cannot be indexed."""
    pdf = _open(path, max_bytes)
    try:
        n_pages = len(pdf)
        if n_pages > max_pages:
            raise ConversionError(f"{n_pages:,} pages, more than max_pages ({max_pages:,}); raise it in the "
                                  f"store's `conversion:` section or split the file")
        outline = _outline(pdf)
        parts: list[str] = []
        pages: list[list[int]] = []
        headings: list[list] = []
        pos, hidden = 0, 0
        for p in range(n_pages):
            page = pdf[p]
            titles = [t for (pi, _lvl, t) in outline if pi == p]
            text, _index, left_out = page_text(page.get_textpage(), titles, min_pt)
            hidden += left_out
            if p:
                parts.append(PAGE_SEPARATOR)
                pos += len(PAGE_SEPARATOR)
            pages.append([pos, pos + len(text)])
            low = text.lower()
            cursor = 0
            for pi, level, title in outline:
                if pi != p:
                    continue
                at = low.find(title.lower(), cursor)
                headings.append([pos + (at if at != -1 else 0), level, title])
                cursor = at + len(title) if at != -1 else cursor
            parts.append(text)
            pos += len(text)
        text = "".join(parts)
        if not text.strip():
            raise ConversionError("no text layer (a scanned PDF?) — OCR is not supported; index a PDF with a text "
                                  "layer or its text")
        info = pdf.get_metadata_dict(skip_empty=True)
    finally:
        pdf.close()
    meta: dict[str, Any] = {}
    if info.get("Title"):
        meta["title"] = info["Title"]
    if info.get("Author"):
        meta["author"] = info["Author"]
    if info.get("Subject"):
        meta["subject"] = info["Subject"]
    for key, name in (("CreationDate", "created"), ("ModDate", "modified")):
        if info.get(key):
            meta[name] = _pdf_date(info[key])
    meta.update(keyword_fields(info.get("Keywords") or ""))
    layout = {"format": "pdf", "pages": pages, "headings": sorted(headings), "hidden_chars": hidden,
              "min_visible_pt": min_pt}
    return text, meta, layout


@_locked
def span_boxes(path: Path, layout: dict, start: int, end: int) -> dict[int, list[tuple[float, float, float, float]]]:
    """``{page: [(left, bottom, right, top), ...]}`` in PDF points: one box per line of the characters of
    ``[start, end)`` of the canonical text (PDFium's loose character boxes, joined along the line) — read again
    from the file through the same ``page_text`` mapping that made the text."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(path))
    try:
        outline = _outline(pdf)
        out: dict[int, list] = {}
        for n, (p0, p1) in enumerate(layout.get("pages") or [], start=1):
            if p1 <= start or p0 >= end:
                continue
            textpage = pdf[n - 1].get_textpage()
            _text, index, _hidden = page_text(textpage, [t for (pi, _l, t) in outline if pi == n - 1],
                                              layout.get("min_visible_pt", DEFAULT_MIN_PT))
            boxes: list[list[float]] = []
            for c in range(max(start, p0) - p0, min(end, p1) - p0):
                i = index[c] if c < len(index) else -1
                if i < 0 or _text[c].isspace():
                    continue
                left, bottom, right, top = (float(v) for v in textpage.get_charbox(i, loose=True))
                if right <= left or top <= bottom:
                    continue
                last = boxes[-1] if boxes else None
                if last and abs(last[1] - bottom) < 0.5 * (top - bottom) and left >= last[0]:  # same line: extend
                    last[1], last[2], last[3] = min(last[1], bottom), max(last[2], right), max(last[3], top)
                else:
                    boxes.append([left, bottom, right, top])
            out[n] = [tuple(b) for b in boxes]
        return out
    finally:
        pdf.close()


@_locked
def render_page(path: Path, page: int, highlights: list[tuple[list, tuple[int, int, int, int]]],
                scale: float = 1.5) -> bytes:
    """The 1-based ``page`` rendered to PNG, each ``(boxes, rgba)`` of ``highlights`` painted over its boxes."""
    import pypdfium2 as pdfium
    from PIL import Image, ImageDraw

    pdf = pdfium.PdfDocument(str(path))
    try:
        if not 1 <= page <= len(pdf):
            raise ConversionError(f"page {page} is not in the file (it has {len(pdf)})")
        pg = pdf[page - 1]
        height = pg.get_height()
        image = pg.render(scale=scale).to_pil().convert("RGBA")
    finally:
        pdf.close()
    overlay = Image.new("RGBA", image.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    for boxes, colour in highlights:
        for left, bottom, right, top in boxes:  # PDF y grows upwards, the image's downwards
            draw.rectangle([left * scale, (height - top) * scale, right * scale, (height - bottom) * scale], fill=colour)
    out = io.BytesIO()
    Image.alpha_composite(image, overlay).convert("RGB").save(out, format="PNG", optimize=False)
    return out.getvalue()
