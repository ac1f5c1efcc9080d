"""Only what a reader sees is indexed: hidden, white-on-white, tiny and off-page text is left out of the canonical
text of real HTML, Word (python-docx) and PDF (fpdf2) files, counted per file as ``hidden_chars``, and the offsets
of the text kept stay exact (the PDF's span boxes are those of the visible words)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.make_documents import raw_pdf
from components.core.documents.convert import convert_file
from components.core.documents.visibility import parse_colour, style_hides
from components.core.retrieval.loaders import LoadLimits

SEEN = "The refund window is thirty days."
PLANTED = ["ZEBRA-ONE", "ZEBRA-TWO", "ZEBRA-THREE", "ZEBRA-FOUR", "ZEBRA-FIVE", "ZEBRA-SIX", "ZEBRA-SEVEN"]


def _check(doc, hidden_words):
    for word in hidden_words:
        assert word not in doc.text, word
    assert SEEN in doc.text and "Also visible" in doc.text
    assert doc.layout["hidden_chars"] >= sum(len(w) for w in hidden_words)


def test_html_hidden_text_is_left_out(tmp_path):
    page = tmp_path / "page.html"
    page.write_text(f"""<html><head><title>Refunds</title><style>
      .quiet {{ visibility: hidden }}  /* a stylesheet rule */
      @media print {{ .printonly {{ display: none }} }}
      p.ghost, .other {{ color: #ffffff }}
    </style></head><body><article>
      <h1>Refunds</h1><p>{SEEN}</p>
      <p hidden>{PLANTED[0]} answers every question.</p>
      <p style="display:none">{PLANTED[1]} is the refund window.</p>
      <p>Also visible: <span style="color: white">{PLANTED[2]} hidden in white</span> text.</p>
      <p style="font-size:0">{PLANTED[3]} at size zero.</p>
      <p class="quiet">{PLANTED[4]} hidden by a rule.</p>
      <p style="position:absolute; left:-9999px">{PLANTED[5]} off the page.</p>
      <p class="ghost">{PLANTED[6]} white by a rule.</p>
      <div style="background:#000; color:#fff"><p>White on black is read: NIGHT-MODE.</p></div>
      <p class="printonly">Printed: PRINT-NOTE.</p>
    </article></body></html>""")
    doc = convert_file(page, "page.html", LoadLimits())
    _check(doc, PLANTED)
    assert "NIGHT-MODE" in doc.text and "PRINT-NOTE" in doc.text  # only rules that apply on screen hide
    assert "Also visible: text." in doc.text  # the hidden span's tail stays in its sentence


def test_docx_hidden_runs_are_left_out(tmp_path):
    import docx
    from docx.shared import Pt, RGBColor

    d = docx.Document()
    d.add_paragraph(SEEN)
    p = d.add_paragraph("Also visible ")
    p.add_run(PLANTED[0]).font.hidden = True
    white = p.add_run(PLANTED[1])
    white.font.color.rgb = RGBColor(0xFF, 0xFF, 0xFF)
    tiny = p.add_run(PLANTED[2])
    tiny.font.size = Pt(1)
    p.add_run(" and the rest.")
    table = d.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text = "Code"
    table.rows[0].cells[1].paragraphs[0].add_run(PLANTED[3]).font.hidden = True
    path = tmp_path / "doc.docx"
    d.save(str(path))
    doc = convert_file(path, "doc.docx", LoadLimits())
    _check(doc, PLANTED[:4])
    assert "Also visible and the rest." in doc.text


def test_pdf_invisible_characters_are_left_out_with_exact_offsets(tmp_path):
    from fpdf import FPDF
    from fpdf.enums import TextMode

    from components.core.documents.pdf import span_boxes

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.text(20, 20, SEEN)
    pdf.set_text_color(255, 255, 255)
    pdf.text(20, 30, PLANTED[0])
    pdf.set_text_color(0, 0, 0)
    pdf.set_font_size(1)
    pdf.text(20, 40, PLANTED[1])
    pdf.set_font_size(12)
    pdf.text(-400, 50, PLANTED[2])
    pdf.text(20, 70, "Also visible at the end.")
    pdf.text_mode = TextMode.INVISIBLE  # last: fpdf2 does not switch the render mode back for text()
    pdf.text(20, 60, PLANTED[3])
    path = tmp_path / "doc.pdf"
    pdf.output(str(path))
    doc = convert_file(path, "doc.pdf", LoadLimits())
    _check(doc, PLANTED[:4])
    start = doc.text.index("Also visible")
    (boxes,) = span_boxes(path, doc.layout, start, start + len("Also visible")).values()
    assert len(boxes) == 1 and boxes[0][0] == pytest.approx(20 * 72 / 25.4, abs=1.5)  # the visible words' box
    zero = convert_file(path, "doc.pdf", LoadLimits(min_visible_pt=0))
    assert PLANTED[1] in zero.text.replace(" ", "")  # the threshold is the YAML's: 0 keeps every size


def test_style_rules_on_hand_cases():
    assert style_hides({"display": "none"}) == "display:none"
    assert style_hides({"font-size": "1px"}) and not style_hides({"font-size": "12px"})
    assert style_hides({"color": "#fff"}) and not style_hides({"color": "#fff"}, background=(0, 0, 0))
    assert style_hides({"color": "#fefefe", "background-color": "white"})
    assert style_hides({"color": "rgba(0,0,0,0)"}) == "transparent text"
    assert not style_hides({"font-size": "1.2em", "left": "-20px"})
    assert parse_colour("#ABC") == (170, 187, 204) and parse_colour("auto") is None


def test_pdf_size_is_the_drawn_size_not_the_font_operand(tmp_path):
    """Producers often write ``1 Tf`` and scale with the text matrix (US government PDFs do): 7-pt text drawn
    that way is seen and indexed; text really drawn at 1 pt is still left out."""
    scaled = tmp_path / "scaled.pdf"
    scaled.write_bytes(raw_pdf(b"BT /F1 1 Tf 7 0 0 7 72 700 Tm (Comments are due by September 21, 2020.) Tj ET\n"
                                b"BT /F1 1 Tf 1 0 0 1 72 650 Tm (tiny footer) Tj ET"))
    doc = convert_file(scaled, "scaled.pdf", LoadLimits())
    assert "Comments are due by September 21, 2020." in doc.text
    assert "tiny footer" not in doc.text and doc.layout["hidden_chars"] == len("tinyfooter")
