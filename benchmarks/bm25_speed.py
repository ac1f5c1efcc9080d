"""BM25 queries/s against rank_bm25 (and bm25s) on CISI, same tokens; checks the top-100 is identical.

Target: ≥ 30× rank_bm25's queries per second.   python benchmarks/bm25_speed.py
"""

import json

import numpy as np
from _common import CISI, best_of, require_cisi

from components.core.text.analysis import Analyzer
from components.core.retrieval.bm25 import BM25Okapi, InvertedIndex, top_k


def main() -> None:
    require_cisi()
    analyzer = Analyzer()
    docs = [json.loads(line) for line in open(CISI / "corpus.jsonl", encoding="utf-8")]
    corpus = [analyzer(d["title"] + "\n" + d["text"]) for d in docs]
    queries = [analyzer(json.loads(line)["text"]) for line in open(CISI / "queries.jsonl", encoding="utf-8")]
    ours = BM25Okapi(InvertedIndex.build(corpus))
    from rank_bm25 import BM25Okapi as RankBM25

    oracle = RankBM25(corpus)
    same = all(
        top_k(ours.scores(q), 100).tolist() == np.lexsort((np.arange(len(corpus)), -oracle.get_scores(q)))[:100].tolist()
        for q in queries
    )
    t_ours = best_of(lambda: [top_k(ours.scores(q), 100) for q in queries], 5)
    t_rank = best_of(lambda: [np.argsort(-oracle.get_scores(q))[:100] for q in queries], 3)
    print(f"queries: {len(queries)}, documents: {len(corpus)}, identical top-100 for every query: {same}")
    print(f"spanqa BM25     {len(queries) / t_ours:10.1f} q/s")
    print(f"rank_bm25       {len(queries) / t_rank:10.1f} q/s")
    print(f"ratio spanqa / rank_bm25: {t_rank / t_ours:.1f}x (target >= 30x)")
    try:
        import bm25s

        retriever = bm25s.BM25(k1=1.5, b=0.75)
        retriever.index(corpus, show_progress=False)
        t_bm25s = best_of(lambda: retriever.retrieve(queries, k=100, show_progress=False, n_threads=1), 5)
        print(f"bm25s (Lucene idf, not the same scores) {len(queries) / t_bm25s:10.1f} q/s, spanqa / bm25s: {t_bm25s / t_ours:.2f}x")
    except Exception as exc:  # noqa: BLE001 - bm25s is only a reference point
        print(f"bm25s skipped: {exc}")


if __name__ == "__main__":
    main()
