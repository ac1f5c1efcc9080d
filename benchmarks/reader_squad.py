"""The reader alone on a SQuAD 2.0 file, by the official rules: each question read with its own paragraph as the
only context, EM / F1 over all questions, answerable (HasAns) and unanswerable (NoAns) ones; the learning curve
the training run recorded; and int8 against fp32 (identical answer spans, speed). A benchmark, not a test.

    python benchmarks/reader_squad.py                                # the shipped reader on the development article
    python benchmarks/reader_squad.py --data .spanqa/training/heldout-squad2.json --limit 500
    python benchmarks/reader_squad.py --model path/to/model --json

Targets (issue 19): F1 ≥ 65, HasAns F1 ≥ 60 on the development article; int8 ≥ 98 % identical spans.
"""

from __future__ import annotations

import argparse
import json
import os
import time

from _common import ROOT

DEV = ROOT.parent / "shared" / "data" / "squad2" / "dev-computational-complexity.json"
TRAINED = "spanqa/reader-minilm-l6-squad2"


def questions(path, limit=None) -> list[dict]:
    data = json.loads(open(path, encoding="utf-8").read())["data"]
    out = [{"id": qa["id"], "question": qa["question"], "context": p["context"],
            "golds": [a["text"] for a in qa.get("answers", [])], "answerable": not qa.get("is_impossible")}
           for article in data for p in article["paragraphs"] for qa in p["qas"]]
    return out[:limit] if limit else out


def read_all(reader, qs) -> tuple[list[dict], float]:
    """``(predictions, seconds)``: the reader's first answer (None when its no-answer comes first)."""
    from haystack import Document

    preds = []
    start = time.perf_counter()
    for q in qs:
        doc = Document(content=q["context"], meta={"doc_id": q["id"], "char_start": 0, "level": "paragraph"})
        best = reader.run(query=q["question"], documents=[doc])["answers"][0]
        span = None if best.meta.get("no_answer") else (best.meta["char_start"], best.meta["char_end"])
        preds.append({"prediction": best.data if span else None, "span": span})
    return preds, time.perf_counter() - start


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default=TRAINED, help="QA model id or directory (default: spanqa's trained reader)")
    p.add_argument("--data", default=str(DEV), help="SQuAD 2.0 JSON (default: the development article)")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--no-int8", action="store_true", help="skip the int8 comparison")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    from components.evaluation.metrics import squad_summary
    from components.readers.extractive_reader import ExtractiveReader

    qs = questions(args.data, args.limit)
    result: dict = {"model": args.model, "data": os.path.basename(args.data), "questions": len(qs),
                    "load_average": [round(x, 2) for x in os.getloadavg()]}
    runs = {}
    for precision in ("fp32",) if args.no_int8 else ("fp32", "int8"):
        reader = ExtractiveReader(model=args.model, precision=precision, top_k=1)
        reader.warm_up()
        preds, seconds = read_all(reader, qs)
        runs[precision] = preds
        summary = squad_summary({"answerable": q["answerable"], "prediction": pr["prediction"], "golds": q["golds"]}
                                for q, pr in zip(qs, preds))
        result[precision] = {k: (round(100 * v, 1) if isinstance(v, float) and k != "abstention_precision" else v)
                             for k, v in summary.items()}
        result[precision]["seconds"] = round(seconds, 1)
        result[precision]["served_by"] = reader.served_by
    if "int8" in runs:
        same = sum(a["span"] == b["span"] for a, b in zip(runs["fp32"], runs["int8"]))
        result["int8_identical_spans"] = round(same / len(qs), 4)
        result["int8_speedup"] = round(result["fp32"]["seconds"] / max(1e-9, result["int8"]["seconds"]), 2)
    card = ROOT / "models" / "spanqa-reader-minilm-l6" / "training.json"
    if args.model == TRAINED and card.exists():
        result["learning_curve"] = json.loads(card.read_text())["curve"]
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"{result['model']} on {result['data']} ({len(qs)} questions, load {result['load_average']})")
    for precision in runs:
        r = result[precision]
        print(f"  {precision}: EM {r['exact']} F1 {r['f1']} | HasAns EM {r['HasAns_exact']} F1 {r['HasAns_f1']} "
              f"({r['HasAns_total']}) | NoAns {r['NoAns_f1']} ({r['NoAns_total']}) | {r['seconds']} s  "
              f"[targets: F1 ≥ 65, HasAns F1 ≥ 60]")
    if "int8" in runs:
        print(f"  int8 vs fp32: {100 * result['int8_identical_spans']:.1f} % identical answer spans "
              f"(target ≥ 98 %), {result['int8_speedup']}x the fp32 speed")
    if result.get("learning_curve"):
        print("  learning curve (held-out training articles, paragraph contexts):")
        for pt in result["learning_curve"]:
            print(f"    {pt['examples']:>7,} examples  {pt['minutes']:>6} min  F1 {pt['f1']:>5}  "
                  f"HasAns F1 {pt['HasAns_f1']:>5}  NoAns F1 {pt['NoAns_f1']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
