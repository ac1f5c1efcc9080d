"""PDF, HTML and DOCX files built in the test (fpdf2, python-docx, a real page) → canonical text, layout and
metadata; every bad file skipped with its reason, never a crash."""

from __future__ import annotations


import pytest

from benchmarks.make_documents import (
    HUB_PRO,
    SECURITY,
    SLA,
    write_docx,
    write_html,
    write_pdf,
    write_scanned_pdf,
    write_zip_bomb_docx,
)
from components.core.documents.convert import convert_file
from components.core.documents.layout import chunk_location, heading_path, locate, situating_note
from components.core.retrieval.index import IndexSettings, split_document
from components.core.retrieval.loaders import LoadLimits, load_folder


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("mixed")
    write_pdf(root / "security.pdf", *SECURITY, keywords="status: superseded; superseded_by: security-2026.pdf")
    write_html(root / "hub-pro.html", *HUB_PRO, meta={"status": "current", "product": "Hub Pro"})
    write_docx(root / "sla.docx", *SLA, status="current")
    report = load_folder(root)
    assert report.skipped == []
    return root, {d.doc_id: d for d in report.documents}


def test_pdf_pages_outline_and_metadata(corpus):
    _, docs = corpus
    pdf = docs["security.pdf"]
    text, layout = pdf.text, pdf.layout
    assert layout["format"] == "pdf" and layout["file"] == "security.pdf" and len(layout["sha256"]) == 64
    assert len(layout["pages"]) == 3
    # each outline entry sits where its title is printed, one per page
    assert [(text[o:o + len(t)], lvl) for o, lvl, t in layout["headings"]] == [
        ("Encryption", 1), ("Firmware signing", 1), ("Reporting a vulnerability", 1)]
    assert [layout["pages"][i][0] for i in range(3)] == [h[0] for h in layout["headings"]]
    # wrapped lines are joined by a space, paragraphs by a blank line: sentences read whole
    i = text.index("The Glimmerline bug bounty pays up to 2,500 euros")
    assert text[i - 2:i] == "\n\n"
    assert "Glimmerline Cloud, so a network operator cannot read or change the traffic even with a certificate" in text
    assert pdf.meta["title"] == "Glimmerline security whitepaper" and pdf.meta["created"] == "2025-03-01"
    assert pdf.meta["status"] == "superseded" and pdf.meta["superseded_by"] == "security-2026.pdf"
    where = locate(pdf, i + 38, i + 49)
    assert text[i + 38:i + 49] == "2,500 euros"
    assert where == {"file": "security.pdf", "format": "pdf", "heading_path": ["Reporting a vulnerability"],
                     "page": 3, "pages": 3, "cite": "page 3 of security.pdf (Reporting a vulnerability)"}


def test_pdf_boxes_cover_exactly_the_span_on_its_page(corpus):
    """The boxes of a span, read back through PDFium's own text-in-rectangle, hold the span's text."""
    import pypdfium2 as pdfium

    from components.core.documents.pdf import span_boxes

    root, docs = corpus
    pdf = docs["security.pdf"]
    for needle in ("2,500 euros", "Ed25519 key", "TLS 1.3"):
        s = pdf.text.index(needle)
        boxes = span_boxes(root / "security.pdf", pdf.layout, s, s + len(needle))
        assert list(boxes) == [pdf.layout and locate(pdf, s, s + 1)["page"]]
        (page, rects), = boxes.items()
        left, bottom = min(r[0] for r in rects), min(r[1] for r in rects)
        right, top = max(r[2] for r in rects), max(r[3] for r in rects)
        doc = pdfium.PdfDocument(str(root / "security.pdf"))
        inside = doc[page - 1].get_textpage().get_text_bounded(left, bottom, right, top)
        doc.close()
        assert " ".join(inside.split()) == needle


def test_html_main_content_headings_table_and_meta(corpus):
    _, docs = corpus
    html = docs["hub-pro.html"]
    text = html.text
    assert text.startswith("# Glimmerline Hub Pro datasheet\n\n## Overview\n\nThe Hub Pro is")
    for gone in ("Sign in", "Cookie settings", "tracking", "fetch("):  # navigation, footer, script
        assert gone not in text
    assert "| Property | Value |\n|---|---|\n| SKU | GLN-HUB-PRO |" in text
    assert html.meta["status"] == "current" and html.meta["product"] == "Hub Pro"
    assert html.meta["title"] == "Glimmerline Hub Pro datasheet"
    row = text.index("| Weight | 310 g |")
    assert heading_path(html.layout, row) == ["Glimmerline Hub Pro datasheet", "Specifications"]
    assert situating_note(html.meta, html.layout, row) == "Glimmerline Hub Pro datasheet › Specifications"
    where = locate(html, row + 11, row + 16)
    assert html.text[row + 11:row + 16] == "310 g"
    # data rows: SKU, Radios, Operating temperature, Weight
    assert (where["table_row"], where["cite"]) == (
        4, "hub-pro.html › Glimmerline Hub Pro datasheet › Specifications, table row 4")
    assert "table_row" not in locate(html, 0, 5)


def test_docx_headings_tables_and_core_properties(corpus):
    _, docs = corpus
    doc = docs["sla.docx"]
    text = doc.text
    assert text.startswith("# Glimmerline Cloud service level agreement\n\n# Availability\n\nGlimmerline Cloud is")
    assert "| Monthly availability | Service credit |\n|---|---|\n| below 99.9% | 10% of the monthly fee |" in text
    assert doc.meta["status"] == "current" and doc.meta["created"] == "2025-03-01"
    assert heading_path(doc.layout, text.index("25% of the monthly fee")) == ["Service credits"]


def test_chunks_keep_to_one_section_and_page_and_carry_their_location(corpus):
    _, docs = corpus
    settings = IndexSettings()
    for doc in docs.values():
        _, _, chunks = split_document(doc, settings)
        starts = {h[0] for h in doc.layout["headings"]} | {p[0] for p in doc.layout.get("pages", [])}
        for c in chunks:
            assert not any(c.start < b < c.end for b in starts), (doc.doc_id, c)
    pdf = docs["security.pdf"]
    _, _, chunks = split_document(pdf, settings)
    assert [chunk_location(pdf.layout, c.start)["page"] for c in chunks] == [1, 2, 3]
    # table rows of the DOCX are units of their own (a row chunk is read with its header)
    _, units, _ = split_document(docs["sla.docx"], settings)
    assert "| below 99.0% | 25% of the monthly fee |" in [docs["sla.docx"].text[u.start:u.end] for u in units]


def test_bad_files_are_listed_with_their_reason(tmp_path):
    write_pdf(tmp_path / "locked.pdf", *SECURITY, encrypt="secret")
    write_scanned_pdf(tmp_path / "scan.pdf")
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.7\n1 0 obj <<>> garbage")
    write_zip_bomb_docx(tmp_path / "bomb.docx", unpacked_bytes=300_000_000)
    write_zip_bomb_docx(tmp_path / "dense.docx", unpacked_bytes=50_000_000)  # under the size limit, not the ratio
    (tmp_path / "fake.docx").write_text("not a zip")
    (tmp_path / "empty.html").write_text("<html><head><script>alert(1)</script></head><body><nav>Home</nav></body></html>")
    write_pdf(tmp_path / "long.pdf", *SECURITY)
    (tmp_path / "ok.md").write_text("# Fine\n\nA document that is fine.\n")
    report = load_folder(tmp_path, LoadLimits(max_pages=2))
    reasons = dict(report.skipped)
    assert [d.doc_id for d in report.documents] == ["ok.md"]
    assert report.found == 9
    assert reasons["locked.pdf"].startswith("encrypted PDF (a password is needed")
    assert reasons["scan.pdf"].startswith("no text layer (a scanned PDF?) — OCR is not supported")
    assert reasons["broken.pdf"].startswith("not a readable PDF")
    import zipfile

    unpacked = sum(i.file_size for i in zipfile.ZipFile(tmp_path / "bomb.docx").infolist())
    assert reasons["bomb.docx"].startswith(f"the archive unpacks to {unpacked:,} bytes, more than max_unpacked_bytes "
                                           f"(200,000,000) — a zip bomb")
    assert reasons["dense.docx"].startswith("the archive inflates") and reasons["dense.docx"].endswith(": a zip bomb")
    assert reasons["fake.docx"].startswith("not a readable .docx (not a zip archive")
    assert reasons["empty.html"].startswith("no main content found")
    assert reasons["long.pdf"] == ("3 pages, more than max_pages (2); raise it in the store's `conversion:` section "
                                   "or split the file")


def test_markdown_headings_skip_code_and_give_paths(tmp_path):
    (tmp_path / "a.md").write_text("---\ntitle: A\n---\n# Top\n\nIntro.\n\n## Sub\n\n```bash\n# not a heading\n```\n\n"
                                   "Text.\n\n# Next\n\nMore.\n")
    doc = load_folder(tmp_path).documents[0]
    assert [(h[1], h[2]) for h in doc.layout["headings"]] == [(1, "Top"), (2, "Sub"), (1, "Next")]
    assert heading_path(doc.layout, doc.text.index("Text.")) == ["Top", "Sub"]
    assert heading_path(doc.layout, doc.text.index("More.")) == ["Next"]
    assert heading_path(doc.layout, 0) == []


def test_fields_of_converted_files_feed_filters_and_the_superseded_rule(tmp_path):
    """A PDF whose Keywords say `status: superseded`, a Word file whose content status is `current`: the retriever
    leaves the superseded PDF out by default and a filter on the Word file's field selects it."""
    from components.retrievers.hybrid_retriever import HybridRetriever
    from components.stores.span_store import SpanStore

    write_pdf(tmp_path / "security-2024.pdf", *SECURITY, keywords="status: superseded; superseded_by: sla.docx")
    write_docx(tmp_path / "sla.docx", *SLA, status="current")
    store = SpanStore(data_dir=str(tmp_path), cache_dir=str(tmp_path / ".cache"), progress=False)
    retriever = HybridRetriever(store, top_k=10)
    assert store.superseded_documents(retriever.rule) == ["security-2024.pdf"]
    out = retriever.run(query="bug bounty payout for a vulnerability")
    assert {d.meta["doc_id"] for d in out["bm25_documents"] + out["dense_documents"]} == {"sla.docx"}
    only = retriever.run(query="bug bounty payout", superseded="only")
    assert {d.meta["doc_id"] for d in only["bm25_documents"]} == {"security-2024.pdf"}
    current = retriever.run(query="service credit", filters={"field": "meta.status", "operator": "==",
                                                              "value": "current"})
    assert current["dense_documents"] and all(d.meta["status"] == "current" for d in current["dense_documents"])


def test_a_page_of_one_repeated_paragraph_keeps_every_repeat(tmp_path):
    """No silent collapse: an FAQ or a log page repeats lines on purpose, and each repeat is text of the page."""
    from components.core.documents.html import read_html

    line = "Restart the hub and wait for the green light."
    page = tmp_path / "repeat.html"
    page.write_text("<html><body>" + f"<p>{line}</p>" * 300 + "</body></html>")
    text, _, hidden = read_html(page, 10**8)
    assert text.count(line) == 300 and hidden == 0


def test_an_xhtml_page_with_an_xml_declaration_is_read(tmp_path):
    """lxml refuses a decoded string that declares its encoding: the declaration is dropped, the page read."""
    from components.core.documents.convert import convert_file
    from components.core.retrieval.loaders import LoadLimits

    page = tmp_path / "manual.html"
    page.write_text('<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" '
                    '"http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">\n<html xmlns="http://www.w3.org/1999/xhtml">'
                    "<head><title>Limits</title></head><body><p>The server accepts at most 150 clients at a time by "
                    "default, and each client may open 8 channels.</p></body></html>", encoding="utf-8")
    doc = convert_file(page, "manual.html", LoadLimits())
    assert "at most 150 clients at a time" in doc.text


MAN_PAGE = """<HTML><HEAD><TITLE>TOOL man page</TITLE><STYLE>p {color: black}</STYLE></HEAD><BODY>
<H2>NAME</H2>
tool - a command-line tool
<H2>DESCRIPTION</H2>
<B>tool</B>
is the stand-alone tool.
It reads
<I>files</I>
in order.
<P>
The index of the last argument is stored in <B>arg.n</B>.
<UL><LI>first item</LI><LI>second item with a table
<TABLE><TR><TH>os</TH><TH>arch</TH></TR><TR><TD>linux</TD><TD>arm64</TD></TR></TABLE></LI></UL>
<PRE>tool -v
tool -x file</PRE>
<SCRIPT>track()</SCRIPT>
</BODY></HTML>"""


def test_a_page_without_boilerplate_is_all_main_content_headings_and_loose_text_kept(tmp_path):
    """A man page converted to HTML marks no navigation, header or footer: its whole body is read — trafilatura,
    whose job is to drop boilerplate, dropped its headings and its text outside <p>; a table inside a list item
    stays a table."""
    path = tmp_path / "tool.html"
    path.write_text(MAN_PAGE)
    doc = convert_file(path, "tool.html", LoadLimits())
    assert doc.text == ("## NAME\n\ntool - a command-line tool\n\n## DESCRIPTION\n\ntool is the stand-alone tool. It reads "
                        "files in order.\n\nThe index of the last argument is stored in arg.n.\n\n- first item\n\n"
                        "- second item with a table\n\n| os | arch |\n|---|---|\n| linux | arm64 |\n\n"
                        "```\ntool -v\ntool -x file\n```\n")
    assert heading_path(doc.layout, doc.text.index("arg.n")) == ["DESCRIPTION"]
    import lxml.html

    from components.core.documents.html import has_boilerplate

    assert not has_boilerplate(lxml.html.document_fromstring(MAN_PAGE))
    for frame in ("<NAV><A HREF='/'>Home</A></NAV>", "<DIV ROLE='navigation'>Home</DIV>", "<FOOTER>(c)</FOOTER>"):
        # a page that marks its boilerplate: trafilatura picks the main content (tests above)
        assert has_boilerplate(lxml.html.document_fromstring(MAN_PAGE.replace("<BODY>", "<BODY>" + frame)))


OLD_PROJECT_PAGE = """<html><head><title>FAQ</title></head><body>
<table><tr><td><a href="/">Home</a><br><a href="news.html">News</a></td>
<td><table><tr><td><h1>The C library</h1></td></tr></table></td></tr></table>
<table><tr><td><ul><li><a href="intro.html">Introduction</a></li><li><a href="faq.html">FAQ</a></li></ul></td>
<td><table><tr><td><p>Troubles linking programs?</p><p>The script lib-config prints the flags.</p>
<pre>lib-config --cflags</pre></td></tr></table></td></tr></table>
</body></html>"""


def test_a_page_laid_out_in_tables_is_read_as_its_blocks_once(tmp_path):
    """An old project page lays its menu and its text out in nested tables: each nested row was written again by
    every table around it (five copies of the page) and a cell's links ran together (``HomeNews``); a table whose
    cells hold a table, a list, a code block or a quotation is read as the page's blocks, each once."""
    from components.core.documents.html import read_html

    page = tmp_path / "faq.html"
    page.write_text(OLD_PROJECT_PAGE)
    text, _, _ = read_html(page, 10**8)
    assert text == ("Home\n\nNews\n\n# The C library\n\n- Introduction\n- FAQ\n\nTroubles linking programs?\n\n"
                    "The script lib-config prints the flags.\n\n```\nlib-config --cflags\n```\n")


def test_a_data_table_stays_a_table_its_cells_spaced(tmp_path):
    """A heading that titles a group of rows keeps the table a table; a line break or a paragraph inside a cell is
    a space (``Function (name)``, not ``Function(name)``); inline markup joins as written (``<code>foo</code>s``)."""
    from components.core.documents.html import read_html

    page = tmp_path / "keys.html"
    page.write_text("<html><body><table><tr><th>Function<br>(name)</th><th>Key</th></tr>"
                    "<tr><td colspan='2'><h3>Navigation</h3></td></tr>"
                    "<tr><td><code>NEXT</code>s</td><td><p>SPC</p><p>C-v</p></td></tr>"
                    "</table></body></html>")
    text, _, _ = read_html(page, 10**8)
    assert text == "| Function (name) | Key |\n|---|---|\n| Navigation |  |\n| NEXTs | SPC C-v |\n"
