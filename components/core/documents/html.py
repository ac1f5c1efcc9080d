"""HTML: the main content (not navigation, footers or scripts) as Markdown-shaped text, with ``<meta>`` fields.

Why trafilatura: it is the main-content extractor Haystack's own ``HTMLToDocument`` uses, well kept and measured
on web pages; it keeps headings, tables (rows and the header row) and code blocks and drops navigation,
footers, scripts and styles. The body it extracts (``<head rend="h2">``, ``<p>``, ``<list>``,
``<table>``/``<row>``/``<cell>``, ``<code>``) is written here as Markdown-shaped canonical text — heading lines, pipe-table rows, fenced code — so the
one splitter reads it exactly as it reads a Markdown file (trafilatura's own Markdown output adds ``**bold**``
markers that would end up inside spans).

A page with no boilerplate in its markup — no ``nav``, ``header``, ``footer``, ``aside`` or ``menu`` element and no
navigation, banner or footer landmark role (a man page or a documentation fragment converted to HTML) — is all main
content: its whole body is written the same way by ``whole_body_markdown``, because trafilatura's heuristics, whose
job is to drop boilerplate, drop such a page's headings and its text outside ``<p>`` (a man page lost its NAME,
DESCRIPTION and first paragraph).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from components.core.documents.errors import ConversionError
from components.core.documents.meta import FIELDS, pipe_table
from components.core.documents.visibility import DEFAULT_MIN_PT, parse_colour, parse_style, style_hides

_TRAILING = re.compile(r"[ \t]+$", re.MULTILINE)


def _meta_tags(tree) -> dict[str, Any]:
    """The page's own fields: ``<title>`` (or ``og:title``), ``description``, ``author`` and the ``<meta name=...>``
    fields spanqa knows (status, superseded_by, ...). Read from the page's head, never guessed (trafilatura's
    metadata pass would guess a date from a footer's "© 2025" and costs as much as the extraction)."""
    out: dict[str, Any] = {}
    title = tree.find(".//title")
    if title is not None and (title.text or "").strip():
        out["title"] = " ".join(title.text.split())
    for el in tree.iter("meta"):
        name = (el.get("name") or el.get("property") or "").strip().lower().replace("-", "_")
        name = name.removeprefix("og:").removeprefix("dc.")
        content = " ".join((el.get("content") or "").split())
        if name in FIELDS:  # kept even when empty: an empty access field closes the document
            out.setdefault(name, content)
        elif content and name in ("description", "author"):
            out.setdefault(name, content)
        elif content and name == "title" and "title" not in out:
            out["title"] = content
    return out


_RULE = re.compile(r"([^{}@]+)\{([^{}]*)\}")
_INHERITED = ("color", "font-size", "visibility")


def _stylesheet(tree) -> dict:
    """``{element: declarations}`` from the page's own ``<style>`` rules (simple rules; ``@media`` and other at-rules
    are skipped), in document order so a later rule wins, as in a browser (specificity is not weighed)."""
    from cssselect import SelectorError

    css = " ".join("".join(el.itertext()) for el in tree.iter("style"))
    css = re.sub(r"/\*.*?\*/", " ", css, flags=re.S)
    css = re.sub(r"@[^{;]+\{(?:[^{}]*\{[^{}]*\})*[^{}]*\}", " ", css)  # @media { … { … } } blocks
    found: dict = {}
    for selectors, body in _RULE.findall(css):
        decl = parse_style(body)
        for selector in selectors.split(","):
            try:
                matched = tree.cssselect(selector.strip())
            except (SelectorError, ValueError, TypeError):
                continue
            for el in matched:
                found.setdefault(el, {}).update(decl)
    return found


def prune_hidden(tree, min_pt: float = DEFAULT_MIN_PT) -> int:
    """Remove from ``tree`` every element a reader of the page does not see (``visibility.style_hides`` over its
    inline style and the page's ``<style>`` rules, the ``hidden`` attribute, ``<template>``); the characters of
    text removed."""
    rules = _stylesheet(tree)
    hidden = []

    def walk(el, inherited: dict, background) -> None:
        if not isinstance(el.tag, str):
            return
        own = {**rules.get(el, {}), **parse_style(el.get("style") or "")}
        decl = {**inherited, **own}
        if el.get("hidden") is not None or el.tag == "template" or style_hides(decl, min_pt, background):
            hidden.append(el)
            return
        bg = parse_colour(own.get("background-color") or (own.get("background") or "").split(" ")[0] or None)
        passed = {k: decl[k] for k in _INHERITED if k in decl}
        for child in el:
            walk(child, passed, bg or background)

    walk(tree, {}, None)
    removed = 0
    for el in hidden:
        removed += len("".join(el.itertext()).strip())
        el.drop_tree()  # its tail (text after it) is the parent's and stays
    return removed


def _flat(el) -> str:
    """``el``'s text on one line, a space where a block, a cell, a list item or a line break ends another's text
    (``<td><a>Home</a><br><a>News</a></td>`` reads ``Home News``, never ``HomeNews``); scripts, styles and comments
    are not text. Inline markup (``<b>``, ``<code>``, ``<a>``) joins as written: ``<code>foo</code>s`` reads
    ``foos``."""
    parts: list[str] = []

    def walk(e) -> None:
        tag = _tag(e)
        if tag and tag not in _NOT_TEXT:
            apart = tag in _APART
            parts.append(" " if apart else "")
            parts.append(e.text or "")
            for child in e:
                walk(child)
                parts.append(child.tail or "")
            parts.append(" " if apart else "")

    walk(el)
    return " ".join("".join(parts).split())


def own_rows(table) -> list:
    """The rows of ``table`` itself (directly, or in its ``thead`` / ``tbody`` / ``tfoot``), never a nested
    table's: ``table.iter("tr")`` also yields those, and each nested row's text would be written twice."""
    return [tr for tr in table.iter("tr") if next(tr.iterancestors("table"), None) is table]


def _tag(el) -> str:
    """``el``'s tag in lower case; "" for a comment or a processing instruction."""
    return el.tag.lower() if isinstance(el.tag, str) else ""


def row_cells(tr) -> list:
    """The ``td`` / ``th`` cells of row ``tr``."""
    return [c for c in tr if _tag(c) in ("td", "th")]


def is_layout_table(table) -> bool:
    """Whether ``table`` lays a page out rather than holding data: it is one cell (a frame), or one of its own cells
    holds a table, a list, a code block or a quotation — content no data cell holds (a heading may title a group of
    rows, and stays in its row). Its cells are then read as the page's blocks, never flattened into one table row
    (an old project page keeps its menu and all of its text in two cells)."""
    cells = [cell for tr in own_rows(table) for cell in row_cells(tr)]
    return len(cells) == 1 or any(_tag(inner) in _LAYOUT_CONTENT for cell in cells for inner in cell.iterdescendants())


def body_to_markdown(body) -> str:
    """trafilatura's extracted body (``head``/``p``/``list``/``table``/``code`` elements) → Markdown-shaped text,
    blocks separated by a blank line."""
    blocks: list[str] = []
    for el in body:
        tag = el.tag
        if tag == "head":
            rend = el.get("rend") or "h2"
            level = int(rend[1]) if len(rend) == 2 and rend[1].isdigit() else 2
            if _flat(el):
                blocks.append("#" * level + " " + _flat(el))
        elif tag == "table":
            rows = [r for r in ([_flat(c) for c in row.iter("cell")] for row in el.iter("row")) if any(r)]
            if rows:
                blocks.append(pipe_table(rows))
        elif tag == "list":
            items = [_flat(i) for i in el.iter("item") if _flat(i)]
            if items:
                blocks.append("\n".join("- " + i for i in items))
        elif tag == "code":
            code = "".join(el.itertext()).strip("\n")
            if code.strip():
                blocks.append("```\n" + _TRAILING.sub("", code) + "\n```")
        elif tag in ("p", "quote"):
            if _flat(el):
                blocks.append(_flat(el))
    return "\n\n".join(blocks) + ("\n" if blocks else "")


_BOILERPLATE = ("nav", "header", "footer", "aside", "menu")
_LANDMARKS = '//*[@role="navigation" or @role="banner" or @role="contentinfo" or @role="complementary"]'
_SKIP = {"script", "style", "noscript", "template", "head", "title", "iframe", "object", "svg", "button", "select"}
_BLOCK = {"p", "div", "blockquote", "section", "article", "main", "body", "center", "form", "dd", "dt", "dl",
          "figure", "figcaption", "address", "details", "summary", "fieldset", "hr", "br"}
# what ends a run of text inside a flattened cell or item (trafilatura's own tags among them: lb, item, cell, row)
_APART = _BLOCK | {"li", "td", "th", "tr", "table", "pre", "ul", "ol", "h1", "h2", "h3", "h4", "h5", "h6", "lb",
                   "item", "list", "cell", "row", "head", "quote"}
_NOT_TEXT = {"script", "style", "noscript", "template"}
_LAYOUT_CONTENT = {"table", "ul", "ol", "dl", "pre", "blockquote"}


def has_boilerplate(tree) -> bool:
    """Whether the page marks navigation, headers or footers (then trafilatura picks its main content)."""
    return next(tree.iter(*_BOILERPLATE), None) is not None or bool(tree.xpath(_LANDMARKS))


def whole_body_markdown(body) -> str:
    """A whole ``<body>`` → Markdown-shaped text: ``h1``–``h6`` headings, paragraphs (text in and between block
    elements), ``- `` list items, pipe tables (the first row is the header), fenced ``pre`` blocks."""
    blocks: list[str] = []
    inline: list[str] = []

    def flush() -> None:
        text = " ".join("".join(inline).split())
        inline.clear()
        if text:
            blocks.append(text)

    def walk(el) -> None:
        tag = el.tag.lower() if isinstance(el.tag, str) else ""
        if not tag or tag in _SKIP:
            return
        if re.fullmatch(r"h[1-6]", tag):
            flush()
            if _flat(el):
                blocks.append("#" * int(tag[1]) + " " + _flat(el))
        elif tag == "table":
            flush()
            if is_layout_table(el):  # each cell's content as blocks of the page, cell after cell
                for tr in own_rows(el):
                    for cell in row_cells(tr):
                        walk_children(cell)
                        flush()
                return
            rows = [r for r in ([_flat(c) for c in row_cells(tr)] for tr in own_rows(el)) if any(r)]
            if rows:
                blocks.append(pipe_table(rows))
        elif tag in ("ul", "ol"):
            flush()
            items: list[str] = []
            for li in el.iter("li"):
                if next(li.iter("table", "pre"), None) is not None:  # an item holding a table or code: its blocks
                    if items:
                        blocks.append("\n".join("- " + i for i in items))
                        items = []
                    inline.append("- ")
                    walk_children(li)
                    flush()
                elif _flat(li) and not any(a.tag == "li" for a in li.iterancestors() if a is not el
                                           and el in a.iterancestors()):
                    items.append(_flat(li))
            if items:
                blocks.append("\n".join("- " + i for i in items))
        elif tag == "pre":
            flush()
            code = "".join(el.itertext()).strip("\n")
            if code.strip():
                blocks.append("```\n" + _TRAILING.sub("", code) + "\n```")
        else:
            block = tag in _BLOCK
            if block:
                flush()
            walk_children(el)
            if block:
                flush()

    def walk_children(el) -> None:
        inline.append(el.text or "")
        for child in el:
            walk(child)
            inline.append(child.tail or "")

    walk(body)
    flush()
    return "\n\n".join(blocks) + ("\n" if blocks else "")


def read_html(path: Path, max_bytes: int, min_pt: float = DEFAULT_MIN_PT) -> tuple[str, dict[str, Any], int]:
    """``(canonical text, meta, hidden characters left out)`` of an HTML file, or ``ConversionError``."""
    import trafilatura

    raw = path.read_bytes()[: max_bytes + 1]
    if len(raw) > max_bytes:
        raise ConversionError(f"larger than max_document_bytes ({max_bytes:,} bytes)")
    if b"\x00" in raw[:8192]:
        raise ConversionError("binary file with an .html name")
    html = raw.decode("utf-8", errors="replace")
    # an XHTML page's XML declaration names its encoding, which lxml refuses on text it did not decode itself
    html = re.sub(r"^\ufeff?\s*<\?xml[^>]*\?>", "", html, count=1)
    import lxml.html

    try:
        tree = lxml.html.document_fromstring(html)
    except (ValueError, lxml.etree.ParserError) as exc:
        raise ConversionError(f"not a readable HTML page ({exc})") from None
    meta = _meta_tags(tree)  # before trafilatura prunes the tree
    hidden = prune_hidden(tree, min_pt)  # what a reader does not see is never text (nor an answer)
    if not has_boilerplate(tree) and tree.find("body") is not None:
        text = whole_body_markdown(tree.find("body"))
    else:
        extracted = trafilatura.bare_extraction(tree, include_tables=True, include_formatting=False,
                                                include_comments=False, include_links=False, include_images=False,
                                                favor_recall=True, deduplicate=False, with_metadata=False)
        body = getattr(extracted, "body", None)
        text = body_to_markdown(body) if body is not None else ""
    if not text.strip():
        raise ConversionError("no main content found in the page (navigation, scripts or an empty body only)"
                              + (f"; {hidden:,} characters of hidden text left out" if hidden else ""))
    return text, meta, hidden
