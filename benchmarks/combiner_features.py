"""The confidence combiner's signals, compared: the shipped set against a few transforms of it, each refitted on the
choose half and scored on the report half of the same many splits of ``make calibrate``'s held-out rows (paired:
every variant sees the same splits). A benchmark, not a test; the development article is never read here.

    make calibrate HELDOUT_QUESTIONS=800 MORE_QUESTIONS=800       # writes reports/heldout-calibration/
    python benchmarks/combiner_features.py                          # 40 splits, about 4 minutes here
    python benchmarks/combiner_features.py --rows DIR --splits 20 --json

The variants feed the logistic combiner a probability's logit (the verifier's P(right) enters linearly in the
shipped set, so 0.97 and 0.999 are nearly the same to it) and one product of signals. Printed per variant: the means
over the splits of coverage at precision 0.9 on the report half (the best any bar could do there: how well the
confidence ranks), precision and coverage at the variant's own fitted bar, and ECE; and the paired difference from
the shipped set with its standard error.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "training"))

from benchmarks._common import ROOT, finish  # noqa: E402

ROWS = ROOT / "reports" / "heldout-calibration"
METRICS = ("coverage_at_precision_0.9", "precision_answered", "coverage_answered", "ece")
PROBABILITIES = ("verifier", "reader_score", "no_answer", "window_no_answer")


def logit(p) -> float:
    """log(p / (1 - p)), ``p`` held inside [1e-4, 1 - 1e-4] (a missing signal reads 0)."""
    p = min(max(float(p or 0.0), 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


def with_derived(signals: dict) -> dict:
    """``signals`` and the derived ones the variants use: ``<name>_logit`` of each probability, and
    ``verifier_logit_x_window_no_answer``."""
    out = dict(signals)
    for name in PROBABILITIES:
        out[f"{name}_logit"] = logit(signals.get(name))
    out["verifier_logit_x_window_no_answer"] = out["verifier_logit"] * float(signals.get("window_no_answer") or 0.0)
    return out


def variants(shipped: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """The shipped signals and each variant's (named as the rows' ``signals`` keys, derived ones included)."""
    as_logit = tuple("verifier_logit" if f == "verifier" else f for f in shipped)
    return {
        "shipped signals": shipped,
        "+ verifier logit": shipped + ("verifier_logit",),
        "verifier as its logit": as_logit,
        "every probability as its logit": tuple(f"{f}_logit" if f in PROBABILITIES else f for f in shipped),
        "verifier as its logit + its product with the window's null": as_logit + ("verifier_logit_x_window_no_answer",),
    }


def load_rows(folder: Path) -> list[dict]:
    """``make calibrate``'s rows: the held-out articles' (``per_query.jsonl``, each with its kind) and the
    calibration blocks' (``blocks.jsonl``), signals with the derived ones."""
    from calibrate import MORE, squad_kinds

    missing = [n for n in ("per_query.jsonl", "blocks.jsonl") if not (folder / n).exists()]
    if missing:
        raise SystemExit(f"combiner_features: {folder} has no {' or '.join(missing)}. Run `make calibrate "
                         f"HELDOUT_QUESTIONS=800 MORE_QUESTIONS=800` first (it writes reports/heldout-calibration/), "
                         f"or pass --rows DIR of such a run.")
    read = lambda n: [json.loads(x) for x in (folder / n).read_text(encoding="utf-8").splitlines() if x.strip()]
    rows = squad_kinds(read("per_query.jsonl"), MORE) + [dict(r, kind="structured") for r in read("blocks.jsonl")]
    return [dict(r, signals=with_derived(r["signals"])) if r.get("signals") else r for r in rows]


def compare(rows: list[dict], splits: int, share: float, target: float = 0.9, echo=print) -> dict:
    """Each variant's ``confidence_eval.resplits`` over seeds 1..``splits``, and its paired difference from the
    shipped signals per metric (``{"mean", "se"}``)."""
    from components.core.verification.confidence import SIGNALS
    from components.evaluation.confidence_eval import resplits

    out, base = {}, None
    for name, features in variants(tuple(SIGNALS)).items():
        spread = resplits(rows, target, splits, share, features)
        per = {s["seed"]: s for s in spread["per_split"] if "note" not in s}
        entry = {"features": list(features), **{m: spread.get(m) for m in METRICS}}
        if base is None:
            base = per
        else:
            for m in METRICS:
                d = [per[k][m] - base[k][m] for k in per.keys() & base.keys()
                     if isinstance(per[k].get(m), (int, float)) and isinstance(base[k].get(m), (int, float))]
                if len(d) > 1:
                    entry[f"{m}_difference"] = {"mean": round(statistics.fmean(d), 4),
                                                "se": round(statistics.stdev(d) / math.sqrt(len(d)), 4), "n": len(d)}
        out[name] = entry
        diff = entry.get("coverage_at_precision_0.9_difference")
        echo(f"{name:62s} coverage at P{target:g} {entry['coverage_at_precision_0.9']['mean']:.4f}"
             + (f" ({diff['mean']:+.4f} ± {diff['se']:.4f})" if diff else "")
             + f"  at its bar: precision {entry['precision_answered']['mean']:.4f}, coverage "
               f"{entry['coverage_answered']['mean']:.4f}, ECE {entry['ece']['mean']:.4f}")
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", default=str(ROWS), help="a `make calibrate` report folder (per_query.jsonl, blocks.jsonl)")
    p.add_argument("--splits", type=int, default=40)
    p.add_argument("--unanswerable-share", type=float, default=0.2, help="the shipped YAML's (0.2)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if args.splits < 2:
        raise SystemExit(f"combiner_features: --splits is {args.splits}; a paired difference needs at least 2.")
    import warnings

    warnings.filterwarnings("ignore", category=FutureWarning)  # scikit-learn's notices about its own future API
    report = {"load_average_before": os.getloadavg(), "rows": args.rows, "splits": args.splits,
              "unanswerable_share": args.unanswerable_share}
    rows = load_rows(Path(args.rows))
    report["variants"] = compare(rows, args.splits, args.unanswerable_share,
                                 echo=(lambda s: print(s, file=sys.stderr)) if args.json else print)
    return finish(report, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
