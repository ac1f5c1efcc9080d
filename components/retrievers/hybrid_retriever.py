"""HybridRetriever: BM25 Okapi and dense (embedding) retrieval over a SpanStore, as two ranked lists."""

from __future__ import annotations

from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict

from components.core.bm25 import BM25Okapi, top_k as top_k_indices
from components.core.errors import SpanQAError
from components.core.filters import check_filters
from components.core.params import check_choice, check_number, check_positive_int
from components.stores.span_store import SpanStore


SUPERSEDED_MODES = ("exclude", "include")
DEFAULT_SUPERSEDED = ("superseded", "retired", "archived")


@component
class HybridRetriever:
    """Ranks the chunks of a ``SpanStore`` twice: BM25 Okapi (rank_bm25's formula, stemmed terms) and cosine
    similarity of normalised sentence-transformers embeddings. Both lists go out; fuse them with ``RRFJoiner``.

    Metadata filters (Haystack filter syntax) are applied before the cut to ``top_k``, so a filter never
    leaves fewer than ``top_k`` results while enough chunks match. Documents whose metadata marks them
    superseded (``status: superseded | retired | archived`` or a ``superseded_by`` value; names configurable)
    are left out the same way unless ``superseded: include``: an outdated policy must never answer.

    Usage:
    ```python
    from components.stores.span_store import SpanStore
    from components.retrievers.hybrid_retriever import HybridRetriever

    retriever = HybridRetriever(document_store=SpanStore(data_dir="data/kb"), top_k=50)
    retriever.warm_up()
    out = retriever.run(query="What does ERR-4012 mean?")
    out["bm25_documents"][0].meta["doc_id"], out["dense_documents"][0].meta["char_start"]
    ```
    """

    def __init__(
        self,
        document_store: SpanStore,
        top_k: int = 50,
        bm25_k1: float = 1.5,
        bm25_b: float = 0.75,
        bm25_epsilon: float = 0.25,
        use_bm25: bool = True,
        use_dense: bool = True,
        filters: dict[str, Any] | None = None,
        superseded: str = "exclude",
        superseded_status_field: str = "status",
        superseded_statuses: list[str] | None = None,
        superseded_by_field: str = "superseded_by",
    ):
        if not isinstance(document_store, SpanStore):
            raise SpanQAError("HybridRetriever: document_store must be a components.stores.span_store.SpanStore.")
        if not (use_bm25 or use_dense):
            raise SpanQAError("HybridRetriever: at least one of use_bm25 / use_dense must be true.")
        check_positive_int("HybridRetriever", "top_k", top_k)
        check_number("HybridRetriever", "bm25_k1", bm25_k1, low=0)
        check_number("HybridRetriever", "bm25_b", bm25_b, low=0, high=1)
        check_number("HybridRetriever", "bm25_epsilon", bm25_epsilon, low=0)
        check_filters(filters, "HybridRetriever.filters")
        check_choice("HybridRetriever", "superseded", superseded, SUPERSEDED_MODES)
        self.superseded, self.superseded_status_field = superseded, superseded_status_field
        self.superseded_statuses = list(DEFAULT_SUPERSEDED if superseded_statuses is None else superseded_statuses)
        self.superseded_by_field = superseded_by_field
        self._superseded_cache: tuple | None = None
        self.document_store, self.top_k, self.filters = document_store, top_k, filters
        self.bm25_k1, self.bm25_b, self.bm25_epsilon = bm25_k1, bm25_b, bm25_epsilon
        self.use_bm25, self.use_dense = use_bm25, use_dense
        self._bm25: BM25Okapi | None = None
        self.served_by = ""

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self, document_store=self.document_store, top_k=self.top_k, bm25_k1=self.bm25_k1, bm25_b=self.bm25_b,
            bm25_epsilon=self.bm25_epsilon, use_bm25=self.use_bm25, use_dense=self.use_dense, filters=self.filters,
            superseded=self.superseded, superseded_status_field=self.superseded_status_field,
            superseded_statuses=self.superseded_statuses, superseded_by_field=self.superseded_by_field,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HybridRetriever:
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """Open (or build) the index and load the query embedder once."""
        index = self.document_store.open()
        if self._bm25 is None or self._bm25.index is not index.bm25:
            self._bm25 = BM25Okapi(index.bm25, self.bm25_k1, self.bm25_b, self.bm25_epsilon)
        if self.use_dense:
            self.document_store.embedder  # noqa: B018 - loads the model once, here and not in run()
            self.served_by = self.document_store.served_by

    def _documents(self, order: np.ndarray, scores: np.ndarray, stage: str) -> list[Document]:
        """Chunks as Documents; each carries its index embedding so a bi-encoder ranker need not re-encode."""
        store = self.document_store
        return [
            store.chunk_document(int(i), score=float(scores[i]), with_embedding=True, scores={stage: float(scores[i])},
                                 ranks={stage: r}, retrieval_list=stage, route=["retrieve"],
                                 embedding_model=store.embedding_model)
            for r, i in enumerate(order, start=1)
        ]

    def _superseded_per_doc(self) -> np.ndarray:
        """Per document of the open index: marked superseded, retired or archived (as configured). Derived once
        per index (and per setting), not per query."""
        index = self.document_store.open()
        key = (id(index), self.superseded_status_field, tuple(self.superseded_statuses), self.superseded_by_field)
        cached = self._superseded_cache
        if cached is None or cached[0] != key:
            per_doc = np.array([self._is_superseded(d.meta) for d in index.documents], dtype=bool)
            cached = self._superseded_cache = (key, per_doc)
        return cached[1]

    def superseded_documents(self) -> list[str]:
        """Ids of the documents whose metadata marks them superseded, retired or archived (as configured)."""
        index = self.document_store.open()
        return [index.documents[i].doc_id for i in np.flatnonzero(self._superseded_per_doc())]

    def _is_superseded(self, meta: dict) -> bool:
        status = str(meta.get(self.superseded_status_field) or "").strip().lower()
        wanted = {s.lower() for s in self.superseded_statuses}
        return status in wanted or bool(meta.get(self.superseded_by_field))

    def _superseded_mask(self, mode: str) -> np.ndarray | None:
        if mode == "include":
            return None
        index = self.document_store.open()
        per_doc = self._superseded_per_doc()
        if not per_doc.any() and mode == "exclude":
            return None
        chunk = per_doc[index.chunk_doc] if index.n_chunks else np.zeros(0, dtype=bool)
        return ~chunk if mode == "exclude" else chunk

    @component.output_types(bm25_documents=list[Document], dense_documents=list[Document])
    def run(self, query: str, filters: dict[str, Any] | None = None, top_k: int | None = None,
            superseded: str | None = None) -> dict[str, Any]:
        """Both ranked lists for ``query`` (each up to ``top_k`` chunks that match ``filters``).

        ``superseded`` overrides the YAML setting for this call: ``exclude`` (superseded, retired and archived
        documents never answer), ``include``, or ``only`` (just those: to tell the user that only an outdated
        source answers)."""
        if self._bm25 is None:
            self.warm_up()
        check_positive_int("HybridRetriever", "top_k", top_k, optional=True)
        mode = self.superseded if superseded is None else superseded
        check_choice("HybridRetriever", "superseded", mode, (*SUPERSEDED_MODES, "only"))
        k = self.top_k if top_k is None else top_k
        mask = self.document_store.filter_mask(filters if filters is not None else self.filters)
        keep = self._superseded_mask(mode)
        if keep is not None:
            mask = keep if mask is None else (mask & keep)
        out: dict[str, list[Document]] = {"bm25_documents": [], "dense_documents": []}
        if self.use_bm25:
            tokens = self.document_store.analyzer(query)
            s = self._bm25.scores(tokens)
            # a chunk with score 0 shares no term with the query: it is not a BM25 hit
            positive = s > 0 if mask is None else (mask & (s > 0))
            out["bm25_documents"] = self._documents(top_k_indices(s, k, positive), s, "bm25")
        if self.use_dense:
            index = self.document_store.open()
            s = index.embeddings @ self.document_store.embed_query(query) if index.n_chunks else np.zeros(0)
            out["dense_documents"] = self._documents(top_k_indices(s, k, mask), s, "dense")
        return out
