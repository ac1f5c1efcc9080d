"""One error-code table written as Markdown, HTML, Word and PDF (built here: python-docx, fpdf2): each converter
gives the same pipe-table row model, and the shipped reader answers "What does error CODE mean?" with the meaning
cell's exact offsets in the stored text — never the header, a neighbouring row or a span across cells; a config
question gets the value's offsets; a code the table lacks is not answered from a neighbouring row."""

from __future__ import annotations

from pathlib import Path

import pytest
from haystack import Document

from components.core.retrieval.loaders import load_folder
from components.readers.extractive_reader import ExtractiveReader

TABLES = {
    "atlas.md": [("E1101", "Disk quota for the workspace is exceeded"),
                 ("E1102", "Session token is missing from the request"),
                 ("E1103", "Upload was larger than the configured limit")],
    "brio.html": [("E2201", "Printer tray is open"), ("E2202", "Toner cartridge is not genuine"),
                  ("E2203", "Paper jam in the rear feeder")],
    "corvo.docx": [("E3301", "Valve pressure sensor reads out of range"),
                   ("E3302", "Pump motor drew more current than rated"),
                   ("E3303", "Coolant level fell below the minimum mark")],
    "delta.pdf": [("E4401", "Badge reader lost its network link"), ("E4402", "Door was held open longer than allowed"),
                  ("E4403", "Lock battery is nearly empty")],
}


def _write(folder: Path) -> None:
    import docx
    from fpdf import FPDF

    def lead(name):
        return f"Error codes of the {name.split('.')[0].title()} device, as its log writes them."

    rows = TABLES["atlas.md"]
    (folder / "atlas.md").write_text(f"# Atlas\n\n{lead('atlas.md')}\n\n| Code | Meaning |\n|---|---|\n"
                                     + "".join(f"| {c} | {m} |\n" for c, m in rows))
    cells = "".join(f"<tr><td>{c}</td><td>{m}</td></tr>" for c, m in TABLES["brio.html"])
    (folder / "brio.html").write_text(f"<html><head><title>Brio</title></head><body><main><h1>Brio</h1><p>"
                                      f"{lead('brio.html')}</p><table><tr><th>Code</th><th>Meaning</th></tr>{cells}"
                                      f"</table></main></body></html>")
    d = docx.Document()
    d.add_heading("Corvo", 1)
    d.add_paragraph(lead("corvo.docx"))
    table = d.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text, table.rows[0].cells[1].text = "Code", "Meaning"
    for c, m in TABLES["corvo.docx"]:
        row = table.add_row()
        row.cells[0].text, row.cells[1].text = c, m
    d.save(str(folder / "corvo.docx"))
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=11)
    pdf.multi_cell(0, 6, lead("delta.pdf"))
    pdf.ln(4)
    with pdf.table(col_widths=(25, 75)) as t:
        for values in [("Code", "Meaning")] + TABLES["delta.pdf"]:
            row = t.row()
            for v in values:
                row.cell(v)
    pdf.output(str(folder / "delta.pdf"))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tables")
    _write(folder)
    return {d.doc_id: d for d in load_folder(folder).documents}


@pytest.fixture(scope="module")
def reader():
    r = ExtractiveReader(model="deepset/roberta-base-squad2", fallback="trained", top_k=3)
    r.warm_up()
    return r


def _window(doc) -> Document:
    return Document(content=doc.text, meta={"doc_id": doc.doc_id, "char_start": 0, "char_end": len(doc.text)})


def test_every_format_gives_the_same_row_model(corpus):
    for name, rows in TABLES.items():
        text = corpus[name].text
        assert "| Code | Meaning |\n|---|---|\n" in text, (name, text)
        for code, meaning in rows:
            assert f"| {code} | {meaning} |" in text, (name, text)


@pytest.mark.parametrize("name", list(TABLES))
@pytest.mark.parametrize("row", [0, 1, 2])
def test_a_code_question_gets_the_meaning_cell_exact_offsets(corpus, reader, name, row):
    code, meaning = TABLES[name][row]
    doc = corpus[name]
    answers = [a for a in reader.run(query=f"What does error {code} mean?", documents=[_window(doc)])["answers"]
               if a.data is not None]
    start = doc.text.index(f"| {code} | ") + len(f"| {code} | ")
    assert answers, name
    best = answers[0]
    assert (best.meta["char_start"], best.meta["char_end"]) == (start, start + len(meaning)), (name, best.data)
    assert doc.text[best.meta["char_start"]:best.meta["char_end"]] == best.data == meaning
    for a in answers:  # no candidate from another row or across cells
        s, e = a.meta["char_start"], a.meta["char_end"]
        assert "|" not in doc.text[s:e] and "\n" not in doc.text[s:e]


def test_the_whole_corpus_read_together_answers_from_the_named_row_only(corpus, reader):
    windows = [_window(d) for d in corpus.values()]
    best = next(a for a in reader.run(query="What does error E2202 mean?", documents=windows)["answers"] if a.data)
    assert best.meta["doc_id"] == "brio.html" and best.data == "Toner cartridge is not genuine"


def test_a_config_question_gets_the_value_offsets(reader):
    text = ("Connection limits.\n\n```ini\n[pgbouncer]\nlisten_port = 6432\nmax_client_conn = 100\n"
            "default_pool_size = 20\n```\n")
    answers = reader.run(query="What is the default max_client_conn?",
                         documents=[Document(content=text, meta={"doc_id": "p.md", "char_start": 0,
                                                                 "char_end": len(text)})])["answers"]
    best = next(a for a in answers if a.data is not None)
    start = text.index("max_client_conn = ") + len("max_client_conn = ")
    assert (best.meta["char_start"], best.meta["char_end"], best.data) == (start, start + 3, "100")


def test_a_multi_column_row_answers_the_column_named_from_a_window_inside_the_table(reader):
    """A window that begins inside a wide table (its header row not in it): the expander's ``table_header`` names
    the columns, and the cell under the column the question names is the answer, with its exact offsets."""
    from components.core.text.splitting import header_above

    rows = [("Alabama", "18,870", "23,022", "22,650", "71,137"), ("Alaska", "209", "3,062", "3,209", "7,095"),
            ("Arizona", "2,303", "12,382", "9,041", "27,087"), ("Arkansas", "3,298", "6,359", "11,611", "25,048")]
    text = ("Firearm background checks by state, November.\n\n| State | Permit | Handgun | Long Gun | Totals |\n"
            "|---|---|---|---|---|\n" + "".join(f"| {' | '.join(r)} |\n" for r in rows))
    start = text.index("| Alaska")
    s, e = header_above(text, start)
    window = Document(content=text[start:], meta={"doc_id": "checks.md", "char_start": start, "char_end": len(text),
                                                  "table_header": text[s:e]})
    for question, want in (("How many long gun checks did Arizona have?", "9,041"),
                           ("How many handgun checks were there in Arkansas?", "6,359"),
                           ("How many checks were run in Alaska in total?", "7,095")):
        best = next(a for a in reader.run(query=question, documents=[window])["answers"] if a.data is not None)
        at = text.index(want)
        assert (best.data, best.meta["char_start"], best.meta["char_end"]) == (want, at, at + len(want)), question


def test_a_list_of_codes_answers_the_named_item_and_no_span_runs_into_the_next_item(reader):
    """A Markdown list of ``CODE — meaning`` items (held-out libuv's shape): the named item's meaning, exact — the
    shipped reader alone picked the item above ("socket is not connected") — and no span across two items."""
    text = ("# libuv error codes\n\n- UV_ENOTCONN \u2014 socket is not connected\n- UV_ENOTDIR \u2014 not a directory\n"
            "- UV_ENOTEMPTY \u2014 directory not empty\n- UV_ENOTSOCK \u2014 socket operation on non-socket")
    window = Document(content=text, meta={"doc_id": "uv.md", "char_start": 0, "char_end": len(text)})
    answers = [a for a in reader.run(query="What does the error UV_ENOTDIR indicate?", documents=[window])["answers"]
               if a.data is not None]
    at = text.index("not a directory")
    assert (answers[0].data, answers[0].meta["char_start"], answers[0].meta["char_end"]) == (
        "not a directory", at, at + len("not a directory"))
    assert answers[0].meta.get("keyed_lookup") is True
    assert all("\n" not in a.data for a in answers)
