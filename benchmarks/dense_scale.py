"""Dense and hybrid search at a million chunks in PostgreSQL: HNSW (pgvector) against exact search, and the
hybrid search as the retriever runs it (BM25 over the postings mirror, the dense statement, RRF) — side by side on
the same queries, one server.

The corpus is ``bm25_scale.py``'s (chunks of 2–4 real SQuAD / CISI sentences, half with one sentence swapped in
from elsewhere). Embedding a million chunks takes hours on two cores, so a chunk's vector is **the normalised mean
of its sentences' embeddings** (all-MiniLM-L6-v2, every sentence of the pool embedded once, ~100k): real
embeddings of real text, combined the way mean pooling combines tokens — not the vector the model gives the whole
chunk. Recall is measured against exact search over these same vectors, so it is HNSW's recall on a realistic
distribution, not the model's retrieval quality. Queries: SQuAD training questions and CISI queries, embedded by
the store as the retriever does.

    python benchmarks/dense_scale.py [--chunks 1000000] [--queries 200] [--exact 100] [--rebuild] [--json]

Reported: build (vectors, rows, HNSW index: m 16, ef_construction 64), dense p50/p95 with HNSW (ef_search 100,
iterative scans; and the ``--ef-search`` sizes) and exact, recall@10 of HNSW against exact, hybrid p50/p95 and its BM25 part, and the load
average. Tables ``bench_dense_<n>`` in ``.spanqa/bench-pg`` (or SPANQA_PG_DSN), kept for the next run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from _common import ROOT, finish

from bm25_scale import built_mirrors, build, plan, query_texts, sentence_pool, pct
from components.stores.base import BM25Params, Selection
from components.stores.pgvector import schema as pg_schema, server as pg_server
from components.stores.pgvector.schema import Tables, q
from components.stores.pgvector.store import PgSpanStore

CACHE = ROOT / ".spanqa" / "bench-sentence-vectors.npy"


def chunk_vectors(store: PgSpanStore, n: int) -> np.ndarray:
    """The normalised mean of each chunk's sentence embeddings (the sentences embedded once, kept in CACHE)."""
    sentences, paragraphs = sentence_pool()
    if CACHE.exists() and np.load(CACHE, mmap_mode="r").shape[0] == len(sentences):
        pool = np.load(CACHE)
    else:
        start = time.perf_counter()
        pool = np.asarray(store.embedder.encode(sentences, batch_size=128, normalize_embeddings=True,
                                                show_progress_bar=True), dtype=np.float32)
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        np.save(CACHE, pool)
        print(f"{len(sentences):,} sentences embedded in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    out = np.empty((n, pool.shape[1]), dtype=np.float32)
    for i, ids in enumerate(plan(n, paragraphs, len(sentences))):
        out[i] = pool[list(ids)].mean(axis=0)
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


def timed(fn, items) -> tuple[list, dict]:
    results, times = [], []
    for item in items:
        t0 = time.perf_counter()
        results.append(fn(item))
        times.append((time.perf_counter() - t0) * 1000)
    return results, {"p50": round(pct(times, 0.5), 1), "p95": round(pct(times, 0.95), 1),
                     "mean": round(statistics.mean(times), 1)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--chunks", type=int, default=1_000_000)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--exact", type=int, default=100, help="queries whose exact top k is computed (a full scan each)")
    p.add_argument("--ef-search", type=int, nargs="*", default=[200, 400],
                   help="more HNSW candidate-list sizes to measure beside the shipped 100 (recall against time)")
    p.add_argument("--rebuild", action="store_true")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    from haystack.utils import Secret

    dsn = os.environ.get("SPANQA_PG_DSN") or pg_server.embedded_dsn(str(ROOT / ".spanqa" / "bench-pg"))
    t = Tables(f"bench_dense_{args.chunks}")
    report = {"chunks": args.chunks, "server": pg_server.describe(dsn), "load_average_before": os.getloadavg()}

    def opened(strategy: str, engine: str = "mirror", ef_search: int = 100) -> PgSpanStore:
        store = PgSpanStore(data_dir=str(ROOT / "data" / "kb"), dsn=Secret.from_token(dsn), table_prefix=t.prefix,
                            progress=False, search_strategy=strategy, bm25_engine=engine, ef_search=ef_search)
        store._opened = True  # the tables were written here, not synced from a folder
        return store

    hnsw = opened("hnsw")
    conn = pg_server.connect(dsn)
    wanted = {"benchmark": "dense_scale", "chunks": args.chunks}
    if args.rebuild or pg_schema.state_settings(conn, t) != wanted:
        start = time.perf_counter()
        vectors = chunk_vectors(hnsw, args.chunks)
        made = time.perf_counter() - start
        report["build"] = build([conn], t, args.chunks, hnsw.analyzer, vectors, wanted)
        del vectors
        start = time.perf_counter()
        conn.execute("SET maintenance_work_mem = '6GB'")
        conn.execute("SET max_parallel_maintenance_workers = 1")
        conn.execute(q("CREATE INDEX ON {chunks} USING hnsw (embedding vector_cosine_ops) "
                       "WITH (m = 16, ef_construction = 64)", t))
        report["build"].update(vectors_seconds=round(made, 1), hnsw_seconds=round(time.perf_counter() - start, 1))
        print(f"HNSW built in {report['build']['hnsw_seconds']:.0f} s", file=sys.stderr)
    texts = query_texts(args.queries)
    hnsw.embed_query(texts[0], None)  # the model loaded before timing
    for x in texts:
        hnsw.embed_query(x, None)  # query vectors memoised: the searches are timed, not the encoder
    k, params = args.k, BM25Params()
    for x in texts[:10]:  # warm the index pages
        hnsw.dense_search(x, k, Selection())
    got, report["dense_hnsw_ms"] = timed(lambda x: hnsw.dense_search(x, k, Selection()), texts)
    sweep = {}
    for ef in args.ef_search:  # HNSW's candidate list per search: recall against time
        wider = opened("hnsw", ef_search=ef)
        wider._query_vectors = hnsw._query_vectors
        sweep[ef] = timed(lambda x: wider.dense_search(x, k, Selection()), texts)
    exact = pg_server.connect(dsn)  # the truth: a sequential scan (no index may answer), on the first --exact queries
    exact.execute("SET enable_indexscan = off")
    exact.execute("SET enable_bitmapscan = off")
    exact.execute("SET max_parallel_workers_per_gather = 0")

    def exact_ids(x: str) -> list[tuple[str, float]]:
        vec = "[" + ",".join(repr(float(v)) for v in hnsw.embed_query(x, None)) + "]"
        return exact.execute(q("SELECT id, 1 - (embedding <=> %s::vector) FROM {chunks} ORDER BY embedding <=> "
                               "%s::vector LIMIT %s", t), (vec, vec, k)).fetchall()

    want, report["dense_exact_ms"] = timed(exact_ids, texts[: args.exact])
    exact.close()

    def recall(found: list) -> dict:
        """Recall@k by id, and by distance (a hit as near as the exact k-th counts: chunks made of the same
        sentences have the same vector, and which of equals the exact scan lists is arbitrary)."""
        by_id = [len({d.id for d, _ in f} & {i for i, _ in w}) / len(w) for f, w in zip(found, want) if w]
        by_distance = [sum(score >= w[-1][1] - 1e-6 for _, score in f[: len(w)]) / len(w)
                       for f, w in zip(found, want) if w]
        return {"by_id": round(statistics.mean(by_id), 4), "by_distance": round(statistics.mean(by_distance), 4)}

    report["dense_recall_at_10"] = recall(got)
    report["recall_queries"] = len(want)
    report["ef_search_sweep"] = {ef: {"ms": ms, "recall_at_10": recall(found)} for ef, (found, ms) in sweep.items()}
    report["mirror_build_s"], report["mirror_arrays_mb"] = (round(v, 1) for v in built_mirrors([hnsw], t))
    tokens = [hnsw.analyzer(x) for x in texts]
    _, report["bm25_mirror_ms"] = timed(lambda i: hnsw.bm25_search(tokens[i], k, Selection(), params),
                                        range(len(texts)))
    _, report["hybrid_ms"] = timed(lambda i: hnsw.hybrid_search(tokens[i], texts[i], k, Selection(), params),
                                   range(len(texts)))
    conn.close()
    if not args.json:
        print(f"dense and hybrid top {k} at {args.chunks:,} chunks ({report['server']}), {len(texts)} queries")
        print(f"  dense HNSW p50 {report['dense_hnsw_ms']['p50']} ms p95 {report['dense_hnsw_ms']['p95']} ms | exact "
              f"p50 {report['dense_exact_ms']['p50']} ms | recall@{k} of HNSW against exact by id "
              f"{report['dense_recall_at_10']['by_id']:.3f}, by distance {report['dense_recall_at_10']['by_distance']:.3f}"
              f" on {report['recall_queries']} queries (target 0.95)")
        for ef, row in report["ef_search_sweep"].items():
            print(f"  dense HNSW ef_search {ef}: p50 {row['ms']['p50']} ms p95 {row['ms']['p95']} ms | recall@{k} by id "
                  f"{row['recall_at_10']['by_id']:.3f}, by distance {row['recall_at_10']['by_distance']:.3f}")
        print(f"  hybrid (mirror BM25 + HNSW + RRF) p50 {report['hybrid_ms']['p50']} ms p95 "
              f"{report['hybrid_ms']['p95']} ms (target p50 100 ms); its BM25 alone p50 "
              f"{report['bm25_mirror_ms']['p50']} ms")
    return finish(report, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
