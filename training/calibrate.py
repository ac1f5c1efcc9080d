"""Fit the confidence combiner on held-out data of each kind users bring: the held-out SQuAD articles of both kinds
(``training/heldout.py``: training articles, and squad2-more articles with adversarial unanswerable questions) and the
structured-text calibration sources (``training/structured_data.py --split calibrate``: SQLite's result codes,
systemd's ``system.conf`` and ``logind.conf``; each question asked of its own block, ``components.evaluation.blocks``);
with ``--docs split|fit`` also the real-document calibration set (``training/realdocs/``: PDFs, HTML pages and text
documents asked as one corpus, ``components.evaluation.docsets``; by default only its held-out side, ``--docs-side``),
which the shipped fit splits like every kind (``make calibrate``: run 20 in training/HISTORY.md). Never the
development article, the held-out structured sources, the demo corpus or the real-document development set
(``benchmarks/realdocs/``): they report.

    python run.py pipelines/extractive.yaml --eval .spanqa/training/heldout-squad2.json --no-audit \\
        --report reports/heldout-calibration
    python training/calibrate.py --squad-rows reports/heldout-calibration/per_query.jsonl --save \\
        [--blocks-rows FILE] [--docs none|split|fit] [--docs-side heldout|train|all] [--docs-rows FILE]

The combiner (``confidence.fit``: every signal) is fitted on the choose half of all rows (the SHA-256 split by id of
every ``--calibrate``) at the pipeline YAML's ``unanswerable_share``, its bar chosen for the target precision on
out-of-fold confidences; the other half is reported per kind (precision, coverage of all questions, ECE), with the
spread of the pooled numbers over 20 other splits. ``--save`` writes it into the calibration file the YAML names (the
generative combiner in the same file is kept). ``make calibrate`` runs both steps.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "training"))

MORE = ROOT.parent / "shared" / "data" / "squad2-more" / "dev-v2.0-29-articles.json"
DOCSET = ROOT / "training" / "realdocs"
KINDS = ("training articles", "squad2-more", "structured", "documents")


def squad_kinds(rows: list[dict], more: Path) -> list[dict]:
    """The rows of a held-out SQuAD run, each with its ``kind``: ``squad2-more`` for a question of ``more``."""
    ids = set()
    if more.exists():
        data = json.loads(more.read_text(encoding="utf-8"))["data"]
        ids = {qa["id"] for a in data for p in a["paragraphs"] for qa in p["qas"]}
    return [dict(r, kind="squad2-more" if r["id"] in ids else "training articles") for r in rows]


def block_rows(pipeline_path: Path, cache: Path | None) -> tuple[list[dict], object]:
    """The calibration split's questions asked of their blocks (read from ``cache`` when it exists, else asked and
    written there), and the warmed runner (whose models the fit records)."""
    from structured_data import build

    from components.app.pipeline_io import load_pipeline
    from components.app.runner import QueryRunner
    from components.evaluation.blocks import ask_blocks, block_items, write_corpus

    items = block_items(build("calibrate"))
    with tempfile.TemporaryDirectory() as tmp:
        write_corpus(items, Path(tmp) / "corpus")
        pipeline, spec = load_pipeline(pipeline_path, data=str(Path(tmp) / "corpus"),
                                       cache_dir=str(Path(tmp) / "cache"))
        runner = QueryRunner(pipeline)
        runner.warm_up()
        if cache is not None and cache.exists():
            rows = [json.loads(line) for line in cache.read_text(encoding="utf-8").splitlines() if line.strip()]
        else:
            rows = ask_blocks(runner, items, echo=True)
            if cache is not None:
                cache.parent.mkdir(parents=True, exist_ok=True)
                cache.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return [dict(r, kind="structured") for r in rows], (runner, spec)


def document_rows(pipeline_path: Path, cache: Path | None, side: str = "heldout") -> list[dict]:
    """The real-document calibration set's questions of ``side`` (``heldout``: the documents ``docsets.split_of``
    keeps out of reader and verifier training, so the fit sees the models' mistakes on text they never read;
    ``train``; ``all``) asked of that side's corpus — read from ``cache`` when it exists (its rows of the other side
    are left out and counted on stderr), else asked and written there —, each row of kind ``documents``."""
    from components.evaluation.docsets import ask_docset, docset_runner, load_docset

    questions, files = load_docset(DOCSET, split=None if side == "all" else side)
    if cache is not None and cache.exists():
        ids = {q["id"] for q in questions}
        cached = [json.loads(line) for line in cache.read_text(encoding="utf-8").splitlines() if line.strip()]
        rows = [r for r in cached if r["id"] in ids]
        if len(rows) < len(cached):
            print(f"calibrate: {len(cached) - len(rows)} of {len(cached)} rows of {cache} are not on the {side} side "
                  f"of training/realdocs and were left out", file=sys.stderr)
        if missing := len(ids - {r["id"] for r in rows}):
            print(f"calibrate: {cache} holds no row for {missing} of the {len(ids)} questions of the {side} side; "
                  f"delete it to ask them all again", file=sys.stderr)
    else:
        with docset_runner(pipeline_path, files) as runner:
            rows = ask_docset(runner, questions, echo=True)
        if cache is not None:
            cache.parent.mkdir(parents=True, exist_ok=True)
            cache.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return [dict(r, doc_kind=r["kind"], kind="documents") for r in rows]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pipeline", default=str(ROOT / "pipelines" / "extractive.yaml"))
    p.add_argument("--squad-rows", required=True, metavar="PER_QUERY_JSONL",
                   help="per_query.jsonl of `run.py PIPELINE --eval HELDOUT --report DIR` with the same pipeline")
    p.add_argument("--blocks-rows", default=None, metavar="JSONL",
                   help="the calibration blocks' rows: read when the file exists, else asked and written there")
    p.add_argument("--docs-rows", default=None, metavar="JSONL",
                   help="the real-document calibration set's rows: read when the file exists, else asked and written")
    p.add_argument("--docs", choices=("none", "split", "fit"), default="none",
                   help="the real-document calibration set (training/realdocs/): left out (default), split choose "
                        "/ report by id like every kind (the shipped recipe: make calibrate passes split; run 20 in "
                        "training/HISTORY.md), or all in the fit (none reported)")
    p.add_argument("--docs-side", choices=("heldout", "train", "all"), default="heldout",
                   help="which documents of the set (docsets.split_of): heldout (default: those no model was trained "
                        "on), train, or all")
    p.add_argument("--more", default=str(MORE), help="the squad2-more file (which held-out rows are adversarial)")
    p.add_argument("--unanswerable-share", type=float, default=None,
                   help="fit for this share of unanswerable questions (default: the YAML's metadata.spanqa value)")
    p.add_argument("--target-precision", type=float, default=None, help="default: the shipped combiner's, else 0.9")
    p.add_argument("--save", action="store_true", help="write the combiner into the calibration file the YAML names")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)

    from components.app.runner import reader_kind
    from components.core.errors import SpanQAError
    from components.evaluation.confidence_eval import fit_calibrator, halves, kind_summary, resplits, save_calibrator

    squad_path = Path(args.squad_rows)
    if not squad_path.exists():
        raise SystemExit(f"calibrate: {squad_path} does not exist. Run `python run.py {args.pipeline} --eval "
                         f".spanqa/training/heldout-squad2.json --no-audit --report DIR` first and pass "
                         f"DIR/per_query.jsonl (make calibrate does both).")
    squad = squad_kinds([json.loads(line) for line in squad_path.read_text(encoding="utf-8").splitlines()
                         if line.strip()], Path(args.more))
    blocks, (runner, spec) = block_rows(Path(args.pipeline), Path(args.blocks_rows) if args.blocks_rows else None)
    docs = [] if args.docs == "none" else document_rows(Path(args.pipeline),
                                                        Path(args.docs_rows) if args.docs_rows else None,
                                                        args.docs_side)
    fit_only = docs if args.docs == "fit" else []
    rows = squad + blocks + ([] if fit_only else docs)
    verifier = runner.pipeline.get_component(runner.verifier) if runner.verifier else None
    if verifier is None:
        raise SystemExit(f"calibrate: {args.pipeline} has no VerifierRouter, whose answers confidence is about.")
    kind = reader_kind(runner)
    old = verifier.calibrator(kind)
    target = args.target_precision or (old.target_precision if old else None) or 0.9
    share = args.unanswerable_share if args.unanswerable_share is not None else (
        (spec.get("metadata") or {}).get("spanqa") or {}).get("unanswerable_share")
    choose, report = halves(rows)
    choose = choose + fit_only
    reported = [k for k in KINDS if any(r["kind"] == k for r in report)]
    fitted_on = {"dataset": f"{squad_path.parent.name}/{squad_path.name} + structured_data calibrate split"
                            + {"split": f" + training/realdocs ({args.docs_side} side)",
                               "fit": f" + training/realdocs ({args.docs_side} side, all in the fit)",
                               "none": ""}[args.docs],
                 "kinds": {k: n for k in KINDS if (n := sum(r["kind"] == k for r in rows + fit_only))},
                 "half": "choose (seed 0)", "served_by": runner.models()}
    try:
        cal = fit_calibrator(choose, target, fitted_on, share)
    except SpanQAError as exc:
        raise SystemExit(f"calibrate: {exc}") from None
    out = {"load_average": os.getloadavg(), "target_precision": target, "unanswerable_share": share,
           "min_confidence": cal.min_confidence, "kinds": fitted_on["kinds"],
           "report_half": {k: kind_summary([r for r in report if r["kind"] == k], cal) for k in reported},
           "shipped_on_report_half": ({k: kind_summary([r for r in report if r["kind"] == k], old) for k in reported}
                                      if old is not None else None)}
    out["report_half"]["all"] = kind_summary(report, cal)
    spread = resplits(rows, target, 20, share, fit_only=fit_only)
    out["resplits"] = {k: v for k, v in (spread or {}).items() if k != "per_split"}
    if args.save:
        out["saved_to"] = save_calibrator(cal, kind, verifier.calibration)
    print(json.dumps(out, indent=None if args.json else 2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
