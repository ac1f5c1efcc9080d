"""The pipeline end to end on the real-document development set (``benchmarks/realdocs/``): public PDFs, HTML pages
and text documents nobody here wrote, with questions written from their text (a third unanswerable; sources and
licences in each kind's SOURCES.md). Kept apart from training and tuning: every reader, verifier and calibration
change reports here.

Per kind of document (pdf, html, text) and overall: answerable questions answered right (the shown span lies in the
gold document and holds a gold answer, ``answer_correct``), answers shown wrong, precision of the shown answers,
coverage of all questions, unanswerable questions answered; and how many right answers the verifier or the
confidence bar held back.

    python benchmarks/realdocs.py [--pipeline pipelines/extractive.yaml] [--kinds pdf html text] [--json] [--rows FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from _common import ROOT, AnswerTally, finish

SET = ROOT / "benchmarks" / "realdocs"


def load(kinds: list[str]) -> tuple[list[dict], list[Path]]:
    questions, files = [], []
    for kind in kinds:
        folder = SET / kind
        questions += [dict(json.loads(line), kind=kind) for line in
                      (folder / "questions.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
        files += [p for p in folder.iterdir() if p.suffix.lower() in (".pdf", ".html", ".htm", ".md", ".txt")
                  and p.name not in ("SOURCES.md",) and not p.name.endswith(".extracted.txt")]
    return questions, files


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pipeline", default=str(ROOT / "pipelines" / "extractive.yaml"))
    p.add_argument("--kinds", nargs="+", default=["pdf", "html", "text"])
    p.add_argument("--json", action="store_true")
    p.add_argument("--rows", help="also write every question's row, the confidence's signals included, to this JSON "
                                  "Lines file")
    args = p.parse_args(argv)
    from components.app.pipeline_io import load_pipeline
    from components.app.runner import QueryRunner
    from components.evaluation.metrics import answer_correct

    questions, files = load(args.kinds)
    report = {"load_average_before": os.getloadavg(), "questions": len(questions)}
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus"
        corpus.mkdir()
        for f in files:  # one corpus of every kind: a question's passage competes with all the others
            shutil.copy(f, corpus / f.name)
        pipeline, _ = load_pipeline(Path(args.pipeline), data=str(corpus), cache_dir=str(Path(tmp) / "cache"))
        runner = QueryRunner(pipeline)
        runner.warm_up()
        tally = AnswerTally()
        rows = []
        for q in questions:
            result = runner.ask(q["question"])
            shown = result["answer"] is not None
            span = result["spans"][0] if shown and result["spans"] else None
            right = bool(shown and q["answerable"] and span and span["doc_id"] == q["doc_id"]
                         and answer_correct(result["answer"], q["answers"]))
            held = result.get("rejected_answer")
            held_right = bool(not shown and held and q["answerable"] and answer_correct(held, q["answers"]))
            tally.add(q["kind"], q["answerable"], shown, right, held_right)
            rows.append({"id": q["id"], "kind": q["kind"], "answerable": q["answerable"], "answer": result["answer"],
                         "right": right, "verdict": result["verdict"], "reason": result.get("reason"),
                         "confidence": result.get("confidence"), "held_back": held, "held_right": held_right,
                         "supported": bool(result.get("_supported")), "signals": result.get("_signals")})
            print(f"{q['id']:8s} {'right' if right else ('WRONG' if shown else '-'):5s} {str(result['answer'])[:60]!r}",
                  file=sys.stderr)
    report["by_kind"] = tally.report()
    if args.rows:
        Path(args.rows).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    report["rows"] = [{k: v for k, v in r.items() if k != "signals"} for r in rows]
    if not args.json:
        tally.print_table("kind", args.kinds)
    return finish(report, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
