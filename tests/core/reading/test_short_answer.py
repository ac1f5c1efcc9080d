"""Short answers inside a sentence, from spaCy's packaged English pipeline, for each kind of typed value."""

import pytest

from components.core.backends.models import load_spacy
from components.core.reading.short_answer import short_span, table_cell, wanted


@pytest.fixture(scope="module")
def nlp():
    return load_spacy("en_core_web_sm")[0]


@pytest.mark.parametrize("question, kind", [
    ("How many devices can the Hub Mini control?", "number"),
    ("How much does the Glow plan cost per month?", "money"),
    ("What percentage of users enable backups?", "percent"),
    ("How long is event history kept?", "duration"),
    ("When was the dam built?", "date"),
    ("In what year was the theory published?", "date"),
    ("Who described the Turing machine?", "person"),
    ("Which company built the dam?", "organisation"),
    ("Where is the dam?", "place"),
    ("Which port does the bridge use?", "identifier"),
    ("What phone number should I call?", "identifier"),
    ("Why does the hub blink?", None),
])
def test_question_kinds(question, kind):
    assert wanted(question) == kind


@pytest.mark.parametrize("question, sentence, expected", [
    ("How many devices can the Hub Mini control?", "It can control up to 48 devices at once.", "48 devices"),
    ("How much does the Glow plan cost per month in Japan?", "The Glow plan costs ¥1,200 per month in Japan.", "¥1,200"),
    ("What percentage of homes use scenes?", "About 35% of homes use scenes every day.", "About 35%"),
    ("How long do refunds take?", "Refunds reach your card within 10 business days.", "10 business days"),
    ("When do hubs install new firmware?", "Hubs check every night and install it between 02:00 and 05:00 local time.",
     "between 02:00 and 05:00"),
    ("When was the dam completed?", "The dam was completed by Bechtel in 1936 in Nevada.", "1936"),
    ("Who described the machine?", "The machine was described by Alan Turing in a 1936 paper.", "Alan Turing"),
    ("Which company built the dam?", "The dam was built by Bechtel for the government.", "Bechtel"),
    ("Where was the dam built?", "The dam was built by Bechtel in Nevada.", "Nevada"),
    ("What phone number should I call for support?", "Call support at +1 415 555 0100 on weekdays.", "+1 415 555 0100"),
    ("Which port does the bridge listen on?", "The bridge listens on port 8443 for local clients.", "8443"),
])
def test_short_span_for_each_value_type(nlp, question, sentence, expected):
    words = {w.strip("?").lower() for w in question.split()}
    span = short_span(nlp(sentence), wanted(question), words)
    assert span is not None and sentence[span[0] : span[1]] == expected


def test_a_value_the_question_names_is_not_the_answer(nlp):
    sentence = "The Hub Mini controls 48 devices."
    assert short_span(nlp(sentence), "number", {"how", "many", "devices", "48"}) is None


def test_table_cell_under_the_column_asked_about():
    text = "| Plan | Price | Event history |\n| Spark | Free | 7 days |"
    terms = lambda t: {w.lower().rstrip("s") for w in t.replace("|", " ").split() if w.lower() not in {"how", "is", "the", "on"}}
    header, row = (0, text.index("\n")), (text.index("\n") + 1, len(text))
    cell = table_cell(text, header, row, terms("How long is event history kept on the Spark plan?"), terms)
    assert text[cell[0] : cell[1]] == "7 days"
    assert table_cell(text, header, row, terms("Why?"), terms) is None
