"""BM25 Okapi in SQL over PgSpanStore's postings, and its RRF fusion with the vector search.

``statement`` builds the common table expressions that leave the ranked BM25 list in ``bm`` (id, score, rank);
``BM25_SELECT`` reads it, ``HYBRID_TAIL`` adds the vector search and fuses both lists in the same statement.
Scores follow rank_bm25's BM25Okapi (negative idf floored to epsilon x mean idf), so they equal the in-memory
store's within 1e-6, and ties are broken by load order as in memory.

``MirrorHolder`` keeps the same postings in process, per index version (``read_mirror``: one snapshot, binary COPY
parsed by numpy), and ``Mirror.search`` scores them with the statement's formula and statistics
(``okapi_given``: BM25S-style eager scoring) — the store's ``bm25_engine: mirror``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np
from psycopg import sql

from components.core.retrieval.bm25 import InvertedIndex, okapi_given, top_k
from components.stores.base import BM25Params, Selection
from components.stores.pgvector.schema import Tables, q

# BM25 Okapi of one posting without its idf: tf (k1 + 1) / (tf + k1 (1 - b) + (k1 b / avgdl) dl), the three
# constants folded per query (five operations a posting: the aggregation over postings is the cost)
TF = "(p.tf * %s / (p.tf + %s + %s * p.dl))"
# idf once per query term (MATERIALIZED: inlined, the planner re-evaluates it per posting, 6x slower)
_WEIGHTS = """
WITH q AS MATERIALIZED (SELECT term, count(*)::float8 AS n FROM unnest(%s::text[]) AS term GROUP BY term),
w AS MATERIALIZED (SELECT q.term, q.n * (CASE WHEN ln(%s - t.df + 0.5) - ln(t.df + 0.5) < 0 THEN %s
                                  ELSE ln(%s - t.df + 0.5) - ln(t.df + 0.5) END) AS idf
      FROM q JOIN {terms} AS t ON t.term = q.term),"""
# a cluster's shards score with the whole corpus's document frequencies: ``{terms}`` becomes this relation
GLOBAL_DF = "(SELECT * FROM unnest(%s::text[], %s::integer[]) AS x(term, df))"


def weights_parts(t: Tables, tokens: list[str], corpus: tuple[float, float, float], dfs: dict[str, int] | None):
    """``(the {terms} relation, the weights' parameters)``: the table's own document frequencies, or ``dfs``."""
    n, _, floor = corpus
    if dfs is None:
        return t.id("terms"), (list(tokens), n, floor, n)
    return sql.SQL(GLOBAL_DF), (list(tokens), n, floor, n, list(dfs), list(dfs.values()))
# Every posting of every query term scored and summed per chunk. A top-N heap keeps the best 2k scores (a
# full sort of every matching chunk costs more than the scoring); only when the 2k-th still ties the k-th may
# chunks of that score have been cut off, and the statement is rerun keeping every tie (WITH TIES), so the
# load-order tie-break is exact either way. ``n_scored`` / ``floor`` tell the caller which case it got.
SCORED = _WEIGHTS + """
s AS MATERIALIZED (SELECT p.ckey, sum(w.idf * """ + TF + """) AS score
      FROM w JOIN {postings} AS p ON p.term = w.term {join} GROUP BY p.ckey
      HAVING sum(w.idf * """ + TF + """) > 0 ORDER BY score DESC {limit}),
bm AS (SELECT m.chunk_id AS id, s.score, row_number() OVER (ORDER BY s.score DESC, d.ord, m.chunk_ord) AS rank
       FROM s JOIN {chunkmap} AS m ON m.ckey = s.ckey JOIN {documents} AS d ON d.doc_id = m.doc_id
       ORDER BY s.score DESC, d.ord, m.chunk_ord LIMIT %s)
"""
CUT = "(SELECT count(*) FROM s) AS n_scored, (SELECT min(score) FROM s) AS floor"
BM25_SELECT = """SELECT c.id, c.content, c.meta, c.embedding, bm.score, """ + CUT + """
FROM bm JOIN {chunks} AS c ON c.id = bm.id ORDER BY bm.rank"""
# both lists and their reciprocal rank fusion in one statement (RRFJoiner's order: score, best rank, first seen)
HYBRID_TAIL = """, dn AS MATERIALIZED (SELECT id, 1 - (embedding <=> %s::vector) AS score FROM {chunks} AS c0{where}
                    ORDER BY embedding <=> %s::vector LIMIT %s),
dr AS (SELECT id, score, row_number() OVER (ORDER BY score DESC) AS rank FROM dn),
f AS (SELECT coalesce(bm.id, dr.id) AS id, bm.score AS b_score, bm.rank AS b_rank, dr.score AS d_score,
             dr.rank AS d_rank,
             coalesce(%s / (%s + bm.rank), 0) + coalesce(%s / (%s + dr.rank), 0) AS rrf,
             least(bm.rank, dr.rank) AS best,
             CASE WHEN bm.rank IS NOT NULL THEN bm.rank ELSE (SELECT count(*) FROM bm) + dr.rank END AS seen
      FROM bm FULL JOIN dr ON bm.id = dr.id)
SELECT f.id, c.content, c.meta, c.embedding, f.b_score, f.b_rank, f.d_score, f.d_rank, f.rrf, """ + CUT + """
FROM f JOIN {chunks} AS c ON c.id = f.id ORDER BY f.rrf DESC, f.best, f.seen"""


def statement(t: Tables, tokens: list[str], k: int, where: sql.Composable | None, fparams: tuple,
              corpus: tuple[float, float, float], params: BM25Params, ties: bool = False, read_chunks: bool = True,
              dfs: dict[str, int] | None = None):
    """``(CTEs, parameters, table names)`` of BM25 top ``k`` for ``tokens``; ``where`` is the filter's SQL on
    ``c0.meta`` (``components.stores.pgvector.filters``) — or, with ``read_chunks=False``, on the postings ``p``
    themselves — applied inside the search; ``ties`` keeps every chunk tied with the k-th."""
    n, avgdl, floor = corpus
    join = sql.SQL("")
    if where is not None and read_chunks:
        join = sql.SQL("JOIN {} AS m0 ON m0.ckey = p.ckey JOIN {} AS c0 ON c0.id = m0.chunk_id").format(
            t.id("chunkmap"), t.id("chunks")) + where
    elif where is not None:
        join = where
    tf = (params.k1 + 1, params.k1 * (1 - params.b), params.k1 * params.b / avgdl)
    terms, wargs = weights_parts(t, tokens, corpus, dfs)
    args = (*wargs, *tf, *fparams, *tf, k if ties else 2 * k, k)
    names = {key: t.id(key) for key in ("postings", "documents", "chunks", "chunkmap")}
    names["terms"] = terms
    limit = sql.SQL("FETCH FIRST %s ROWS WITH TIES" if ties else "LIMIT %s")
    return sql.SQL(SCORED).format(join=join, limit=limit, **names), args, names


def cut_ties(rows: list, k: int, score_at: int, n_at: int) -> bool:
    """True when chunks tied with the k-th score may have been cut off (rerun with ``ties=True``): the heap
    was full and its lowest score still equals the k-th."""
    scores = sorted((r[score_at] for r in rows if r[score_at] is not None), reverse=True)
    if not rows or len(scores) < k:
        return False
    n_scored, floor = rows[0][n_at], rows[0][n_at + 1]
    return n_scored > k and floor == scores[k - 1]


def fused_search(store, tokens: list[str], query: str, k: int, selection: Selection, params: BM25Params,
                 rrf_k: float = 60, weights: dict[str, float] | None = None):
    """A PgSpanStore's BM25 and dense lists and their RRF fusion in one statement (``HYBRID_TAIL``):
    ``(bm25, dense, fused)`` as ``hybrid_search`` returns them."""
    vec = "[" + ",".join(repr(float(x)) for x in store.embed_query(query, selection.scope)) + "]"
    w = weights or {}
    for ties in (False, True):
        ctes, args, names, where, fparams = store._bm25_statement(tokens or [""], k, selection, params, ties)
        args = (*args, vec, *fparams, vec, k, float(w.get("bm25", 1.0)), float(rrf_k),
                float(w.get("dense", 1.0)), float(rrf_k))
        rows = store._conn().execute(ctes + sql.SQL(HYBRID_TAIL).format(
            where=where or sql.SQL(""), **names), args, binary=True).fetchall()
        if ties or not cut_ties(rows, k, 4, 9):
            break
    bm25, dense, fused = [], [], []
    for cid, content, meta, emb, b_score, b_rank, d_score, d_rank, rrf, _, _ in rows:
        doc = store._document(cid, content, meta, emb)
        if b_rank is not None:
            bm25.append((int(b_rank), doc, float(b_score)))
        if d_rank is not None:
            dense.append((int(d_rank), doc, float(d_score)))
        ranks = {name: int(r) for name, r in (("bm25", b_rank), ("dense", d_rank)) if r is not None}
        fused.append((cid, float(rrf), ranks))
    ordered = [[(doc, score) for _, doc, score in sorted(hits, key=lambda h: h[0])] for hits in (bm25, dense)]
    return ordered[0], ordered[1], fused[:k]


def mean_idf(histogram, n: float) -> float:
    """The mean of rank_bm25's idf over a vocabulary given as ``[(df, number of terms)]``, summed exactly."""
    import math

    terms = sum(int(c) for _, c in histogram)
    if not terms:
        return 0.0
    return math.fsum(int(c) * (math.log(n - df + 0.5) - math.log(df + 0.5)) for df, c in histogram) / terms


# -- the in-process mirror ------------------------------------------------------------------------------------
_POSTING = np.dtype([("n", ">i2"), ("l1", ">i4"), ("ckey", ">i4"), ("l2", ">i4"), ("tf", ">f4"), ("l3", ">i4"),
                     ("dl", ">f8")])  # one row of COPY (SELECT ckey, tf, dl …) TO STDOUT (FORMAT binary)
_MAPPED = np.dtype([("n", ">i2"), ("l1", ">i4"), ("ckey", ">i4"), ("l2", ">i4"), ("doc", ">i4")])  # (ckey, doc)
_KEY = np.dtype([("n", ">i2"), ("l1", ">i4"), ("ckey", ">i4")])  # one row of COPY (SELECT ckey …)
FILTER_MASKS = 32  # metadata filters whose rows a mirror keeps (a boolean per row each: 1 MB at 1M chunks)
COPY_GROUP = 8 << 20  # bytes of binary COPY parsed at once
_MASKS_LOCK = threading.Lock()


def copy_rows(conn, statement, dtype: np.dtype, params=None):
    """The rows of ``COPY (…) TO STDOUT (FORMAT binary)`` as numpy structured arrays, in groups of ``COPY_GROUP``
    bytes (no Python object per row, few numpy calls); every column must be of fixed width (``dtype`` names its
    length words). ``params`` are bound by psycopg (COPY takes no server-side parameters)."""

    def groups():
        blocks, size = [], 0
        with conn.cursor().copy(statement, params) as copy:
            for block in copy:  # blocks of a few kB
                blocks.append(bytes(block))
                size += len(blocks[-1])
                if size >= COPY_GROUP:
                    yield b"".join(blocks)
                    blocks, size = [], 0
        yield b"".join(blocks)

    pending, header = b"", True
    for group in groups():
        data = pending + group
        if header and data:  # PGCOPY signature, flags, header extension length (+ extension)
            data, header = data[19 + int.from_bytes(data[15:19], "big"):], False
        whole = len(data) // dtype.itemsize  # the 2-byte trailer (-1) never makes a whole row
        if whole:
            yield np.frombuffer(data, dtype=dtype, count=whole)
        pending = data[whole * dtype.itemsize:]
    if pending != b"\xff\xff":
        raise RuntimeError(f"binary COPY ended with {len(pending)} unread bytes, not its trailer")


@dataclass
class Mirror:
    """The postings of one index version held in process: rows in the store's tie-break order (document load order,
    then chunk order), each row's chunk key (``ckeys``) and document position (``doc_of_row``), all numpy arrays."""

    version: int
    index: InvertedIndex
    ckeys: np.ndarray  # int32: the chunk key of each row
    row_of: np.ndarray  # int32: the row of each chunk key (-1: none)
    doc_of_row: np.ndarray  # int32: the position in ``doc_pos`` of each row's document
    doc_pos: dict[str, int]  # document id → position
    seconds: float
    masks: dict = field(default_factory=dict)  # a metadata filter's key → its rows (FILTER_MASKS kept, last used)

    def _rows_of(self, ids: frozenset[str]) -> np.ndarray:
        """Whether each row's document is in ``ids`` (integer membership: no string compared per row)."""
        wanted = np.fromiter((self.doc_pos[d] for d in ids if d in self.doc_pos), dtype=np.int32)
        return np.isin(self.doc_of_row, wanted)

    def rows_of_keys(self, ckeys: np.ndarray) -> np.ndarray:
        """A boolean per row: its chunk key is among ``ckeys`` (keys this mirror does not hold are ignored)."""
        keys = np.asarray(ckeys, dtype=np.int64)
        keys = keys[(keys >= 0) & (keys < len(self.row_of))]
        rows = self.row_of[keys]
        mask = np.zeros(len(self.ckeys), dtype=bool)
        mask[rows[rows >= 0]] = True
        return mask

    def search(self, tokens: list[str], k: int, corpus: tuple[float, float, float], params: BM25Params,
               dfs: dict[str, int] | None, exclude: frozenset[str], only: frozenset[str] | None,
               rows: np.ndarray | None = None):
        """``[(chunk key, score)]`` of the top ``k`` rows with a positive score, ties in row order — the SQL
        statement's result (``okapi_given``: its formula and statistics); ``rows`` keeps only those (a filter's)."""
        n, avgdl, floor = corpus
        scores = okapi_given(self.index, tokens, n, avgdl, floor, params.k1, params.b, dfs)
        mask = scores > 0
        if exclude:
            mask &= ~self._rows_of(exclude)
        if only is not None:
            mask &= self._rows_of(only)
        if rows is not None:
            mask &= rows
        return [(int(self.ckeys[r]), float(scores[r])) for r in top_k(scores, k, mask)]


def read_mirror(conn, t: Tables) -> Mirror:
    """Every posting of the tables, read in one snapshot (REPEATABLE READ): the documents in load order, the chunk
    map as (chunk key, document position) rows, the vocabulary with its posting counts, then the postings in term
    order — each binary COPY parsed with numpy (no Python object per chunk or posting: 40 M postings are 160 MB
    of row numbers and 80 MB of term counts; 1 M chunks, 8 MB of keys and positions)."""
    import time

    start = time.perf_counter()
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        version = conn.execute(q("SELECT version FROM {state} WHERE id = 1", t)).fetchone()[0]
        doc_pos = {r[0]: i for i, r in enumerate(conn.execute(q("SELECT doc_id FROM {documents} "
                                                                  "ORDER BY ord, doc_id", t)))}
        mapped = q("COPY (SELECT m.ckey, d.pos FROM {chunkmap} AS m JOIN (SELECT doc_id, (row_number() OVER "
                   "(ORDER BY ord, doc_id) - 1)::integer AS pos FROM {documents}) AS d ON d.doc_id = m.doc_id "
                   "ORDER BY d.pos, m.chunk_ord) TO STDOUT (FORMAT binary)", t)
        parts = list(copy_rows(conn, mapped, _MAPPED))
        ckeys = np.concatenate([p["ckey"] for p in parts]).astype(np.int32) if parts else np.zeros(0, np.int32)
        doc_of_row = np.concatenate([p["doc"] for p in parts]).astype(np.int32) if parts else np.zeros(0, np.int32)
        del parts
        row_of = np.full(int(ckeys.max()) + 1 if len(ckeys) else 1, -1, dtype=np.int32)
        row_of[ckeys] = np.arange(len(ckeys), dtype=np.int32)
        vocab_rows = conn.execute(q("SELECT term, count(*) FROM {postings} GROUP BY term ORDER BY term", t)).fetchall()
        counts = np.fromiter((c for _, c in vocab_rows), dtype=np.int64, count=len(vocab_rows))
        vocab = {term: i for i, (term, _) in enumerate(vocab_rows)}
        del vocab_rows
        indptr = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        doc_rows = np.empty(indptr[-1], dtype=np.int32)
        tfs = np.empty(indptr[-1], dtype=np.uint16)  # term counts: 2 bytes each (float32 if one is not a count)
        doc_len = np.zeros(len(ckeys), dtype=np.float64)
        filled = 0
        postings = q("COPY (SELECT ckey, tf, dl FROM {postings} ORDER BY term, ckey) TO STDOUT (FORMAT binary)", t)
        for part in copy_rows(conn, postings, _POSTING):
            whole = min(len(part), len(tfs) - filled)
            r = row_of[part["ckey"][:whole].astype(np.int64)]
            doc_rows[filled: filled + whole] = r
            tf = part["tf"][:whole]
            if tfs.dtype == np.uint16 and not (np.all((tf >= 0) & (tf < 65536)) and np.array_equal(tf, np.round(tf))):
                tfs = tfs.astype(np.float32)  # a weighted term frequency: exact in float32, as the table holds it
            tfs[filled: filled + whole] = tf
            doc_len[r] = part["dl"][:whole]
            filled += whole
    if filled != len(tfs) or (len(doc_rows) and doc_rows.min() < 0):
        raise RuntimeError(f"postings mirror of {t.prefix}: read {filled:,} of {len(tfs):,} postings")
    index = InvertedIndex(vocab, indptr, doc_rows, tfs, doc_len)
    return Mirror(int(version), index, ckeys, row_of, doc_of_row, doc_pos, time.perf_counter() - start)


def filter_rows(store, mirror: Mirror, filters: dict) -> np.ndarray | None:
    """The mirror's rows whose chunk passes the metadata filter ``filters`` (the one filter model's SQL on the chunks'
    meta), read once per filter and mirror and kept (``FILTER_MASKS``, last used); None when the tables have moved
    on from the mirror's version (the SQL statement answers then)."""
    import json

    from components.stores.pgvector import filters as pg_filters

    key = json.dumps(filters, sort_keys=True, default=str)
    with _MASKS_LOCK:
        rows = mirror.masks.pop(key, None)
    if rows is None:
        where, fparams = pg_filters.selection_clause(Selection(filters=filters), "c0", id_table=None)
        conn = store._conn()
        with conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            if conn.execute(q("SELECT version FROM {state} WHERE id = 1", store.tables)).fetchone()[0] != mirror.version:
                return None
            statement = sql.SQL("COPY ({}) TO STDOUT (FORMAT binary)").format(
                q("SELECT m.ckey FROM {chunks} AS c0 JOIN {chunkmap} AS m ON m.chunk_id = c0.id", store.tables)
                + (where or sql.SQL("")))
            parts = [p["ckey"].astype(np.int64) for p in copy_rows(conn, statement, _KEY, fparams or None)]
        rows = mirror.rows_of_keys(np.concatenate(parts) if parts else np.zeros(0, np.int64))
    with _MASKS_LOCK:  # searches of several threads share the mirror
        while len(mirror.masks) >= FILTER_MASKS:
            mirror.masks.pop(next(iter(mirror.masks)), None)
        mirror.masks[key] = rows  # last used goes last
    return rows


def mirror_search(store, tokens: list[str], k: int, selection: Selection, params: BM25Params):
    """A PgSpanStore's BM25 over its mirror: ``[(Document, score)]``, or None when the mirror does not hold the index
    version this search reads (a build for it starts) or a chunk it names has been replaced since (the SQL statement
    answers then: it reads one snapshot)."""
    corpus = store._corpus_stats(params.epsilon)  # reads the version (store._version) these numbers are of
    mirror = store.mirror.at(store._version, store._mirror_connection, store.tables)
    if mirror is None:
        return None
    rows = filter_rows(store, mirror, selection.filters) if selection.filters else None
    if selection.filters and rows is None:
        return None
    hits = mirror.search(tokens, k, corpus, params, store._query_dfs(tokens), selection.exclude, selection.only, rows)
    found = {r[0]: r[1:] for r in store._conn().execute(
        q("SELECT m.ckey, c.id, c.content, c.meta, c.embedding FROM {chunkmap} AS m JOIN {chunks} AS c "
          "ON c.id = m.chunk_id WHERE m.ckey = ANY(%s)", store.tables), ([key for key, _ in hits],), binary=True)}
    if len(found) < len(hits):
        return None
    return [(store._document(*found[key]), score) for key, score in hits]


# one mirror build at a time in a process: the buffers of a build (COPY groups, arrays being sorted) never add up
# across stores (a cluster's shards, several pipelines), which keeps the peak at one build's over the mirrors held
BUILDS = threading.Semaphore(1)


class MirrorHolder:
    """A store's mirror: built in a background thread when the index version moves on (one build at a time), so a
    search never waits for it; until it matches the version a search started from, the SQL statement answers."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.mirror: Mirror | None = None
        self._thread: threading.Thread | None = None
        self._tried: int | None = None  # the version the last build was started for
        self.error: str | None = None

    def at(self, version: int, connect, tables: Tables) -> Mirror | None:
        """The mirror of ``version``, or None (a build for it is started if none runs; a build that failed is not
        retried for the same version — searches go on in SQL, ``error`` says why)."""
        mirror = self.mirror
        if mirror is not None and mirror.version == version:
            return mirror
        with self._lock:
            if (self._thread is None or not self._thread.is_alive()) and self._tried != version:
                self._tried = version
                self._thread = threading.Thread(target=self._build, args=(connect, tables), daemon=True,
                                                name=f"spanqa-bm25-mirror-{tables.prefix}")
                self._thread.start()
        return None

    def wait(self, timeout: float | None = None) -> Mirror | None:
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return self.mirror

    def _build(self, connect, tables: Tables) -> None:
        conn = None
        try:
            with BUILDS:
                conn = connect()
                self.mirror = read_mirror(conn, tables)
            self.error = None
        except Exception as exc:  # noqa: BLE001 - searches go on in SQL; the reason is kept for status
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            if conn is not None:
                conn.close()
