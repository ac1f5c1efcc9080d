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


@pytest.mark.parametrize("params", [dict(k1=1.5, b=0.75, epsilon=0.25), dict(k1=1.2, b=0.5, epsilon=0.1)])
def test_scores_with_given_statistics_equal_rank_bm25_and_take_a_clusters_dfs(tokens, params):
    """``okapi_given`` (the PostgreSQL store's in-process mirror) with the corpus's own statistics gives rank_bm25's
    scores; with another corpus's (a shard scored with the whole cluster's N, avgdl, floor and dfs) it gives that
    corpus's scores for its own rows."""
    from components.core.retrieval.bm25 import okapi_given

    corpus, analyzer = tokens
    k1, b, eps = params["k1"], params["b"], params["epsilon"]
    whole = InvertedIndex.build(corpus)
    idf = np.log(whole.n_docs - whole.doc_freq() + 0.5) - np.log(whole.doc_freq() + 0.5)
    floor = eps * float(idf.mean())
    oracle = RankBM25(corpus, **params)
    for q in ["annual plan refund", "ERR-4012", "hub bulbs bulbs", "plan", "nothing matches zzz"]:
        qt = analyzer(q)
        got = okapi_given(whole, qt, whole.n_docs, whole.doc_len.mean(), floor, k1, b)
        np.testing.assert_allclose(got, oracle.get_scores(qt), rtol=0, atol=1e-12)
        shard = InvertedIndex.build(corpus[3:])  # the last three documents alone, scored as part of the whole
        dfs = {t: int(whole.doc_freq()[whole.vocab[t]]) for t in qt if t in whole.vocab}
        part = okapi_given(shard, qt, whole.n_docs, whole.doc_len.mean(), floor, k1, b, dfs)
        np.testing.assert_allclose(part, oracle.get_scores(qt)[3:], rtol=0, atol=1e-12)
