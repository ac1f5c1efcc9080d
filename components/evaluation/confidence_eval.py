"""The evaluation side of confidence: risk–coverage on SQuAD rows, and ``--calibrate``'s fit of the combiner.

Rows (from ``evaluate.evaluate_squad``) carry ``supported`` (the verifier said SUPPORTED, before the confidence
bar), ``signals``, ``confidence`` and ``answer_correct``. ``selective_report`` gives the numbers for all rows and
for each half of ``calibration.split_ids`` (seed 0: the *choose* half the shipped calibrator was fitted on, and
the *report* half it was not). ``fit_calibrator`` reads the choose half only — the report half's rows are never
passed to it — and the report half is then scored with the new combiner, from the signals the run recorded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from components.evaluation import calibration, selective

from components.core.verification import confidence
from components.app.runner import reader_kind
from components.core.errors import SpanQAError

SEED = 0


def halves(rows: list[dict], seed: int = SEED) -> tuple[list[dict], list[dict]]:
    """``(choose, report)`` rows by the SHA-256 split of their ids (the same split as every --calibrate)."""
    choose_ids, report_ids = calibration.split_ids([r["id"] for r in rows], seed=seed)
    by_id = {r["id"]: r for r in rows}
    return [by_id[i] for i in choose_ids], [by_id[i] for i in report_ids]


def selective_of(rows: list[dict], calibrator: confidence.Calibrator | None = None,
                 threshold: float | None = None) -> dict:
    """Risk–coverage numbers of ``rows``; with ``calibrator`` the confidences are recomputed from the signals."""
    supported = [r for r in rows if r.get("supported")]
    if calibrator is not None:
        confs = [calibrator.predict(r["signals"]) for r in supported]
    else:
        confs = [r["confidence"] for r in supported]
    if any(c is None for c in confs):
        return {"questions": len(rows), "supported": len(supported), "note": "answers carry no confidence "
                "(calibration: null); run --calibrate to fit one"}
    return selective.summary(confs, [r["answer_correct"] for r in supported], len(rows), threshold)


def selective_report(rows: list[dict], threshold: float | None) -> dict:
    choose, report = halves(rows)
    return {"all": selective_of(rows, threshold=threshold), "choose_half": selective_of(choose, threshold=threshold),
            "report_half": selective_of(report, threshold=threshold)}


def kind_summary(rows: list[dict], calibrator: confidence.Calibrator, bar: float | None = None) -> dict:
    """What ``calibrator`` at ``bar`` (its own by default) shows of ``rows`` as sampled: questions, unanswerable ones,
    answers shown, right ones, precision, coverage of all questions and ECE of the SUPPORTED answers' confidences."""
    supported = [r for r in rows if r.get("supported") and r.get("signals")]
    confs = [calibrator.predict(r["signals"]) for r in supported]
    right = [bool(r["answer_correct"]) for r in supported]
    bar = calibrator.min_confidence if bar is None else bar
    shown = [y for c, y in zip(confs, right) if c >= (bar or 0.0)]
    n = len(rows)
    ece = selective.expected_calibration_error(confs, right)[0] if confs else None
    return {"questions": n, "unanswerable": sum(not r["answerable"] for r in rows), "shown": len(shown),
            "right": sum(shown), "precision": round(sum(shown) / len(shown), 3) if shown else None,
            "coverage": round(len(shown) / n, 3) if n else None, "ece": round(ece, 3) if ece is not None else None}


def row_weights(rows: list[dict], answers: list[dict], unanswerable_share: float | None):
    """``confidence.prior_weights`` of ``answers`` (some of ``rows``), the share counted over ``rows``' questions."""
    if unanswerable_share is None:
        return None
    return confidence.prior_weights([not r["answerable"] for r in answers], len(rows),
                                    sum(not r["answerable"] for r in rows), unanswerable_share)


def at_share(rows: list[dict], calibrator: confidence.Calibrator, unanswerable_share: float | None) -> dict | None:
    """Precision and coverage of what ``calibrator``'s bar answers in ``rows``, counted as if ``unanswerable_share``
    of the questions were unanswerable (``row_weights``); None without a share."""
    if unanswerable_share is None:
        return None
    try:
        w = row_weights(rows, rows, unanswerable_share)
    except ValueError as exc:  # a half without unanswerable (or answerable) questions cannot be re-weighted
        return {"unanswerable_share": unanswerable_share, "note": str(exc)}
    bar = calibrator.min_confidence or 0.0
    kept = [i for i, r in enumerate(rows) if r.get("supported") and r.get("signals")
            and calibrator.predict(r["signals"]) >= bar]
    answered = sum(w[i] for i in kept)
    right = sum(w[i] for i in kept if rows[i]["answer_correct"])
    return {"unanswerable_share": unanswerable_share, "answered": len(kept),
            "precision_answered": round(right / answered, 4) if answered else None,
            "coverage_answered": round(answered / w.sum(), 4)}


def fit_calibrator(choose_rows: list[dict], target_precision: float | None, fitted_on: dict,
                   unanswerable_share: float | None = None,
                   features: tuple[str, ...] = confidence.SIGNALS) -> confidence.Calibrator:
    """Fit the combiner on the SUPPORTED answers of ``choose_rows`` (the only rows it ever sees), re-weighted to
    ``unanswerable_share`` when given; ``features``: the signals it combines (names in each row's ``signals``)."""
    supported = [r for r in choose_rows if r.get("supported") and r.get("signals")]
    try:
        weights = row_weights(choose_rows, supported, unanswerable_share)
        return confidence.fit([r["signals"] for r in supported], [r["answer_correct"] for r in supported],
                              target_precision, features=features,
                              fitted_on=dict(fitted_on, unanswerable_share=unanswerable_share), weights=weights)
    except ValueError as exc:
        raise SpanQAError(f"--calibrate could not fit the confidence combiner: {exc}. Evaluate more questions "
                          f"(raise or drop --limit) on a SQuAD 2.0 file.") from None


RESPLIT_KEYS = ("precision_answered", "coverage_answered", "coverage_at_precision_0.9", "ece")


def resplits(rows: list[dict], target_precision: float, splits: int, unanswerable_share: float | None = None,
             features: tuple[str, ...] = confidence.SIGNALS, fit_only: list[dict] = ()) -> dict[str, Any] | None:
    """How much the report half's numbers owe to the one split: the combiner refitted on the choose half of each of
    ``splits`` other splits (seeds 1..splits; the shipped one is seed 0) and scored on that split's report half at
    its own bar (a combiner of ``features``; ``fit_only``: rows every choose half also holds, never reported).
    ``{"splits", "per_split": [{seed, metric: value}],
    metric: {"mean", "min", "max"}, "at_target": share of splits whose report-half precision reaches the target}``;
    None for ``splits`` 0."""
    if splits <= 0:
        return None
    per_split = []
    for seed in range(1, splits + 1):
        choose, report = halves(rows, seed)
        try:
            cal = fit_calibrator(choose + list(fit_only), target_precision, {"half": f"choose (seed {seed})"},
                                 unanswerable_share, features)
        except SpanQAError:  # a split whose choose half cannot be fitted: counted, not hidden
            per_split.append({"seed": seed, "note": "too few answers to fit"})
            continue
        m = selective_of(report, cal, cal.min_confidence)
        per_split.append({"seed": seed, **{k: m.get(k) for k in RESPLIT_KEYS}})
    out: dict[str, Any] = {"splits": splits, "target_precision": target_precision, "per_split": per_split}
    for key in RESPLIT_KEYS:
        values = [s[key] for s in per_split if isinstance(s.get(key), (int, float))]
        if values:
            out[key] = {"mean": round(sum(values) / len(values), 4), "min": round(min(values), 4),
                        "max": round(max(values), 4), "n": len(values)}
    precisions = [s["precision_answered"] for s in per_split if isinstance(s.get("precision_answered"), (int, float))]
    out["at_target"] = round(sum(p >= target_precision for p in precisions) / len(precisions), 4) if precisions else None
    return out


def save_calibrator(cal: confidence.Calibrator, kind: str, path: str | None) -> str | None:
    """Write ``cal`` as the ``kind`` combiner of the calibration file at ``path`` (relative to the project root when
    not found as given), keeping the file's other combiners; the path written, or None without a path."""
    if not path:
        return None
    path = confidence.project_path(path)
    file = confidence.CalibrationFile.load(path, missing_ok=True)
    file.calibrators[kind] = cal
    return str(file.save(path))


def calibrate_confidence(rows: list[dict], runner, dataset: str, target_precision: float | None,
                         out_path: str | None, unanswerable_share: float | None = None,
                         splits: int = 20) -> dict[str, Any]:
    """Fit on the choose half, save to ``out_path`` (default: the file the verifier names), report the other half
    (as sampled, and at ``unanswerable_share`` when given), and the spread of the report half's numbers over
    ``splits`` other choose/report splits (``resplits``)."""
    verifier = runner.pipeline.get_component(runner.verifier) if runner.verifier else None
    if verifier is None:
        raise SpanQAError("--calibrate: the pipeline has no VerifierRouter, whose answers confidence is about.")
    kind = reader_kind(runner)
    old = verifier.calibrator(kind)
    target = target_precision if target_precision is not None else (old.target_precision if old else None) or 0.9
    choose, report = halves(rows)
    try:
        cal = fit_calibrator(choose, target, {"dataset": Path(dataset).name, "half": f"choose (seed {SEED})",
                                              "served_by": runner.models()}, unanswerable_share)
    except SpanQAError as exc:  # too few answers: say so, keep the file as it is
        return {"saved_to": None, "kind": kind, "warnings": [str(exc)]}
    saved = save_calibrator(cal, kind, out_path or verifier.calibration)
    return {
        "saved_to": saved, "kind": kind, "target_precision": target, "min_confidence": cal.min_confidence,
        "coefficients": dict(zip(cal.features, [round(c, 4) for c in cal.coef])),
        "fitted_on": cal.fitted_on,
        "report_half": selective_of(report, cal, cal.min_confidence),
        "choose_half": selective_of(choose, cal, cal.min_confidence),
        "report_half_at_share": at_share(report, cal, unanswerable_share),
        "resplits": resplits(rows, target, splits, unanswerable_share),
    }
