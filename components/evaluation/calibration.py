"""Honest threshold calibration: choose on one half of the questions, report on the other half.

``calibrate`` splits the records with ``split_ids`` (a SHA-256 based split, identical on every machine
and run, independent of ``PYTHONHASHSEED``), chooses every threshold with ``choose_threshold`` on the
calibration split only, and then measures those thresholds on the held-out split. The held-out
records are not touched until every value has been chosen.

Decision rule: a component *answers* when ``score >= threshold`` and *abstains* when
``score < threshold``; the positive class is "the question is answerable". The candidate thresholds are
the observed scores (the lowest score that is still answered) plus one value just above the highest score
(abstain on everything). Among candidates with the same objective value the lowest threshold wins.

Objectives (``OBJECTIVES``), over the confusion counts ``tp`` (answered, answerable), ``fn`` (abstained,
answerable), ``tn`` (abstained, unanswerable), ``fp`` (answered, unanswerable):
``balanced_accuracy`` (mean of answer recall and abstention recall; a class that is absent is left out),
``accuracy``, ``answer_f1`` and ``abstention_f1``. A callable ``f(tp, fp, tn, fn) -> float`` works too.

``yaml_snippet`` turns the chosen values into the ``components: <name>: init_parameters:`` shape of a
Haystack pipeline YAML, ready to paste.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import yaml

Objective = Callable[[int, int, int, int], float]
ScoreSpec = str | Callable[[Mapping], float | None]

_EPS = 1e-12


def _safe(num: float, den: float) -> float | None:
    return num / den if den else None


def balanced_accuracy(tp: int, fp: int, tn: int, fn: int) -> float:
    """Mean of answer recall ``tp/(tp+fn)`` and abstention recall ``tn/(tn+fp)`` (absent classes left out)."""
    rates = [r for r in (_safe(tp, tp + fn), _safe(tn, tn + fp)) if r is not None]
    return sum(rates) / len(rates) if rates else 0.0


def accuracy(tp: int, fp: int, tn: int, fn: int) -> float:
    """Share of questions where answering / abstaining was the right call."""
    return _safe(tp + tn, tp + fp + tn + fn) or 0.0


def answer_f1(tp: int, fp: int, tn: int, fn: int) -> float:
    """F1 of "answered" against "answerable"."""
    return _safe(2 * tp, 2 * tp + fp + fn) or 0.0


def abstention_f1(tp: int, fp: int, tn: int, fn: int) -> float:
    """F1 of "abstained" against "unanswerable"."""
    return _safe(2 * tn, 2 * tn + fn + fp) or 0.0


OBJECTIVES: dict[str, Objective] = {
    "balanced_accuracy": balanced_accuracy,
    "accuracy": accuracy,
    "answer_f1": answer_f1,
    "abstention_f1": abstention_f1,
}


def _objective(objective: str | Objective) -> Objective:
    if callable(objective):
        return objective
    if objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r}; expected one of {', '.join(OBJECTIVES)}")
    return OBJECTIVES[objective]


def _hash_key(seed: int, item_id: Any) -> str:
    return hashlib.sha256(f"{seed}\x00{item_id}".encode()).hexdigest()


def split_ids(ids: Iterable[Any], seed: int = 0, fraction: float = 0.5) -> tuple[list, list]:
    """Split ids into ``(calibration, held_out)`` deterministically.

    The ids are ordered by ``sha256(f"{seed}\\0{id}")``; the first ``round(n * fraction)`` (at least one
    and at most ``n - 1`` when ``n >= 2``) form the calibration split. Both lists keep the input order;
    duplicate ids are kept once. The result depends only on the set of ids and the seed.
    """
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"fraction must be strictly between 0 and 1, got {fraction}")
    unique = list(dict.fromkeys(ids))
    n = len(unique)
    n_cal = min(max(int(n * fraction + 0.5), 1), n - 1) if n >= 2 else n
    chosen = set(sorted(unique, key=lambda i: _hash_key(seed, i))[:n_cal])
    return [i for i in unique if i in chosen], [i for i in unique if i not in chosen]


def confusion(scores: Sequence[float], labels: Sequence[bool], threshold: float) -> tuple[int, int, int, int]:
    """``(tp, fp, tn, fn)`` of "answer if score >= threshold" against "answerable" labels."""
    tp = fp = tn = fn = 0
    for score, label in zip(scores, labels, strict=True):
        answered, label = score >= threshold, bool(label)
        tp += answered and label
        fp += answered and not label
        tn += not answered and not label
        fn += not answered and label
    return tp, fp, tn, fn


def choose_threshold(
    scores: Sequence[float], labels: Sequence[bool], objective: str | Objective = "balanced_accuracy"
) -> float:
    """The threshold that maximises ``objective`` for "abstain if score < t" (lowest one on ties).

    Args:
        scores: one confidence score per question (higher = more likely answerable).
        labels: True for answerable questions.

    Raises:
        ValueError: no scores, lengths differ, or a score is NaN.
    """
    if len(scores) != len(labels):
        raise ValueError(f"{len(scores)} scores but {len(labels)} labels")
    if not scores:
        raise ValueError("cannot choose a threshold from no scores")
    if any(math.isnan(s) for s in scores):
        raise ValueError("scores contain NaN")
    score_fn = _objective(objective)
    pairs = sorted(zip(scores, map(bool, labels), strict=True))
    positives = sum(label for _, label in pairs)
    negatives = len(pairs) - positives
    candidates = sorted(set(scores)) + [math.nextafter(pairs[-1][0], math.inf)]
    best_t, best_value = candidates[0], -math.inf
    below_pos = below_neg = i = 0  # counts of scores < t, by label
    for t in candidates:
        while i < len(pairs) and pairs[i][0] < t:
            below_pos += pairs[i][1]
            below_neg += not pairs[i][1]
            i += 1
        value = score_fn(positives - below_pos, negatives - below_neg, below_neg, below_pos)
        if value > best_value + _EPS:
            best_t, best_value = t, value
    return best_t


def threshold_metrics(
    scores: Sequence[float],
    labels: Sequence[bool],
    threshold: float,
    objective: str | Objective = "balanced_accuracy",
) -> dict:
    """What ``threshold`` gives on these questions: objective, accuracy, answer/abstention rates."""
    tp, fp, tn, fn = confusion(scores, labels, threshold)
    return {
        "n": len(scores),
        "objective": _objective(objective)(tp, fp, tn, fn) if scores else None,
        "balanced_accuracy": balanced_accuracy(tp, fp, tn, fn) if scores else None,
        "accuracy": _safe(tp + tn, len(scores)),
        "answer_recall": _safe(tp, tp + fn),
        "abstention_precision": _safe(tn, tn + fn),
        "abstention_recall": _safe(tn, tn + fp),
    }


def _scored(records: Iterable[Mapping], spec: ScoreSpec, label_key: str) -> tuple[list, list, int]:
    """``(scores, labels, missing)`` of the records whose score under ``spec`` is not None."""
    get = spec if callable(spec) else (lambda record: record.get(spec))
    scores, labels, missing = [], [], 0
    for record in records:
        score = get(record)
        if score is None:
            missing += 1
            continue
        scores.append(float(score))
        labels.append(bool(record[label_key]))
    return scores, labels, missing


def _choose_all(records, params, objective, label_key) -> dict[str, dict[str, float]]:
    values: dict[str, dict[str, float]] = {}
    for component, fields in params.items():
        for param, spec in fields.items():
            scores, labels, _ = _scored(records, spec, label_key)
            if not scores:
                raise ValueError(f"no calibration record has a score for {component}.{param}")
            values.setdefault(component, {})[param] = choose_threshold(scores, labels, objective)
    return values


def _measure_all(records, params, values, objective, label_key) -> dict[str, dict[str, dict]]:
    measured: dict[str, dict[str, dict]] = {}
    for component, fields in params.items():
        for param, spec in fields.items():
            scores, labels, missing = _scored(records, spec, label_key)
            metrics = threshold_metrics(scores, labels, values[component][param], objective)
            measured.setdefault(component, {})[param] = {**metrics, "missing_scores": missing}
    return measured


def calibrate(
    records: Sequence[Mapping],
    params: Mapping[str, Mapping[str, ScoreSpec]],
    seed: int = 0,
    fraction: float = 0.5,
    objective: str | Objective = "balanced_accuracy",
    id_key: str = "id",
    label_key: str = "answerable",
) -> dict:
    """Choose thresholds on the calibration split and measure them on the held-out split.

    Args:
        records: one mapping per question with ``id_key``, ``label_key`` (True = answerable) and scores.
        params: ``{component: {init_parameter: score}}`` where ``score`` is a record key or a function
            ``record -> float | None``; records whose score is None are left out (``missing_scores``).
        seed, fraction: the ``split_ids`` arguments.
        objective: a name from ``OBJECTIVES`` or a callable ``f(tp, fp, tn, fn)``.

    Returns:
        ``{"seed", "fraction", "objective", "calibration_size", "held_out_size",
        "values": {component: {param: threshold}},
        "calibration": {component: {param: metrics}}, "held_out": {component: {param: metrics}}}``
        with the metrics of ``threshold_metrics`` plus ``missing_scores``.
    """
    by_id = {record[id_key]: record for record in records}
    if len(by_id) != len(records):
        raise ValueError(f"records have duplicate {id_key!r} values")
    cal_ids, held_ids = split_ids(by_id, seed=seed, fraction=fraction)
    calibration_records = [by_id[i] for i in cal_ids]
    values = _choose_all(calibration_records, params, objective, label_key)
    held_out_records = [by_id[i] for i in held_ids]
    return {
        "seed": seed,
        "fraction": fraction,
        "objective": objective if isinstance(objective, str) else getattr(objective, "__name__", "custom"),
        "calibration_size": len(calibration_records),
        "held_out_size": len(held_out_records),
        "values": values,
        "calibration": _measure_all(calibration_records, params, values, objective, label_key),
        "held_out": _measure_all(held_out_records, params, values, objective, label_key),
    }


def yaml_snippet(values: Mapping[str, Mapping[str, Any]], comment: str | None = None) -> str:
    """YAML to paste into a pipeline file: ``components: {name: {init_parameters: {param: value}}}``."""
    plain = {
        component: {"init_parameters": {param: _plain(value) for param, value in fields.items()}}
        for component, fields in values.items()
    }
    text = yaml.safe_dump({"components": plain}, sort_keys=False, default_flow_style=False)
    if comment:
        text = "".join(f"# {line}\n" for line in comment.splitlines()) + text
    return text


def _plain(value: Any) -> Any:
    """numpy scalars and the like as plain Python values, so ``safe_dump`` accepts them."""
    if hasattr(value, "item") and callable(value.item):
        return value.item()
    return value
