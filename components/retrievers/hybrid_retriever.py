"""HybridRetriever: BM25 Okapi and dense (embedding) retrieval over a span store, as two ranked lists."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from components.core.errors import ParameterError
from components.core.retrieval.filters import check_filters
from components.core.params import check_choice, check_number, check_positive_int
from components.core.retrieval.fusion import fuse_documents
from components.stores.base import AccessRule, BM25Params, Selection, SpanIndexStore, SupersededRule, check_store_type


SUPERSEDED_MODES = ("exclude", "include")
FUSION_MODES = ("joiner", "store")  # joiner: two lists out, RRFJoiner in the YAML; store: fused by the store
DEFAULT_SUPERSEDED = ("superseded", "retired", "archived")


@component
class HybridRetriever:
    """Ranks the chunks of a span store (``SpanStore`` in memory, ``PgSpanStore`` in PostgreSQL) twice: BM25
    Okapi (rank_bm25's formula, stemmed terms) and cosine
    similarity of normalised sentence-transformers embeddings. Both lists go out; fuse them with ``RRFJoiner``
    — or, with ``fusion: store``, the store fuses them (PostgreSQL: both searches and RRF in one SQL statement)
    and ``documents`` carries the fused list, equal to what ``RRFJoiner`` makes of the two lists.

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
        document_store: SpanIndexStore,
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
        fusion: str = "joiner",
        rrf_k: float = 60,
        rrf_weights: dict[str, float] | None = None,
        access_field: str = "access",
        default_access: list[str] | None = None,
    ):
        if not isinstance(document_store, SpanIndexStore):
            raise ParameterError("HybridRetriever: document_store must be a spanqa span store "
                              "(components.stores.span_store.SpanStore or components.stores.pgvector.store.PgSpanStore).")
        if not (use_bm25 or use_dense):
            raise ParameterError("HybridRetriever: at least one of use_bm25 / use_dense must be true.")
        check_positive_int("HybridRetriever", "top_k", top_k)
        check_number("HybridRetriever", "bm25_k1", bm25_k1, low=0)
        check_number("HybridRetriever", "bm25_b", bm25_b, low=0, high=1)
        check_number("HybridRetriever", "bm25_epsilon", bm25_epsilon, low=0)
        check_filters(filters, "HybridRetriever.filters")
        check_choice("HybridRetriever", "superseded", superseded, SUPERSEDED_MODES)
        check_choice("HybridRetriever", "fusion", fusion, FUSION_MODES)
        check_number("HybridRetriever", "rrf_k", rrf_k, low=0)
        if fusion == "store" and not (use_bm25 and use_dense):
            raise ParameterError("HybridRetriever: fusion: store fuses BM25 and dense lists; keep use_bm25 and use_dense true.")
        if not isinstance(access_field, str) or not access_field:
            raise ParameterError("HybridRetriever: access_field must be the name of a metadata field (e.g. access).")
        if default_access is not None and (not isinstance(default_access, list)
                                           or not all(isinstance(g, str) and g for g in default_access)):
            raise ParameterError("HybridRetriever: default_access must be null (documents without an access field are "
                              "public) or a list of group names that may read them, e.g. [staff].")
        self.access_field, self.default_access = access_field, default_access
        self.fusion, self.rrf_k, self.rrf_weights = fusion, rrf_k, rrf_weights
        self.superseded, self.superseded_status_field = superseded, superseded_status_field
        self.superseded_statuses = list(DEFAULT_SUPERSEDED if superseded_statuses is None else superseded_statuses)
        self.superseded_by_field = superseded_by_field
        self.document_store, self.top_k, self.filters = document_store, top_k, filters
        self.bm25_k1, self.bm25_b, self.bm25_epsilon = bm25_k1, bm25_b, bm25_epsilon
        self.use_bm25, self.use_dense = use_bm25, use_dense
        self._warm = False
        self._combinations: dict[tuple, tuple] = {}
        self.served_by = ""

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self, document_store=self.document_store, top_k=self.top_k, bm25_k1=self.bm25_k1, bm25_b=self.bm25_b,
            bm25_epsilon=self.bm25_epsilon, use_bm25=self.use_bm25, use_dense=self.use_dense, filters=self.filters,
            superseded=self.superseded, superseded_status_field=self.superseded_status_field,
            superseded_statuses=self.superseded_statuses, superseded_by_field=self.superseded_by_field,
            fusion=self.fusion, rrf_k=self.rrf_k, rrf_weights=self.rrf_weights, access_field=self.access_field,
            default_access=self.default_access,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HybridRetriever:
        check_store_type("HybridRetriever", data)
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """Open (index or sync) the store and load the query embedder once."""
        self.document_store.open()
        if self.use_dense:
            self.document_store.load_embedder()  # once, here and not in run()
            self.served_by = self.document_store.served_by
        self._warm = True

    @property
    def rule(self) -> SupersededRule:
        return SupersededRule(self.superseded_status_field, tuple(self.superseded_statuses), self.superseded_by_field)

    def superseded_documents(self) -> list[str]:
        """Ids of the documents whose metadata marks them superseded, retired or archived (as configured)."""
        return self.document_store.superseded_documents(self.rule)

    @property
    def access_rule(self) -> AccessRule:
        return AccessRule(self.access_field, None if self.default_access is None else tuple(self.default_access))

    def _selection(self, filters: dict[str, Any] | None, mode: str, groups: frozenset[str] | None) -> Selection:
        """What the searches may return: the filter, minus superseded documents (or only those), minus what an asker
        of ``groups`` may not read — all applied inside the store's search, before the cut to ``top_k``."""
        superseded = self.superseded_documents() if mode != "include" else ()
        forbidden = self.document_store.forbidden_documents(self.access_rule, groups)
        ids = self._combined(superseded, forbidden, mode)
        if mode == "only":
            return Selection(filters, only=ids, scope=groups)
        return Selection(filters, exclude=ids, scope=groups)

    def _combined(self, superseded, forbidden: frozenset[str], mode: str) -> frozenset[str]:
        """``superseded - forbidden`` (mode ``only``) or ``superseded | forbidden`` — the same object while both are
        (the store keeps them per index version and asker), so a store can keep what it built for the set."""
        key = (id(superseded), id(forbidden), mode == "only")
        kept = self._combinations.get(key)
        if kept is not None and kept[0] is superseded and kept[1] is forbidden:
            return kept[2]
        outdated = frozenset(superseded)
        combined = outdated - forbidden if mode == "only" else outdated | forbidden
        if len(self._combinations) > 64:
            self._combinations.clear()
        self._combinations[key] = (outdated, forbidden, combined)
        return combined

    @staticmethod
    def _documents(hits, stage: str, embedding_model: str) -> list[Document]:
        """Hits as Documents with their stage's score and rank; each keeps its index embedding, so a
        bi-encoder ranker need not re-encode."""
        docs = []
        for r, (doc, score) in enumerate(hits, start=1):
            meta = {**doc.meta, "scores": {stage: score}, "ranks": {stage: r}, "retrieval_list": stage,
                    "route": ["retrieve"], "embedding_model": embedding_model}
            docs.append(replace(doc, score=score, meta=meta))
        return docs

    @component.output_types(bm25_documents=list[Document], dense_documents=list[Document], documents=list[Document])
    def run(self, query: str, filters: dict[str, Any] | None = None, top_k: int | None = None,
            superseded: str | None = None, groups: list[str] | None = None) -> dict[str, Any]:
        """Both ranked lists for ``query`` (each up to ``top_k`` chunks that match ``filters``).

        ``groups``: the asker's groups — only documents they may read are searched (``access_field``; a document
        without it is public unless ``default_access`` says who may read it). None: no restriction (a local user
        of the command line); the server always passes the requester's groups (none when anonymous).

        ``superseded`` overrides the YAML setting for this call: ``exclude`` (superseded, retired and archived
        documents never answer), ``include``, or ``only`` (just those: to tell the user that only an outdated
        source answers)."""
        if not self._warm:
            self.warm_up()
        check_positive_int("HybridRetriever", "top_k", top_k, optional=True)
        mode = self.superseded if superseded is None else superseded
        check_choice("HybridRetriever", "superseded", mode, (*SUPERSEDED_MODES, "only"))
        k = self.top_k if top_k is None else top_k
        chosen = filters if filters is not None else self.filters
        check_filters(chosen)
        if groups is not None and (not isinstance(groups, (list, tuple, frozenset, set))
                                   or not all(isinstance(g, str) for g in groups)):
            raise ParameterError("HybridRetriever: groups must be a list of group names (or null for no restriction).")
        selection = self._selection(chosen, mode, None if groups is None else frozenset(groups))
        store = self.document_store
        out: dict[str, list[Document]] = {"bm25_documents": [], "dense_documents": []}
        if selection.empty:
            return {**out, "documents": []} if self.fusion == "store" else out
        params = BM25Params(self.bm25_k1, self.bm25_b, self.bm25_epsilon)
        if self.fusion == "store":  # one round trip where the store can (PostgreSQL: one SQL statement)
            bm25, dense, fused = store.hybrid_search(store.analyzer(query), query, k, selection, params,
                                                     self.rrf_k, self.rrf_weights)
            lists = {"bm25": self._documents(bm25, "bm25", store.embedding_model),
                     "dense": self._documents(dense, "dense", store.embedding_model)}
            return {"bm25_documents": lists["bm25"], "dense_documents": lists["dense"],
                    "documents": fuse_documents(lists, fused=fused)}
        if self.use_bm25:
            out["bm25_documents"] = self._documents(store.bm25_search(store.analyzer(query), k, selection, params),
                                                    "bm25", store.embedding_model)
        if self.use_dense:
            out["dense_documents"] = self._documents(store.dense_search(query, k, selection), "dense",
                                                     store.embedding_model)
        return out
