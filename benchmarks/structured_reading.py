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

    python benchmarks/structured_reading.py [--pipeline pipelines/extractive.yaml] [--limit N] [--json]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from _common import ROOT, AnswerTally, finish

sys.path.insert(0, str(ROOT / "training"))


def documents(data: dict) -> list[tuple[str, str, dict]]:
    """``(file name, text, question)`` for every question of the SQuAD-shaped ``data``: its block as a document."""
    out = []
    for article in data["data"]:
        source = article["title"].removeprefix("structured-")
        for k, paragraph in enumerate(article["paragraphs"]):
            name = f"{source}-{k:04d}.md"
            text = f"---\ntitle: {source}\n---\n{paragraph['context']}\n"
            out += [(name, text, qa) for qa in paragraph["qas"]]
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pipeline", default=str(ROOT / "pipelines" / "extractive.yaml"))
    p.add_argument("--limit", type=int, help="only the first N questions (a quick look)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    from structured_data import build

    from components.app.pipeline_io import load_pipeline
    from components.app.runner import QueryRunner
    from components.evaluation.metrics import answer_correct

    items = documents(build("heldout"))[: args.limit]
    report = {"load_average_before": os.getloadavg(), "questions": len(items)}
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus"
        corpus.mkdir()
        for name, text, _ in items:
            (corpus / name).write_text(text, encoding="utf-8")
        pipeline, _ = load_pipeline(Path(args.pipeline), data=str(corpus), cache_dir=str(Path(tmp) / "cache"))
        runner = QueryRunner(pipeline)
        runner.warm_up()
        tally = AnswerTally()
        rows = []
        for name, _, qa in items:
            gold = [a["text"] for a in qa["answers"]]
            answerable = not qa["is_impossible"]
            result = runner.ask(qa["question"], filters={"field": "meta.doc_id", "operator": "==", "value": name})
            shown = result["answer"] is not None
            right = bool(shown and answerable and answer_correct(result["answer"], gold))
            held = result.get("rejected_answer")
            held_right = bool(not shown and held and answerable and answer_correct(held, gold))
            tally.add(name.rsplit("-", 1)[0], answerable, shown, right, held_right)
            rows.append({"id": qa["id"], "doc": name, "question": qa["question"], "gold": gold,
                         "answer": result["answer"], "right": right, "reason": result.get("reason"),
                         "confidence": result.get("confidence"), "held_back": held})
            print(f"{qa['id']:28s} {'right' if right else ('WRONG' if shown else '-'):5s} "
                  f"{str(result['answer'])[:50]!r}", file=sys.stderr)
    report["by_source"] = tally.report()
    report["rows"] = rows
    if not args.json:
        tally.print_table("source", sorted(tally.groups))
        print("target (issue 42): right share ≥ 0.85 of answerable questions, wrong ≤ 0.05 of answers")
    return finish(report, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
