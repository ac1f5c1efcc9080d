"""Selective answering: how precise the answers are at each coverage, and how well confidence is calibrated.

Pure functions over ``(confidence, correct)`` pairs of the answered questions and the number of questions
asked (``n_total``; a question not answered is an abstention):

- ``answered_right`` / ``right_at`` — how many of the ``k`` most confident answers are right, for every ``k`` a
  confidence bar can give (ties enter together) / for the largest such ``k`` up to ``n``;
- ``risk_coverage`` — the same as ``coverage = k / n_total`` and ``precision`` = share of those ``k`` that are right;
- ``aurc`` — the area under the risk (1 − precision) – coverage curve, ``Σ_k risk_k / n_total``: lower is better;
- ``coverage_at_precision`` — the largest coverage whose precision is at least ``p``;
- ``expected_calibration_error`` — ``Σ_b (n_b / n) · |accuracy_b − mean confidence_b|`` over ``bins`` equal-width
  confidence bins, with the bins themselves (the reliability diagram);
- ``ece_if_calibrated`` — what ECE a *perfectly calibrated* predictor with these same confidences would show on
  this many answers (outcomes drawn from the confidences themselves, seeded), and the share of such draws at or
  above the observed ECE: on a hundred answers ECE is mostly sampling noise, and this says how much
  (consistency resampling, Bröcker & Smith 2007). A small share (< 0.05) means miscalibration the data shows.

Example::

    pts = risk_coverage([0.9, 0.8, 0.3], [True, True, False], n_total=4)
    # [(0.25, 1.0), (0.5, 1.0), (0.75, 0.667)]
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


def answered_right(confidences: Sequence[float], correct: Sequence[bool]) -> list[tuple[int, int]]:
    """``[(k, right)]``: answering the ``k`` most confident answers, ``right`` of them are correct — at every ``k``
    a confidence bar can give (equal confidences enter together, so a tie group is never split)."""
    order = sorted(range(len(confidences)), key=lambda i: -confidences[i])
    points, right = [], 0
    for k, i in enumerate(order, start=1):
        right += bool(correct[i])
        if k == len(order) or confidences[order[k]] < confidences[i]:
            points.append((k, right))
    return points


def right_at(confidences: Sequence[float], correct: Sequence[bool], n: int) -> tuple[int, int]:
    """``(k, right)`` for the most answers ``k ≤ n`` a confidence bar can show (``answered_right``); ``(0, 0)``
    when even the most confident tie group is larger than ``n``."""
    return max((p for p in answered_right(confidences, correct) if p[0] <= n), default=(0, 0))


def risk_coverage(confidences: Sequence[float], correct: Sequence[bool], n_total: int) -> list[tuple[float, float]]:
    """``[(coverage, precision)]`` from the most confident answer down; equal confidences enter together."""
    if n_total <= 0:
        return []
    return [(k / n_total, right / k) for k, right in answered_right(confidences, correct)]


def aurc(confidences: Sequence[float], correct: Sequence[bool], n_total: int) -> float | None:
    """Area under the risk–coverage curve (each answer adds its step's risk times ``1 / n_total``)."""
    if n_total <= 0 or not confidences:
        return None
    order = sorted(range(len(confidences)), key=lambda i: -confidences[i])
    area, right, k = 0.0, 0, 0
    groups: list[list[int]] = []
    for i in order:
        if groups and confidences[groups[-1][0]] == confidences[i]:
            groups[-1].append(i)
        else:
            groups.append([i])
    for group in groups:  # a tie group enters at once: each of its answers carries the group's risk
        k += len(group)
        right += sum(bool(correct[i]) for i in group)
        area += len(group) * (1 - right / k) / n_total
    return area


def coverage_at_precision(points: Sequence[tuple[float, float]], precision: float) -> float:
    """The largest coverage on the curve whose precision is ≥ ``precision`` (0.0 when none is)."""
    return max((c for c, p in points if p >= precision - 1e-12), default=0.0)


def expected_calibration_error(confidences: Sequence[float], correct: Sequence[bool], bins: int = 10):
    """``(ece, [{lo, hi, n, confidence, accuracy}])`` with ``bins`` equal-width bins over [0, 1]."""
    n = len(confidences)
    table = []
    ece = 0.0
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        idx = [i for i, c in enumerate(confidences) if (lo <= c < hi) or (b == bins - 1 and c == 1.0)]
        if not idx:
            table.append({"lo": lo, "hi": hi, "n": 0, "confidence": None, "accuracy": None})
            continue
        conf = sum(confidences[i] for i in idx) / len(idx)
        acc = sum(bool(correct[i]) for i in idx) / len(idx)
        ece += len(idx) / n * abs(acc - conf)
        table.append({"lo": lo, "hi": hi, "n": len(idx), "confidence": conf, "accuracy": acc})
    return (ece if n else None), table


def ece_if_calibrated(confidences: Sequence[float], observed: float | None, bins: int = 10, draws: int = 2000,
                      seed: int = 0) -> tuple[float | None, float | None]:
    """``(mean ECE, share of draws with ECE >= observed)`` over ``draws`` outcome sets drawn as
    ``correct_i ~ Bernoulli(confidence_i)`` — the ECE that calibration itself leaves at this sample size."""
    p = np.asarray(confidences, dtype=np.float64)
    if not len(p) or observed is None:
        return None, None
    bin_of = np.minimum((p * bins).astype(int), bins - 1)  # the bins of expected_calibration_error
    outcomes = np.random.default_rng(seed).random((draws, len(p))) < p
    ece = np.zeros(draws)
    for b in np.unique(bin_of):
        member = bin_of == b
        ece += member.sum() / len(p) * np.abs(outcomes[:, member].mean(axis=1) - p[member].mean())
    return float(ece.mean()), float((ece >= observed - 1e-12).mean())


def summary(confidences: Sequence[float], correct: Sequence[bool], n_total: int,
            threshold: float | None = None) -> dict:
    """Every number the evaluation reports about selective answering, for one set of questions."""
    points = risk_coverage(confidences, correct, n_total)
    ece, table = expected_calibration_error(confidences, correct)
    floor, share = ece_if_calibrated(confidences, ece)
    kept = [i for i, c in enumerate(confidences) if threshold is None or c >= threshold]
    return {
        "questions": n_total,
        "supported": len(confidences),
        "precision_supported": sum(map(bool, correct)) / len(correct) if correct else None,
        "coverage_supported": len(confidences) / n_total if n_total else None,
        "threshold": threshold,
        "answered": len(kept),
        "precision_answered": sum(bool(correct[i]) for i in kept) / len(kept) if kept else None,
        "coverage_answered": len(kept) / n_total if n_total else None,
        "aurc": aurc(confidences, correct, n_total),
        "coverage_at_precision_0.9": coverage_at_precision(points, 0.9),
        "coverage_at_precision_0.8": coverage_at_precision(points, 0.8),
        "ece": ece,
        "ece_if_calibrated": floor,
        "ece_consistency": share,
        "reliability": table,
        "curve": [[round(c, 4), round(p, 4)] for c, p in points],
    }
