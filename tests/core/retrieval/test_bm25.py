import numpy as np
import pytest
from rank_bm25 import BM25Okapi as RankBM25

from components.core.text.analysis import Analyzer
from components.core.retrieval.bm25 import BM25Okapi, InvertedIndex, okapi_idf, top_k

CORPUS = [
    "the refund window for annual plans is thirty days",
    "annual plans renew automatically every year",
    "error ERR-4012 means the pairing timed out",
    "monthly plans can be cancelled any time",
    "the hub supports forty bulbs and the hub mini supports twenty bulbs",
    "a plan a plan a plan",  # repeated terms: tf > 1
]


@pytest.fixture(scope="module")
def tokens():
    analyzer = Analyzer()
    return [analyzer(t) for t in CORPUS], analyzer


@pytest.mark.parametrize("params", [dict(), dict(k1=1.2, b=0.5, epsilon=0.1), dict(k1=2.0, b=1.0, epsilon=0.5)])
def test_scores_equal_rank_bm25_bit_for_bit(tokens, params):
    corpus, analyzer = tokens
    ours = BM25Okapi(InvertedIndex.build(corpus), **params)
    oracle = RankBM25(corpus, **params)
    for q in ["annual plan refund", "ERR-4012", "hub bulbs bulbs", "plan", "nothing matches zzz"]:
        qt = analyzer(q)
        np.testing.assert_array_equal(ours.scores(qt), oracle.get_scores(qt))


def test_negative_idf_is_floored_like_rank_bm25():
    # "a" occurs in 3 of 4 docs -> ln(1.5) - ln(3.5) < 0 -> epsilon * mean idf
    corpus = [["a", "b"], ["a"], ["a", "c"], ["d"]]
    idf = okapi_idf(InvertedIndex.build(corpus).doc_freq(), 4, epsilon=0.25)
    oracle = RankBM25(corpus, epsilon=0.25)
    vocab = InvertedIndex.build(corpus).vocab
    assert idf[vocab["a"]] == pytest.approx(oracle.idf["a"]) and idf[vocab["a"]] > 0
    assert idf[vocab["b"]] == pytest.approx(np.log(3.5) - np.log(1.5))


def test_top_k_ties_break_by_lower_index_and_respect_mask():
    scores = np.array([1.0, 3.0, 3.0, 2.0, 3.0])
    assert top_k(scores, 2).tolist() == [1, 2]
    assert top_k(scores, 10).tolist() == [1, 2, 4, 3, 0]
    mask = np.array([True, False, False, True, True])
    assert top_k(scores, 2, mask).tolist() == [4, 3]
    assert top_k(scores, 3, np.zeros(5, bool)).tolist() == []
