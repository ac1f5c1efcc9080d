"""RRFJoiner: reciprocal rank fusion of named ranked lists of Documents."""

from __future__ import annotations

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from components.core.params import ParameterError, check_number, check_positive_int
from components.core.retrieval.fusion import fuse_documents


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
            raise ParameterError(f"RRFJoiner: parameter 'weights' names lists {unknown} that are not in 'lists' "
                                 f"{self.lists}. Fix it in the pipeline YAML.")
        check_number("RRFJoiner", "k", k, low=0)
        check_positive_int("RRFJoiner", "top_k", top_k, optional=True)
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

