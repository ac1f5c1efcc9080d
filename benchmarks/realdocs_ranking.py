"""Two or more pipelines' real-document answers compared at the same number of answers shown, from the rows
``benchmarks/realdocs.py --rows`` wrote: each pipeline's verified answers (shown, or held back by its confidence bar)
ranked by its confidence, and the right and wrong ones among the N most confident (``docsets.at_count``; a tie of
confidences is never split, as no bar splits one). A pipeline
whose confidence ranks better shows fewer wrong answers at every N, whatever bar its calibration chose; where the
bar falls is then a separate question. By default N is each input's own count of answers shown.

    python benchmarks/realdocs.py --rows shipped-dev.jsonl
    python benchmarks/realdocs.py --set training/realdocs --split heldout --rows shipped-heldout.jsonl
    python benchmarks/realdocs_ranking.py shipped=shipped-dev.jsonl,shipped-heldout.jsonl candidate=a.jsonl,b.jsonl \\
        [--at 120 166] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from _common import finish


class RowsError(ValueError):
    """An input that is not NAME=ROWS[,ROWS…] of readable rows; the message says which and what to do."""


def load_inputs(specs: list[str]) -> dict[str, list[dict]]:
    """``NAME=FILE[,FILE…]`` → the rows of those JSON Lines files, concatenated, by name."""
    out = {}
    for spec in specs:
        name, sep, files = spec.partition("=")
        if not sep or not name or not files:
            raise RowsError(f"realdocs_ranking: '{spec}' is not NAME=ROWS.jsonl[,ROWS.jsonl]; name each pipeline's "
                            "rows, e.g. shipped=dev-rows.jsonl,heldout-rows.jsonl.")
        rows = []
        for f in files.split(","):
            try:
                lines = Path(f).read_text(encoding="utf-8").splitlines()
                rows += [json.loads(line) for line in lines if line.strip()]
            except (OSError, json.JSONDecodeError) as exc:
                raise RowsError(f"realdocs_ranking: {f} (of '{name}') cannot be read as JSON Lines ({exc}); give "
                                "the file `benchmarks/realdocs.py --rows FILE` wrote.") from None
        missing = {"answer", "right", "supported", "confidence", "answer_correct"} - set(rows[0]) if rows else set()
        if not rows or missing:
            raise RowsError(f"realdocs_ranking: {files} (of '{name}') holds no rows of benchmarks/realdocs.py "
                            f"({'empty' if not rows else 'no ' + ', '.join(sorted(missing))}); write them with "
                            "`benchmarks/realdocs.py --rows FILE`.")
        out[name] = rows
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("inputs", nargs="+", metavar="NAME=ROWS[,ROWS]")
    p.add_argument("--at", nargs="+", type=int, help="numbers of answers shown to compare at (default: each "
                                                     "input's own count shown)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if args.at and min(args.at) < 1:
        p.error(f"--at takes numbers of answers of 1 or more, not {min(args.at)}")
    from components.evaluation.docsets import at_count  # _common put the repository on sys.path

    try:
        inputs = load_inputs(args.inputs)
    except RowsError as exc:
        print(exc, file=sys.stderr)
        return 2
    shown = {name: sum(r["answer"] is not None for r in rows) for name, rows in inputs.items()}
    counts = sorted(set(args.at or shown.values()))
    report = {"load_average_before": os.getloadavg(), "questions": {n: len(r) for n, r in inputs.items()},
              "shown": shown, "at": {str(n): {name: at_count(rows, n) for name, rows in inputs.items()}
                                     for n in counts}}
    if not args.json:
        width = max(len(n) for n in inputs)
        print("answers shown by each pipeline:", ", ".join(f"{n} {s}" for n, s in shown.items()))
        for n in counts:
            print(f"\nthe {n} most confident answers:")
            for name, t in report["at"][str(n)].items():
                print(f"  {name:{width}s}  right {t['right']:4d}  wrong {t['wrong']:4d}  precision "
                      f"{t['precision'] if t['precision'] is not None else '-'}"
                      + (f"  ({t['shown']} answers: the most a bar shows up to {n})" if t["shown"] < n else ""))
    return finish(report, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
