"""The one store interface (``SpanIndexStore``, a ``typing.Protocol`` like Haystack's ``DocumentStore``) and
what both stores share (``StoreBase``).

Two stores implement it: ``SpanStore`` (numpy arrays in memory, cached on disk) and ``PgSpanStore``
(PostgreSQL + pgvector). Components talk to the protocol only — no ``isinstance`` branches on a store class:

- ``open()`` — index ``data_dir`` (build or sync) once, then return quickly;
- ``bm25_search`` / ``dense_search`` / ``hybrid_search`` — top-k chunks as ``(Document, score)`` under a
  ``Selection`` (filters plus documents to leave out or keep), applied *before* the cut to k;
- ``source(doc_id)`` — the original text and its sentence / paragraph offsets;
- ``current_version()``, ``superseded_documents(rule)``, ``forbidden_documents(rule, groups)``,
  ``document_words(doc_id)``.

The settings both stores take (``components.stores.settings.StoreSettings``) are declared once, so a YAML
switches stores by changing only the ``type:`` line and the store's own keys. The query embedder and its memo
live in ``StoreBase``.
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
from haystack import Document, default_from_dict

from components.core.documents.layout import chunk_location
from components.core.text.analysis import Analyzer
from components.core.retrieval.index import IndexSettings
from components.core.retrieval.loaders import LoadLimits, LoadReport, SourceDocument, load_corpus
from components.core.memo import MISSING, Memo
from components.core.backends.models import (load_sentence_transformer, resolve_model,
                                             sentence_embedding_dimension, torch_device)
from components.stores.settings import StoreSettings


# store types whose module moved: a YAML naming the old path gets one paragraph naming the new one
MOVED_TYPES = {"components.stores.pg_span_store.PgSpanStore": "components.stores.pgvector.store.PgSpanStore"}


def check_store_type(component: str, data: dict[str, Any]) -> None:
    """Before a component's ``from_dict`` deserialises its ``document_store``: a moved store type is a clear
    error naming the new path (not Haystack's "could not import")."""
    from components.core.params import ParameterError

    store = (data.get("init_parameters") or {}).get("document_store")
    old = store.get("type") if isinstance(store, dict) else None
    if old in MOVED_TYPES:
        raise ParameterError(f"{component}: the document store type '{old}' has moved to '{MOVED_TYPES[old]}' "
                             f"(the PostgreSQL modules now live in components/stores/pgvector/). Write "
                             f"`type: {MOVED_TYPES[old]}` in the store's section of the pipeline YAML.")


@dataclass(frozen=True)
class Selection:
    """Which chunks a search may return: Haystack ``filters`` on chunk metadata, minus the documents in
    ``exclude``, and (when ``only`` is set) just the documents in ``only``."""

    filters: dict[str, Any] | None = None
    exclude: frozenset[str] = frozenset()
    only: frozenset[str] | None = None
    scope: frozenset[str] | None = None  # the asker's groups: caches of the search are kept apart per scope

    def as_filters(self) -> dict[str, Any] | None:
        """The whole selection as one Haystack filter (for stores that push filters into their query)."""
        conditions = [self.filters] if self.filters else []
        if self.exclude:
            conditions.append({"field": "meta.doc_id", "operator": "not in", "value": sorted(self.exclude)})
        if self.only is not None:
            conditions.append({"field": "meta.doc_id", "operator": "in", "value": sorted(self.only)})
        if not conditions:
            return None
        return conditions[0] if len(conditions) == 1 else {"operator": "AND", "conditions": conditions}

    @property
    def empty(self) -> bool:
        """Nothing can match (``only`` is an empty set)."""
        return self.only is not None and not self.only


@dataclass(frozen=True)
class SupersededRule:
    """Front-matter fields that mark a document outdated: ``status`` in ``statuses`` (any case), or any
    value in ``by_field``."""

    status_field: str = "status"
    statuses: tuple[str, ...] = ("superseded", "retired", "archived")
    by_field: str = "superseded_by"

    def matches(self, meta: dict) -> bool:
        """Whether ``meta`` marks its document outdated: the status field holds one of ``statuses`` in any case —
        as a value or as an item of a list (``status: [superseded]``) — or ``by_field`` has any value."""
        value = meta.get(self.status_field)
        values = value if isinstance(value, (list, tuple)) else [value]
        wanted = {s.lower() for s in self.statuses}
        return any(str(v or "").strip().lower() in wanted for v in values) or bool(meta.get(self.by_field))


@dataclass(frozen=True)
class AccessRule:
    """Who may read a document: its ``field`` (front matter / metadata, e.g. ``access: [finance]``) lists the
    groups that may; a document without the field is readable by everyone, or — when ``default`` is set — only by
    those groups. ``public`` in the list opens it to everyone. A field that is present but empty or not names
    (``access:``, ``access: 3``) opens the document to nobody: access fails closed."""

    field: str = "access"
    default: tuple[str, ...] | None = None

    def __post_init__(self):  # documents' fields are read in lower case (loaders.lower_keys)
        object.__setattr__(self, "field", self.field.strip().lower())

    def allowed(self, meta: dict) -> frozenset[str] | None:
        """The groups that may read a document with ``meta``; None: everyone."""
        if self.field not in meta:
            return None if self.default is None else frozenset(self.default)
        value = meta[self.field]
        if isinstance(value, str):
            groups = frozenset([value.strip()]) - {""}
        elif isinstance(value, (list, tuple)):
            groups = frozenset(str(g).strip() for g in value if isinstance(g, str)) - {""}
        else:  # present but empty (`access:`), a number, a mapping: nobody (never silently public)
            groups = frozenset()
        return None if "public" in groups else groups

    def unreadable_reason(self, meta: dict) -> str | None:
        """Why a document's access field opens it to nobody (empty, or not a name or list of names), or None."""
        if self.field not in meta:
            return None
        value = meta[self.field]
        if isinstance(value, str) and value.strip() or isinstance(value, (list, tuple)) and value and all(
                isinstance(g, str) and g.strip() for g in value):
            return None
        return (f"'{self.field}: {value!r}' is not a group name or a list of them, so nobody may read it "
                f"(write e.g. '{self.field}: [finance]', or '{self.field}: public')")

    def readable(self, meta: dict, groups: frozenset[str] | None) -> bool:
        """Whether an asker of ``groups`` may read the document (``groups`` None: an unrestricted local user)."""
        if groups is None:
            return True
        allowed = self.allowed(meta)
        return allowed is None or bool(allowed & groups)


@dataclass(frozen=True)
class BM25Params:
    k1: float = 1.5
    b: float = 0.75
    epsilon: float = 0.25


def chunk_meta(doc: SourceDocument, chunk_id: str, start: int, end: int, kind: str) -> dict[str, Any]:
    """The metadata of a chunk Document — the same in every store (equal answers need equal documents)."""
    return {**doc.meta, "doc_id": doc.doc_id, "chunk_id": chunk_id, "char_start": start, "char_end": end,
            "kind": kind, "level": "chunk", **chunk_location(doc.layout, start)}


def fused_lists(bm25: list, dense: list, k: int, rrf_k: float = 60, weights: dict[str, float] | None = None):
    """``(bm25, dense, fused)`` as ``hybrid_search`` returns them, from the two lists of ``(Document, score)``."""
    from components.core.retrieval.fusion import reciprocal_rank_fusion

    fused = reciprocal_rank_fusion({"bm25": [d.id for d, _ in bm25], "dense": [d.id for d, _ in dense]},
                                   k=rrf_k, weights=weights, top_k=k)
    return bm25, dense, fused


class StoreBase:
    """What both stores share: their settings (``StoreSettings``, declared once), the analyzer and index settings
    made from them, the query embedder and its memo, corpus loading and the access rule's forbidden set. A store
    subclasses it and implements the ``SpanIndexStore`` protocol's searches."""

    settings_class = StoreSettings  # what ``**settings`` accepts (the YAML validator reads its fields)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
        """Rebuild a store from ``to_dict()`` output (or YAML); an unknown key is refused before Haystack
        deserialises anything inside it (the ``**settings`` signature would otherwise let it through)."""
        own = {n for n, p in inspect.signature(cls.__init__).parameters.items()
               if p.kind is p.POSITIONAL_OR_KEYWORD and n != "self"}
        StoreSettings.check_names(cls.__name__, set(data.get("init_parameters") or {}) - own)
        return default_from_dict(cls, data)

    def _init_settings(self, settings: dict[str, Any]) -> None:
        name = type(self).__name__
        self.config = StoreSettings.from_params(name, settings)
        notes_model = ""
        if self.config.context_notes == "generator":
            from components.core.documents.notes import NoteWriter

            notes_model = NoteWriter.model_of(self.config.context_generator)
        self.analyzer = Analyzer(language=self.config.language, stopwords=self.config.stopwords)
        self.settings = IndexSettings(max_chunk_chars=self.config.max_chunk_chars,
                                      chunk_overlap=self.config.chunk_overlap, analyzer=self.analyzer.to_dict(),
                                      embedding_model=self.config.embedding_model,
                                      passage_prefix=self.config.passage_prefix, embed_title=self.config.embed_title,
                                      embedding_precision=self.config.embedding_precision,
                                      context_notes=self.config.context_notes, context_model=notes_model)
        self.limits = self.config.limits
        self._query_vectors = Memo(maxsize=4096)
        self.load_report: LoadReport | None = None
        self.notes_written = 0  # generator notes written by the last load (the rest came from their cache)
        self._forbidden: dict[tuple, tuple] = {}  # (metadata, rule, groups) -> the documents they may not read
        self.stats: dict = {}
        self.served_by = ""

    @property
    def data_dir(self) -> str:
        return self.config.data_dir

    @property
    def embedding_model(self) -> str:
        return self.config.embedding_model

    @property
    def progress(self) -> bool:
        return self.config.progress

    @progress.setter
    def progress(self, value: bool) -> None:  # run.py --json and tests turn the indexing bar off
        self.config = dataclasses.replace(self.config, progress=bool(value))

    def load_documents(self) -> LoadReport:
        """The corpus of ``data_dir`` (skipped files listed), with the generator's situating notes attached when
        ``context_notes: generator`` (written once per chunk, cached by content hash, progress shown)."""
        report = load_corpus(self.data_dir, limits=self.limits)
        if self.settings.context_notes == "generator":
            from components.core.documents.notes import NoteWriter

            config = self.config.context_generator
            writer = NoteWriter(config, config.get("cache_file") or ".spanqa/context-notes.json")
            self.notes_written = writer.annotate(report.documents, self.settings, progress=self.progress)
        return report

    # -- the embedder (loaded once, then read without a lock: queries never wait on a load) --------------
    @property
    def embedder(self):
        model = self.__dict__.get("_embedder_model")
        if model is None:
            resolved = resolve_model(self.embedding_model, component="document_store")
            self.served_by = resolved.describe(self.config.embedding_precision)
            model = self._embedder_model = load_sentence_transformer(resolved.path, torch_device(self.config.device),
                                                                     self.config.embedding_precision)
        return model

    def load_embedder(self) -> None:
        self.embedder  # noqa: B018 - the property loads it once

    @property
    def embedding_dimension(self) -> int:
        """The vectors' width: from the model folder's configs when they say it, so opening a store to read BM25
        never loads torch and the weights; else from the loaded model."""
        width = self.__dict__.get("_embedding_width")
        if width is None:
            model = self.__dict__.get("_embedder_model")
            if model is None:
                resolved = resolve_model(self.embedding_model, component="document_store")
                width = sentence_embedding_dimension(resolved.path)
            if width is None:
                model = self.embedder
                get = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
                width = int(get())
            self._embedding_width = width
        return width

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self.embedder.encode(texts, batch_size=self.config.batch_size, normalize_embeddings=True,
                                    convert_to_numpy=True, show_progress_bar=False)  # the indexing bar shows it

    def embed_query(self, text: str, scope: frozenset[str] | None = None) -> np.ndarray:
        """The query's normalised embedding; repeated questions are served from a memo (``query_cache_hits``), kept
        apart per asker scope — a faster answer never tells one asker what another asked."""
        hit = self._query_vectors.get((scope, text))
        if hit is not MISSING:
            return hit
        vec = self.embedder.encode([self.config.query_prefix + text], normalize_embeddings=True, convert_to_numpy=True,
                                   show_progress_bar=False)
        return self._query_vectors.put((scope, text), vec[0].astype(np.float32))

    @property
    def query_cache_hits(self) -> int:
        return self._query_vectors.hits

    # -- defaults of the protocol, written once in terms of its searches --------------------------------------
    def hybrid_search(self, tokens: list[str], query: str, k: int, selection: Selection, params: BM25Params,
                      rrf_k: float = 60, weights: dict[str, float] | None = None):
        """Both lists and their RRF fusion: ``(bm25 hits, dense hits, [(chunk id, rrf, ranks)] best first)``.
        This default runs the two searches and fuses in Python; a store may do all of it in one round trip."""
        bm25 = self.bm25_search(tokens, k, selection, params)
        return fused_lists(bm25, self.dense_search(query, k, selection), k, rrf_k, weights)

    def forbidden_documents(self, rule: AccessRule, groups: frozenset[str] | None) -> frozenset[str]:
        """Documents an asker of ``groups`` may not read (left out inside every search, like superseded ones)."""
        if groups is None:
            return frozenset()
        labelled = self.document_metadata(rule.field)
        key = (id(labelled), rule, groups)
        cached = self._forbidden.get(key)
        if cached is not None and cached[0] is labelled:  # per version of the metadata, rule and groups
            return cached[1]
        forbidden = self._forbidden_of(labelled, rule, groups)
        if len(self._forbidden) > 256:
            self._forbidden.clear()
        self._forbidden[key] = (labelled, forbidden)
        return forbidden

    def _forbidden_of(self, labelled: dict[str, Any], rule: AccessRule, groups: frozenset[str]) -> frozenset[str]:
        if rule.default is None:  # unlabelled documents are public: only the labelled ones can be forbidden
            return frozenset(d for d, v in labelled.items() if not rule.readable({rule.field: v}, groups))
        return frozenset(d for d in self.document_ids()
                         if not rule.readable({rule.field: labelled[d]} if d in labelled else {}, groups))


@runtime_checkable
class SpanIndexStore(Protocol):
    """The one store interface: what the retriever, the window expander, the verifier and the runner ask of a
    span store. ``SpanStore`` (memory) and ``PgSpanStore`` (PostgreSQL) implement it; a third store would too.
    ``isinstance(x, SpanIndexStore)`` checks that every member below exists (a test checks both stores)."""

    config: StoreSettings
    analyzer: Analyzer
    limits: LoadLimits
    load_report: LoadReport | None
    stats: dict
    served_by: str

    @property
    def data_dir(self) -> str: ...

    @property
    def embedding_model(self) -> str: ...

    def open(self, refresh: bool = False) -> Any:
        """Index ``data_dir`` (build or sync) once, then return quickly."""

    def current_version(self) -> str:
        """The index version a query reads now: it changes whenever a write (of this process or, for a shared
        database, of any process) changes what a search or ``source`` returns. The runner reads it before and
        after each question and keys its answer cache on it."""

    def load_embedder(self) -> None:
        """Load the query embedder now (``warm_up``), not in the first query; sets ``served_by``."""

    def embed_query(self, text: str, scope: frozenset[str] | None = None) -> np.ndarray: ...

    def bm25_search(self, tokens: list[str], k: int, selection: Selection,
                    params: BM25Params) -> list[tuple[Document, float]]:
        """Top-k chunks by BM25 under ``selection``, applied before the cut to k."""

    def dense_search(self, query: str, k: int, selection: Selection) -> list[tuple[Document, float]]:
        """Top-k chunks by cosine under ``selection``, applied before the cut to k."""

    def hybrid_search(self, tokens: list[str], query: str, k: int, selection: Selection, params: BM25Params,
                      rrf_k: float = 60, weights: dict[str, float] | None = None) -> tuple[list, list, list]:
        """Both lists and their RRF fusion: ``(bm25 hits, dense hits, [(chunk id, rrf, ranks)] best first)``."""

    def source(self, doc_id: str) -> tuple[SourceDocument, np.ndarray, np.ndarray]:
        """The original document and its sentence / paragraph offsets (``SpanQAError`` for an unknown id)."""

    def superseded_documents(self, rule: SupersededRule) -> list[str]: ...

    def document_metadata(self, field: str) -> dict[str, Any]:
        """``{doc_id: value of meta[field]}`` for every document that has the field (read once per version)."""

    def forbidden_documents(self, rule: AccessRule, groups: frozenset[str] | None) -> frozenset[str]:
        """Documents an asker of ``groups`` may not read (left out inside every search)."""

    def document_ids(self) -> list[str]: ...

    def document_words(self, doc_id: str) -> int: ...

    def load_documents(self) -> LoadReport: ...

    def count_documents(self) -> int: ...

    def filter_documents(self, filters: dict[str, Any] | None = None) -> list[Document]: ...

    def write_documents(self, documents: list[Document], policy: Any = None) -> int: ...

    def delete_documents(self, document_ids: list[str]) -> None: ...
