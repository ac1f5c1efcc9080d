"""Reciprocal rank fusion (Cormack, Clarke & Büttcher, 2009), as a plain function.

    rrf(d) = Σ_lists  w_list / (k + rank_list(d))        ranks are 1-based; k = 60 by default

A document missing from a list contributes nothing for that list. Ties are broken by the best single
rank, then by first appearance, so the result is deterministic.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence


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
