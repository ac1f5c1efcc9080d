"""Exact top-k BM25 over impact-ordered postings, with early termination.

Exhaustive BM25 reads every posting of every query term: at a million chunks a common term has hundreds of
thousands, and the sum over them is the whole cost. Here each posting also stores an **impact** — its term score
without the idf, ``tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl_ref))``, at a reference average length fixed when
the index was first written — and each term's postings are read best impact first, a page at a time. This is
Fagin's **Threshold Algorithm** (Fagin, Lotem & Naor 2003, "Optimal aggregation algorithms for middleware"; the
impact-ordered index of Anh & Moffat 2006 is the same idea for text search): after each round every chunk seen so
far is scored *exactly* (all its query terms, read by random access), and no chunk not yet seen can score more than
the sum over terms of ``idf x bound x the last impact read``. The search stops when the k-th exact score is
strictly above that sum, so the top k — ties at the k-th included — are exactly those of the exhaustive scorer:
nothing is approximated.

The bound holds whatever the corpus has become since: with the current average length ``A`` against the reference
``A_ref``, a posting's exact term score is at most ``max(1, A / A_ref)`` times its stored impact (the length term of
the denominator scales by ``A_ref / A``, and the other terms are at least that fraction of themselves), so writes
after the first build cost only tighter pages, never a wrong answer. Impacts are stored as 4-byte floats, so the
bound carries a relative margin of 1e-6 (float32 rounding is 6e-8).

The store glue (SQL, which pages, which chunks a selection admits) is the caller's: ``top_k`` takes two functions.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

MARGIN = 1e-6


def term_score(tf: float, dl: float, k1: float, b: float, avgdl: float) -> float:
    """BM25 Okapi's term score without the idf (what the exhaustive SQL sums, in the same operations)."""
    return tf * (k1 + 1) / (tf + k1 * (1 - b) + (k1 * b / avgdl) * dl)


def bound_factor(avgdl: float, reference: float) -> float:
    """How far above its stored impact a posting's exact term score can be at the current ``avgdl``."""
    return max(1.0, avgdl / reference) * (1 + MARGIN)


def idf_weights(counts: dict[str, int], dfs: dict[str, int], n: float, floor: float) -> dict[str, float]:
    """Each query term's weight: its count in the query times rank_bm25's idf (negative idf floored), as the SQL
    ``_WEIGHTS`` computes it. Terms no chunk has are left out."""
    out = {}
    for term, count in counts.items():
        df = dfs.get(term)
        if not df:
            continue
        idf = math.log(n - df + 0.5) - math.log(df + 0.5)
        out[term] = count * (floor if idf < 0 else idf)
    return out


@dataclass
class SearchStats:
    rounds: int = 0
    postings_read: int = 0
    chunks_scored: int = 0
    exhaustive: bool = False  # gave up (``max_postings``): the caller ran the exhaustive scorer
    per_term: dict[str, int] = field(default_factory=dict)


# fetch(positions, n) -> {term: [(impact, key), ...]}: the next ``n`` postings of each term after its position
# ((impact, key) of the last one read, None at the start), best impact first, ties by key
Fetch = Callable[[dict[str, tuple[float, int] | None], int], dict[str, list[tuple[float, int]]]]
# exact(keys) -> {key: (score, tie-break)}: the exact scores of those of ``keys`` the selection admits
Exact = Callable[[list[int]], dict[int, tuple[float, tuple]]]


def top_k(weights: dict[str, float], k: int, fetch: Fetch, exact: Exact, factor: float, page: int = 128,
          growth: int = 4, max_postings: int = 2_000_000) -> tuple[list[tuple[int, float]] | None, SearchStats]:
    """The exact top ``k`` ``(key, score)``, best first (ties by the tie-break ``exact`` returns), and what it
    read; ``None`` instead of the list when more than ``max_postings`` postings would be read (the caller then
    runs the exhaustive scorer, which is cheaper when the threshold cannot close)."""
    stats = SearchStats()
    positions: dict[str, tuple[float, int] | None] = {t: None for t in weights}
    bounds = {t: math.inf for t in weights}
    seen: set[int] = set()
    admitted: dict[int, tuple[float, tuple]] = {}
    n = page
    while True:
        live = {t: positions[t] for t in weights if bounds[t] > 0}
        if not live:
            break
        pages = fetch(live, n)
        stats.rounds += 1
        new: list[int] = []
        for term in live:
            rows = pages.get(term, [])
            stats.postings_read += len(rows)
            stats.per_term[term] = stats.per_term.get(term, 0) + len(rows)
            for _, key in rows:
                if key not in seen:
                    seen.add(key)
                    new.append(key)
            if len(rows) < n:
                bounds[term] = 0.0  # exhausted: every chunk having the term has been seen
            else:
                positions[term] = rows[-1]
                bounds[term] = weights[term] * factor * rows[-1][0]
        if new:
            scored = exact(new)
            stats.chunks_scored += len(new)
            admitted.update((key, value) for key, value in scored.items() if value[0] > 0)
        threshold = sum(bounds.values())
        if len(admitted) >= k:
            kth = sorted((v[0] for v in admitted.values()), reverse=True)[k - 1]
            if kth > threshold:
                break
        if stats.postings_read > max_postings:
            stats.exhaustive = True
            return None, stats
        n *= growth
    ranked = sorted(admitted.items(), key=lambda kv: (-kv[1][0], kv[1][1]))[:k]
    return [(key, value[0]) for key, value in ranked], stats
