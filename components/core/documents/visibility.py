"""What a reader of a document can see: text drawn invisibly is left out of the canonical text, and counted.

Text a person reading the page cannot see — hidden, white on white, a fraction of a point tall, drawn off the
page — must never answer a question or be evidence (the answer page would highlight an empty box, and a planted
instruction would hide there). The converters ask these functions, one rule set for every format:

- ``style_hides(declarations, min_pt)`` — CSS (HTML inline styles and ``<style>`` rules): ``display:none``,
  ``visibility:hidden|collapse``, ``opacity:0``, ``font-size`` under ``min_pt`` points, positioned or indented
  1000 px or more off the page, ``clip``/``clip-path`` to nothing, text colour equal to its background;
- ``docx_run_hidden(rPr, min_pt)`` — a Word run: ``w:vanish`` / ``w:specVanish``, white or near-background
  colour, size under ``min_pt``;
- ``pdf_char_hidden(...)`` — a PDF character: render mode invisible (3) or clip only (7), fill alpha 0 or the
  page's white, size under ``min_pt``, its box outside the page.

Limits, stated: colours are compared with the element's declared background (else white, the page default); a
background painted by an image, a PDF rectangle drawn under the text, or a colour set by a Word style rather than
the run itself is not seen.
"""

from __future__ import annotations

import re

DEFAULT_MIN_PT = 2.0
OFF_PAGE_PX = 1000.0
NEAR = 24  # colour channels this close (of 255) count as the same colour

_NAMED = {"white": (255, 255, 255), "black": (0, 0, 0), "transparent": None, "red": (255, 0, 0),
          "snow": (255, 250, 250), "ivory": (255, 255, 240), "whitesmoke": (245, 245, 245)}
_LENGTH = re.compile(r"^\s*(-?\d*\.?\d+)\s*(px|pt|em|rem|%|)\s*$")


def parse_style(text: str) -> dict[str, str]:
    """``"color: #fff; Font-Size:0"`` → ``{"color": "#fff", "font-size": "0"}`` (``!important`` dropped)."""
    out = {}
    for part in (text or "").split(";"):
        key, sep, value = part.partition(":")
        if sep and key.strip():
            out[key.strip().lower()] = value.replace("!important", "").strip().lower()
    return out


def parse_colour(value: str | None) -> tuple[int, int, int] | None:
    """An RGB triple of a CSS / Word colour (``#fff``, ``#ffffff``, ``FFFFFF``, ``rgb(255, 255, 255)``, a few
    names), or None when it is not one (``auto``, ``inherit``, an image)."""
    if not value:
        return None
    v = value.strip().lower()
    if v in _NAMED:
        return _NAMED[v]
    m = re.fullmatch(r"#?([0-9a-f]{6}|[0-9a-f]{3})", v)
    if m:
        h = m.group(1)
        h = "".join(c * 2 for c in h) if len(h) == 3 else h
        return tuple(int(h[i : i + 2], 16) for i in (0, 2, 4))
    m = re.fullmatch(r"rgba?\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*(?:,\s*([\d.]+)\s*)?\)", v)
    if m:
        if m.group(4) is not None and float(m.group(4)) == 0:
            return None  # fully transparent: the text is invisible whatever its colour (style_hides checks alpha)
        return tuple(min(255, int(m.group(i))) for i in (1, 2, 3))
    return None


def same_colour(a, b) -> bool:
    return a is not None and b is not None and all(abs(x - y) <= NEAR for x, y in zip(a, b))


def length_pt(value: str) -> float | None:
    """A CSS length in points (``px`` × 0.75; ``em``/``rem``/``%`` only when zero), or None."""
    m = _LENGTH.match(value or "")
    if not m:
        return None
    number, unit = float(m.group(1)), m.group(2)
    if unit == "px":
        return number * 0.75
    if unit in ("pt", ""):
        return number if unit == "pt" or number == 0 else number * 0.75
    return 0.0 if number == 0 else None


def _px(value: str) -> float | None:
    pt = length_pt(value)
    return None if pt is None else pt / 0.75


def style_hides(decl: dict[str, str], min_pt: float = DEFAULT_MIN_PT, background=None) -> str | None:
    """Why an element with CSS ``decl`` is not seen (``"display:none"``, …), or None. ``background`` is the RGB the
    element is drawn on (its own or an ancestor's background; None: white)."""
    if decl.get("display", "").startswith("none"):
        return "display:none"
    if decl.get("visibility") in ("hidden", "collapse"):
        return "visibility:hidden"
    opacity = decl.get("opacity")
    if opacity is not None:
        try:
            if float(opacity.rstrip("%")) == 0:
                return "opacity:0"
        except ValueError:
            pass
    size = decl.get("font-size")
    if size is not None:
        pt = length_pt(size)
        if pt is not None and pt < min_pt:
            return f"font-size under {min_pt:g} pt"
    for key in ("left", "top", "right", "text-indent", "margin-left", "margin-top"):
        px = _px(decl.get(key, ""))
        if px is not None and px <= -OFF_PAGE_PX:
            return "off the page"
    if decl.get("clip", "").replace(" ", "") in ("rect(0,0,0,0)", "rect(0px,0px,0px,0px)") or \
            decl.get("clip-path", "").replace(" ", "") in ("inset(50%)", "inset(100%)", "circle(0)"):
        return "clipped to nothing"
    if "color" in decl:
        if re.fullmatch(r"rgba\(.*,\s*0(\.0*)?\s*\)", decl["color"]) or decl["color"] == "transparent":
            return "transparent text"
        colour = parse_colour(decl["color"])
        own = parse_colour(decl.get("background-color") or decl.get("background", "").split(" ")[0] or None)
        if same_colour(colour, own or background or (255, 255, 255)):
            return "text colour of its background"
    return None


def docx_run_hidden(rpr, min_pt: float = DEFAULT_MIN_PT) -> str | None:
    """Why a Word run with run properties ``rpr`` (a ``w:rPr`` element or None) is not seen, or None."""
    if rpr is None:
        return None
    from docx.oxml.ns import qn

    def on(tag: str) -> bool:
        el = rpr.find(qn(tag))
        return el is not None and (el.get(qn("w:val")) or "true").lower() not in ("0", "false", "off")

    if on("w:vanish") or on("w:specVanish"):
        return "hidden (vanish)"
    size = rpr.find(qn("w:sz"))
    if size is not None and (size.get(qn("w:val")) or "").isdigit() and int(size.get(qn("w:val"))) < 2 * min_pt:
        return f"size under {min_pt:g} pt"
    colour = rpr.find(qn("w:color"))
    shade = rpr.find(qn("w:shd"))
    highlight = rpr.find(qn("w:highlight"))
    background = parse_colour(shade.get(qn("w:fill"))) if shade is not None else None
    if background is None and highlight is not None:
        background = parse_colour(highlight.get(qn("w:val")))
    if colour is not None and same_colour(parse_colour(colour.get(qn("w:val"))), background or (255, 255, 255)):
        return "text colour of its background"
    return None


def pdf_char_hidden(render_mode: int | None, fill: tuple[int, int, int, int] | None, size_pt: float,
                    box: tuple[float, float, float, float] | None,
                    page_box: tuple[float, float, float, float] | None, min_pt: float = DEFAULT_MIN_PT) -> str | None:
    """Why a PDF character is not seen, or None: ``render_mode`` (3 invisible, 7 clip only), ``fill`` RGBA (alpha
    0, or the white of the page), ``size_pt`` (under ``min_pt``; 0 means PDFium does not know), ``box``
    (left, right, bottom, top) wholly outside ``page_box`` (left, bottom, right, top: the crop box, in the same
    unrotated user space as the characters' boxes — a page shown turned 90° keeps its characters' coordinates)."""
    if render_mode in (3, 7):
        return "invisible render mode"
    if fill is not None and (fill[3] == 0 or same_colour(fill[:3], (255, 255, 255))):
        return "white or transparent fill"
    if 0 < size_pt < min_pt:
        return f"size under {min_pt:g} pt"
    if box is not None and page_box is not None:
        left, right, bottom, top = box
        x0, y0, x1, y1 = page_box
        if right < x0 or left > x1 or top < y0 or bottom > y1:
            return "outside the page"
    return None
