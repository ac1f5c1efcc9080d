"""Issue 3's and issue 8's reading targets on a SQuAD 2.0 file, printed against the targets (a benchmark, not a test).

Runs ``run.py PIPELINE --eval SQUAD --report DIR`` for ``pipelines/extractive.yaml`` (all questions) and
``pipelines/generative.yaml`` (the first ``--generative-limit`` questions: a 135M model on two CPU cores
reads about 8 seconds per question), then reads each run's ``per_query.jsonl`` and prints:

- answerable questions whose gold answer lies inside the returned span (target ≥ 80 %);
- unanswerable questions answered ``NOT_FOUND`` (target ≥ 80 %);
- issue 8: precision of what is answered (after the confidence bar; target ≥ 0.90) with its coverage, coverage
  at precision 0.9, expected calibration error (target ≤ 0.05) next to the ECE a perfectly calibrated predictor
  with the same confidences shows on that many answers, and SQuAD HasAns EM / F1;

for all questions and for the two halves of ``calibration.split_ids`` (seed 0): every constant that was
chosen on this file was chosen on the ``choose`` half, so the ``report`` half is the honest number.

Usage: ``python benchmarks/squad_targets.py [--squad FILE] [--generative-limit 120] [--out reports/targets]
[--skip-extractive]`` (``--generative-limit 0`` skips the generative run).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from _common import ROOT

from components.evaluation.calibration import split_ids

TARGET = 0.80
SQUAD = ROOT.parent / "shared" / "data" / "squad2" / "dev-computational-complexity.json"


def rates(rows: list[dict]) -> tuple[float | None, float | None, int, int]:
    """(answer-in-span rate of the answerable, NOT_FOUND rate of the unanswerable, their counts)."""
    answerable = [r for r in rows if r["answerable"]]
    unanswerable = [r for r in rows if not r["answerable"]]
    in_span = sum(bool(r["answer_in_span"]) for r in answerable) / len(answerable) if answerable else None
    not_found = sum(r["verdict"] == "NOT_FOUND" for r in unanswerable) / len(unanswerable) if unanswerable else None
    return in_span, not_found, len(answerable), len(unanswerable)


def _fmt(rate: float | None) -> str:
    return "   n/a" if rate is None else f"{rate:6.1%}"


def report(name: str, rows: list[dict]) -> None:
    choose, held = (set(half) for half in split_ids([r["id"] for r in rows], seed=0))
    parts = [("all", rows), ("choose half", [r for r in rows if r["id"] in choose]),
             ("report half", [r for r in rows if r["id"] in held])]
    print(f"\n{name}: {len(rows)} questions")
    print(f"  {'':12} {'in span':>8} {'of target':>9}   {'NOT_FOUND':>9} {'of target':>9}   (answerable / unanswerable)")
    for label, part in parts:
        in_span, not_found, n_a, n_u = rates(part)
        ratio = lambda r: "      " if r is None else f"{r / TARGET:6.2f}×"  # noqa: E731
        print(f"  {label:12} {_fmt(in_span):>8} {ratio(in_span):>9}   {_fmt(not_found):>9} {ratio(not_found):>9}"
              f"   ({n_a} / {n_u})")


def trust(name: str, rows: list[dict]) -> None:
    """Issue 8's numbers for all questions and for each half (confidence of the SUPPORTED answers)."""
    from components.evaluation import metrics, selective

    choose, held = (set(half) for half in split_ids([r["id"] for r in rows], seed=0))
    print(f"\n{name}: answers you can trust (answered = SUPPORTED at or above the confidence bar)")
    print(f"  {'':12} {'precision':>9} {'coverage':>8}   {'cov@0.9':>7}   {'ECE':>5} {'calibrated':>10} {'p':>5}"
          f"   {'HasAns EM':>9} {'F1':>5}   {'(SUPPORTED, no bar: EM':>22} {'F1)':>5}")
    for label, part in (("all", rows), ("choose half", [r for r in rows if r["id"] in choose]),
                        ("report half", [r for r in rows if r["id"] in held])):
        answered = [r for r in part if r["verdict"] == "SUPPORTED"]
        precision = sum(bool(r["answer_correct"]) for r in answered) / len(answered) if answered else None
        supported = [r for r in part if r.get("supported") and r.get("confidence") is not None]
        m = selective.summary([r["confidence"] for r in supported], [bool(r["answer_correct"]) for r in supported],
                              len(part))
        squad = metrics.squad_summary({"answerable": r["answerable"], "golds": r["golds"],
                                       "prediction": r["answer"] if r["verdict"] == "SUPPORTED" else None}
                                      for r in part)
        unbarred = metrics.squad_summary({"answerable": r["answerable"], "golds": r["golds"],
                                          "prediction": (r["answer"] or r.get("rejected_answer"))
                                          if r.get("supported") else None} for r in part)
        num = lambda v, w=5: " " * (w - 3) + "n/a" if v is None else f"{v:{w}.3f}"  # noqa: E731
        print(f"  {label:12} {num(precision, 9)} {len(answered) / len(part):8.3f}   "
              f"{m['coverage_at_precision_0.9']:7.3f}   {num(m['ece'])} {num(m['ece_if_calibrated'], 10)} "
              f"{num(m['ece_consistency'])}   {num(squad['HasAns_exact'], 9)} {num(squad['HasAns_f1'])}   "
              f"{num(unbarred['HasAns_exact'], 22)} {num(unbarred['HasAns_f1'])}")
    print("  (targets: precision ≥ 0.90 with its coverage; ECE ≤ 0.05. 'calibrated': the mean ECE of outcomes drawn "
          "from these confidences; p: share of those draws at or above the observed ECE)")


def run(pipeline: str, squad: str, out: str, limit: int | None) -> list[dict]:
    cmd = [sys.executable, "run.py", pipeline, "--eval", squad, "--report", out, "--no-audit"]
    if limit:
        cmd += ["--limit", str(limit)]
    print("$", " ".join(cmd), flush=True)
    if subprocess.call(cmd, cwd=ROOT) != 0:
        sys.exit(f"{pipeline}: the evaluation failed (see above)")
    with open(ROOT / out / "per_query.jsonl", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--squad", default=str(SQUAD))
    ap.add_argument("--generative-limit", type=int, default=120)
    ap.add_argument("--out", default="reports/targets")
    ap.add_argument("--skip-extractive", action="store_true", help="only the generative run")
    args = ap.parse_args()
    results = {}
    if not args.skip_extractive:
        results["extractive.yaml"] = run("pipelines/extractive.yaml", args.squad, f"{args.out}/extractive", None)
    if args.generative_limit > 0:
        results[f"generative.yaml (first {args.generative_limit})"] = run(
            "pipelines/generative.yaml", args.squad, f"{args.out}/generative", args.generative_limit)
    print(f"\nTargets (issue 3): gold answer inside the returned span ≥ {TARGET:.0%} of answerable questions; "
          f"NOT_FOUND ≥ {TARGET:.0%} of unanswerable ones. Offline, with the named fallbacks.")
    for name, rows in results.items():
        report(name, rows)
    for name, rows in results.items():
        trust(name, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
