"""The threshold algorithm over impact-ordered postings returns exactly the exhaustive BM25 top k — scores, order
and ties — including after the average length moved away from the reference the impacts were stored at."""

import math
import random

import numpy as np
import pytest

from components.core.retrieval.impact import bound_factor, idf_weights, term_score, top_k


def corpus(seed: int, n_chunks: int = 400, vocabulary: int = 60):
    rng = random.Random(seed)
    zipf = [1 / (r + 1) for r in range(vocabulary)]
    chunks = [rng.choices([f"t{i}" for i in range(vocabulary)], weights=zipf, k=rng.randint(3, 40))
              for _ in range(n_chunks)]
    return chunks


def postings(chunks, k1, b, reference):
    out: dict[str, list[tuple[float, int, int, float]]] = {}
    for key, tokens in enumerate(chunks):
        for term in set(tokens):
            tf = tokens.count(term)
            imp = float(np.float32(term_score(tf, len(tokens), k1, b, reference)))  # stored as real
            out.setdefault(term, []).append((imp, key, tf, float(len(tokens))))
    for rows in out.values():
        rows.sort(key=lambda r: (-r[0], r[1]))
    return out


def run(chunks, query, k, reference, admit=lambda key: True, k1=1.5, b=0.75):
    index = postings(chunks, k1, b, reference)
    n, avgdl = len(chunks), sum(map(len, chunks)) / len(chunks)
    dfs = {t: len(rows) for t, rows in index.items()}
    mean = sum(math.log(n - df + 0.5) - math.log(df + 0.5) for df in dfs.values()) / len(dfs)
    counts = {t: query.count(t) for t in set(query)}
    weights = idf_weights(counts, dfs, n, 0.25 * mean)

    def score(key):
        tokens = chunks[key]
        return sum(w * term_score(tokens.count(t), len(tokens), k1, b, avgdl) for t, w in weights.items()
                   if t in tokens)

    def fetch(positions, size):
        out = {}
        for term, at in positions.items():
            rows = [(imp, key) for imp, key, _, _ in index[term]]
            start = 0 if at is None else rows.index(at) + 1
            out[term] = rows[start: start + size]
        return out

    def exact(keys):
        return {key: (score(key), (key,)) for key in keys if admit(key)}

    got, stats = top_k(weights, k, fetch, exact, bound_factor(avgdl, reference), page=4)
    everything = sorted(((key, score(key)) for key in range(n) if admit(key) and score(key) > 0),
                        key=lambda kv: (-kv[1], kv[0]))
    return got, everything[:k], stats


@pytest.mark.parametrize("seed", range(20))
def test_exact_top_k_against_exhaustive(seed):
    chunks = corpus(seed)
    rng = random.Random(100 + seed)
    query = rng.choices([f"t{i}" for i in range(60)], k=rng.randint(1, 6))
    avgdl = sum(map(len, chunks)) / len(chunks)
    for reference in (avgdl, avgdl / 3, avgdl * 3):  # impacts stored at another average length: still exact
        got, want, _ = run(chunks, query, 10, reference)
        assert got == want


def test_stops_early_and_respects_the_selection():
    chunks = corpus(7, n_chunks=3000)
    query = ["t0", "t1", "t45"]  # two very common terms and a rare one
    got, want, stats = run(chunks, query, 5, sum(map(len, chunks)) / len(chunks))
    assert got == want
    total = sum(1 for c in chunks for t in set(c) if t in query)
    assert stats.postings_read < total / 2  # it did not read every posting
    odd = lambda key: key % 2 == 1  # noqa: E731
    got, want, _ = run(chunks, query, 5, sum(map(len, chunks)) / len(chunks), admit=odd)
    assert got == want and all(key % 2 == 1 for key, _ in got)


def test_ties_at_the_kth_score_are_broken_as_the_exhaustive_scorer_does():
    chunks = [["a", "b"]] * 30 + [["a", "c", "c"]] * 5 + [["d", "e"]] * 200  # 30 chunks with the same score
    got, want, _ = run(chunks, ["a", "b"], 10, 2.0)
    assert got == want and [key for key, _ in got] == list(range(10))
