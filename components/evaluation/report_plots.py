"""The evaluation report's plots, drawn with matplotlib's Agg canvas directly (``pyplot`` and the global
backend are not touched): recall curves, score distributions, the failure taxonomy and, through
``report_selective``, risk–coverage and reliability.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from components.evaluation import report_selective

STAGE_ORDER = ("bm25", "dense", "fused", "reranked")


def stages_in_order(stages: Iterable[str]) -> list[str]:
    """Known stages in pipeline order first, then any others in the order given."""
    stages = list(stages)
    return [s for s in STAGE_ORDER if s in stages] + [s for s in stages if s not in STAGE_ORDER]




def new_figure(width: float = 6.4, height: float = 4.0):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(figure)
    return figure, figure.add_subplot()


def save_png(figure, path: Path) -> Path:
    figure.tight_layout()
    figure.savefig(path, format="png")
    return path


def recall_curves_figure(curves: Mapping[str, Sequence[float]]):
    """Recall@k against k (log axis), one line per stage."""
    figure, ax = new_figure()
    for stage in stages_in_order(curves):
        values = list(curves[stage])
        ax.plot(range(1, len(values) + 1), values, label=stage)
    ax.set_xscale("log")
    longest = max((len(values) for values in curves.values()), default=1)
    ticks = [k for k in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000) if k <= longest]
    ax.set_xticks(ticks, [str(k) for k in ticks])
    ax.minorticks_off()
    ax.set_xlabel("k")
    ax.set_ylabel("recall@k")
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    ax.legend()
    return figure


def score_distributions_figure(scores: Mapping[str, Any]):
    """Histograms of answerable vs unanswerable scores, with the threshold as a dashed vertical line."""
    figure, ax = new_figure()
    groups = {name: list(scores.get(name) or []) for name in ("answerable", "unanswerable")}
    everything = groups["answerable"] + groups["unanswerable"]
    low, high = (min(everything), max(everything)) if everything else (0.0, 1.0)
    bins = [low + (high - low) * i / 30 for i in range(31)] if high > low else 10
    for name, values in groups.items():
        if values:
            ax.hist(values, bins=bins, alpha=0.55, label=f"{name} (n={len(values)})")
    threshold = scores.get("threshold")
    if threshold is not None:
        ax.axvline(threshold, color="black", linestyle="--", label=f"threshold = {threshold:.3g}")
    ax.set_xlabel("score")
    ax.set_ylabel("questions")
    ax.legend()
    return figure


def taxonomy_figure(totals: Mapping[str, int]):
    """Bar chart of the failure taxonomy totals, one bar per label."""
    figure, ax = new_figure()
    labels = list(totals)
    ax.bar(range(len(labels)), [totals[label] for label in labels], color="#4a78a8")
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
    ax.set_ylabel("questions")
    return figure


def make_plots(out_dir: Path, summary: Mapping) -> dict[str, Path]:
    """Draw the standard plots whose data is in ``summary``; returns ``{name: png path}``."""
    figures = {}
    if summary.get("recall_curves"):
        figures["recall_curves"] = recall_curves_figure(summary["recall_curves"])
    scores = summary.get("scores") or {}
    if scores.get("answerable") or scores.get("unanswerable"):
        figures["score_distributions"] = score_distributions_figure(scores)
    if summary.get("taxonomy"):
        figures["taxonomy"] = taxonomy_figure(summary["taxonomy"])
    figures.update(report_selective.figures(new_figure, summary))
    return {name: save_png(figure, out_dir / f"{name}.png") for name, figure in figures.items()}
