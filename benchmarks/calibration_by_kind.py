"""Precision and coverage of the shipped confidence bar on each kind of held-out data, from a ``--calibrate`` run's
``per_query.jsonl``: the report half (never fitted on) split into the held-out SQuAD training articles and the
held-out squad2-more articles (adversarial unanswerable questions), with ECE. A benchmark, not a test.

    make calibrate HELDOUT_QUESTIONS=800 MORE_QUESTIONS=800
    python benchmarks/calibration_by_kind.py reports/heldout-calibration/per_query.jsonl [--json]
    python benchmarks/calibration_by_kind.py … --refit-share 0.5     # refit on the same choose half at another
                                                                     # unanswerable share (no pipeline run)
    python benchmarks/calibration_by_kind.py … --refit-share 0.2 --save   # and save it as the shipped combiner
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import ROOT  # noqa: E402

MORE = ROOT.parent / "shared" / "data" / "squad2-more" / "dev-v2.0-29-articles.json"


def more_ids() -> set[str]:
    data = json.loads(MORE.read_text(encoding="utf-8"))["data"]
    return {qa["id"] for a in data for p in a["paragraphs"] for qa in p["qas"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("per_query", help="per_query.jsonl of a --calibrate run")
    ap.add_argument("--calibration", default=str(ROOT / "pipelines" / "calibration" / "offline.json"))
    ap.add_argument("--refit-share", type=float, default=None, metavar="S",
                    help="refit the combiner on the choose half at this unanswerable share and report with it")
    ap.add_argument("--save", action="store_true",
                    help="with --refit-share: write the refitted combiner into --calibration (the fit's record kept)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from components.core.verification.confidence import CalibrationFile

    file = CalibrationFile.load(args.calibration, "calibration_by_kind")
    cal = file.get("extractive")
    rows = [json.loads(line) for line in Path(args.per_query).read_text(encoding="utf-8").splitlines() if line]
    from components.evaluation.confidence_eval import fit_calibrator, halves, kind_summary, resplits

    choose, report_half = halves(rows)  # the report half: what the combiner and its bar never saw
    if args.refit_share is not None:
        fitted_on = {**cal.fitted_on, "refit_from": Path(args.per_query).name}
        for key in ("size", "right", "C", "unanswerable_share", "bar_chosen_on"):
            fitted_on.pop(key, None)
        cal = fit_calibrator(choose, cal.target_precision or 0.9, fitted_on, args.refit_share)
        if args.save:
            file.calibrators["extractive"] = cal
            file.save(args.calibration)
    adversarial = more_ids()
    out = {"bar": cal.min_confidence, "unanswerable_share": args.refit_share}
    for name, keep in (("training articles", lambda r: r["id"] not in adversarial),
                       ("squad2-more", lambda r: r["id"] in adversarial), ("both", lambda r: True)):
        out[name] = kind_summary([r for r in report_half if keep(r)], cal)
    if args.refit_share is not None:
        spread = resplits(rows, 0.9, 20, args.refit_share)
        out["resplits"] = {k: spread[k] for k in spread if k != "per_split"}
    print(json.dumps(out, indent=None if args.json else 2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
