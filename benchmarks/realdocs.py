"""The pipeline end to end on the real-document development set (``benchmarks/realdocs/``): public PDFs, HTML pages
and text documents nobody here wrote, with questions written from their text (a third unanswerable; sources and
licences in each kind's SOURCES.md). Kept apart from training and tuning: every reader, verifier and calibration
change reports here.

Per kind of document (pdf, html, text) and overall: answerable questions answered right (the shown span lies in the
gold document and holds a gold answer, ``answer_correct``), answers shown wrong, precision of the shown answers,
coverage of all questions, unanswerable questions answered; and how many right answers were held back, and of
them how many by the confidence bar (the verifier SUPPORTED them) rather than by the verifier; and, for every
answerable question without a right answer shown, where it was lost (``docsets.lost_at``): held by the bar, refused by
the verifier, right only lower in the reader's list, in the text read but never proposed, not in the text read.

    python benchmarks/realdocs.py [--pipeline pipelines/extractive.yaml] [--set DIR] [--kinds pdf html text] [--json]
        [--rows FILE]
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from _common import ROOT, AnswerTally, finish

SET = ROOT / "benchmarks" / "realdocs"


def lost_table(rows: list[dict], kinds: list[str]) -> dict:
    """Per kind and overall: answerable questions, and how many were lost at each of ``LOST``."""
    from components.evaluation.docsets import LOST

    table = {}
    for kind in [*kinds, "all"]:
        mine = [r for r in rows if r["answerable"] and kind in (r["kind"], "all")]
        table[kind] = {"answerable": len(mine), **{n: sum(r.get("lost_at") == n for r in mine) for n in LOST}}
    return table


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pipeline", default=str(ROOT / "pipelines" / "extractive.yaml"))
    p.add_argument("--set", default=str(SET), help="a document set of the same layout (default: the development set; "
                                                   "training/realdocs is the real-document calibration set)")
    p.add_argument("--kinds", nargs="+", default=["pdf", "html", "text"])
    p.add_argument("--split", choices=("train", "heldout"), help="only that side of the calibration set's document "
                   "split (docsets.split_of), asked as one corpus of those documents")
    p.add_argument("--json", action="store_true")
    p.add_argument("--rows", help="also write every question's row, the confidence's signals included, to this JSON "
                                  "Lines file")
    args = p.parse_args(argv)
    from components.evaluation.docsets import LOST, ask_docset, docset_runner, load_docset

    try:
        questions, files = load_docset(Path(args.set), args.kinds, args.split)
    except FileNotFoundError as exc:
        raise SystemExit(f"realdocs: {exc}. Give --set a folder of that layout (benchmarks/realdocs, "
                         f"training/realdocs).") from None
    report = {"load_average_before": os.getloadavg(), "questions": len(questions), "split": args.split}
    with docset_runner(Path(args.pipeline), files) as runner:
        rows = ask_docset(runner, questions, echo=True)
    tally = AnswerTally()
    for r in rows:
        tally.add(r["kind"], r["answerable"], r["answer"] is not None, r["right"], r["held_right"], r["supported"])
    report["by_kind"] = tally.report()
    if args.rows:
        Path(args.rows).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    report["rows"] = [{k: v for k, v in r.items() if k != "signals"} for r in rows]
    report["lost_at"] = lost = lost_table(rows, args.kinds)
    if not args.json:
        tally.print_table("kind", args.kinds)
        print("\nwhere the answerable questions without a right answer shown were lost (docsets.lost_at):")
        names = list(LOST)
        print(f"{'kind':6s} {'answerable':>10s} " + " ".join(f"{n:>{max(len(n), 5)}s}" for n in names))
        for kind, t in lost.items():
            print(f"{kind:6s} {t['answerable']:10d} " + " ".join(f"{t[n]:{max(len(n), 5)}d}" for n in names))
    return finish(report, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
