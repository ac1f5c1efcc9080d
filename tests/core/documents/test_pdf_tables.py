"""Tables in a PDF's text layer, from the characters' positions: cells cut at gutters, columns, header rows, prose
left alone — by hand on glyphs, then on real PDFs drawn with fpdf2 and by hand (a page turned 90°), whose pipe
tables keep an exact PDFium index for every character and whose cell questions get the cell's offsets."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.make_documents import raw_pdf
from components.core.documents.convert import convert_file
from components.core.documents.pdf_tables import Cell, Glyph, find_tables, line_cells
from components.core.retrieval.loaders import LoadLimits


def _line(start_index: int, words: list[tuple[str, float]], size: float = 10.0, weight: int = 400) -> list[Glyph]:
    """Glyphs of ``words`` (text, x where it starts), 5 pt per character, a word space of 2.5 pt between words of
    one cell; indices count characters and one space between words, as PDFium's text does."""
    out, i = [], start_index
    for text, x in words:
        for k, ch in enumerate(text):
            if ch != " ":
                out.append(Glyph(i, x + 5 * k, x + 5 * k + 4, size, weight))
            i += 1
        i += 1
    return out


def test_a_gap_wider_than_the_drawn_size_cuts_a_cell_and_a_word_space_does_not():
    cells = line_cells(_line(0, [("E4012", 10), ("Token expired", 60)]))
    assert [(c.first, c.last) for c in cells] == [(0, 4), (6, 18)]
    assert cells[1] == Cell(6, 18, 60, 124)
    assert line_cells(_line(0, [("E4012", 10), ("Token", 38)])) == [Cell(0, 10, 10, 62)]  # 4 pt gap < 10 pt
    backwards = [Glyph(0, 100, 104, 10), Glyph(1, 20, 24, 10)]
    assert line_cells(backwards) is None  # drawn out of order: never a table line


def test_columns_header_and_an_empty_cell():
    lines = [
        _line(0, [("Code", 10), ("Meaning", 60), ("Retry", 200)], weight=700),
        _line(100, [("E4012", 10), ("Token expired", 60), ("yes", 200)]),
        _line(200, [("E4031", 10), ("Quota exhausted", 60)]),
        _line(300, [("E5002", 10), ("Node timeout", 60), ("yes", 200)]),
    ]
    (table,) = find_tables(lines)
    assert (table.first_line, table.last_line, table.header) == (0, 3, True)
    assert [(c.first, c.last) if c else None for c in table.rows[2]] == [(200, 204), (206, 220), None]
    assert [(c.first, c.last) for c in table.rows[0]] == [(0, 3), (5, 11), (13, 17)]


def test_the_first_line_is_a_header_only_when_it_looks_like_one():
    rows = [_line(100 * k, [(f"E40{k}", 10), (f"Meaning {k}", 60)]) for k in range(1, 5)]
    (table,) = find_tables(rows, [f"E40{k} Meaning {k}" for k in range(1, 5)])
    assert not table.header and len(table.rows) == 4  # same weight, same size, digits like the rows
    worded = [_line(0, [("Code", 10), ("Meaning", 60)])] + rows
    (table,) = find_tables(worded, ["Code Meaning"] + [f"E40{k} Meaning {k}" for k in range(1, 5)])
    assert table.header  # no digit where the rows have them


def test_two_lines_or_side_by_side_prose_are_not_tables():
    assert find_tables([_line(0, [("a", 10), ("b", 60)]), _line(10, [("c", 10), ("d", 60)])]) == []
    prose = "the committee reviewed every comment it received"
    columns = [_line(100 * k, [(prose, 10), (prose, 300)]) for k in range(4)]
    assert find_tables(columns) == []
    single = [_line(100 * k, [("one cell of running text", 10)]) for k in range(4)]
    assert find_tables(single) == []


ROWS = [("Code", "Meaning", "Retry"), ("E4012", "Token expired before the upload finished", "yes"),
        ("E4031", "Quota for the project is exhausted", "no"), ("E5002", "Storage node did not answer in time", "yes")]


def _table_pdf(path: Path, rows=ROWS, lead: str = "Error codes of the Glimmerline gateway.") -> Path:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=11)
    pdf.multi_cell(0, 6, lead)
    pdf.ln(4)
    with pdf.table(col_widths=(20, 60, 20)) as table:
        for values in rows:
            row = table.row()
            for value in values:
                row.cell(value)
    pdf.ln(4)
    pdf.multi_cell(0, 6, "Contact support when an error repeats.")
    pdf.output(str(path))
    return path


def test_a_pdf_table_becomes_a_pipe_table_with_its_header_and_exact_offsets(tmp_path):
    import pypdfium2 as pdfium

    from components.core.documents.pdf import page_text, span_boxes

    path = _table_pdf(tmp_path / "codes.pdf")
    doc = convert_file(path, "codes.pdf", LoadLimits())
    assert ("| Code | Meaning | Retry |\n|---|---|---|\n| E4012 | Token expired before the upload finished | yes |\n"
            "| E4031 | Quota for the project is exhausted | no |\n") in doc.text
    assert doc.text.startswith("Error codes of the Glimmerline gateway.\n\n| Code")
    pdf = pdfium.PdfDocument(str(path))
    try:
        textpage = pdf[0].get_textpage()
        text, index, _ = page_text(textpage)
        raw = textpage.get_text_range()
    finally:
        pdf.close()
    assert text == doc.text
    inserted = "".join(ch for ch, i in zip(text, index) if i == -1)
    assert set(inserted) == set("|- \n") and inserted.count("|") == text.count("|")  # every pipe, rule, padding
    assert all(raw[i] == ch for ch, i in zip(text, index) if i >= 0 and ch not in " \n")  # the rest: PDFium's own
    cell = "Quota for the project is exhausted"
    start = doc.text.index(cell)
    (boxes,) = span_boxes(path, doc.layout, start, start + len(cell)).values()
    assert len(boxes) == 1  # one line: the cell's own characters, not its row's neighbours
    code = doc.text.index("E4031")
    (code_boxes,) = span_boxes(path, doc.layout, code, code + 5).values()
    assert code_boxes[0][2] < boxes[0][0]  # the code's cell ends left of the meaning's


@pytest.mark.slow
@settings(max_examples=8, deadline=None)
@given(st.lists(st.tuples(st.from_regex(r"[A-Z]{1,3}[0-9]{2,4}", fullmatch=True),
                          st.from_regex(r"[a-z]{3,9}( [a-z]{2,8}){0,3}", fullmatch=True)), min_size=2, max_size=6))
def test_generated_pdf_tables_keep_every_cell_whole_and_exact(tmp_path_factory, pairs):
    path = _table_pdf(tmp_path_factory.mktemp("pdf") / "t.pdf", [("Code", "Meaning", "Note")] +
                      [(k, v, "-") for k, v in pairs])
    doc = convert_file(path, "t.pdf", LoadLimits())
    for key, value in pairs:
        assert f"| {key} | {value} | - |" in doc.text


def test_a_turned_page_keeps_the_text_beyond_its_shown_width_and_reads_its_table(tmp_path):
    """A landscape report stored as a portrait page with ``/Rotate 90`` (a US Senate expenditure report is): its
    characters' coordinates are the unturned page's, so text at y = 700 lies on the page although the page shown
    is only 612 pt tall — it was dropped as "outside the page" before."""
    rows = [("NAME", "TITLE", "AMOUNT"), ("BAIN, J", "DISTRICT DIRECTOR", "37,499.96"),
            ("SMITH, A", "LEGISLATIVE CORRESPONDENT", "21,000.00"), ("ENGLERT, P", "STAFF ASSISTANT", "25,499.96")]
    ops = []
    for k, row in enumerate(rows):  # rows run up the page (text turned 90°), one below the other
        for value, y in zip(row, (100, 300, 650)):
            ops.append(b"BT /F1 9 Tf 0 1 -1 0 %d %d Tm (%s) Tj ET" % (200 + 14 * k, y, value.encode()))
    path = tmp_path / "turned.pdf"
    path.write_bytes(raw_pdf(b"\n".join(ops), b"/Rotate 90"))
    doc = convert_file(path, "turned.pdf", LoadLimits())
    assert doc.layout["hidden_chars"] == 0
    assert "| NAME | TITLE | AMOUNT |\n|---|---|---|\n| BAIN, J | DISTRICT DIRECTOR | 37,499.96 |" in doc.text
    assert "| ENGLERT, P | STAFF ASSISTANT | 25,499.96 |" in doc.text
