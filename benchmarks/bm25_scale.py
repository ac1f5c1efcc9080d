"""BM25 in PostgreSQL at a million chunks: PgSpanStore's BM25 statement (every posting of every query term scored in
SQL) on a corpus built in minutes rather than the hour of ``pg_store.py``'s 1M row.

The corpus is generated from real text: every sentence of the SQuAD 1.1 training paragraphs and the CISI
abstracts (cut at sentence ends, analysed once by the store's analyzer). Chunk ``i`` is a run of 2–4 consecutive
sentences of a random paragraph; with probability 0.5 one of them is replaced by a random sentence of the whole
pool (so chunks are mostly distinct while each keeps a real paragraph's vocabulary); eight chunks make a document.
Rows are written with COPY straight into PgSpanStore's tables, skipping the embedding (BM25 does not read it; the
column stays NULL), and the postings' indexes are built after the load.
Queries: SQuAD 1.1 training questions and CISI queries, analysed as the retriever does.

    python benchmarks/bm25_scale.py [--chunks 1000000] [--queries 300] [--rebuild] [--json]

The embedded server keeps its data in ``.spanqa/bench-pg`` (or SPANQA_PG_DSN), so a second run measures without
rebuilding. Reported: build time and size, p50/p95 of the top 10 over all chunks and under a filter that keeps
half of them, postings per query, and the load average — for the SQL statement and, side by side on the same
queries and the same filter, the in-process postings mirror (``bm25_engine: mirror``: BM25S-style eager scoring over a copy of the
postings, Lù 2024): its build time and memory, its p50/p95, and the share of queries whose top 10 (ids in order)
equals the SQL statement's.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

from _common import CISI, ROOT, finish

from components.stores.base import BM25Params, Selection
from components.stores.pgvector import schema as pg_schema, server as pg_server
from components.stores.pgvector.schema import Tables, q
from components.stores.pgvector.store import PgSpanStore

SQUAD = ROOT.parent / "shared" / "data" / "squad-train" / "train-v1.1.json"
SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
CHUNKS_PER_DOC = 8
HALF = {"field": "meta.group", "operator": "==", "value": "a"}  # a metadata filter that keeps half of the chunks


def sentence_pool() -> tuple[list[str], list[tuple[int, int]]]:
    """Every sentence of SQuAD 1.1's training paragraphs and CISI's abstracts; (first, count) per paragraph."""
    sentences, paragraphs = [], []
    texts = [p["context"] for a in json.loads(SQUAD.read_text(encoding="utf-8"))["data"] for p in a["paragraphs"]]
    with open(CISI / "corpus.jsonl", encoding="utf-8") as fh:
        texts += [json.loads(line)["text"] for line in fh if line.strip()]
    for text in texts:
        parts = [s.strip() for s in SENTENCE.split(" ".join(text.split())) if s.strip()]
        paragraphs.append((len(sentences), len(parts)))
        sentences += parts
    return sentences, paragraphs


def plan(n: int, paragraphs, n_sentences: int, seed: int = 0) -> list[tuple[int, ...]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        first, count = rng.choice(paragraphs)
        size = min(count, rng.randint(2, 4))
        start = first + rng.randint(0, count - size)
        ids = list(range(start, start + size))
        if rng.random() < 0.5:
            ids[rng.randrange(size)] = rng.randrange(n_sentences)
        out.append(tuple(ids))
    return out


def build(conns: list, t: Tables, n: int, analyzer, vectors=None, settings: dict | None = None) -> dict:
    """The generated corpus written into ``conns`` (one server, or a cluster's shard primaries: a document and its
    chunks go to ``cluster.shard_of``'s shard, each shard's chunk keys and document frequencies its own)."""
    import contextlib

    from components.stores.pgvector.cluster import shard_of

    start = time.perf_counter()
    sentences, paragraphs = sentence_pool()
    tokens = [analyzer(s) for s in sentences]
    chunks = plan(n, paragraphs, len(sentences))
    print(f"{len(sentences):,} sentences from {len(paragraphs):,} paragraphs; {n:,} chunks planned "
          f"({time.perf_counter() - start:.0f} s)", file=sys.stderr)
    shards = len(conns)
    for i, conn in enumerate(conns):
        pg_schema.drop(conn, t)
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(q("CREATE TABLE {chunks} (id varchar(128) PRIMARY KEY, embedding vector(384), content text, "
                       "blob_data bytea, blob_meta jsonb, blob_mime_type text, meta jsonb)", t))
        pg_schema.create(conn, t, settings or built_as(n, i, shards))
        conn.execute(q("DROP INDEX {postings_ckey}", t))
        conn.execute(q("ALTER TABLE {postings} DROP CONSTRAINT " + t.name("postings") + "_pkey", t))
    lengths = [sum(len(tokens[s]) for s in c) for c in chunks]
    docs = range((n + CHUNKS_PER_DOC - 1) // CHUNKS_PER_DOC)
    home = [shard_of(f"g{d:07d}", shards) if shards > 1 else 0 for d in docs]
    ckey, counts = [0] * n, [0] * shards  # each shard numbers its own chunks from 1
    for i in range(n):
        counts[home[i // CHUNKS_PER_DOC]] += 1
        ckey[i] = counts[home[i // CHUNKS_PER_DOC]]
    df: list[Counter] = [Counter() for _ in conns]
    curs = [conn.cursor() for conn in conns]

    def copies(sql: str, stack):
        return [stack.enter_context(cur.copy(q(sql, t))) for cur in curs]

    with contextlib.ExitStack() as tx:
        for conn in conns:
            tx.enter_context(conn.transaction())
        with contextlib.ExitStack() as stack:
            out = copies("COPY {chunks} (id, content, meta, embedding) FROM STDIN", stack)
            for i, c in enumerate(chunks):
                doc = f"g{i // CHUNKS_PER_DOC:07d}"
                vec = None if vectors is None else "[" + ",".join(f"{x:.6g}" for x in vectors[i].tolist()) + "]"
                out[home[i // CHUNKS_PER_DOC]].write_row((f"{doc}:{i}", " ".join(sentences[s] for s in c),
                                                          json.dumps({"doc_id": doc, "group": "ab"[i % 2]}), vec))
                if vectors is not None and i % 100_000 == 0:
                    print(f"  chunks with vectors: {i:,} ({time.perf_counter() - start:.0f} s)", file=sys.stderr)
        with contextlib.ExitStack() as stack:
            out = copies("COPY {chunkmap} (ckey, chunk_id, doc_id, chunk_ord) FROM STDIN", stack)
            for i in range(n):
                doc = f"g{i // CHUNKS_PER_DOC:07d}"
                out[home[i // CHUNKS_PER_DOC]].write_row((ckey[i], f"{doc}:{i}", doc, i % CHUNKS_PER_DOC))
        with contextlib.ExitStack() as stack:
            out = copies("COPY {postings} (term, ckey, tf, dl) FROM STDIN", stack)
            for i, c in enumerate(chunks):
                shard = home[i // CHUNKS_PER_DOC]
                counts_i = Counter(x for s in c for x in tokens[s])
                df[shard].update(counts_i.keys())
                dl = float(lengths[i])
                for term, tf in counts_i.items():
                    out[shard].write_row((term, ckey[i], tf, dl))
                if i % 100_000 == 0:
                    print(f"  postings of {i:,} chunks ({time.perf_counter() - start:.0f} s)", file=sys.stderr)
        with contextlib.ExitStack() as stack:
            out = copies("COPY {documents} (doc_id, ord, origin, content_hash, text, meta, body_start, layout, "
                         "units, blocks, n_words, n_chunks, total_len) FROM STDIN", stack)
            for d in docs:
                doc = f"g{d:07d}"
                part = range(d * CHUNKS_PER_DOC, min(n, (d + 1) * CHUNKS_PER_DOC))
                out[home[d]].write_row((doc, d, "api", doc, "", "{}", 0, "{}", [], [], 0, len(part),
                                        float(sum(lengths[i] for i in part))))
        with contextlib.ExitStack() as stack:
            out = copies("COPY {terms} (term, df) FROM STDIN", stack)
            for shard, counter in enumerate(df):
                for term, count in counter.items():
                    out[shard].write_row((term, count))
        for conn in conns:
            conn.execute(q("UPDATE {state} SET version = 1 WHERE id = 1", t))
    loaded = time.perf_counter() - start
    print(f"loaded in {loaded:.0f} s; building the postings' indexes", file=sys.stderr)
    for conn in conns:
        conn.execute("SET maintenance_work_mem = '1GB'")
        conn.execute(q("ALTER TABLE {postings} ADD PRIMARY KEY (term, ckey) INCLUDE (tf, dl)", t))
        conn.execute(q("CREATE INDEX {postings_ckey} ON {postings} (ckey)", t))
        for part in ("postings", "chunkmap", "terms", "documents", "chunks"):
            conn.execute(q(f"VACUUM (ANALYZE) {{{part}}}", t))
    return {"seconds": round(time.perf_counter() - start, 1), "load_seconds": round(loaded, 1),
            "postings": int(sum(sum(c.values()) for c in df)), "terms": len(set().union(*df)),
            "chunks_per_shard": counts}


def caught_up(layout: list[dict], timeout_s: float = 1800) -> float:
    """Seconds until every streaming replica has replayed its primary's WAL up to now."""
    start = time.perf_counter()
    for shard in layout:
        with pg_server.connect(shard["primary"]) as primary:
            lsn = primary.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
        for replica in shard["replicas"]:
            with pg_server.connect(replica["uri"]) as conn:
                while not conn.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (lsn,)).fetchone()[0]:
                    if time.perf_counter() - start > timeout_s:
                        raise SystemExit(f"bm25_scale: replica {replica['uri']} did not catch up in {timeout_s:.0f} s")
                    time.sleep(1)
    return round(time.perf_counter() - start, 1)


def built_as(n: int, shard: int = 0, shards: int = 1) -> dict:
    """The state row's settings of the generated tables (so a second run finds them and does not rebuild)."""
    return {"benchmark": "bm25_scale", "chunks": n} | ({"shard": f"{shard}/{shards}"} if shards > 1 else {})


def query_texts(n: int, seed: int = 1) -> list[str]:
    """``n`` questions: three quarters SQuAD 1.1 training questions, a quarter CISI queries (seeded)."""
    squad = [qa["question"] for a in json.loads(SQUAD.read_text(encoding="utf-8"))["data"]
             for p in a["paragraphs"] for qa in p["qas"]]
    with open(CISI / "queries.jsonl", encoding="utf-8") as fh:
        cisi = [json.loads(line)["text"] for line in fh if line.strip()]
    rng = random.Random(seed)
    return rng.sample(squad, n - n // 4) + rng.sample(cisi, min(len(cisi), n // 4))


def queries(n: int, analyzer, seed: int = 1) -> list[list[str]]:
    return [tokens for tokens in (analyzer(x) for x in query_texts(n, seed)) if tokens]


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p * (len(values) - 1))))]


def measure(store, qs: list[list[str]], k: int, selection: Selection, postings_of) -> dict:
    params = BM25Params()
    for tokens in qs[:20]:  # warm the caches
        store.bm25_search(tokens, k, selection, params)
    times = []
    for tokens in qs:
        t0 = time.perf_counter()
        store.bm25_search(tokens, k, selection, params)
        times.append((time.perf_counter() - t0) * 1000)
    postings = [postings_of(tokens) for tokens in qs]
    return {"queries": len(qs), "ms": {"p50": round(pct(times, 0.5), 1), "p95": round(pct(times, 0.95), 1),
                                       "mean": round(statistics.mean(times), 1)},
            "postings_per_query": {"p50": int(pct(postings, 0.5)), "p95": int(pct(postings, 0.95))}}


def built_mirrors(stores: list[PgSpanStore], t: Tables) -> tuple[float, float]:
    """Each store's mirror built at its current version (the cluster's: every shard store a search reads);
    ``(seconds of the slowest build, MB of arrays in all)``."""
    seconds, arrays_mb = 0.0, 0.0
    for store in stores:
        store.mirror.at(pg_schema.version(store._conn(), t), store._mirror_connection, t)
        mirror = store.mirror.wait()
        if mirror is None:
            raise SystemExit(f"bm25_scale: the mirror of {store.where} was not built: {store.mirror.error}")
        ix = mirror.index
        seconds = max(seconds, mirror.seconds)
        arrays_mb += sum(a.nbytes for a in (ix.indptr, ix.doc_ids, ix.tfs, ix.doc_len)) / 2**20
    return seconds, arrays_mb


def mirror_side(sql_store, store, qs: list[list[str]], k: int, postings_of, mirrored: list[PgSpanStore],
                t: Tables) -> dict:
    """The mirror(s) built (and their memory), timed on ``qs``, and the top ``k`` compared with the SQL
    statement's (``sql_store``: the same tables read with ``bm25_engine: sql``)."""
    import resource

    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    build_seconds, arrays_mb = built_mirrors(mirrored, t)
    out = measure(store, qs, k, Selection(), postings_of)
    params, same, same_set, max_diff = BM25Params(), 0, 0, 0.0
    for tokens in qs:
        a = sql_store.bm25_search(tokens, k, Selection(), params)
        b = store.bm25_search(tokens, k, Selection(), params)
        same += [d.id for d, _ in a] == [d.id for d, _ in b]
        same_set += {d.id for d, _ in a} == {d.id for d, _ in b}
        max_diff = max([max_diff] + [abs(x - y) for (_, x), (_, y) in zip(a, b)])
    half = Selection(filters=HALF)
    t0 = time.perf_counter()
    store.bm25_search(qs[0], k, half, params)  # the filter's rows read (once per filter and index version)
    first_filtered_ms = (time.perf_counter() - t0) * 1000
    filtered = measure(store, qs[: len(qs) // 3], k, half, postings_of)
    same_filtered = sum([d.id for d, _ in sql_store.bm25_search(tokens, k, half, params)]
                        == [d.id for d, _ in store.bm25_search(tokens, k, half, params)] for tokens in qs[: len(qs) // 3])
    out.update(filtered_half={**filtered, "first_query_ms": round(first_filtered_ms, 1),
                              "top10_identical": round(same_filtered / len(qs[: len(qs) // 3]), 4)})
    out.update(build_seconds=round(build_seconds, 1), arrays_mb=round(arrays_mb),
               peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
               peak_rss_mb_before=round(rss_before), top10_identical=round(same / len(qs), 4),
               top10_same_set=round(same_set / len(qs), 4), max_score_difference=max_diff)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--chunks", type=int, default=1_000_000)
    p.add_argument("--queries", type=int, default=300)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--rebuild", action="store_true")
    p.add_argument("--cluster", metavar="DIR", help="a cluster's folder (`run.py cluster up --dir DIR`): the corpus "
                   "split over its shards by document, searched through PgClusterStore (replicas at the version)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    t = Tables(f"bench_bm25_{args.chunks}")
    probe = PgSpanStore(data_dir=str(ROOT / "data" / "kb"), table_prefix=t.prefix, progress=False)
    analyzer = probe.analyzer
    from haystack.utils import Secret

    if args.cluster:  # the shard primaries (written) and the cluster store (read: replicas at the version)
        from components.stores.pgvector import cluster as pg_cluster
        from components.stores.pgvector.cluster_store import PgClusterStore

        layout = pg_cluster.read_manifest(args.cluster)["shards"]
        dsns = [s["primary"] for s in layout]
        report = {"chunks": args.chunks, "server": f"cluster of {len(dsns)} shards, "
                  f"{sum(len(s['replicas']) for s in layout)} streaming replicas ({args.cluster})",
                  "load_average_before": os.getloadavg()}
    else:
        dsns = [os.environ.get("SPANQA_PG_DSN") or pg_server.embedded_dsn(str(ROOT / ".spanqa" / "bench-pg"))]
        report = {"chunks": args.chunks, "server": pg_server.describe(dsns[0]), "load_average_before": os.getloadavg()}
    conns = [pg_server.connect(dsn) for dsn in dsns]
    if args.rebuild or any(pg_schema.state_settings(c, t) != built_as(args.chunks, i, len(conns))
                           for i, c in enumerate(conns)):
        report["build"] = build(conns, t, args.chunks, analyzer)
    report["size_mb"] = round(sum(c.execute("SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c "
                                            "WHERE c.relname LIKE %s AND c.relkind = 'r'",
                                            (t.prefix + "%",)).fetchone()[0] for c in conns) / 2**20)

    def postings_of(tokens: list[str]) -> int:
        return sum(c.execute(q("SELECT coalesce(sum(df), 0) FROM {terms} WHERE term = ANY(%s)", t),
                             (sorted(set(tokens)),)).fetchone()[0] for c in conns)

    if args.cluster:
        report["replicas_caught_up_s"] = caught_up(layout)

        def opened(engine: str):
            store = PgClusterStore(data_dir=str(ROOT / "data" / "kb"), cluster_dir=args.cluster, table_prefix=t.prefix,
                                   progress=False, bm25_engine=engine)
            for shard in store.primaries:
                shard._opened = True  # the tables were written above, not synced from a folder
            store._order = {f"g{d:07d}": d for d in range((args.chunks + CHUNKS_PER_DOC - 1) // CHUNKS_PER_DOC)}
            store._opened = True
            return store

        def read_by(store) -> list[PgSpanStore]:
            return [store._reader(i) for i in range(len(store.primaries))]
    else:
        def opened(engine: str):
            store = PgSpanStore(data_dir=str(ROOT / "data" / "kb"), dsn=Secret.from_token(dsns[0]),
                                table_prefix=t.prefix, progress=False, bm25_engine=engine)
            store._opened = True  # the tables were written above, not synced from a folder
            return store

        def read_by(store) -> list[PgSpanStore]:
            return [store]

    store = opened("sql")
    qs = queries(args.queries, analyzer)
    report["all_chunks"] = measure(store, qs, args.k, Selection(), postings_of)
    report["filtered_half"] = measure(store, qs[: len(qs) // 3], args.k, Selection(filters=HALF), postings_of)
    mirror = opened("mirror")
    report["mirror"] = mirror_side(store, mirror, qs, args.k, postings_of, read_by(mirror), t)
    if args.cluster:
        report["replica_reads"], report["replica_skips"] = mirror.replica_reads, mirror.replica_skips
    for c in conns:
        c.close()
    if not args.json:
        build_note = report.get("build")
        print(f"BM25 top {args.k} at {args.chunks:,} chunks ({report['server']}, {report['size_mb']:,} MB"
              + (f", built in {build_note['seconds']:,.0f} s: {build_note['postings']:,} postings" if build_note else "")
              + ")")
        for part in ("all_chunks", "filtered_half"):
            r = report[part]
            print(f"  SQL {part}: {r['queries']} queries | p50 {r['ms']['p50']} ms p95 {r['ms']['p95']} ms | postings "
                  f"of the query terms p50 {r['postings_per_query']['p50']:,} p95 {r['postings_per_query']['p95']:,}")
        m = report["mirror"]
        print(f"  mirror all_chunks: built in {m['build_seconds']} s ({m['arrays_mb']:,} MB of arrays, peak RSS "
              f"{m['peak_rss_mb']:,} MB, {m['peak_rss_mb_before']:,} MB before it) | p50 {m['ms']['p50']} ms p95 {m['ms']['p95']} ms | top {args.k} identical "
              f"to SQL on {m['top10_identical']:.2%} of queries (same set {m['top10_same_set']:.2%}, largest score "
              f"difference {m['max_score_difference']:.1e})")
        f = m["filtered_half"]
        print(f"  mirror filtered_half: the filter's rows read in {f['first_query_ms']} ms (first query) | p50 "
              f"{f['ms']['p50']} ms p95 {f['ms']['p95']} ms | top {args.k} identical to SQL on "
              f"{f['top10_identical']:.2%} of queries")
    return finish(report, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
