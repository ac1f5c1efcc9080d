"""The offline sentence strategy on hand-made embeddings: exact spans, lead-in, entity widening, scores."""

import numpy as np
import pytest

from components.core.text.analysis import Analyzer
from components.core.reading.sentence_reader import (
    COSINE_WEIGHT,
    IDENTIFIER_WEIGHT,
    coverage,
    key_terms,
    no_answer_score,
    question_entities,
    read_windows,
    unit_scores,
    window_units,
)

AN = Analyzer()
Q = "What does ERR-4012 mean on the SKU-LX-200?"
QVEC = [1.0, 0.0, 0.0]
OTHER = [0.0, 0.0, 1.0]  # orthogonal to the question: cosine 0


def embedder(vectors, calls=None):
    """``embed`` that looks each text up in ``vectors`` (unknown texts are orthogonal to the question)."""

    def embed(texts):
        if calls is not None:
            calls.append(list(texts))
        return np.array([vectors.get(t, OTHER) for t in texts], dtype=float)

    return embed


def test_window_units_are_offsets_with_block_index():
    text = "Intro line.\n\nFirst sentence here. Second one.\n\n| a | b |\n|---|---|\n| 1 | 2 |"
    units = window_units(text)
    assert [(text[u.span.start : u.span.end], u.block) for u in units] == [
        ("Intro line.", 0),
        ("First sentence here.", 1),
        ("Second one.", 1),
        ("| a | b |", 2),
        ("| 1 | 2 |", 2),
    ]


def test_key_terms_weigh_identifiers_and_numbers_and_skip_question_words():
    assert key_terms(Q, AN) == {
        "err-4012": IDENTIFIER_WEIGHT,
        "err": 1.0,
        "4012": IDENTIFIER_WEIGHT,
        "sku-lx-200": IDENTIFIER_WEIGHT,
        "sku": 1.0,
        "lx": 1.0,
        "200": IDENTIFIER_WEIGHT,
    }
    assert key_terms("What is it?", AN) == {}


def test_coverage_is_weighted_fraction_of_question_terms():
    terms = key_terms(Q, AN)  # total weight 11 ("mean" is a question word)
    assert coverage(terms, "Error ERR-4012 means the tray is empty.", AN) == pytest.approx(5 / 11)
    assert coverage(terms, "The SKU-LX-200 has two trays.", AN) == pytest.approx(6 / 11)
    assert coverage(terms, "Code 4012 only.", AN) == pytest.approx(2 / 11)
    assert coverage(terms, "Nothing relevant.", AN) == 0.0
    assert coverage({}, "anything", AN) == 0.0


@pytest.mark.parametrize(
    ("question", "entities"),
    [
        (Q, ["err-4012", "sku-lx-200"]),
        ("When was the Eiffel Tower finished?", ["eiffel", "tower"]),
        ("Who founded Acme Corp in 1999?", ["acme", "corp", "1999"]),
        ("Paris is where?", []),  # the opening word is capitalised anyway
        ("What is it?", []),
    ],
)
def test_question_entities(question, entities):
    assert question_entities(question, AN) == entities


def test_unit_scores_formula_and_range():
    scores = unit_scores(np.array([0.8, -0.4, 1.0]), np.array([0.5, 1.0, 1.0]))
    assert scores.tolist() == pytest.approx(
        [COSINE_WEIGHT * 0.8 + (1 - COSINE_WEIGHT) * 0.5, (1 - COSINE_WEIGHT) * 1.0, 1.0]
    )
    assert unit_scores(np.array([0.3, -0.2]), np.array([0.0, 0.0]), has_terms=False).tolist() == [0.3, 0.0]


MANUAL = (
    "Printer manual.\n\n"
    "The SKU-LX-200 has two trays. Error ERR-4012 means the tray is empty. Reload paper to clear it.\n\n"
    "Other models differ."
)
VECS = {
    Q: QVEC,
    "Error ERR-4012 means the tray is empty.": [0.8, 0.6, 0.0],  # cosine 0.8, coverage 5/11
    "The SKU-LX-200 has two trays.": [0.3, 0.0, np.sqrt(1 - 0.09)],  # cosine 0.3, coverage 6/11
}


def test_best_unit_with_one_unit_of_lead_in_from_the_same_paragraph():
    calls = []
    [hit] = read_windows(Q, [MANUAL], embedder(VECS, calls), AN)
    assert MANUAL[hit.start : hit.end] == "The SKU-LX-200 has two trays. Error ERR-4012 means the tray is empty."
    assert hit.start == MANUAL.index("The SKU")
    assert MANUAL[hit.best.start : hit.best.end] == "Error ERR-4012 means the tray is empty."
    assert [MANUAL[u.start : u.end] for u in hit.units] == [
        "The SKU-LX-200 has two trays.",
        "Error ERR-4012 means the tray is empty.",
    ]
    # own coverage 5/11; the lead-in names the SKU (6/11 more), which counts half
    expected = 0.5 * 0.8 + 0.5 * (5 / 11 + 0.5 * 6 / 11)
    assert hit.score == pytest.approx(expected)
    assert no_answer_score([hit]) == pytest.approx(1 - expected)
    assert len(calls) == 1 and calls[0][0] == Q and len(calls[0]) == 1 + 5  # question + 5 units, one call


def test_no_lead_in_across_a_paragraph_break():
    text = "The SKU-LX-200 manual.\n\nError ERR-4012 means the tray is empty. Reload paper."
    # the question names only ERR-4012, which the best unit mentions: no lead-in from the heading
    question = "What does ERR-4012 mean?"
    [hit] = read_windows(question, [text], embedder({question: QVEC, **VECS}), AN)
    assert text[hit.start : hit.end] == "Error ERR-4012 means the tray is empty."
    # the question also names SKU-LX-200: the preceding unit that mentions it is needed, across the break
    [hit] = read_windows(Q, [text], embedder(VECS), AN)
    assert text[hit.start : hit.end] == text[: text.index(" Reload")]


def test_widens_to_a_preceding_heading_that_names_the_entity():
    text = "SKU-LX-200 errors\n\nThe printer beeps twice. Error ERR-4012 means the tray is empty.\n\nOther models."
    [hit] = read_windows(Q, [text], embedder(VECS), AN)
    assert text[hit.start : hit.end] == (
        "SKU-LX-200 errors\n\nThe printer beeps twice. Error ERR-4012 means the tray is empty."
    )
    assert len(hit.units) == 3
    assert hit.score == pytest.approx(0.5 * 0.8 + 0.5 * 5 / 11)  # widening does not change the score


def test_widens_forward_when_only_the_next_unit_names_the_entity():
    text = "Error ERR-4012 means the tray is empty. This applies to the SKU-LX-200 only. Reload paper."
    [hit] = read_windows(Q, [text], embedder(VECS), AN)
    assert text[hit.start : hit.end] == "Error ERR-4012 means the tray is empty. This applies to the SKU-LX-200 only."


def test_widens_by_at_most_one_unit():
    text = "The SKU-LX-200 is old. It beeps. Error ERR-4012 means the tray is empty."
    [hit] = read_windows(Q, [text], embedder(VECS), AN)
    # lead-in "It beeps." then one more unit back reaches the SKU
    assert text[hit.start : hit.end] == text
    text = "The SKU-LX-200 is old. It beeps. It is loud. Error ERR-4012 means the tray is empty."
    [hit] = read_windows(Q, [text], embedder(VECS), AN)
    assert text[hit.start : hit.end] == "It is loud. Error ERR-4012 means the tray is empty."


def test_several_windows_and_an_empty_one():
    other = "Bananas are yellow. They grow in clusters."
    hits = read_windows(Q, [other, "", MANUAL], embedder(VECS), AN)
    assert hits[1] is None
    assert hits[0].score == 0.0  # no cosine, no key term
    assert MANUAL[hits[2].start : hits[2].end].endswith("Error ERR-4012 means the tray is empty.")
    assert no_answer_score(hits) == pytest.approx(1 - hits[2].score)
    assert no_answer_score([None]) == 1.0


def test_scores_stay_in_unit_interval_with_real_looking_vectors():
    rng = np.random.default_rng(0)
    texts = [MANUAL, "Error ERR-4012 and SKU-LX-200 and 4012 mean ERR. " * 3]
    embed = lambda ts: rng.normal(size=(len(ts), 8))  # noqa: E731
    for hit in read_windows(Q, texts, embed, AN):
        assert 0.0 <= hit.score <= 1.0


def test_headings_and_table_headers_never_answer_and_rows_are_scored_with_their_header():
    text = "# Plans\n\n| Plan | Seats |\n|---|---|\n| Spark | 1 seat |\n| Glow | 5 seats |"
    units = window_units(text)
    assert [u.answerable for u in units] == [False, False, True, True]
    assert units[3].scored_text(text) == "| Plan | Seats |\n| Glow | 5 seats |"
    question = "How many seats does the Glow plan include?"
    [hit] = read_windows(question, [text], embedder({}), AN)  # cosines all 0: key terms decide
    assert text[hit.start : hit.end] == "| Glow | 5 seats |"


def test_a_quantity_question_prefers_the_unit_with_a_number():
    text = "The Hub Mini is small. It controls up to 48 devices. The Hub Mini is white."
    question = "How many devices can the Hub Mini control?"
    # without the answer-type rule the last unit would win: 0.5*0.6 + 0.5*0.75 = 0.675 > 0.5*0 + 0.5*0.75
    vecs = {question: QVEC, "The Hub Mini is white.": [0.6, 0.8, 0.0]}
    [hit] = read_windows(question, [text], embedder(vecs), AN)
    assert text[hit.best.start : hit.best.end] == "It controls up to 48 devices."
    assert text[hit.start : hit.end] == "The Hub Mini is small. It controls up to 48 devices."


def test_a_why_question_prefers_the_unit_that_states_a_cause():
    text = "ERR-7730 is listed in the table. ERR-7730 appears because the account token was revoked."
    question = "What causes ERR-7730?"
    vecs = {question: QVEC, "ERR-7730 is listed in the table.": [0.6, 0.8, 0.0]}
    [hit] = read_windows(question, [text], embedder(vecs), AN)
    assert text[hit.best.start : hit.best.end] == "ERR-7730 appears because the account token was revoked."


def test_a_bare_code_fence_is_never_an_answer():
    text = "Intro.\n\n```yaml\nretry_interval_s: 45\n\n```"
    assert [(text[u.span.start : u.span.end], u.answerable) for u in window_units(text)] == [
        ("Intro.", True), ("```yaml\nretry_interval_s: 45", True), ("```", False)]


def test_a_sentence_opening_with_a_pronoun_is_embedded_with_the_one_before():
    text = "The bridge retries eight times. It then exits with status 3.\n\nIt is unrelated here."
    calls = []
    lead = "The bridge retries eight times."
    # only the contextualised text of the pronoun sentence is close to the question
    embed = embedder({"Q?": QVEC, f"{lead} It then exits with status 3.": QVEC}, calls)
    [answer] = read_windows("Q?", [text], embed, AN)
    assert calls[0] == ["Q?", lead, f"{lead} It then exits with status 3.", "It is unrelated here."]
    assert text[answer.best.start : answer.best.end] == "It then exits with status 3."
    assert (answer.start, answer.end) == (0, 60)  # with its lead-in, verbatim


def test_a_sentence_naming_a_code_key_answers_with_that_keys_line():
    text = (
        'A response:\n\n```json\n{\n  "rate_limit_per_minute": 120,\n  "hub_id": "H1"\n}\n```\n\n'
        "Each token may send the number of requests per minute shown in `rate_limit_per_minute`."
    )
    sentence = "Each token may send the number of requests per minute shown in `rate_limit_per_minute`."
    q = "How many requests per minute may a token send?"
    [answer] = read_windows(q, [text], embedder({q: QVEC, sentence: QVEC}), AN)
    assert text[answer.start : answer.end] == '"rate_limit_per_minute": 120'
    assert text[answer.best.start : answer.best.end] == sentence
    assert [text[u.start : u.end] for u in answer.units] == ['"rate_limit_per_minute": 120', sentence]
    # a question that asks for no value keeps the sentence itself as the answer
    q2 = "What may each token send?"
    [answer] = read_windows(q2, [text], embedder({q2: QVEC, sentence: QVEC}), AN)
    assert text[answer.start : answer.end] == sentence
