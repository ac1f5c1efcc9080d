"""The pipeline end to end on the held-out structured-text set: tables of codes and configuration files nobody
trained on (``training/structured_data.py --split heldout``: libuv's error constants, OpenSSH's ``sshd_config``,
Mosquitto's ``mosquitto.conf``; a third of the questions ask about a record the block does not hold).

Each block is written as a document of one corpus (a Markdown file, titled by its source); each question is asked
through the shipped pipeline with a filter that keeps its own block (``meta.doc_id``), so what is measured is the
reading and the judgement of a document the user points at — answers at the shipped bar, as a user gets them.
Reported per source and overall: answerable questions answered right (the shown span holds the gold answer,
``answer_correct``), answers shown wrong, unanswerable questions answered, precision of the shown answers,
coverage, and how many right answers the verifier or the bar held back. Issue 42's target: ≥ 85 % of answerable
questions right, ≤ 5 % of answers wrong.

    python benchmarks/structured_reading.py [--pipeline pipelines/extractive.yaml] [--limit N] [--json] [--rows FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from _common import ROOT, AnswerTally, finish

sys.path.insert(0, str(ROOT / "training"))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pipeline", default=str(ROOT / "pipelines" / "extractive.yaml"))
    p.add_argument("--limit", type=int, help="only the first N questions (a quick look)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--rows", help="also write every question's row, signals included, to this JSON Lines file")
    args = p.parse_args(argv)
    from structured_data import build

    from components.app.pipeline_io import load_pipeline
    from components.app.runner import QueryRunner
    from components.evaluation.blocks import ask_blocks, block_items, write_corpus
    from components.evaluation.metrics import answer_correct

    items = block_items(build("heldout"))[: args.limit]
    report = {"load_average_before": os.getloadavg(), "questions": len(items)}
    with tempfile.TemporaryDirectory() as tmp:
        write_corpus(items, Path(tmp) / "corpus")
        pipeline, _ = load_pipeline(Path(args.pipeline), data=str(Path(tmp) / "corpus"),
                                    cache_dir=str(Path(tmp) / "cache"))
        runner = QueryRunner(pipeline)
        runner.warm_up()
        asked = ask_blocks(runner, items, echo=True)
    if args.rows:
        Path(args.rows).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in asked), encoding="utf-8")
    tally = AnswerTally()
    rows = []
    for r in asked:
        shown = r["answer"] is not None
        right = bool(shown and r["answerable"] and answer_correct(r["answer"], r["golds"]))
        held = r["rejected_answer"]
        held_right = bool(not shown and held and r["answerable"] and answer_correct(held, r["golds"]))
        tally.add(r["source"], r["answerable"], shown, right, held_right, r["supported"])
        rows.append({"id": r["id"], "doc": r["doc"], "question": r["question"], "gold": r["golds"],
                     "answer": r["answer"], "right": right, "reason": r["verdict_reason"],
                     "confidence": r["confidence"], "held_back": held})
    report["by_source"] = tally.report()
    report["rows"] = rows
    if not args.json:
        tally.print_table("source", sorted(tally.groups))
        print("target (issue 42): right share ≥ 0.85 of answerable questions, wrong ≤ 0.05 of answers")
    return finish(report, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
