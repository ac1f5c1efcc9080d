"""Reciprocal rank fusion (Cormack, Clarke & Büttcher, 2009), as a plain function.

    rrf(d) = Σ_lists  w_list / (k + rank_list(d))        ranks are 1-based; k = 60 by default

A document missing from a list contributes nothing for that list. Ties are broken by the best single
rank, then by first appearance, so the result is deterministic.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

from haystack import Document


def reciprocal_rank_fusion(
    ranked_lists: Mapping[str, Sequence[Hashable]],
    k: float = 60.0,
    weights: Mapping[str, float] | None = None,
    top_k: int | None = None,
) -> list[tuple[Hashable, float, dict[str, int]]]:
    """Fuse named ranked lists of ids into ``[(id, rrf_score, {list_name: rank})]``, best first."""
    if k < 0:
        raise ValueError(f"RRF k must be >= 0, got {k}")
    weights = weights or {}
    scores: dict[Hashable, float] = {}
    ranks: dict[Hashable, dict[str, int]] = {}
    first_seen: dict[Hashable, int] = {}
    for name, ids in ranked_lists.items():
        w = float(weights.get(name, 1.0))
        for rank, item in enumerate(ids, start=1):
            if name in ranks.get(item, {}):
                continue  # a list that repeats an id counts it at its best rank only
            scores[item] = scores.get(item, 0.0) + w / (k + rank)
            ranks.setdefault(item, {})[name] = rank
            first_seen.setdefault(item, len(first_seen))
    order = sorted(scores, key=lambda d: (-scores[d], min(ranks[d].values()), first_seen[d]))
    if top_k is not None:
        order = order[:top_k]
    return [(d, scores[d], ranks[d]) for d in order]


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
