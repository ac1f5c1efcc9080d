import pytest

from components.evaluation.taxonomy import (
    LABELS,
    Diagnosis,
    QuestionOutcome,
    classify,
    span_contains,
    taxonomy_totals,
)

GOLD = ("d1", 50, 60)


def answerable(**kwargs) -> QuestionOutcome:
    """An answerable question whose gold span is d1[50:60]; everything else from kwargs."""
    base = dict(answerable=True, gold_spans=[GOLD], gold_texts=["Marie Curie"])
    return QuestionOutcome(**{**base, **kwargs})


# ------------------------------------------------------------------------------------ one per bucket


def test_correct_answerable():
    d = classify(
        answerable(
            retrieved_doc_ids=["d1"],
            read_spans=[("d1", 0, 200)],
            answer="Marie Curie",
            answer_span=GOLD,
            is_correct=True,
        )
    )
    assert d.label == "correct"
    assert "d1[50:60]" in d.reason


def test_correct_unanswerable_abstention():
    d = classify(QuestionOutcome(answerable=False, retrieved_doc_ids=["d1"], answer=None))
    assert d.label == "correct"


def test_retrieval_miss():
    d = classify(answerable(retrieved_doc_ids=["d2", "d3"], read_spans=[("d2", 0, 100)], answer="Pierre"))
    assert d == Diagnosis("retrieval_miss", d.reason)
    assert "d1[50:60]" in d.reason and "2 documents" in d.reason


def test_rank_failure_gold_document_not_read():
    d = classify(answerable(retrieved_doc_ids=["d2", "d1"], read_spans=[("d2", 0, 100)], answer="Pierre"))
    assert d.label == "rank_failure"
    assert "d1[50:60]" in d.reason and "d2[0:100]" in d.reason


def test_rank_failure_when_only_another_part_of_the_gold_document_was_read():
    # the window overlaps the gold span but does not contain it: the reader could not extract it
    d = classify(answerable(retrieved_doc_ids=["d1"], read_spans=[("d1", 0, 55)], answer="Marie"))
    assert d.label == "rank_failure"


def test_synthesis_error():
    d = classify(
        answerable(
            retrieved_doc_ids=["d1"],
            read_spans=[("d1", 0, 40), ("d1", 40, 200)],
            answer="Pierre",
            answer_span=("d1", 10, 16),
        )
    )
    assert d.label == "synthesis_error"
    assert "d1[50:60]" in d.reason and "d1[40:200]" in d.reason and "d1[10:16]" in d.reason


def test_false_abstention():
    d = classify(answerable(retrieved_doc_ids=["d1"], read_spans=[("d1", 50, 60)], answer=None))
    assert d.label == "false_abstention"
    assert "abstained" in d.reason


def test_hallucination_answerable_unsupported_answer():
    d = classify(
        answerable(
            retrieved_doc_ids=["d1"], read_spans=[("d1", 0, 200)], answer="Albert Einstein", corpus_supported=False
        )
    )
    assert d.label == "hallucination"


def test_hallucination_unanswerable_answered():
    # is_correct is ignored for unanswerable questions: any answer is a hallucination
    d = classify(QuestionOutcome(answerable=False, answer="1907", answer_span=("d4", 3, 7), is_correct=True))
    assert d.label == "hallucination"
    assert "'1907'" in d.reason and "d4[3:7]" in d.reason


# ------------------------------------------------------------------------------------ precedence


def test_correct_beats_everything():
    d = classify(answerable(retrieved_doc_ids=[], answer="Marie Curie", is_correct=True, corpus_supported=False))
    assert d.label == "correct"


def test_hallucination_beats_retrieval_miss():
    outcome = answerable(retrieved_doc_ids=["d9"], answer="Einstein", corpus_supported=False)
    assert classify(outcome).label == "hallucination"
    outcome.corpus_supported = None  # not checked: never a hallucination
    assert classify(outcome).label == "retrieval_miss"
    outcome.corpus_supported = True
    assert classify(outcome).label == "retrieval_miss"


def test_abstention_is_false_abstention_only_when_gold_was_read():
    assert classify(answerable(retrieved_doc_ids=["d2"], answer=None)).label == "retrieval_miss"
    assert classify(answerable(retrieved_doc_ids=["d1"], read_spans=[("d2", 0, 9)], answer=None)).label == (
        "rank_failure"
    )
    assert classify(answerable(retrieved_doc_ids=["d1"], read_spans=[("d1", 0, 99)], answer=None)).label == (
        "false_abstention"
    )


def test_abstention_with_corpus_supported_false_is_not_hallucination():
    d = classify(answerable(retrieved_doc_ids=["d1"], read_spans=[("d1", 0, 99)], answer=None, corpus_supported=False))
    assert d.label == "false_abstention"


def test_any_of_several_gold_spans_suffices():
    outcome = answerable(
        gold_spans=[("d7", 0, 5), GOLD], retrieved_doc_ids=["d1"], read_spans=[("d1", 45, 70)], answer="x"
    )
    assert classify(outcome).label == "synthesis_error"


def test_answerable_without_gold_spans_is_an_error():
    with pytest.raises(ValueError, match="gold_spans"):
        classify(QuestionOutcome(answerable=True, answer="x"))


def test_span_contains_boundaries():
    assert span_contains(("d1", 50, 60), ("d1", 50, 60))
    assert span_contains(("d1", 0, 100), ("d1", 50, 60))
    assert not span_contains(("d1", 51, 100), ("d1", 50, 60))
    assert not span_contains(("d1", 0, 59), ("d1", 50, 60))
    assert not span_contains(("d2", 0, 100), ("d1", 50, 60))


# ------------------------------------------------------------------------------------ totals


def test_totals_include_every_label_with_zeros():
    totals = taxonomy_totals(["correct", Diagnosis("rank_failure", "r"), "correct"])
    assert list(totals) == list(LABELS)
    assert totals["correct"] == 2 and totals["rank_failure"] == 1
    assert sum(totals.values()) == 3
    assert totals["hallucination"] == 0 and totals["false_abstention"] == 0


def test_totals_reject_unknown_label():
    with pytest.raises(ValueError, match="unknown taxonomy label 'oops'"):
        taxonomy_totals(["oops"])
