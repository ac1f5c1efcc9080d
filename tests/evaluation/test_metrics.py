import math
import random

import pytest

from components.evaluation.metrics import (
    exact_match,
    f1,
    mrr_at_k,
    ndcg_at_k,
    normalize_answer,
    precision_at_k,
    recall_at_k,
    recall_curve,
    retrieval_summary,
    squad_summary,
)

# ------------------------------------------------------------------------------------------ retrieval


def test_ndcg_graded_by_hand():
    # grades a=2, b=1, c=0; ranking c, b, a
    # DCG  = 0/log2(2) + 1/log2(3) + 2/log2(4) = 0.6309298 + 1.0           = 1.6309298
    # IDCG = 2/log2(2) + 1/log2(3)             = 2.0 + 0.6309298           = 2.6309298
    # nDCG = 1.6309298 / 2.6309298 = 0.6199062   (pytrec_eval ndcg_cut_10 gives the same)
    relevant = {"a": 2, "b": 1, "c": 0}
    assert ndcg_at_k(["c", "b", "a"], relevant, 10) == pytest.approx(0.6199062, abs=1e-7)
    assert ndcg_at_k(["a", "b", "c"], relevant, 10) == pytest.approx(1.0)
    # @1: DCG = 1 (b at rank 1), IDCG@1 = 2 (a would be first)
    assert ndcg_at_k(["b", "a"], relevant, 1) == pytest.approx(0.5)


def test_ndcg_ideal_counts_relevant_documents_never_retrieved():
    # only a retrieved: DCG = 1; ideal has a and z: 1 + 1/log2(3) = 1.6309298 -> 0.6131472
    assert ndcg_at_k(["a", "x"], {"a": 1, "z": 1}, 10) == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_ndcg_no_relevant_is_zero():
    assert ndcg_at_k(["a"], {"a": 0}, 10) == 0.0
    assert ndcg_at_k([], {"a": 1}, 10) == 0.0


def _reference_ndcg(ranked, relevant, k):
    """Textbook nDCG@k written independently: gains over 0-based positions i with log2(i + 2)."""
    gains = [relevant.get(doc, 0) for doc in ranked[:k]]
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def test_ndcg_matches_independent_formula_on_random_cases():
    rng = random.Random(7)
    docs = [f"d{i}" for i in range(30)]
    for _ in range(200):
        relevant = {d: rng.choice([0, 1, 2, 3]) for d in rng.sample(docs, rng.randint(1, 10))}
        ranked = rng.sample(docs, rng.randint(0, 20))
        k = rng.choice([1, 3, 5, 10])
        assert ndcg_at_k(ranked, relevant, k) == pytest.approx(_reference_ndcg(ranked, relevant, k))


def test_recall_and_mrr_edge_cases():
    relevant = {"r1": 1, "r2": 2, "n": 0}
    # no relevant in top k
    assert recall_at_k(["x", "y", "r1"], relevant, 2) == 0.0
    assert mrr_at_k(["x", "y", "r1"], relevant, 2) == 0.0
    # relevant at rank 1
    assert mrr_at_k(["r2", "x"], relevant, 10) == 1.0
    assert recall_at_k(["r2", "x"], relevant, 10) == 0.5
    # relevant at rank 3 (a grade-0 document before it does not count)
    assert mrr_at_k(["x", "n", "r1"], relevant, 10) == pytest.approx(1 / 3)
    assert recall_at_k(["x", "n", "r1", "r2"], relevant, 3) == 0.5
    assert recall_at_k(["x", "n", "r1", "r2"], relevant, 4) == 1.0
    # no relevant document at all
    assert recall_at_k(["x"], {"n": 0}, 5) == 0.0


def test_precision_divides_by_k():
    assert precision_at_k(["r1", "x"], {"r1": 1}, 5) == pytest.approx(1 / 5)
    assert precision_at_k(["r1", "r2", "x"], {"r1": 1, "r2": 3}, 2) == 1.0


def test_repeated_document_counts_once_at_its_best_rank():
    # chunks of a repeated: k counts distinct documents, so b is inside the top 2
    relevant = {"a": 1, "b": 1}
    assert recall_at_k(["a", "a", "b"], relevant, 2) == 1.0
    assert mrr_at_k(["x", "x", "a"], relevant, 2) == 0.5
    assert ndcg_at_k(["a", "a", "b"], relevant, 2) == pytest.approx(1.0)


def test_k_must_be_positive():
    with pytest.raises(ValueError):
        recall_at_k(["a"], {"a": 1}, 0)


def test_retrieval_summary_means_over_queries_with_qrels():
    qrels = {
        "q1": {"a": 1},  # found at rank 1
        "q2": {"b": 1, "c": 1},  # c at rank 2 only
        "q3": {"z": 1},  # no run at all -> counts as empty
    }
    runs = {"q1": ["a", "x"], "q2": ["x", "c"], "q9": ["a"]}  # q9 has no qrels -> ignored
    summary = retrieval_summary(runs, qrels, ks=(1, 5))
    assert summary["queries"] == 3
    assert summary["skipped_queries"] == 1
    assert summary["missing_runs"] == 1
    assert summary["recall@1"] == pytest.approx((1 + 0 + 0) / 3)
    assert summary["recall@5"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert summary["mrr@10"] == pytest.approx((1 + 0.5 + 0) / 3)
    # q2: DCG = 1/log2(3); IDCG = 1 + 1/log2(3)
    q2 = (1 / math.log2(3)) / (1 + 1 / math.log2(3))
    assert summary["ndcg@10"] == pytest.approx((1 + q2 + 0) / 3)
    assert set(summary) == {"ndcg@10", "recall@1", "recall@5", "mrr@10", "queries", "skipped_queries", "missing_runs"}


def test_retrieval_summary_default_keys_and_empty():
    summary = retrieval_summary({}, {})
    assert [k for k in summary if "@" in k] == ["ndcg@10", "recall@1", "recall@5", "recall@10", "recall@100", "mrr@10"]
    assert summary["queries"] == 0 and summary["recall@10"] == 0.0


def test_recall_curve_agrees_with_recall_at_k():
    qrels = {"q1": {"a": 1, "b": 1}, "q2": {"c": 2}}
    runs = {"q1": ["x", "a", "y", "b"], "q2": ["c"]}
    curve = recall_curve(runs, qrels, max_k=5)
    assert curve == pytest.approx([0.5, 0.75, 0.75, 1.0, 1.0])
    for k in range(1, 6):
        assert curve[k - 1] == pytest.approx(retrieval_summary(runs, qrels, ks=(k,))[f"recall@{k}"])


# ------------------------------------------------------------------------------------------ reading


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The  Cat!", "cat"),
        ("an apple", "apple"),
        ("1,000", "1000"),
        ("A dog, the cat and AN owl.", "dog cat and owl"),
        ("Theater", "theater"),  # articles only as whole words
        ("the-end", "theend"),  # punctuation goes before articles are removed
        ("  \tNew\nYork  ", "new york"),
        ("The", ""),
        (None, ""),
    ],
)
def test_normalize_answer(text, expected):
    assert normalize_answer(text) == expected


def test_exact_match_normalises_and_takes_max_over_golds():
    assert exact_match("the Eiffel Tower.", ["Eiffel tower"]) == 1.0
    assert exact_match("Eiffel", ["Eiffel tower", "tower"]) == 0.0
    assert exact_match("Tower", ["Eiffel tower", "tower"]) == 1.0


def test_f1_partial_overlap_by_hand():
    # pred tokens [big, red, dog], gold [red, dog, barked]: common 2, P = R = 2/3 -> F1 = 2/3
    assert f1("the big red dog", ["red dog barked"]) == pytest.approx(2 / 3)
    # pred [dog, dog], gold [dog]: common 1 (counts are clipped), P = 1/2, R = 1 -> F1 = 2/3
    assert f1("dog dog", ["dog"]) == pytest.approx(2 / 3)
    # pred [red], gold [red, dog]: P = 1, R = 1/2 -> 2/3; max over golds with "cat" (0)
    assert f1("red", ["cat", "red dog"]) == pytest.approx(2 / 3)
    assert f1("red", ["cat"]) == 0.0
    assert f1(None, ["red"]) == 0.0


def test_unanswerable_scoring_follows_official_script():
    for empty in (None, "", "the", " . "):
        assert exact_match(empty, []) == 1.0
        assert f1(empty, []) == 1.0
    assert exact_match("Paris", []) == 0.0
    assert f1("Paris", []) == 0.0
    # gold answers that normalise to nothing are dropped, as in the official script
    assert exact_match(None, ["the", "Paris"]) == 0.0
    assert exact_match("paris", ["the", "Paris"]) == 1.0


def test_squad_summary_by_hand():
    records = [
        {"answerable": True, "prediction": "Paris", "golds": ["Paris"]},  # EM 1, F1 1
        {"answerable": True, "prediction": "red", "golds": ["red dog"]},  # EM 0, F1 2/3
        {"answerable": True, "prediction": None, "golds": ["x"]},  # abstained wrongly: 0, 0
        {"answerable": False, "prediction": None, "golds": []},  # abstained rightly: 1, 1
        {"answerable": False, "prediction": "London", "golds": []},  # answered: 0, 0
    ]
    s = squad_summary(records)
    assert s["total"] == 5 and s["HasAns_total"] == 3 and s["NoAns_total"] == 2
    assert s["exact"] == pytest.approx(2 / 5)
    assert s["f1"] == pytest.approx((1 + 2 / 3 + 1) / 5)
    assert s["HasAns_exact"] == pytest.approx(1 / 3)
    assert s["HasAns_f1"] == pytest.approx((1 + 2 / 3) / 3)
    assert s["NoAns_exact"] == 0.5 and s["NoAns_f1"] == 0.5
    assert s["abstentions"] == 2
    assert s["abstention_precision"] == 0.5  # 1 of 2 abstentions was on an unanswerable question
    assert s["abstention_recall"] == 0.5  # 1 of 2 unanswerable questions got an abstention


def test_squad_summary_empty_groups_are_none():
    s = squad_summary([{"answerable": True, "prediction": "a cat", "golds": ["cat"]}])
    assert s["exact"] == 1.0 and s["HasAns_exact"] == 1.0
    assert s["NoAns_exact"] is None and s["NoAns_total"] == 0
    assert s["abstention_precision"] is None and s["abstention_recall"] is None


def test_squad_summary_rejects_answerable_without_gold():
    with pytest.raises(ValueError, match="answerable"):
        squad_summary([{"answerable": True, "prediction": "x", "golds": ["the"]}])


def test_verified_correct_judges_the_supported_answer_shown_or_held_back():
    from components.evaluation.metrics import verified_correct

    golds = ["30 days"]
    assert verified_correct({"answer": "30 days", "_supported": True}, golds, True)
    # held back by the bar: the supported answer is what the combiner is fitted on
    assert verified_correct({"answer": None, "rejected_answer": "within 30 days", "_supported": True}, golds, True)
    # refused by the verifier: nothing supported, so nothing right
    assert not verified_correct({"answer": None, "rejected_answer": "30 days", "_supported": False}, golds, True)
    # any answer to an unanswerable question is wrong
    assert not verified_correct({"answer": None, "rejected_answer": "30 days", "_supported": True}, [], False)


@pytest.mark.parametrize("prediction, golds, right", [
    ("15000", ["5"], False),                          # a digit inside a number is not the number
    ("1,000,000", ["10,000"], False),
    ("HTML Tidy", ["-m", "the -m option"], False),    # a letter inside a word is not the option
    ("printf", ["%p"], False),
    ("10/15/2024", ["20"], False),
    ("within 30 days", ["30 days"], True),            # the gold's words, whole and in order
    ("mailto:security@etcd.io", ["security@etcd.io"], True),   # punctuation is a boundary, not glue
    ("“--build-type=complete", ["--build-type=complete"], True),
    ("The default value is 5", ["5"], True),
    ("days 30", ["30 days"], True),                   # out of order, but token F1 1.0
    ("5", ["The default value is 5"], False),         # F1 0.4: too little of the gold
    ("30 days", [], False),
])
def test_answer_correct_contains_the_gold_word_for_word(prediction, golds, right):
    from components.evaluation.metrics import answer_correct

    assert answer_correct(prediction, golds) is right


def test_answer_correct_is_wrong_for_any_answer_to_an_unanswerable_question():
    from components.evaluation.metrics import answer_correct

    assert not answer_correct("30 days", ["30 days"], answerable=False)
    assert not answer_correct(None, ["30 days"])
