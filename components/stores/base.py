"""The one store interface: what the retriever, the window expander and the runner ask of a span store.

Two stores implement it: ``SpanStore`` (numpy arrays in memory, cached on disk) and ``PgSpanStore``
(PostgreSQL + pgvector). Components talk to ``SpanIndexStore`` only — no ``isinstance`` branches:

- ``open()`` — index ``data_dir`` (build or sync) once, then return quickly;
- ``bm25_search`` / ``dense_search`` — top-k chunks as ``(Document, score)`` under a ``Selection``
  (Haystack filters plus documents to leave out or keep), applied *before* the cut to k;
- ``source(doc_id)`` — the original text and its sentence / paragraph offsets;
- ``superseded_documents(rule)`` and ``document_words(doc_id)``.

Settings shared by both stores (splitter, analyzer, embedding model, load limits) live here, so a YAML
switches stores by changing only the store section. The query embedder and its memo live here too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from haystack import Document

from components.core.documents.layout import chunk_location
from components.core.text.analysis import Analyzer
from components.core.retrieval.index import IndexSettings
from components.core.retrieval.loaders import LoadLimits, LoadReport, SourceDocument, load_corpus
from components.core.memo import MISSING, Memo
from components.core.backends.models import load_sentence_transformer, resolve_model, torch_device


@dataclass(frozen=True)
class Selection:
    """Which chunks a search may return: Haystack ``filters`` on chunk metadata, minus the documents in
    ``exclude``, and (when ``only`` is set) just the documents in ``only``."""

    filters: dict[str, Any] | None = None
    exclude: frozenset[str] = frozenset()
    only: frozenset[str] | None = None

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
        status = str(meta.get(self.status_field) or "").strip().lower()
        return status in {s.lower() for s in self.statuses} or bool(meta.get(self.by_field))


@dataclass(frozen=True)
class AccessRule:
    """Who may read a document: its ``field`` (front matter / metadata, e.g. ``access: [finance]``) lists the
    groups that may; a document without the field is readable by everyone, or — when ``default`` is set — only by
    those groups. ``public`` in the list opens it to everyone."""

    field: str = "access"
    default: tuple[str, ...] | None = None

    def allowed(self, meta: dict) -> frozenset[str] | None:
        """The groups that may read a document with ``meta``; None: everyone."""
        value = meta.get(self.field)
        if value is None:
            return None if self.default is None else frozenset(self.default)
        if isinstance(value, str):
            groups = frozenset([value])
        elif isinstance(value, (list, tuple)):
            groups = frozenset(str(g) for g in value)
        else:  # any other value: nobody (never silently public)
            groups = frozenset()
        return None if "public" in groups else groups

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


CONTEXT_NOTES = ("headings", "none", "generator")  # what is indexed before each chunk (docs/documents.md)
CONVERSION_KEYS = ("max_pages", "max_unpacked_bytes")  # the `conversion:` limits (PDF pages, DOCX archive size)


@dataclass
class StoreConfig:
    """The settings both stores take from YAML (splitter, analyzer, embedder, load limits)."""

    data_dir: str
    embedding_model: str
    query_prefix: str
    passage_prefix: str
    max_chunk_chars: int
    chunk_overlap: float
    language: str | None
    stopwords: str | list[str] | None
    embed_title: bool
    batch_size: int
    device: str | None
    progress: bool
    limits: LoadLimits = field(default_factory=LoadLimits)
    embedding_precision: str = "fp32"
    context_notes: str = "headings"
    context_generator: dict | None = None

    def to_params(self) -> dict[str, Any]:
        return dict(
            data_dir=self.data_dir, embedding_model=self.embedding_model, query_prefix=self.query_prefix,
            passage_prefix=self.passage_prefix, max_chunk_chars=self.max_chunk_chars,
            chunk_overlap=self.chunk_overlap, language=self.language, stopwords=self.stopwords,
            embed_title=self.embed_title, batch_size=self.batch_size, device=self.device,
            embedding_precision=self.embedding_precision, progress=self.progress,
            max_document_bytes=self.limits.max_document_bytes,
            max_front_matter_bytes=self.limits.max_front_matter_bytes,
            follow_links_outside=self.limits.follow_links_outside,
            context_notes=self.context_notes, context_generator=self.context_generator,
            conversion={"max_pages": self.limits.max_pages, "max_unpacked_bytes": self.limits.max_unpacked_bytes},
        )


class SpanIndexStore:
    """Base of both span stores: shared settings, the query embedder, and the interface components use."""

    component_name = "SpanIndexStore"

    def _init_common(self, data_dir: str, embedding_model: str, query_prefix: str, passage_prefix: str,
                     max_chunk_chars: int, chunk_overlap: float, language: str | None,
                     stopwords: str | list[str] | None, embed_title: bool, batch_size: int, device: str | None,
                     progress: bool, max_document_bytes: int, max_front_matter_bytes: int,
                     follow_links_outside: bool, embedding_precision: str = "fp32", *,
                     context_notes: str = "headings", conversion: dict[str, int] | None = None,
                     context_generator: dict | None = None) -> None:
        from components.core.backends.models import PRECISIONS
        from components.core.params import ParameterError, check_choice, check_fraction, check_positive_int

        name = type(self).__name__
        check_fraction(name, "chunk_overlap", chunk_overlap, high=0.5, high_open=True)
        check_choice(name, "embedding_precision", embedding_precision, PRECISIONS)
        check_choice(name, "context_notes", context_notes, CONTEXT_NOTES)
        notes_model = ""
        if context_notes == "generator":
            from components.core.documents.notes import NoteWriter, check_generator_config

            context_generator = check_generator_config(name, context_generator)
            notes_model = NoteWriter.model_of(context_generator)
        if conversion is not None and not isinstance(conversion, dict):
            raise ParameterError(f"{name}: parameter 'conversion' is {conversion!r}, but it must be a mapping such as "
                                 f"{{max_pages: 2000}}. Fix the store's section of the pipeline YAML.")
        conversion = dict(conversion or {})
        unknown = sorted(set(conversion) - set(CONVERSION_KEYS))
        if unknown:
            raise ParameterError(f"{name}: unknown key(s) {unknown} in `conversion:` (allowed: "
                                 f"{', '.join(CONVERSION_KEYS)}); fix the store's section of the pipeline YAML.")
        for key in CONVERSION_KEYS:
            conversion.setdefault(key, getattr(LoadLimits, key))
            check_positive_int(name, f"conversion.{key}", conversion[key])
        for key, value in (("max_chunk_chars", max_chunk_chars), ("batch_size", batch_size),
                           ("max_document_bytes", max_document_bytes),
                           ("max_front_matter_bytes", max_front_matter_bytes)):
            check_positive_int(name, key, value)
        self.config = StoreConfig(data_dir, embedding_model, query_prefix, passage_prefix, max_chunk_chars,
                                  chunk_overlap, language, stopwords, embed_title, batch_size, device, progress,
                                  LoadLimits(max_document_bytes, max_front_matter_bytes, bool(follow_links_outside),
                                             **conversion),
                                  embedding_precision, context_notes, context_generator)
        self.limits = self.config.limits
        self.data_dir, self.embedding_model = data_dir, embedding_model
        self.query_prefix, self.passage_prefix, self.progress = query_prefix, passage_prefix, progress
        self.analyzer = Analyzer(language=language, stopwords=stopwords)
        self.settings = IndexSettings(max_chunk_chars=max_chunk_chars, chunk_overlap=chunk_overlap,
                                      analyzer=self.analyzer.to_dict(), embedding_model=embedding_model,
                                      passage_prefix=passage_prefix, embed_title=embed_title,
                                      embedding_precision=embedding_precision, context_notes=context_notes,
                                      context_model=notes_model)
        self._query_vectors = Memo(maxsize=4096)
        self.load_report: LoadReport | None = None
        self.notes_written = 0  # generator notes written by the last load (the rest came from their cache)
        self._forbidden: dict[tuple, tuple] = {}  # (metadata, rule, groups) -> the documents they may not read
        self.stats: dict = {}
        self.served_by = ""

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

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self.embedder.encode(texts, batch_size=self.config.batch_size, normalize_embeddings=True,
                                    convert_to_numpy=True, show_progress_bar=False)  # the indexing bar shows it

    def embed_query(self, text: str) -> np.ndarray:
        """The query's normalised embedding; repeated questions are served from a memo (``query_cache_hits``)."""
        hit = self._query_vectors.get(text)
        if hit is not MISSING:
            return hit
        vec = self.embedder.encode([self.query_prefix + text], normalize_embeddings=True, convert_to_numpy=True,
                                   show_progress_bar=False)
        return self._query_vectors.put(text, vec[0].astype(np.float32))

    @property
    def query_cache_hits(self) -> int:
        return self._query_vectors.hits

    # -- the interface the components use -------------------------------------------------------------------
    def open(self, refresh: bool = False) -> Any:  # pragma: no cover - interface
        raise NotImplementedError

    def bm25_search(self, tokens: list[str], k: int, selection: Selection,
                    params: BM25Params) -> list[tuple[Document, float]]:  # pragma: no cover - interface
        raise NotImplementedError

    def dense_search(self, query: str, k: int, selection: Selection) -> list[tuple[Document, float]]:  # pragma: no cover
        raise NotImplementedError

    def hybrid_search(self, tokens: list[str], query: str, k: int, selection: Selection, params: BM25Params,
                      rrf_k: float = 60, weights: dict[str, float] | None = None):
        """Both lists and their RRF fusion: ``(bm25 hits, dense hits, [(chunk id, rrf, ranks)] best first)``.
        This default runs the two searches and fuses in Python; a store may do all of it in one round trip."""
        from components.core.retrieval.fusion import reciprocal_rank_fusion

        bm25 = self.bm25_search(tokens, k, selection, params)
        dense = self.dense_search(query, k, selection)
        fused = reciprocal_rank_fusion({"bm25": [d.id for d, _ in bm25], "dense": [d.id for d, _ in dense]},
                                       k=rrf_k, weights=weights, top_k=k)
        return bm25, dense, fused

    def source(self, doc_id: str) -> tuple[SourceDocument, np.ndarray, np.ndarray]:  # pragma: no cover - interface
        raise NotImplementedError

    def current_version(self) -> str:  # pragma: no cover - interface
        """The index version a query reads now: it changes whenever a write (of this process or, for a shared
        database, of any process) changes what a search or ``source`` returns. The runner reads it before and
        after each question and keys its answer cache on it."""
        raise NotImplementedError

    def superseded_documents(self, rule: SupersededRule) -> list[str]:  # pragma: no cover - interface
        raise NotImplementedError

    def document_metadata(self, field: str) -> dict[str, Any]:  # pragma: no cover - interface
        """``{doc_id: value of meta[field]}`` for every document that has the field (read once per index version)."""
        raise NotImplementedError

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

    def document_ids(self) -> list[str]:  # pragma: no cover - interface
        raise NotImplementedError

    def document_words(self, doc_id: str) -> int:  # pragma: no cover - interface
        raise NotImplementedError
