"""SpanStore: a Haystack DocumentStore over spanqa's span index (BM25 postings + embeddings + offsets)."""

from __future__ import annotations

from components.core.logs import say as _say  # noqa: E402

import hashlib
import logging
import os
import sys
import threading
import time
import weakref
from pathlib import Path
from typing import Any

import numpy as np
from haystack import Document, default_to_dict
from haystack.document_stores.types import DuplicatePolicy

from components.core.retrieval.bm25 import BM25Okapi, top_k as top_k_indices
from components.core.errors import SpanQAError
from components.core.memo import MISSING, Memo
from components.core.retrieval.index import CorpusIndex, build_index, corpus_key
from components.core.retrieval.index_files import (CorruptIndexError, EmbeddingCache, load_index,
                                                   remove_stale_temporaries, save_index)
from components.core.retrieval.loaders import LoadReport, SourceDocument, check_unique_ids
from components.stores.base import BM25Params, Selection, StoreBase, SupersededRule, chunk_meta

logger = logging.getLogger(__name__)

# One loaded index per (data, cache, settings) in a process: the retriever and the window expander each
# hold a SpanStore from YAML, and both must see the same index without loading it twice.
class _Opened:
    """An index loaded in this process with its load report and stats, shared by every store object of the same
    data, cache and settings (a YAML's retriever, expander and widener); held by them, not by the registry."""

    def __init__(self, index: CorpusIndex, report: LoadReport, stats: dict) -> None:
        self.index, self.report, self.stats = index, report, stats


# (data, cache, content key) -> the index those stores share; an entry goes when the last store holding it does
_OPEN: weakref.WeakValueDictionary[tuple, _Opened] = weakref.WeakValueDictionary()
_OPEN_LOCK = threading.RLock()  # one thread opens (or builds) an index at a time; the others reuse it
LOCK_TIMEOUT_S = 3600  # how long a process waits for another one that is building the same cache




class SpanStore(StoreBase):
    """Documents from ``data_dir`` split into sentence-aligned chunks, indexed for BM25 and dense retrieval.

    The index is built on first use (``open()``), cached under ``cache_dir`` keyed by the corpus content, the
    splitter/analyzer settings and the embedding model, and re-used while nothing changes. Every chunk keeps
    ``doc_id``, ``char_start`` and ``char_end`` into the original text.

    Usage:
    ```python
    from components.stores.span_store import SpanStore

    store = SpanStore(data_dir="data/kb")
    print(store.count_documents())          # number of chunks
    docs = store.filter_documents({"field": "meta.status", "operator": "==", "value": "current"})
    ```
    """

    def __init__(
        self,
        data_dir: str = "data/kb",
        cache_dir: str = ".spanqa/cache",
        **settings: Any,
    ):
        """``data_dir`` and the other shared settings (embedding model, splitter, analyzer, load limits) are
        ``components.stores.settings.StoreSettings``'s, the same for both stores; an unknown key is one paragraph
        listing them."""
        self._init_settings({"data_dir": data_dir, **settings})
        self.cache_dir = cache_dir
        self._index: CorpusIndex | None = None
        self._word_counts: tuple | None = None
        self._bm25: tuple | None = None
        self._superseded: tuple | None = None
        self._metadata: dict[str, tuple] = {}
        self._keep = Memo(maxsize=64)  # (index key, excluded, only) -> chunk mask
        self._extra: list[SourceDocument] = []  # documents added with write_documents
        self._seen_current: str | None = None  # the content of the ``current`` marker last acted on

    # -- serialisation ----------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        params = self.config.to_params()
        return default_to_dict(self, data_dir=params.pop("data_dir"), cache_dir=self.cache_dir, **params)

    # -- the index -----------------------------------------------------------------------------------------
    def open(self, refresh: bool = False) -> CorpusIndex:
        """Load the index for the current corpus, building (and caching) it when missing or stale.

        Safe from many threads (one opens, the others reuse its index) and from many processes: a file lock in
        ``cache_dir`` lets one process build while the others wait and then load what it saved. A cached index
        that is corrupt, truncated or of another format version is reported in one line and rebuilt."""
        if self._index is not None and not refresh:
            return self._index
        with _OPEN_LOCK:
            if self._index is not None and not refresh:
                return self._index
            return self._open(refresh)

    def _open(self, refresh: bool) -> CorpusIndex:
        report = self.load_documents()
        report.documents.extend(self._extra)
        check_unique_ids(report.documents, self.data_dir)
        key = corpus_key(report.documents, self.settings)
        reg_key = (str(Path(self.data_dir).resolve()), str(Path(self.cache_dir).resolve()), key)
        shared = None if refresh else _OPEN.get(reg_key)
        if shared is not None:
            self._shared = shared
            self._index, self.load_report, self.stats = shared.index, shared.report, shared.stats
            return self._index
        start = time.perf_counter()
        directory = Path(self.cache_dir) / key
        stats: dict = {"built": False, "healed": []}
        index = self._load_cached(directory, stats)
        if index is None:
            index = self._build_locked(report, key, directory, stats)
        stats.update(seconds=round(time.perf_counter() - start, 3), skipped=report.skipped, found=report.found, key=key,
                     hidden=report.hidden,
                     documents=len(index.documents), chunks=index.n_chunks)
        self._index, self.load_report, self.stats = index, report, stats
        self._shared = _OPEN[reg_key] = _Opened(index, report, stats)
        if not self._extra:
            if self._read_current() is None:
                self._publish(key)
            self._seen_current = self._read_current()
        return index

    # -- which index is current, across processes ---------------------------------------------------------
    def _current_file(self) -> Path:
        """``cache_dir/current-<data_dir hash>-<settings key>.key``: the key of the index last built for this corpus
        folder with these settings, by any process — how a server sees another process's re-index
        (``current_version``); a process indexing the folder with other settings writes a marker of its own."""
        folder = hashlib.sha256(str(Path(self.data_dir).resolve()).encode()).hexdigest()[:16]
        return Path(self.cache_dir) / f"current-{folder}-{self.settings.key()}.key"

    def _read_current(self) -> str | None:
        try:
            return self._current_file().read_text(encoding="utf-8").strip() or None
        except OSError:
            return None

    def _publish(self, key: str) -> None:
        """Write the marker atomically (a reader never sees half a key); a read-only cache only loses the signal."""
        path = self._current_file()
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            tmp.write_text(key, encoding="utf-8")
            os.replace(tmp, path)
        except OSError:
            tmp.unlink(missing_ok=True)

    @staticmethod
    def _load_cached(directory: Path, stats: dict) -> CorpusIndex | None:
        try:
            return load_index(directory)
        except CorruptIndexError as exc:
            note = f"index cache {directory} is unusable ({exc}); rebuilding it"
            _say(note)
            stats["healed"].append(note)
            return None

    def _build_locked(self, report: LoadReport, key: str, directory: Path, stats: dict) -> CorpusIndex:
        from filelock import FileLock, Timeout

        cache_dir = Path(self.cache_dir)
        try:
            cache_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SpanQAError(f"SpanStore: cache_dir '{self.cache_dir}' cannot be created ({exc.strerror}); "
                              f"point cache_dir (or --cache-dir) at a writable folder.") from None
        lock = FileLock(str(cache_dir / ".build.lock"))
        try:
            lock.acquire(timeout=0)
        except Timeout:
            _say(f"another process is building the index in {cache_dir}; waiting for it")
            try:
                lock.acquire(timeout=LOCK_TIMEOUT_S)
            except Timeout:
                raise SpanQAError(f"SpanStore: waited {LOCK_TIMEOUT_S} s for the lock {cache_dir / '.build.lock'}; "
                                  f"if no spanqa process is running, delete that file.") from None
        try:
            index = self._load_cached(directory, stats)  # built by the process we waited for?
            if index is not None:
                return index
            removed = remove_stale_temporaries(cache_dir)
            if removed:
                stats["healed"].append(f"removed {removed} temporary file(s) left by an interrupted run")
            cache = EmbeddingCache(cache_dir / f"embeddings-{self.settings.key()}.npz")
            if cache.problem:
                _say(cache.problem)
                stats["healed"].append(cache.problem)
            progress = _tqdm() if self.progress else None
            index, built = build_index(report.documents, self.settings, self.embed_passages, cache, progress)
            index.key = key
            save_index(index, directory)
            cache.save()
            self._publish(key)
            stats.update(built, built=True)
            return index
        finally:
            lock.release()

    def filter_mask(self, filters: dict[str, Any] | None) -> np.ndarray | None:
        """Boolean mask over chunks whose document passes ``filters`` — the one filter model
        (``components.core.retrieval.filters``), the meaning PostgreSQL compiles to SQL (``None`` = no filter)."""
        if not filters:
            return None
        from components.core.retrieval.filters import check_filters, matches

        check_filters(filters)
        index = self.open()
        doc_ok = np.array([matches(filters, {**d.meta, "doc_id": d.doc_id}) for d in index.documents], dtype=bool)
        return doc_ok[index.chunk_doc]

    def chunk_document(self, i: int, score: float | None = None, with_embedding: bool = False, **meta) -> Document:
        """Chunk ``i`` as a Haystack Document whose content is the exact slice of its source text."""
        index = self.open()
        doc = index.documents[index.chunk_doc[i]]
        start, end = int(index.chunk_start[i]), int(index.chunk_end[i])
        return Document(
            id=index.chunk_id(i),
            content=doc.text[start:end],
            score=score,
            embedding=index.embeddings[i].tolist() if with_embedding and len(index.embeddings) else None,
            meta={**chunk_meta(doc, index.chunk_id(i), start, end, index.chunk_kind[i]), **meta},
        )

    # -- searches (the SpanIndexStore interface) ---------------------------------------------------------
    def selection_mask(self, selection: Selection) -> np.ndarray | None:
        """Boolean mask over chunks for ``selection`` (``None``: every chunk)."""
        index = self.open()
        mask = self.filter_mask(selection.filters)
        if selection.exclude or selection.only is not None:
            key = (index.key, index.n_chunks, selection.exclude, selection.only)
            keep = self._keep.get(key)
            if keep is MISSING:  # the same superseded / forbidden sets recur query after query: built once
                ids = [d.doc_id for d in index.documents]
                if selection.only is not None:
                    per_doc = np.array([i in selection.only for i in ids], dtype=bool)
                else:
                    per_doc = np.ones(len(ids), dtype=bool)
                if selection.exclude:
                    per_doc &= np.array([i not in selection.exclude for i in ids], dtype=bool)
                keep = self._keep.put(key, per_doc[index.chunk_doc] if index.n_chunks else np.zeros(0, dtype=bool))
            mask = keep if mask is None else (mask & keep)
        return mask

    def _hits(self, order: np.ndarray, scores: np.ndarray) -> list[tuple[Document, float]]:
        return [(self.chunk_document(int(i), with_embedding=True), float(scores[i])) for i in order]

    def bm25_search(self, tokens: list[str], k: int, selection: Selection,
                    params: BM25Params = BM25Params()) -> list[tuple[Document, float]]:
        """Top ``k`` chunks by BM25 Okapi among ``selection`` (a chunk sharing no term is not a hit)."""
        index = self.open()
        cached = self._bm25
        if cached is None or cached[0] is not index.bm25 or cached[1] != params:
            cached = self._bm25 = (index.bm25, params, BM25Okapi(index.bm25, params.k1, params.b, params.epsilon))
        s = cached[2].scores(tokens)
        mask = self.selection_mask(selection)
        positive = s > 0 if mask is None else (mask & (s > 0))
        return self._hits(top_k_indices(s, k, positive), s)

    def dense_search(self, query: str, k: int, selection: Selection) -> list[tuple[Document, float]]:
        """Top ``k`` chunks by cosine similarity of normalised embeddings among ``selection``."""
        index = self.open()
        s = index.embeddings @ self.embed_query(query, selection.scope) if index.n_chunks else np.zeros(0)
        return self._hits(top_k_indices(s, k, self.selection_mask(selection)), s)

    def superseded_documents(self, rule: SupersededRule) -> list[str]:
        """Ids of the documents ``rule`` marks outdated; derived once per index and rule, not per query."""
        index = self.open()
        cached = self._superseded
        if cached is None or cached[0] is not index or cached[1] != rule:
            cached = self._superseded = (index, rule, [d.doc_id for d in index.documents if rule.matches(d.meta)])
        return cached[2]

    def document_metadata(self, field: str) -> dict[str, Any]:
        index = self.open()
        cached = self._metadata.get(field)
        if cached is None or cached[0] is not index:
            cached = self._metadata[field] = (index, {d.doc_id: d.meta[field] for d in index.documents
                                                      if field in d.meta})
        return cached[1]

    def document_ids(self) -> list[str]:
        return [d.doc_id for d in self.open().documents]

    def document_words(self, doc_id: str) -> int:
        """Whitespace words of a whole source document (token accounting), counted once per document."""
        index = self.open()
        counts = self._word_counts
        if counts is None or counts[0] is not index:
            counts = self._word_counts = (index, {})
        if doc_id not in counts[1]:
            counts[1][doc_id] = len(self.source(doc_id)[0].text.split())
        return counts[1][doc_id]

    def source(self, doc_id: str) -> tuple[SourceDocument, np.ndarray, np.ndarray]:
        """``(document, units, blocks)`` of a source document: its text and sentence/paragraph offsets."""
        index = self.open()
        pos = index.doc_pos.get(doc_id)
        if pos is None:
            raise SpanQAError(f"Document '{doc_id}' is not in the index of '{self.data_dir}'.")
        return index.documents[pos], index.units[pos], index.blocks[pos]

    # -- DocumentStore protocol --------------------------------------------------------------------------
    def current_version(self) -> str:
        """The content key of the loaded index. It changes with ``write_documents`` / ``delete_documents``, and when
        another process re-indexes this corpus folder into the same ``cache_dir`` (``run.py --index``, or a server
        that started on changed files): its ``current`` marker names the new index, which is loaded here before
        the question runs (one small file read per question)."""
        self.open()
        if not self._extra:
            marker = self._read_current()
            if marker is not None and marker != self._seen_current:
                with _OPEN_LOCK:
                    if marker != self._seen_current:
                        self._seen_current = marker
                        if marker != self.stats.get("key"):
                            self.open(refresh=True)
        return str(self.stats.get("key"))

    def count_documents(self) -> int:
        return self.open().n_chunks

    def filter_documents(self, filters: dict[str, Any] | None = None) -> list[Document]:
        mask = self.filter_mask(filters)
        ids = range(self.open().n_chunks) if mask is None else np.flatnonzero(mask)
        return [self.chunk_document(int(i)) for i in ids]

    def write_documents(self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE) -> int:
        """Add source documents (content = full text, ``id`` = doc_id); the index is rebuilt incrementally."""
        with _OPEN_LOCK:  # writers are serialised; a running query keeps the index it started with
            return self._write(documents, policy)

    def _write(self, documents: list[Document], policy: DuplicatePolicy) -> int:
        existing = {d.doc_id for d in self.open().documents}
        added = 0
        for d in documents:
            if d.id in existing:
                if policy in (DuplicatePolicy.FAIL, DuplicatePolicy.NONE):
                    raise SpanQAError(f"SpanStore: document '{d.id}' already exists (policy {policy.name}).")
                if policy == DuplicatePolicy.SKIP:
                    continue
                self._extra = [x for x in self._extra if x.doc_id != d.id]
            if not (d.content or "").strip():
                raise SpanQAError(f"SpanStore: document '{d.id}' is empty; nothing to index.")
            self._extra.append(SourceDocument(d.id, d.content, {"title": "", "source": "write_documents", **d.meta}))
            added += 1
        if added:
            self.open(refresh=True)
        return added

    def delete_documents(self, document_ids: list[str]) -> None:
        """Remove documents added with ``write_documents`` (files in ``data_dir`` are deleted on disk instead)."""
        with _OPEN_LOCK:
            self._extra = [x for x in self._extra if x.doc_id not in set(document_ids)]
            self.open(refresh=True)


def _tqdm():
    from tqdm.auto import tqdm

    return tqdm
