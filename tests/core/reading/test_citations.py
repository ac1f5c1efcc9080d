"""Prompt building, citation parsing and span tie-back of components.core.reading.citations (pure, no model)."""

import pytest
from haystack import Document

from components.core.reading.citations import (
    NOT_IN_CONTEXT,
    build_messages,
    clean_answer,
    locate,
    lost_in_the_middle_order,
    parse_output,
    resolve_answer,
    select_passages,
)

SOURCE = {
    "refund": "# Refund policy\n\nAnnual plans can be refunded in full within 30 days of purchase. "
    "Monthly plans are not refunded.\n\nRefunds go back to the original\npayment method within 5 to 10 business days.",
    "hub": "The Hub Mini ships with firmware 3.2.1. It can control up to 48 devices. The Hub Pro controls 148 devices.",
    "plans": "Every account is on one of three plans: Spark, Glow and Beacon.",
}


def window(doc_id: str, start: int, end: int, title: str | None = None) -> Document:
    """A window Document following spanqa's convention: content is exactly source[start:end]."""
    meta = {"doc_id": doc_id, "char_start": start, "char_end": end}
    if title:
        meta["title"] = title
    return Document(content=SOURCE[doc_id][start:end], meta=meta)


@pytest.fixture
def docs():
    refund = SOURCE["refund"]
    s1 = refund.index("Annual")
    s2 = refund.index("Refunds go")
    return [
        window("refund", s1, s2 - 2, "Refund policy"),  # rank 1: the two sentences of paragraph 1
        window("hub", 0, len(SOURCE["hub"]), "Hub Mini"),  # rank 2
        window("refund", s2, len(refund), "Refund policy"),  # rank 3
        window("plans", 0, len(SOURCE["plans"])),  # rank 4, no title
    ]


# --- ordering and prompt -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "n, order",
    [(0, []), (1, [0]), (2, [0, 1]), (3, [0, 2, 1]), (5, [0, 2, 3, 4, 1])],
)
def test_lost_in_the_middle_order_puts_second_best_last(n, order):
    assert lost_in_the_middle_order(n) == order


def test_select_passages_numbers_in_presentation_order_with_sources(docs):
    passages = select_passages(docs, max_passages=4)
    # presentation: rank1, rank3, rank4, rank2 -> numbers 1..4
    assert [p.index for p in passages] == [0, 2, 3, 1]
    assert [p.number for p in passages] == [1, 2, 3, 4]
    assert [p.doc_id for p in passages] == ["refund", "refund", "plans", "hub"]
    assert [p.source for p in passages] == ["Refund policy", "Refund policy", "plans", "Hub Mini"]
    for p in passages:  # shown text is the original span
        assert SOURCE[p.doc_id][p.char_start : p.char_end] == p.text


def test_select_passages_keeps_top_k_and_skips_empty(docs):
    docs = [docs[0], Document(content="  ", meta={"doc_id": "empty"}), *docs[1:]]
    passages = select_passages(docs, max_passages=2)
    assert [(p.index, p.doc_id) for p in passages] == [(0, "refund"), (2, "hub")]


def test_select_passages_cuts_at_a_sentence_end_and_moves_char_end(docs):
    hub = docs[1]
    first_two = "The Hub Mini ships with firmware 3.2.1. It can control up to 48 devices."
    (p,) = select_passages([hub], max_passages=1, max_chars=len(first_two) + 5)
    assert p.text == first_two
    assert (p.char_start, p.char_end) == (0, len(first_two))
    (p,) = select_passages([hub], max_passages=1, max_chars=20)  # first sentence too long: cut at a word end
    assert p.text == "The Hub Mini ships"
    assert p.char_end == 18


def test_select_passages_without_offsets_uses_document_id():
    doc = Document(content="Plain text.", id="abc")
    (p,) = select_passages([doc])
    assert (p.doc_id, p.char_start, p.char_end, p.source) == ("abc", 0, 11, "abc")


def test_build_messages_numbers_sources_question_and_instructions(docs):
    passages = select_passages(docs, max_passages=3)
    system, user = build_messages("How long is the refund window?", passages)
    assert system["role"] == "system" and user["role"] == "user"
    assert NOT_IN_CONTEXT in system["content"] and "[2]" in system["content"]
    body = user["content"]
    i0 = body.index("Passages:\n")
    i1 = body.index("\n[1] (source: Refund policy) «Annual plans")
    i2 = body.index("\n[2] (source: Refund policy) «Refunds go back")
    i3 = body.index("\n[3] (source: Hub Mini) «The Hub Mini")
    assert i0 < i1 < i2 < i3  # the second-strongest (hub) comes last
    assert body.endswith("\nQuestion: How long is the refund window?\nAnswer:")
    assert body.startswith("Example:\n")  # the worked example comes before the real passages
    assert not build_messages("q", passages, example=None)[1]["content"].startswith("Example")


# --- parsing -------------------------------------------------------------------------------------


def test_parse_citations_single_and_lists_in_first_appearance_order():
    out = parse_output("Within 30 days [2]. Not for monthly plans [3, 1][2].", n_passages=3)
    assert out.citations == [2, 3, 1]
    assert out.dropped == []
    assert out.text == "Within 30 days. Not for monthly plans."
    assert not out.no_answer


def test_parse_drops_citations_that_do_not_exist():
    out = parse_output("It is 48 devices [1, 7] [0] [7].", n_passages=3)
    assert out.citations == [1]
    assert out.dropped == [7, 0]
    assert out.text == "It is 48 devices."


def test_parse_ranges_and_semicolons():
    assert parse_output("x [1-3; 5]", n_passages=5).citations == [1, 2, 3, 5]


@pytest.mark.parametrize(
    "raw",
    ["NOT_IN_CONTEXT", "The passages do not say. NOT_IN_CONTEXT [1]", "not_in_context", "NOT IN CONTEXT."],
)
def test_not_in_context_anywhere_abstains(raw):
    out = parse_output(raw, n_passages=2)
    assert out.no_answer and out.reason == "not_in_context" and out.text == ""


@pytest.mark.parametrize("raw", ["", "   ", "[1]", "Answer: [2]."])
def test_empty_output_abstains(raw):
    out = parse_output(raw, n_passages=2)
    assert out.no_answer and out.reason == "empty_output"


def test_clean_answer_removes_markers_prefix_and_spaces():
    assert clean_answer("Answer: Paris [1] , France [2] .") == "Paris, France."
    assert clean_answer("[2] (source: Hub Mini) Up to 48 devices.") == "Up to 48 devices."


def test_run_on_into_a_new_question_is_cut_with_its_citations():
    out = parse_output("Up to 48 devices [3].\nQuestion: And the hub? [4]\nAnswer: NOT_IN_CONTEXT", n_passages=3)
    assert out.text == "Up to 48 devices." and out.citations == [3] and out.dropped == []
    assert not out.no_answer


# --- tie-back ------------------------------------------------------------------------------------


def test_verbatim_answer_in_cited_passage_gives_original_offsets(docs):
    passages = select_passages(docs, max_passages=4)
    res = resolve_answer("within 30 days of purchase [1]", passages)
    start = SOURCE["refund"].index("within 30 days of purchase")
    assert (res.doc_id, res.char_start, res.char_end) == ("refund", start, start + len("within 30 days of purchase"))
    assert res.verbatim and not res.uncited
    assert res.evidence == [{"doc_id": "refund", "char_start": docs[0].meta["char_start"],
                             "char_end": docs[0].meta["char_end"]}]
    assert [p.index for p in res.cited] == [0]


def test_match_is_case_insensitive_and_tolerates_line_breaks(docs):
    passages = select_passages(docs, max_passages=4)
    # passage [2] is rank 3: "...to the original\npayment method..."
    res = resolve_answer("The Original Payment Method [2].", passages)
    start = SOURCE["refund"].index("the original\npayment method")
    assert (res.doc_id, res.char_start, res.char_end) == ("refund", start, start + len("the original\npayment method"))
    assert SOURCE["refund"][res.char_start : res.char_end] == "the original\npayment method"
    assert res.verbatim


def test_longest_sentence_piece_is_located_when_the_whole_answer_is_not(docs):
    passages = select_passages(docs, max_passages=4)
    answer = "Yes. It can control up to 48 devices [4]. That is plenty."
    res = resolve_answer(answer, passages)
    piece = "It can control up to 48 devices"
    start = SOURCE["hub"].index(piece)
    assert res.data == "Yes. It can control up to 48 devices. That is plenty."
    assert (res.doc_id, res.char_start, res.char_end) == ("hub", start, start + len(piece))
    assert res.verbatim


def test_whole_words_only(docs):
    hub = select_passages([docs[1]])
    hit = locate("48", hub)
    assert hit is not None
    assert hit[1] == SOURCE["hub"].index("48 devices")  # not the "48" inside "148"
    assert locate("8 devices", hub) is None


def test_not_verbatim_points_at_first_cited_passage(docs):
    passages = select_passages(docs, max_passages=4)
    res = resolve_answer("Refunds take about a week [2][1].", passages)
    p2 = passages[1]
    assert (res.doc_id, res.char_start, res.char_end) == (p2.doc_id, p2.char_start, p2.char_end)
    assert not res.verbatim
    assert [e["char_start"] for e in res.evidence] == [p2.char_start, passages[0].char_start]
    assert res.meta()["verbatim"] is False and "unsupported" not in res.meta()


def test_only_invalid_citations_count_as_uncited(docs):
    passages = select_passages(docs, max_passages=2)  # rank1 refund, rank2 hub
    res = resolve_answer("up to 48 devices [9]", passages)
    start = SOURCE["hub"].index("up to 48 devices")
    assert res.dropped == [9] and res.citations == []
    assert res.uncited and res.verbatim
    assert (res.doc_id, res.char_start, res.char_end) == ("hub", start, start + 16)
    assert res.evidence == [{"doc_id": "hub", "char_start": 0, "char_end": len(SOURCE["hub"])}]
    meta = res.meta()
    assert meta["uncited"] is True and meta["dropped_citations"] == [9]


def test_uncited_and_not_found_is_unsupported(docs):
    res = resolve_answer("Probably three weeks.", select_passages(docs))
    meta = res.meta()
    assert res.data == "Probably three weeks."
    assert meta["doc_id"] is None and meta["evidence"] == [] and meta["uncited"] and meta["unsupported"]


def test_abstention_meta(docs):
    res = resolve_answer(f"{NOT_IN_CONTEXT} [5]", select_passages(docs, max_passages=2))
    meta = res.meta()
    assert res.data is None
    assert meta["no_answer"] is True and meta["reason"] == "not_in_context"
    assert meta["dropped_citations"] == [5] and meta["evidence"] == []
