"""BM25 Okapi over an inverted index, with exactly the formula of ``rank_bm25.BM25Okapi``.

For a query term ``t`` with document frequency ``n_t`` in a corpus of ``N`` documents::

    idf(t)   = ln(N - n_t + 0.5) - ln(n_t + 0.5)       (negative idfs are replaced by epsilon * mean idf)
    score(d) = Σ_t  idf(t) · tf(t,d)·(k1+1) / (tf(t,d) + k1·(1 - b + b·|d|/avgdl))

Query terms are summed with their multiplicity, as rank_bm25 does. Unlike rank_bm25, which walks every
document for every query term, we touch only the postings of the query's terms (a CSC-style inverted
index in numpy arrays), which gives the same scores many times faster. ``k1``, ``b`` and ``epsilon`` are
query-time parameters, so one index serves any BM25 setting.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np


@dataclass
class InvertedIndex:
    """Postings of a tokenised corpus: for term id ``i``, ``doc_ids[indptr[i]:indptr[i+1]]`` and ``tfs``."""

    vocab: dict[str, int]
    indptr: np.ndarray  # int64, len(vocab) + 1
    doc_ids: np.ndarray  # int32
    tfs: np.ndarray  # float32 term frequencies
    doc_len: np.ndarray  # float64 document lengths in tokens

    @classmethod
    def build(cls, corpus_tokens: list[list[str]]) -> InvertedIndex:
        postings: dict[str, list[tuple[int, int]]] = {}
        for d, tokens in enumerate(corpus_tokens):
            for term, tf in Counter(tokens).items():
                postings.setdefault(term, []).append((d, tf))
        vocab = {t: i for i, t in enumerate(postings)}
        indptr = np.zeros(len(vocab) + 1, dtype=np.int64)
        for t, i in vocab.items():
            indptr[i + 1] = len(postings[t])
        np.cumsum(indptr, out=indptr)
        doc_ids = np.empty(indptr[-1], dtype=np.int32)
        tfs = np.empty(indptr[-1], dtype=np.float32)
        for t, i in vocab.items():
            plist = postings[t]
            doc_ids[indptr[i] : indptr[i + 1]] = [p[0] for p in plist]
            tfs[indptr[i] : indptr[i + 1]] = [p[1] for p in plist]
        doc_len = np.array([len(t) for t in corpus_tokens], dtype=np.float64)
        return cls(vocab, indptr, doc_ids, tfs, doc_len)

    @property
    def n_docs(self) -> int:
        return len(self.doc_len)

    def doc_freq(self) -> np.ndarray:
        return np.diff(self.indptr)

    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays to persist (the vocabulary is stored separately, in order)."""
        return {"indptr": self.indptr, "doc_ids": self.doc_ids, "tfs": self.tfs, "doc_len": self.doc_len}


def okapi_idf(doc_freq: np.ndarray, n_docs: int, epsilon: float) -> np.ndarray:
    """rank_bm25's BM25Okapi idf: negative values are floored to ``epsilon`` times the mean idf."""
    idf = np.log(n_docs - doc_freq + 0.5) - np.log(doc_freq + 0.5)
    if len(idf):
        floor = epsilon * float(idf.sum()) / len(idf)
        idf = np.where(idf < 0, floor, idf)
    return idf


class BM25Okapi:
    """Query-time BM25 Okapi scorer over an ``InvertedIndex``.

    >>> index = InvertedIndex.build([["a", "b"], ["b", "c", "c"], ["a", "d"]])
    >>> BM25Okapi(index).scores(["c"]).round(3).tolist()
    [0.0, 0.668, 0.0]
    """

    def __init__(self, index: InvertedIndex, k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25):
        self.index, self.k1, self.b, self.epsilon = index, k1, b, epsilon
        self.idf = okapi_idf(index.doc_freq(), index.n_docs, epsilon)
        avgdl = index.doc_len.mean() if index.n_docs else 1.0
        self._norm = k1 * (1 - b + b * index.doc_len / (avgdl or 1.0))

    def scores(self, query_tokens: list[str]) -> np.ndarray:
        """BM25 score of every document for ``query_tokens`` (repeated terms count repeatedly).

        All postings of the query are gathered in query order and summed with ``np.bincount``, which
        adds them per document in that same order — so the floats equal rank_bm25's bit for bit.
        """
        ix = self.index
        terms = [t for t in (ix.vocab.get(q) for q in query_tokens) if t is not None]
        if not terms:
            return np.zeros(ix.n_docs, dtype=np.float64)
        pos = np.concatenate([np.arange(ix.indptr[t], ix.indptr[t + 1]) for t in terms])
        idf = np.repeat(self.idf[terms], np.diff(ix.indptr)[terms])
        docs, tf = ix.doc_ids[pos], ix.tfs[pos].astype(np.float64)
        contrib = idf * (tf * (self.k1 + 1) / (tf + self._norm[docs]))
        return np.bincount(docs, weights=contrib, minlength=ix.n_docs)


def top_k(scores: np.ndarray, k: int, mask: np.ndarray | None = None) -> np.ndarray:
    """Indices of the ``k`` highest scores (ties broken by lower index), only among ``mask`` if given."""
    candidates = np.flatnonzero(mask) if mask is not None else np.arange(len(scores))
    if len(candidates) == 0 or k <= 0:
        return np.empty(0, dtype=np.int64)
    sub = scores[candidates]
    if k < len(candidates):
        kth = np.partition(-sub, k - 1)[k - 1]
        keep = np.flatnonzero(-sub <= kth)  # every candidate tied with the k-th score, for an exact tie-break
    else:
        keep = np.arange(len(candidates))
    order = np.lexsort((candidates[keep], -sub[keep]))[:k]
    return candidates[keep][order]


def okapi_given(index: InvertedIndex, query_tokens: list[str], n_docs: float, avgdl: float, floor: float,
                k1: float, b: float, dfs: dict[str, int] | None = None) -> np.ndarray:
    """BM25 Okapi of every row of ``index`` with the corpus statistics given rather than the index's own: ``n_docs``,
    ``avgdl``, the idf ``floor`` (epsilon x mean idf) and, for a shard of a cluster, the whole corpus's document
    frequencies ``dfs`` — what PostgreSQL's BM25 statement computes, in its order of operations
    (``idf · tf·(k1+1) / (tf + k1·(1-b) + (k1·b/avgdl)·dl)``, a repeated query term weighted by its count), so
    PgSpanStore's in-process postings give its SQL scores.

    >>> index = InvertedIndex.build([["a", "b"], ["b", "c", "c"], ["a", "d"]])
    >>> okapi_given(index, ["c"], 3, 7 / 3, 0.0, 1.5, 0.75).round(3).tolist()
    [0.0, 0.668, 0.0]
    """
    counts = Counter(query_tokens)
    terms, weights = [], []
    for term, n in counts.items():
        t = index.vocab.get(term)
        if t is None:
            continue
        df = float(dfs[term]) if dfs is not None and term in dfs else float(index.indptr[t + 1] - index.indptr[t])
        idf = np.log(n_docs - df + 0.5) - np.log(df + 0.5)
        terms.append(t)
        weights.append(n * (floor if idf < 0 else idf))
    scores = np.zeros(index.n_docs, dtype=np.float64)
    c1, c2, c3 = k1 + 1, k1 * (1 - b), k1 * b / avgdl
    for t, weight in zip(terms, weights):  # term by term: the temporaries are one postings list's, not the query's
        lo, hi = index.indptr[t], index.indptr[t + 1]
        rows, tf = index.doc_ids[lo:hi], index.tfs[lo:hi].astype(np.float64)
        contrib = np.float64(weight) * (tf * c1 / (tf + c2 + c3 * index.doc_len[rows]))
        scores[rows] += contrib  # a row holds a term once: the same sums, in the same order, as one bincount
    return scores
