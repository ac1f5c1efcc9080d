"""Turning an extractive QA model's start/end logits into scored answer spans (numpy only, no torch).

One *window* is one tokenised ``question + context`` sequence (a long context overflows into several
windows that share ``stride`` tokens). For each window the model gives a start and an end logit per token.
The conventions follow transformers-haystack's ``TransformersExtractiveReader`` so that both readers pick
the same spans with the same scores:

- only context tokens can be part of an answer: sequence id 1 and attention 1 (question, special and
  padding tokens are masked);
- a span of tokens ``i..j`` needs ``j >= i`` and scores ``logit = start[i] + end[j]``;
- its probability is ``sigmoid(calibration_factor * logit)`` — each span on its own, no softmax over the
  window, so scores from different windows and documents are comparable;
- its characters are ``offsets[i][0] : offsets[j][1]`` of the context string (the fast tokenizer's
  ``offset_mapping``).

Two things the peer does not do:

- ``max_answer_length`` bounds a span to ``j - i + 1`` tokens (``None``: no bound, as in the peer);
- the SQuAD 2.0 *null span*: ``null_logit = start[cls] + end[cls]`` is the model's score for "this window
  holds no answer"; ``cls_no_answer`` turns the windows' null logits into a no-answer probability on the
  same sigmoid scale, so comparing it with the best span is SQuAD 2.0's decision rule.

The peer's own no-answer score (``complement_no_answer``: the probability that none of the returned
answers is right, ``prod(1 - score)``) and its overlap de-duplication (``dedup_by_overlap``) are here too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

T = TypeVar("T")


def sigmoid(x):
    """Logistic function, numerically stable for large ``|x|``, for scalars and arrays (float64)."""
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(x)
    pos = x >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-x[pos]))
    ex = np.exp(x[~pos])
    out[~pos] = ex / (1.0 + ex)
    return out if out.ndim else float(out)


def calibrated(logit, calibration_factor: float = 0.1):
    """Probability of a span from its logit: ``sigmoid(calibration_factor * logit)`` (the peer's calibration)."""
    return sigmoid(calibration_factor * np.asarray(logit, dtype=np.float64))


def context_mask(sequence_ids: np.ndarray, attention_mask: np.ndarray | None = None) -> np.ndarray:
    """Tokens that may be part of an answer: sequence id 1 (``-1`` stands for special tokens) and attended."""
    mask = np.asarray(sequence_ids) == 1
    if attention_mask is not None:
        mask &= np.asarray(attention_mask) == 1
    return mask


def span_logits(
    start_logits: np.ndarray, end_logits: np.ndarray, mask: np.ndarray, max_answer_length: int | None = None
) -> np.ndarray:
    """Logits of all spans as a band: ``out[i, d] = start[i] + end[i + d]`` for ``0 <= d < width``.

    ``width`` is ``max_answer_length`` (or the sequence length when ``None``). Spans that leave the sequence
    or touch a masked token are ``-inf``.
    """
    n = len(start_logits)
    width = n if max_answer_length is None else max(0, min(int(max_answer_length), n))
    start = np.where(mask, start_logits, -np.inf)
    end = np.where(mask, end_logits, -np.inf)
    ends = np.full((n, width), -np.inf, dtype=np.result_type(end_logits, np.float32))
    for d in range(width):
        ends[: n - d, d] = end[d:]
    return start[:, None] + ends


def top_spans(
    start_logits: np.ndarray,
    end_logits: np.ndarray,
    mask: np.ndarray,
    k: int,
    max_answer_length: int | None = None,
) -> list[tuple[int, int, float]]:
    """The ``k`` best valid spans as ``(start_token, end_token, logit)``, best first.

    Ties in the logit are broken by the earlier start, then the shorter span, so the result is deterministic.
    """
    start_logits, end_logits = np.asarray(start_logits), np.asarray(end_logits)
    band = span_logits(start_logits, end_logits, mask, max_answer_length)
    flat = band.ravel()
    valid = np.flatnonzero(np.isfinite(flat))
    if valid.size == 0 or k <= 0:
        return []
    if valid.size > k:
        # everything strictly better than the k-th value, plus enough of those equal to it
        kth = np.partition(flat[valid], valid.size - k)[valid.size - k]
        valid = valid[flat[valid] >= kth]
    width = band.shape[1]
    starts, lengths = np.divmod(valid, width)
    order = np.lexsort((lengths, starts, -flat[valid]))[:k]
    return [(int(starts[o]), int(starts[o] + lengths[o]), float(flat[valid[o]])) for o in order]


def null_logit(start_logits: np.ndarray, end_logits: np.ndarray, cls_index: int = 0) -> float:
    """SQuAD 2.0 no-answer logit of a window: the score of the span that starts and ends on ``[CLS]``/``<s>``."""
    return float(start_logits[cls_index]) + float(end_logits[cls_index])


@dataclass(frozen=True)
class SpanCandidate:
    """One answer span of one window: tokens ``start_token..end_token`` = characters ``[char_start, char_end)``
    of the window's context, with its raw ``logit`` and calibrated ``score``; ``keyed``: a value cell of a row the
    question names by its key (``keyed_lookup``), not a span the model chose."""

    window: int
    start_token: int
    end_token: int
    char_start: int
    char_end: int
    logit: float
    score: float
    keyed: bool = False


@dataclass(frozen=True)
class WindowDecoding:
    """The best spans of one window (best first) and the window's no-answer logit and probability; with the
    window's logits, token offsets and context mask kept, any character range can be scored later
    (``range_logit``)."""

    window: int
    spans: list[SpanCandidate]
    null_logit: float
    null_score: float
    start_logits: np.ndarray | None = None
    end_logits: np.ndarray | None = None
    offsets: np.ndarray | None = None
    mask: np.ndarray | None = None


def range_logit(decoding: WindowDecoding, char_start: int, char_end: int,
                calibration_factor: float = 0.1) -> SpanCandidate | None:
    """The span of ``decoding``'s window that is exactly ``[char_start, char_end)`` of its context — from the token
    that starts there to the token that ends there, both context tokens — scored as any span is
    (``start[i] + end[j]``, no length bound: a table cell or a config value is read whole); None when the window
    does not hold the whole range on token boundaries."""
    if decoding.start_logits is None or char_end <= char_start:
        return None
    ctx = np.flatnonzero(decoding.mask)
    starts = [i for i in ctx if decoding.offsets[i][0] == char_start]
    ends = [j for j in ctx if decoding.offsets[j][1] == char_end]
    if not starts or not ends or ends[-1] < starts[0]:
        return None
    i, j = int(starts[0]), int(ends[-1])
    logit = float(decoding.start_logits[i]) + float(decoding.end_logits[j])
    return SpanCandidate(decoding.window, i, j, char_start, char_end, logit,
                         float(calibrated(logit, calibration_factor)))


def decode_window(
    start_logits: np.ndarray,
    end_logits: np.ndarray,
    offsets: np.ndarray,
    sequence_ids: np.ndarray,
    attention_mask: np.ndarray | None = None,
    *,
    k: int = 20,
    max_answer_length: int | None = None,
    calibration_factor: float = 0.1,
    cls_index: int = 0,
    window: int = 0,
) -> WindowDecoding:
    """Best ``k`` spans of one window with character offsets and probabilities, plus its null score.

    :param offsets: ``(seq_len, 2)`` character offsets of each token into the context string.
    :param sequence_ids: ``(seq_len,)`` 0 for question tokens, 1 for context tokens, -1 for special tokens.
    """
    mask = context_mask(sequence_ids, attention_mask)
    spans = [
        SpanCandidate(
            window=window,
            start_token=i,
            end_token=j,
            char_start=int(offsets[i][0]),
            char_end=int(offsets[j][1]),
            logit=logit,
            score=float(calibrated(logit, calibration_factor)),
        )
        for i, j, logit in top_spans(start_logits, end_logits, mask, k, max_answer_length)
    ]
    null = null_logit(start_logits, end_logits, cls_index)
    return WindowDecoding(window, spans, null, float(calibrated(null, calibration_factor)),
                          np.asarray(start_logits), np.asarray(end_logits), np.asarray(offsets), mask)


def cls_no_answer(null_logits: Iterable[float], calibration_factor: float = 0.1) -> float:
    """No-answer probability of a query from its windows' null logits (SQuAD 2.0).

    The answer is missing only if even the window most confident that it holds an answer says so, hence the
    *minimum* null logit (as in the SQuAD 2.0 reference post-processing), calibrated like a span. The
    no-answer wins exactly when this exceeds the best span's probability. No windows at all: 1.0.
    """
    logits = list(null_logits)
    return float(calibrated(min(logits), calibration_factor)) if logits else 1.0


def complement_no_answer(scores: Iterable[float]) -> float:
    """The peer's no-answer score: probability that none of the answers is correct, ``prod(1 - score)``."""
    return math.prod(1.0 - s for s in scores)


def overlap_chars(a_start: int, a_end: int, b_start: int, b_end: int) -> int:
    """Number of characters two ``[start, end)`` ranges share (the peer's formula; touching ranges give 0)."""
    if a_start <= b_end and b_start <= a_end:
        return min(a_end - a_start, a_end - b_start, b_end - a_start, b_end - b_start)
    return 0


def dedup_by_overlap(
    items: Sequence[T],
    key: Callable[[T], tuple[Hashable, int, int] | None],
    overlap_threshold: float | None,
) -> list[T]:
    """Drop items whose span overlaps an already kept item of the same group by more than the threshold.

    ``items`` must be sorted best first. ``key(item)`` gives ``(group, start, end)`` — the group is the
    document — or ``None`` for items that are always kept. The overlap is measured as a fraction of
    *either* span, so a span inside a kept span (fraction 1.0) goes. ``None`` threshold keeps everything.
    """
    if overlap_threshold is None:
        return list(items)
    kept: list[T] = []
    kept_keys: list[tuple[Hashable, int, int]] = []
    for item in items:
        k = key(item)
        if k is not None and any(_too_close(k, other, overlap_threshold) for other in kept_keys):
            continue
        kept.append(item)
        if k is not None:
            kept_keys.append(k)
    return kept


def _too_close(a: tuple[Hashable, int, int], b: tuple[Hashable, int, int], threshold: float) -> bool:
    if a[0] != b[0]:
        return False
    shared = overlap_chars(b[1], b[2], a[1], a[2])
    if shared == 0:
        return False
    return shared / (b[2] - b[1]) > threshold or shared / (a[2] - a[1]) > threshold
