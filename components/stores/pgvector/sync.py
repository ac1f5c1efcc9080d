"""Incremental, transactional indexing of a corpus into PgSpanStore's tables.

``sync`` compares each document's content hash with the database: unchanged documents are not touched,
changed ones have all their rows replaced, documents whose file is gone are deleted. Documents are split
with the one splitter (``components.core.retrieval.index.split_document``), embedded in groups, and each group is
written in **one transaction** (chunks, postings, document frequencies, offsets, version) — so a reader sees
the old or the new document, never half, and a run killed with SIGKILL leaves whole groups only: the next
run finds the rest still missing or changed and completes it. An advisory lock lets one indexer at a time
work on a table prefix; a second one waits and then finds nothing to do, so rows are never duplicated.
"""

from __future__ import annotations

from components.core.logs import say as _say  # noqa: E402

import json
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from components.core.text.analysis import Analyzer
from components.core.retrieval.index import IndexSettings, index_text, split_document
from components.core.retrieval.loaders import SourceDocument, check_unique_ids
from components.stores.base import chunk_meta
from components.stores.pgvector.schema import Tables, q

EMBED_GROUP = 256  # chunks embedded (and committed) together
# a first load of at least this many documents into an empty table builds the vector indexes once at the end
# (pgvector's advice: an HNSW index built over loaded rows is many times faster than row-by-row inserts)
BULK_DOCUMENTS = 5_000


@dataclass
class Prepared:
    doc: SourceDocument
    ord: int
    blocks: list
    units: list
    chunks: list
    texts: list[str]
    tokens: list[list[str]]


def prepare(doc: SourceDocument, ord_: int, settings: IndexSettings, analyzer: Analyzer) -> Prepared:
    blocks, units, chunks = split_document(doc, settings)
    texts = [index_text(doc, blocks, c, settings) for c in chunks]
    return Prepared(doc, ord_, blocks, units, chunks, texts, [analyzer(t) for t in texts])


def _flat(spans) -> list[int]:
    return [int(x) for s in spans for x in (s.start, s.end)]


def delete_rows(conn, t: Tables, doc_ids: list[str]) -> None:
    """Every row of these documents (call inside a transaction): document frequencies first."""
    if not doc_ids:
        return
    gone = "(SELECT ckey FROM {chunkmap} WHERE doc_id = ANY(%s))"
    conn.execute(q("UPDATE {terms} AS t SET df = t.df - d.n FROM (SELECT term, count(*) AS n FROM {postings} "
                   f"WHERE ckey IN {gone} GROUP BY term) AS d WHERE t.term = d.term", t), (doc_ids,))
    conn.execute(q("DELETE FROM {terms} WHERE df <= 0", t))
    conn.execute(q(f"DELETE FROM {{postings}} WHERE ckey IN {gone}", t), (doc_ids,))
    conn.execute(q("DELETE FROM {chunkmap} WHERE doc_id = ANY(%s)", t), (doc_ids,))
    conn.execute(q("DELETE FROM {chunks} WHERE meta->>'doc_id' = ANY(%s)", t), (doc_ids,))
    conn.execute(q("DELETE FROM {documents} WHERE doc_id = ANY(%s)", t), (doc_ids,))


def _vector_text(v: np.ndarray) -> str:
    return "[" + ",".join(repr(float(x)) for x in v) + "]"


def write_group(conn, t: Tables, group: list[Prepared], vectors: np.ndarray, origin: str,
                replace: list[str]) -> None:
    """One transaction: drop the old rows of ``replace``, insert ``group`` with its vectors, bump the version."""
    with conn.transaction():
        delete_rows(conn, t, replace)
        cur = conn.cursor()
        row = 0
        df: Counter = Counter()
        with cur.copy(q("COPY {chunks} (id, embedding, content, meta) FROM STDIN", t)) as copy:
            for p in group:
                for c in p.chunks:
                    cid = f"{p.doc.doc_id}:{c.start}-{c.end}"
                    meta = chunk_meta(p.doc, cid, c.start, c.end, c.kind)
                    copy.write_row((cid, _vector_text(vectors[row]), p.doc.text[c.start:c.end],
                                    json.dumps(meta, default=str)))
                    row += 1
        n_chunks = sum(len(p.chunks) for p in group)
        keys = [r[0] for r in conn.execute(q("SELECT nextval('{ckey_seq}') FROM generate_series(1, %s)", t),
                                           (n_chunks,)).fetchall()] if n_chunks else []
        with cur.copy(q("COPY {chunkmap} (ckey, chunk_id, doc_id, chunk_ord) FROM STDIN", t)) as copy:
            i = 0
            for p in group:
                for n, c in enumerate(p.chunks):
                    copy.write_row((keys[i], f"{p.doc.doc_id}:{c.start}-{c.end}", p.doc.doc_id, n))
                    i += 1
        with cur.copy(q("COPY {postings} (term, ckey, tf, dl) FROM STDIN", t)) as copy:
            i = 0
            for p in group:
                for tokens in p.tokens:
                    counts = Counter(tokens)
                    df.update(counts.keys())
                    for term, tf in counts.items():
                        copy.write_row((term, keys[i], tf, float(len(tokens))))
                    i += 1
        with cur.copy(q("COPY {documents} (doc_id, ord, origin, content_hash, text, meta, body_start, layout, units, "
                        "blocks, n_words, n_chunks, total_len) FROM STDIN", t)) as copy:
            for p in group:
                copy.write_row((p.doc.doc_id, p.ord, origin, p.doc.fingerprint(), p.doc.text,
                                json.dumps(p.doc.meta, default=str), p.doc.body_start,
                                json.dumps(p.doc.layout, default=str), _flat(p.units),
                                _flat(p.blocks), len(p.doc.text.split()), len(p.chunks),
                                float(sum(len(x) for x in p.tokens))))
        if df:
            terms, counts = zip(*df.items())
            conn.execute(q("INSERT INTO {terms} (term, df) SELECT * FROM unnest(%s::text[], %s::integer[]) "
                           "ON CONFLICT (term) DO UPDATE SET df = {terms}.df + EXCLUDED.df", t),
                         (list(terms), list(counts)))
        conn.execute(q("UPDATE {state} SET version = version + 1 WHERE id = 1", t))


def initial_load(conn, t: Tables, n_documents: int) -> bool:
    """An empty chunk table about to receive at least BULK_DOCUMENTS documents."""
    if n_documents < BULK_DOCUMENTS:
        return False
    return conn.execute(q("SELECT NOT EXISTS (SELECT 1 FROM {chunks})", t)).fetchone()[0]


def plan(existing: dict[str, str], documents: list[SourceDocument]) -> tuple[list[int], list[str], int]:
    """``(positions to (re)index, ids to delete, unchanged count)`` from ``existing`` {doc_id: hash}."""
    todo = [i for i, d in enumerate(documents) if existing.get(d.doc_id) != d.fingerprint()]
    wanted = {d.doc_id for d in documents}
    return todo, sorted(set(existing) - wanted), len(documents) - len(todo)


def sync(conn, t: Tables, documents: list[SourceDocument], settings: IndexSettings,
         embed: Callable[[list[str]], np.ndarray], origin: str = "data", progress: Callable | None = None,
         delete_missing: bool = True, ords: list[int] | None = None) -> dict:
    """Bring the tables in line with ``documents`` (in their load order; ``ords``: their places in the whole
    corpus, when these are one shard's); returns what was done."""
    ords = list(range(len(documents))) if ords is None else ords
    analyzer = Analyzer(**settings.analyzer)
    existing = dict(conn.execute(q("SELECT doc_id, content_hash FROM {documents} WHERE origin = %s", t),
                                 (origin,)).fetchall())
    todo, deleted, unchanged = plan(existing, documents)
    if not delete_missing:
        deleted = []
    if deleted:
        with conn.transaction():
            delete_rows(conn, t, deleted)
            conn.execute(q("UPDATE {state} SET version = version + 1 WHERE id = 1", t))
    it = progress(todo, total=len(todo), desc="indexing", unit="doc") if progress and todo else todo
    group: list[Prepared] = []
    n_chunks = n_embedded = 0

    def flush() -> None:
        nonlocal n_embedded
        texts = [settings.passage_prefix + x for p in group for x in p.texts]
        vectors = np.asarray(embed(texts), dtype=np.float32) if texts else np.zeros((0, 0), np.float32)
        n_embedded += len(texts)
        write_group(conn, t, group, vectors, origin, [p.doc.doc_id for p in group if p.doc.doc_id in existing])
        group.clear()

    for pos in it:
        p = prepare(documents[pos], ords[pos], settings, analyzer)
        group.append(p)
        n_chunks += len(p.chunks)
        if sum(len(g.chunks) for g in group) >= EMBED_GROUP:
            flush()
    if group:
        flush()
    if origin == "data":  # load order is the tie-break of equal scores, as in memory
        with conn.transaction():
            conn.execute(q("UPDATE {documents} AS d SET ord = v.ord FROM unnest(%s::text[], %s::integer[]) AS "
                           "v(doc_id, ord) WHERE d.doc_id = v.doc_id AND d.ord <> v.ord", t),
                         ([d.doc_id for d in documents], ords))
    return {"added": sum(1 for i in todo if documents[i].doc_id not in existing),
            "changed": sum(1 for i in todo if documents[i].doc_id in existing),
            "deleted": len(deleted), "unchanged": unchanged, "embedded": n_embedded, "chunks_written": n_chunks}


class advisory_lock:
    """One indexer per table prefix at a time (a second one says so and waits)."""

    def __init__(self, conn, tables: Tables):
        self.conn, self.key = conn, f"spanqa:{tables.prefix}"

    def __enter__(self):
        if not self.conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (self.key,)).fetchone()[0]:
            _say(f"another process is indexing {self.key.split(':', 1)[1]}_*; waiting for it")
            self.conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (self.key,))
        return self

    def __exit__(self, *exc):
        if not self.conn.closed:
            self.conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (self.key,))




def sync_store(store) -> dict:
    """Create or check a PgSpanStore's tables and sync its ``data_dir`` into them: ``{stats, report}``."""
    from components.stores.pgvector import schema, server, vectors

    start = time.perf_counter()
    conn = server.connect(store.server_dsn)
    try:
        server.check_server(conn, store.server_dsn)
        from pgvector.psycopg import register_vector

        register_vector(conn)
        report = store.load_documents()
        check_unique_ids(report.documents, store.data_dir)
        documents, ords = report.documents, None
        if store.shard is not None:  # a cluster's shard: its documents, placed by id, keeping their global order
            from components.stores.pgvector.cluster import shard_of

            index, count = store.shard
            ords = [pos for pos, d in enumerate(documents) if shard_of(d.doc_id, count) == index]
            documents = [documents[pos] for pos in ords]
        wanted = store._wanted()
        with advisory_lock(conn, store.tables):  # one process creates, checks and writes a prefix at a time
            if store.recreate:
                schema.drop(conn, store.tables)
            schema.check_compatible(conn, store.tables, wanted, store.where)
            with vectors.quiet():  # "index exists"
                store._vector_store().count_documents()  # pgvector-haystack creates the chunk table and indexes
            schema.create(conn, store.tables, wanted)
            schema.index_chunks_by_document(conn, store.tables)
            bulk = initial_load(conn, store.tables, len(documents))
            if bulk:  # killed before the end, the next connect recreates them over the rows written
                schema.drop_search_indexes(conn, store.tables)
            done = sync(conn, store.tables, documents, store.settings, store.embed_passages,
                        progress=_tqdm() if store.progress else None, ords=ords)
            if bulk:
                vectors.build_indexes(store._vector_store, done["chunks_written"], store.embedding_dimension,
                                         store.search_strategy, store.progress)
        if done["added"] or done["changed"] or done["deleted"]:  # planner statistics and the visibility
            for part in ("postings", "chunkmap", "terms"):      # map (index-only scans of the postings)
                conn.execute(q(f"VACUUM (ANALYZE) {{{part}}}", store.tables))
        n_docs, n_chunks = conn.execute(q("SELECT count(*), coalesce(sum(n_chunks), 0) FROM {documents}",
                                          store.tables)).fetchone()
    finally:
        conn.close()
    stats = {"built": bool(done["added"] or done["changed"] or done["deleted"]), "healed": [],
             "seconds": round(time.perf_counter() - start, 3), "skipped": report.skipped, "found": report.found,
             "hidden": report.hidden,
             "documents": int(n_docs), "chunks": int(n_chunks), "store": f"postgresql {store.where}",
             "tables": f"{store.tables.prefix}_*", **done}
    return {"stats": stats, "report": report}


def _tqdm():
    from tqdm.auto import tqdm

    return tqdm
