"""The report's "Answers you can trust" part: the risk–coverage curve, the reliability diagram and their table.

Used by ``components.evaluation.report`` (figures via ``make_plots``, the section via ``build_sections``); the data is
``summary["selective"]`` (``components.evaluation.selective.summary`` for all questions and for each half) and, after
``--calibrate``, ``summary["confidence_calibration"]`` (the refitted combiner scored on the report half).
"""

from __future__ import annotations

from typing import Mapping

KEYS = [("precision_supported", "precision of SUPPORTED"), ("coverage_supported", "coverage of SUPPORTED"),
        ("threshold", "min_confidence in force"), ("precision_answered", "precision answered (≥ bar)"),
        ("coverage_answered", "coverage answered (≥ bar)"), ("coverage_at_precision_0.9", "coverage at precision 0.9"),
        ("coverage_at_precision_0.8", "coverage at precision 0.8"), ("aurc", "AURC"),
        ("ece", "expected calibration error"),
        ("ece_if_calibrated", "ECE a perfectly calibrated predictor shows here"),
        ("ece_consistency", "share of calibrated draws with ECE ≥ observed")]


def parts(summary: Mapping) -> dict[str, Mapping]:
    """``{label: selective summary}`` of every part that has a curve."""
    out = {k: v for k, v in (summary.get("selective") or {}).items() if v.get("curve")}
    refit = summary.get("confidence_calibration") or {}
    for half in ("choose_half", "report_half"):
        if (refit.get(half) or {}).get("curve"):
            out[f"refit {half}"] = refit[half]
    return out


def risk_coverage_figure(new_figure, curves: Mapping[str, Mapping]):
    figure, ax = new_figure()
    for name, m in curves.items():
        pts = m["curve"]
        ax.plot([c for c, _ in pts], [p for _, p in pts], label=f"{name} (AURC {m['aurc']:.3f})")
    ax.axhline(0.9, color="grey", linestyle=":", label="precision 0.9")
    ax.set_xlabel("coverage (share of questions answered)")
    ax.set_ylabel("precision of answered")
    ax.set_ylim(0, 1.02)
    ax.legend()
    return figure


def reliability_figure(new_figure, curves: Mapping[str, Mapping]):
    figure, ax = new_figure()
    ax.plot([0, 1], [0, 1], color="grey", linestyle=":", label="perfectly calibrated")
    for name, m in curves.items():
        bins = [b for b in m["reliability"] if b["n"]]
        ax.plot([b["confidence"] for b in bins], [b["accuracy"] for b in bins], marker="o",
                label=f"{name} (ECE {m['ece']:.3f})")
    ax.set_xlabel("mean confidence in bin")
    ax.set_ylabel("share right in bin")
    ax.legend()
    return figure


def figures(new_figure, summary: Mapping) -> dict:
    curves = parts(summary)
    if not curves:
        return {}
    return {"risk_coverage": risk_coverage_figure(new_figure, curves),
            "reliability": reliability_figure(new_figure, curves)}


def section(summary: Mapping, image, fmt) -> list:
    curves = parts(summary)
    if not curves:
        return []
    rows = [[label] + [fmt(m.get(key)) for m in curves.values()] for key, label in KEYS]
    blocks = [("text", "Precision of what is said against how much is answered; confidence is the calibrated "
                       "probability that an answer is right (README, Confidence)."),
              ("table", ["metric", *curves], rows)]
    spread = (summary.get("confidence_calibration") or {}).get("resplits") or {}
    if spread.get("precision_answered"):
        blocks.append(("table", ["refit on each of " + str(spread["splits"]) + " other splits, report half at its bar",
                                 "mean", "min", "max"],
                       [[key, fmt(spread[key]["mean"]), fmt(spread[key]["min"]), fmt(spread[key]["max"])]
                        for key in ("precision_answered", "coverage_answered", "coverage_at_precision_0.9", "ece")
                        if spread.get(key)]
                       + [[f"splits with precision ≥ {spread['target_precision']}", fmt(spread["at_target"]), "", ""]]))
    blocks += image("risk_coverage", "precision vs coverage") + image("reliability", "reliability diagram")
    return [("Answers you can trust", blocks)]
