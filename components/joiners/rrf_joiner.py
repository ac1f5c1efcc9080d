"""RRFJoiner: reciprocal rank fusion of named ranked lists of Documents."""

from __future__ import annotations

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from components.core.errors import SpanQAError
from components.core.retrieval.fusion import reciprocal_rank_fusion


@component
class RRFJoiner:
    """Fuses ranked lists with reciprocal rank fusion: ``score = Σ w_list / (k + rank)``, 1-based ranks.

    Each input list is a named socket (``lists``), so YAML connections say which list is which and
    ``weights`` can refer to them by name. Every output Document records its rank and score in every
    input list (``meta["ranks"]``, ``meta["scores"]``) and its fused score as ``meta["scores"]["rrf"]``.

    Usage:
    ```python
    joiner = RRFJoiner(lists=["bm25", "dense"], k=60, weights={"bm25": 1.0, "dense": 1.0}, top_k=50)
    fused = joiner.run(bm25=bm25_docs, dense=dense_docs)["documents"]
    ```
    """

    def __init__(self, lists: list[str] | None = None, k: float = 60, weights: dict[str, float] | None = None,
                 top_k: int | None = None):
        self.lists = list(lists or ["bm25", "dense"])
        unknown = sorted(set(weights or {}) - set(self.lists))
        if unknown:
            raise SpanQAError(f"RRFJoiner: weights name lists {unknown} that are not in lists {self.lists}.")
        if k < 0:
            raise SpanQAError(f"RRFJoiner: k must be >= 0 (got {k}).")
        self.k, self.weights, self.top_k = k, weights, top_k
        component.set_input_types(self, **{name: list[Document] | None for name in self.lists})

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, lists=self.lists, k=self.k, weights=self.weights, top_k=self.top_k)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RRFJoiner:
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, top_k: int | None = None, **lists: list[Document] | None) -> dict[str, list[Document]]:
        ranked = {name: lists.get(name) or [] for name in self.lists}
        return {"documents": fuse_documents(ranked, k=self.k, weights=self.weights, top_k=top_k or self.top_k)}


def fuse_documents(lists: dict[str, list[Document]], k: float = 60, weights: dict[str, float] | None = None,
                   top_k: int | None = None, fused: list[tuple] | None = None) -> list[Document]:
    """RRF of named Document lists; each output records its rank and score in every list and ``scores.rrf``.

    ``fused`` — ``[(id, rrf_score, {list: rank})]`` already computed elsewhere (a store that fuses in SQL) —
    is used instead of computing it here, so both paths build exactly the same Documents."""
    per_list = {name: {d.id: d for d in reversed(docs)} for name, docs in lists.items()}
    if fused is None:
        fused = reciprocal_rank_fusion({name: [d.id for d in docs] for name, docs in lists.items()}, k=k,
                                       weights=weights, top_k=top_k)
    out = []
    for doc_id, score, ranks in fused:
        hits = [per_list[name][doc_id] for name in lists if doc_id in per_list[name]]
        scores = {key: v for d in hits for key, v in d.meta.get("scores", {}).items()}
        scores["rrf"] = score
        meta = {**hits[0].meta, "scores": scores, "ranks": dict(ranks), "route": list(hits[0].meta.get("route", []))}
        meta.pop("retrieval_list", None)
        out.append(Document(id=doc_id, content=hits[0].content, meta=meta, score=score, embedding=hits[0].embedding))
    return out
