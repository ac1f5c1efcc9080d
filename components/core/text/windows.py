"""Span arithmetic for windows: grow a span by sentences or paragraphs, and merge overlapping spans.

``units`` and ``blocks`` are ``(n, 2)`` arrays of ``[start, end)`` offsets of one document's sentences and
paragraphs, in order (as computed once at indexing by ``components.core.text.splitting``).
"""

from __future__ import annotations

import numpy as np


def covering(spans: np.ndarray, start: int, end: int) -> tuple[int, int] | None:
    """Index range ``[i, j)`` of the spans that overlap ``[start, end)`` (None when none does)."""
    if len(spans) == 0:
        return None
    i = int(np.searchsorted(spans[:, 1], start, side="right"))  # first span ending after start
    j = int(np.searchsorted(spans[:, 0], end, side="left"))  # first span starting at/after end
    return (i, j) if i < j else None


def grow(spans: np.ndarray, start: int, end: int, n: int) -> tuple[int, int]:
    """``[start, end)`` grown to whole spans plus ``n`` more on each side (unchanged if nothing overlaps)."""
    hit = covering(spans, start, end)
    if hit is None:
        return start, end
    i, j = max(0, hit[0] - n), min(len(spans), hit[1] + n)
    return min(start, int(spans[i, 0])), max(end, int(spans[j - 1, 1]))


def merge(spans: list[tuple[int, int]], gap: int = 0) -> list[tuple[int, int, list[int]]]:
    """Merge spans that overlap (or lie within ``gap`` chars); returns ``(start, end, member indices)``."""
    order = sorted(range(len(spans)), key=lambda i: spans[i])
    merged: list[tuple[int, int, list[int]]] = []
    for i in order:
        s, e = spans[i]
        if merged and s <= merged[-1][1] + gap:
            ms, me, members = merged[-1]
            merged[-1] = (ms, max(me, e), members + [i])
        else:
            merged.append((s, e, [i]))
    return merged
