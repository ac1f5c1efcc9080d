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

    python benchmarks/dense_scale.py [--chunks 1000000] [--queries 200] [--exact 100] [--cluster DIR] [--json]

Reported: build (vectors, rows, HNSW index: m 16, ef_construction 64), dense p50/p95 with HNSW (ef_search 100,
iterative scans; and the ``--ef-search`` sizes) and exact, recall@10 of HNSW against exact, hybrid p50/p95 and its
BM25 part, the peak memory of a fresh process that serves (embedding model, BM25 mirrors, hybrid searches), and the
load average. Tables ``bench_dense_<n>`` in ``.spanqa/bench-pg`` (or SPANQA_PG_DSN; with ``--cluster``, on the
cluster's shards), kept for the next run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from _common import ROOT, finish

from bm25_scale import CHUNKS_PER_DOC, built_mirrors, build, caught_up, plan, query_texts, sentence_pool, pct
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


def serving_memory(argv: list[str], questions: list[str]) -> int:
    """Peak RSS (MiB) of a fresh process that serves as a pipeline does: the store opened, the embedding model
    loaded, the BM25 mirrors built and ``questions`` searched hybrid — without this benchmark's own lists, stores
    and the question files it samples from (the questions reach it in a small file)."""
    import subprocess
    import tempfile

    keep = [a for a in argv if a not in ("--json", "--rebuild")]
    with tempfile.NamedTemporaryFile("w", suffix=".json", encoding="utf-8") as f:
        json.dump(questions, f)
        f.flush()
        done = subprocess.run([sys.executable, __file__, *keep, "--serving-memory", f.name], capture_output=True,
                              text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])["peak_rss_mb"]


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
    p.add_argument("--cluster", metavar="DIR", help="a cluster's folder (`run.py cluster up --dir DIR`): the corpus "
                   "and its vectors split over the shards by document, an HNSW index on each shard (replicated), "
                   "searched through PgClusterStore; the exact truth is a sequential scan on every shard, merged")
    p.add_argument("--json", action="store_true")
    p.add_argument("--serving-memory", metavar="QUESTIONS", help=argparse.SUPPRESS)  # the child of serving_memory()
    args = p.parse_args(argv)
    import resource

    from haystack.utils import Secret

    t = Tables(f"bench_dense_{args.chunks}")
    if args.cluster:
        from components.stores.pgvector import cluster as pg_cluster
        from components.stores.pgvector.cluster_store import PgClusterStore

        layout = pg_cluster.read_manifest(args.cluster)["shards"]
        dsns = [s["primary"] for s in layout]
        where = (f"cluster of {len(dsns)} shards, {sum(len(s['replicas']) for s in layout)} streaming replicas "
                 f"({args.cluster})")
    else:
        dsns = [os.environ.get("SPANQA_PG_DSN") or pg_server.embedded_dsn(str(ROOT / ".spanqa" / "bench-pg"))]
        where = pg_server.describe(dsns[0])
    report = {"chunks": args.chunks, "server": where, "load_average_before": os.getloadavg()}

    def opened(strategy: str, engine: str = "mirror", ef_search: int = 100, memo=None):
        """The store as a pipeline opens it (``memo``: another store's query vectors, so only searches are timed)."""
        common = dict(data_dir=str(ROOT / "data" / "kb"), table_prefix=t.prefix, progress=False,
                      search_strategy=strategy, bm25_engine=engine, ef_search=ef_search)
        if not args.cluster:
            store = PgSpanStore(dsn=Secret.from_token(dsns[0]), **common)
            store._query_vectors = memo or store._query_vectors
            store._opened = True  # the tables were written here, not synced from a folder
            return store
        store = PgClusterStore(cluster_dir=args.cluster, **common)
        store._query_vectors = memo or store._query_vectors  # before the shard stores take it
        for shard in store.primaries:
            shard._opened = True
        store._order = {f"g{d:07d}": d for d in range((args.chunks + CHUNKS_PER_DOC - 1) // CHUNKS_PER_DOC)}
        store._opened = True
        return store

    def readers(store) -> list[PgSpanStore]:
        return [store._reader(i) for i in range(len(store.primaries))] if args.cluster else [store]

    hnsw = opened("hnsw")
    conns = [pg_server.connect(dsn) for dsn in dsns]
    wanted = {"benchmark": "dense_scale", "chunks": args.chunks}
    if args.rebuild or any(pg_schema.state_settings(c, t) != wanted for c in conns):
        start = time.perf_counter()
        vectors = chunk_vectors(hnsw, args.chunks)
        made = time.perf_counter() - start
        report["build"] = build(conns, t, args.chunks, hnsw.analyzer, vectors, wanted)
        del vectors
        start = time.perf_counter()

        def indexed(conn) -> None:  # one HNSW index per shard, the shards built side by side
            conn.execute("SET maintenance_work_mem = '%dMB'" % (6144 // len(conns)))
            conn.execute("SET max_parallel_maintenance_workers = 1")
            conn.execute(q("CREATE INDEX ON {chunks} USING hnsw (embedding vector_cosine_ops) "
                           "WITH (m = 16, ef_construction = 64)", t))

        with ThreadPoolExecutor(len(conns)) as pool:
            list(pool.map(indexed, conns))
        report["build"].update(vectors_seconds=round(made, 1), hnsw_seconds=round(time.perf_counter() - start, 1))
        print(f"HNSW built in {report['build']['hnsw_seconds']:.0f} s", file=sys.stderr)
    if args.cluster:
        report["replicas_caught_up_s"] = caught_up(layout)
    if args.serving_memory:  # this process does only what a serving one does: the peak RSS is the figure
        hnsw.embed_query("what is it", None)  # the embedding model, as the first dense query loads it
        built_mirrors(readers(hnsw), t)
        for x in json.loads(Path(args.serving_memory).read_text(encoding="utf-8")):
            hnsw.hybrid_search(hnsw.analyzer(x), x, 10, Selection(), BM25Params())
        print(json.dumps({"peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}))
        return 0
    report["serving_peak_rss_mb"] = serving_memory(argv or sys.argv[1:], query_texts(50))
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
        wider = opened("hnsw", ef_search=ef, memo=hnsw._query_vectors)
        sweep[ef] = timed(lambda x: wider.dense_search(x, k, Selection()), texts)
    exact = [pg_server.connect(dsn) for dsn in dsns]  # the truth: a sequential scan (no index may answer) on
    for conn in exact:                                  # every server, merged; on the first --exact queries
        conn.execute("SET enable_indexscan = off")
        conn.execute("SET enable_bitmapscan = off")
        conn.execute("SET max_parallel_workers_per_gather = 0")

    def exact_ids(x: str) -> list[tuple[str, float]]:
        vec = "[" + ",".join(repr(float(v)) for v in hnsw.embed_query(x, None)) + "]"
        rows = [row for conn in exact for row in conn.execute(q(
            "SELECT id, 1 - (embedding <=> %s::vector) FROM {chunks} ORDER BY embedding <=> %s::vector LIMIT %s",
            t), (vec, vec, k)).fetchall()]
        return sorted(rows, key=lambda row: -row[1])[:k]

    want, report["dense_exact_ms"] = timed(exact_ids, texts[: args.exact])
    for conn in exact:
        conn.close()

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
    report["mirror_build_s"], report["mirror_arrays_mb"] = (round(v, 1) for v in built_mirrors(readers(hnsw), t))
    tokens = [hnsw.analyzer(x) for x in texts]
    _, report["bm25_mirror_ms"] = timed(lambda i: hnsw.bm25_search(tokens[i], k, Selection(), params),
                                        range(len(texts)))
    _, report["hybrid_ms"] = timed(lambda i: hnsw.hybrid_search(tokens[i], texts[i], k, Selection(), params),
                                   range(len(texts)))
    if args.cluster:
        report["replica_reads"], report["replica_skips"] = hnsw.replica_reads, hnsw.replica_skips
    report["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)  # model + mirrors
    for conn in conns:
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
        print(f"  a serving process's peak RSS {report['serving_peak_rss_mb']:,} MiB (the embedding model, the BM25 "
              f"mirrors, 50 hybrid searches; target 1 GiB); this benchmark's own {report['peak_rss_mb']:,} MiB"
              + (f"; {report['replica_reads']:,} shard reads on replicas, {report['replica_skips']} skipped"
                 if args.cluster else ""))
    return finish(report, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
