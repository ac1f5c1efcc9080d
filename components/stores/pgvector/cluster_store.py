"""PgClusterStore: the span index over several PostgreSQL servers — shards, each with read replicas.

Every shard is a ``PgSpanStore`` (the same tables, SQL and settings) holding the documents whose id hashes to it
(``cluster.shard_of``): all chunks of a document live on one shard, so windows, widening and ``source()`` read one
server. A search runs on every shard at once and the lists are merged; BM25 uses the **whole corpus's**
statistics on every shard (``GlobalStats``: chunk count and length total summed, document frequencies summed per
term, the idf floor summed exactly), so scores and ranks are those of one ``PgSpanStore`` over the same corpus.
Dense search is HNSW per shard, the best k of the shards' best k merged.

Reads go to a replica of the shard when its index version equals the one the question started from (read from
the shard's primary by ``current_version()``); a replica that lags behind — or does not answer — is never read,
the primary is. A shard that fails mid-search is one clear error: an answer missing a shard's documents is never
given as whole. Writes (``open()``'s sync of ``data_dir``, ``write_documents``) go to the primaries.

Usage (a cluster on this machine: ``python run.py cluster up --shards 2 --replicas 1``):
```python
from components.stores.pgvector.cluster_store import PgClusterStore

store = PgClusterStore(data_dir="data/kb", cluster_dir=".spanqa/cluster")  # or shards=[{"primary": DSN, ...}]
hits = store.bm25_search(["refund", "window"], 5, Selection(), BM25Params())
```
On real machines, ``shards:`` lists each shard's primary DSN and its replicas' DSNs (passwords in ``~/.pgpass``,
never in the YAML). Citus distributes the same tables by ``doc_id`` behind one coordinator DSN; there, a single
``PgSpanStore`` with that DSN is the whole configuration (docs/scaling.md).
"""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from haystack import Document, default_to_dict
from haystack.document_stores.types import DuplicatePolicy
from haystack.utils import Secret

from components.core.errors import SpanQAError
from components.stores.base import BM25Params, Selection, StoreBase, SupersededRule
from components.stores.pgvector import cluster as pg_cluster, schema as pg_schema
from components.stores.pgvector.schema import q
from components.stores.pgvector.bm25 import mean_idf
from components.stores.pgvector.store import PgSpanStore, default_prefix


class GlobalStats:
    """The whole corpus's BM25 statistics for the shards' searches. ``PgClusterStore`` gathers them from every
    primary before a search fans out (``prepare``: on its own thread, so a shard that fails is named as itself);
    the shards only read them. The vocabulary is merged once per combination of shard versions."""

    def __init__(self):
        self._corpus: tuple | None = None
        self._dfs: dict[tuple, dict[str, int]] = {}
        self._lock = threading.Lock()

    def prepare(self, fan, epsilon: float, tokens: list[str]) -> None:
        versions = tuple(fan(lambda s: pg_schema.version(s._conn(), s.tables)))
        with self._lock:
            if self._corpus is None or self._corpus[0] != (versions, epsilon):
                def part(s):
                    conn = s._conn()
                    a, b = conn.execute(q("SELECT coalesce(sum(n_chunks), 0), coalesce(sum(total_len), 0) "
                                          "FROM {documents}", s.tables)).fetchone()
                    return float(a), float(b), dict(conn.execute(q("SELECT term, df FROM {terms}", s.tables)).fetchall())
                parts = fan(part)
                n = sum(p[0] for p in parts)  # integer-valued: exact in any order
                total = sum(p[1] for p in parts)
                dfs: Counter = Counter()
                for p in parts:
                    dfs.update(p[2])
                floor = epsilon * mean_idf(Counter(dfs.values()).items(), n)
                self._corpus = ((versions, epsilon), (n, total / n if n else 1.0, floor))
                self._dfs = {}
            key = tuple(sorted(set(tokens)))
            if key not in self._dfs:
                merged: Counter = Counter()
                for part in fan(lambda s: dict(s._conn().execute(
                        q("SELECT term, df FROM {terms} WHERE term = ANY(%s)", s.tables), (list(key),)).fetchall())):
                    merged.update(part)
                self._dfs[key] = dict(merged)

    def corpus(self, epsilon: float) -> tuple[float, float, float]:
        return self._corpus[1]

    def dfs(self, tokens: list[str]) -> dict[str, int]:
        return self._dfs[tuple(sorted(set(tokens)))]


class PgClusterStore(StoreBase):
    """The span index over shard servers with read replicas (module docstring). Same settings as ``PgSpanStore``
    plus where the servers are: ``cluster_dir`` (the manifest ``run.py cluster up`` writes) or ``shards``
    (``[{"primary": DSN, "replicas": [DSN, ...]}, ...]``)."""

    def __init__(self, data_dir: str = "data/kb", cluster_dir: str = ".spanqa/cluster",
                 shards: list[dict] | None = None, table_prefix: str | None = None, search_strategy: str = "hnsw",
                 ef_search: int = 100, hnsw_m: int = 16, hnsw_ef_construction: int = 64, recreate: bool = False,
                 bm25_engine: str = "mirror", **settings: Any):
        self._init_settings({"data_dir": data_dir, **settings})
        self._raw_settings = settings
        self.cluster_dir, self.shard_dsns, self.table_prefix = cluster_dir, shards, table_prefix
        self.store_params = dict(search_strategy=search_strategy, ef_search=ef_search, hnsw_m=hnsw_m,
                                 hnsw_ef_construction=hnsw_ef_construction, recreate=recreate, bm25_engine=bm25_engine)
        self._primaries: list[PgSpanStore] | None = None
        self._replicas: list[list[PgSpanStore]] = []
        self._order: dict[str, int] = {}
        self._opened = False
        self._local = threading.local()
        self._pool: ThreadPoolExecutor | None = None
        self.replica_reads = self.replica_skips = 0

    def to_dict(self) -> dict[str, Any]:
        params = self.config.to_params()
        return default_to_dict(self, data_dir=params.pop("data_dir"), cluster_dir=self.cluster_dir,
                               shards=self.shard_dsns, table_prefix=self.table_prefix, **self.store_params, **params)

    # -- the servers ------------------------------------------------------------------------------------------
    def _layout(self) -> list[dict]:
        if self.shard_dsns:
            return [{"primary": s["primary"], "replicas": [r if isinstance(r, str) else r["uri"]
                                                           for r in s.get("replicas", [])]} for s in self.shard_dsns]
        manifest = pg_cluster.read_manifest(self.cluster_dir)
        return [{"primary": s["primary"], "replicas": [r["uri"] for r in s["replicas"]]} for s in manifest["shards"]]

    def _store(self, dsn: str) -> PgSpanStore:
        prefix = self.table_prefix or default_prefix(self.data_dir)
        store = PgSpanStore(data_dir=self.data_dir, dsn=Secret.from_token(dsn), table_prefix=prefix,
                            **self.store_params, **self._raw_settings)
        store._query_vectors = self._query_vectors  # one memo of query embeddings (the model itself is shared by
        # load_sentence_transformer's cache, loaded by the first dense query or write, never to read BM25)
        return store

    @property
    def primaries(self) -> list[PgSpanStore]:
        if self._primaries is None:
            layout = self._layout()
            primaries = [self._store(s["primary"]) for s in layout]
            stats = self._stats = GlobalStats()
            for i, store in enumerate(primaries):
                store.shard, store.global_stats = (i, len(primaries)), stats
            self._replicas = [[self._store(dsn) for dsn in s["replicas"]] for s in layout]
            for i, replicas in enumerate(self._replicas):
                for r in replicas:
                    r.shard, r.global_stats, r._opened, r.read_only = (i, len(primaries)), stats, True, True
            self._pool = ThreadPoolExecutor(max_workers=max(2, len(primaries)), thread_name_prefix="shard")
            self._primaries = primaries
        return self._primaries

    def open(self, refresh: bool = False) -> str:
        """Sync ``data_dir`` into the shards (each takes its documents), once per process; the version."""
        if not self._opened or refresh:
            report = self.load_documents()
            self._order = {d.doc_id: i for i, d in enumerate(report.documents)}
            for store in self.primaries:
                store.open(refresh=refresh)
            parts = [s.stats for s in self.primaries]
            self.stats = {**{key: sum(p[key] for p in parts) for key in ("documents", "chunks", "added", "changed",
                                                                          "deleted", "unchanged")},
                          "store": f"postgresql cluster of {len(self.primaries)} shards "
                                   f"({sum(map(len, self._replicas))} replicas)",
                          "tables": parts[0]["tables"], "seconds": sum(p["seconds"] for p in parts),
                          "built": any(p["built"] for p in parts), "skipped": report.skipped,
                          "found": report.found, "hidden": report.hidden, "shards": parts}
            self.load_report = self.primaries[0].load_report
            self._opened = True
        return self.current_version()

    def current_version(self) -> str:
        """Every shard's index version, read on its primary now; the question that asked reads no replica
        behind these."""
        self.open() if not self._opened else None
        versions = self._fan(lambda s: pg_schema.version(s._conn(), s.tables), self.primaries)
        self._local.pinned = versions
        return "cluster:" + ".".join(map(str, versions))

    def _reader(self, i: int) -> PgSpanStore:
        """A replica of shard ``i`` at the pinned version (round-robin), else its primary."""
        pinned = getattr(self._local, "pinned", None)
        primary = self.primaries[i]
        want = pinned[i] if pinned else pg_schema.version(primary._conn(), primary.tables)
        replicas = self._replicas[i]
        start = getattr(self._local, "turn", 0)
        self._local.turn = start + 1
        for j in range(len(replicas)):
            replica = replicas[(start + j) % len(replicas)]
            try:
                if pg_schema.version(replica._conn(), replica.tables) == want:
                    self.replica_reads += 1
                    return replica
            except Exception:  # noqa: BLE001 - a replica that does not answer is skipped, never waited for
                pass
            self.replica_skips += 1
        return primary

    def _fan(self, work, stores=None) -> list:
        """``work(store)`` on every shard at once (its reader unless ``stores`` is given); one shard failing is
        one error for the whole call, never a partial list."""
        self.primaries  # noqa: B018
        targets = stores if stores is not None else [self._reader(i) for i in range(len(self.primaries))]
        futures = [self._pool.submit(work, s) for s in targets]
        out = []
        for i, f in enumerate(futures):
            try:
                out.append(f.result())
            except Exception as exc:  # noqa: BLE001
                raise SpanQAError(f"PgClusterStore: shard {i} ({targets[i].where}) did not answer "
                                  f"({' '.join(str(exc).split())[:400]}). An answer without its documents would "
                                  f"be incomplete, so none is given; see `python run.py cluster status`.") from None
        return out

    def _merged(self, lists: list[list[tuple[Document, float]]], k: int) -> list[tuple[Document, float]]:
        hits = [h for hits in lists for h in hits]
        hits.sort(key=lambda h: (-h[1], self._order.get(h[0].meta.get("doc_id"), len(self._order)),
                                 h[0].meta.get("char_start", 0)))
        return hits[:k]

    # -- searches ------------------------------------------------------------------------------------------------
    def bm25_search(self, tokens: list[str], k: int, selection: Selection,
                    params: BM25Params = BM25Params()) -> list[tuple[Document, float]]:
        self.open() if not self._opened else None
        if not tokens:
            return []
        self._stats.prepare(lambda work: self._fan(work, self.primaries), params.epsilon, tokens)
        return self._merged(self._fan(lambda s: s.bm25_search(tokens, k, selection, params)), k)

    def dense_search(self, query: str, k: int, selection: Selection) -> list[tuple[Document, float]]:
        self.open() if not self._opened else None
        self.embed_query(query, selection.scope)  # once, in the shared memo
        return self._merged(self._fan(lambda s: s.dense_search(query, k, selection)), k)

    def _shard(self, doc_id: str) -> int:
        return pg_cluster.shard_of(doc_id, len(self.primaries))

    def source(self, doc_id: str):
        self.open() if not self._opened else None
        return self._reader(self._shard(doc_id)).source(doc_id)

    def document_words(self, doc_id: str) -> int:
        return self._reader(self._shard(doc_id)).document_words(doc_id)

    def superseded_documents(self, rule: SupersededRule) -> list[str]:
        return sorted((d for ds in self._fan(lambda s: s.superseded_documents(rule)) for d in ds),
                      key=lambda d: self._order.get(d, len(self._order)))

    def document_metadata(self, field: str) -> dict[str, Any]:
        return {k: v for part in self._fan(lambda s: s.document_metadata(field)) for k, v in part.items()}

    def document_ids(self) -> list[str]:
        return sorted((d for ds in self._fan(lambda s: s.document_ids()) for d in ds),
                      key=lambda d: self._order.get(d, len(self._order)))

    def count_documents(self) -> int:
        return sum(self._fan(lambda s: s.count_documents(), self.primaries))

    def filter_documents(self, filters: dict[str, Any] | None = None) -> list[Document]:
        docs = [d for ds in self._fan(lambda s: s.filter_documents(filters)) for d in ds]
        return sorted(docs, key=lambda d: (self._order.get(d.meta.get("doc_id"), len(self._order)),
                                           d.meta.get("char_start", 0)))

    def write_documents(self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE) -> int:
        self.open() if not self._opened else None
        by_shard: dict[int, list[Document]] = {}
        for d in documents:
            by_shard.setdefault(self._shard(d.id), []).append(d)
        return sum(self.primaries[i].write_documents(ds, policy) for i, ds in sorted(by_shard.items()))

    def delete_documents(self, document_ids: list[str]) -> None:
        by_shard: dict[int, list[str]] = {}
        for d in document_ids:
            by_shard.setdefault(self._shard(d), []).append(d)
        for i, ds in sorted(by_shard.items()):
            self.primaries[i].delete_documents(ds)
