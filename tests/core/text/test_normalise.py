"""Text normalised once at conversion: lone surrogates, marker and control characters, no-break spaces and
ligatures — by hand, as a property over any text, and over generated PDF text layers whose offsets stay exact."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.core.text.normalise import DROPPED, composed, normalise_char, normalise_text


def test_hand_cases():
    assert normalise_text("co\u00adoperate\u00a0now\ud800") == ("cooperate now\ufffd", 3)
    assert normalise_text("\ufb01le \ufb02ow") == ("file flow", 2)
    assert normalise_text("a\x07b\x00c\td\ne") == ("a b c\td\ne", 2)
    assert normalise_text("plain text") == ("plain text", 0)
    assert normalise_char("\ufffe") == "" and normalise_char("\u200b") == ""


def test_a_spacing_accent_after_its_letter_becomes_the_accented_letter():
    assert normalise_text("Age\u02c6ncia Nacional de Aviac\u00b8a\u02dco Civil") == ("Agência Nacional de Aviação Civil", 3)
    assert normalise_text("Ame\u00b4lie") == ("Amélie", 1)
    assert normalise_text("don\u00b4t") == ("don\u00b4t", 0)  # an acute after a consonant is a wrong apostrophe
    assert normalise_text("a \u02c6 b") == ("a \u02c6 b", 0)  # an accent alone stays
    assert normalise_text("e\u00ad\u02c6") == ("ê", 2)  # a dropped marker between does not part them
    assert composed("x", "\u02c6") is None and composed("n", "\u02dc") == "ñ"


@given(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=200))
def test_any_text_becomes_encodable_text_without_markers(text):
    out, changed = normalise_text(text)
    out.encode("utf-8")  # no lone surrogate survives (they crashed the index build)
    assert not (set(out) & DROPPED) and "\u00a0" not in out
    assert all(c in "\t\n" or ord(c) >= 32 for c in out)
    assert (changed == 0) == (out == text)
    assert normalise_text(out) == (out, 0)  # once is enough


WORDS = st.lists(st.sampled_from(["alpha", "be\u00adta", "gam\u00a0ma", "del\u00adta", "eps", "\ufb01x", "ERR-4012",
                                  "Aviac\u00b8a", "Ame\u00b4lie"]),
                 min_size=3, max_size=30)


@pytest.mark.slow
@settings(max_examples=12, deadline=None)
@given(WORDS)
def test_pdf_text_layers_are_normalised_with_exact_offsets(tmp_path_factory, words):
    from fpdf import FPDF

    from components.core.documents.pdf import page_text, read_pdf

    import pypdfium2 as pdfium

    path = tmp_path_factory.mktemp("pdf") / "fuzz.pdf"
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=11)
    pdf.multi_cell(0, 6, " ".join(w.replace("\ufb01", "fi") for w in words))
    pdf.output(str(path))
    text, _meta, layout = read_pdf(path, 10_000_000, 10)
    assert "\u00ad" not in text and "\u00a0" not in text
    for word in words:
        if "\ufb01" not in word:
            assert normalise_text(word)[0].replace(" ", "") in text.replace(" ", "").replace("\n", "")
    doc = pdfium.PdfDocument(str(path))
    try:
        textpage = doc[0].get_textpage()
        page, index, _hidden = page_text(textpage)
        raw = textpage.get_text_range()
        assert page == text and len(index) == len(page)  # one PDFium character index per kept character
        for ch, i in zip(page, index):  # each kept character is what PDFium has there, normalised
            if i >= 0 and raw[i] not in "\r\n\x00\x02":
                assert ch in normalise_char(raw[i]) or ch == composed(raw[i], raw[i + 1])
    finally:
        doc.close()
