"""Calibrate int8 smoothing for a reader: the fp32 activation ranges of every Linear, and the smoothing strength
``alpha`` chosen by agreement with fp32 — both on held-out training articles, never the development article.

    python training/int8_calibrate.py                       # the shipped reader → models/…/int8_absmax.safetensors
    python training/int8_calibrate.py --model DIR --dry-run --json

The held-out questions are split once, seeded: ``--calibration`` of them give the activation ranges, ``--choose``
others choose ``alpha`` (the share of answer spans identical to fp32's, every span compared: null bias 0). The
file goes beside the weights; ``precision: int8`` then smooths before quantising
(``components/core/backends/int8.py``) and announces ``int8 smoothed`` in ``models``.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "training"))

import reader_data  # noqa: E402
from train_reader import DATA  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default=str(ROOT / "models" / "spanqa-reader-minilm-l6"), help="reader directory")
    p.add_argument("--v1", default=str(DATA / "train-v1.1.json"))
    p.add_argument("--v2", default=str(DATA / "train-v2.0-subset.json"))
    p.add_argument("--heldout-articles", type=int, default=4)
    p.add_argument("--seed", type=int, default=13, help="the training run's seed (its held-out articles)")
    p.add_argument("--calibration", type=int, default=150, help="held-out questions that give the ranges")
    p.add_argument("--choose", type=int, default=400, help="other held-out questions that choose alpha")
    p.add_argument("--alphas", default="0.5,0.7,0.8,0.85,0.9,0.95", help="comma-separated candidates")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--dry-run", action="store_true", help="measure, write nothing")
    p.add_argument("--json", action="store_true")
    return p.parse_args(argv)


def read_spans(reader, questions) -> list:
    """The reader's first answer per question as ``(char_start, char_end)``, or None for its no-answer."""
    from haystack import Document

    out = []
    for q in questions:
        doc = Document(content=q.context, meta={"doc_id": q.qid, "char_start": 0, "level": "paragraph"})
        best = reader.run(query=q.question, documents=[doc])["answers"][0]
        out.append(None if best.meta.get("no_answer") else (best.meta["char_start"], best.meta["char_end"]))
    return out


def with_model(reader, model):
    """``reader``, now reading with ``model`` (same tokenizer and decoding settings, an empty memo)."""
    from components.readers.qa_decoder import QADecoder

    d = reader._decoder  # noqa: SLF001 - a recipe that swaps the network under one warmed-up reader
    reader._decoder = QADecoder(d.tokenizer, model, max_seq_length=d.max_seq_length, stride=d.stride,
                               batch_size=d.batch_size, answers_per_seq=d.answers_per_seq,
                               max_answer_length=d.max_answer_length, calibration_factor=d.calibration_factor)
    return reader


def main(argv=None) -> int:
    args = parse_args(argv)
    import torch
    from tqdm import tqdm

    from components.core.backends.int8 import collect_absmax, quantize_int8, save_absmax
    from components.readers.extractive_reader import ExtractiveReader

    if args.threads:
        torch.set_num_threads(args.threads)
    alphas = [float(a) for a in args.alphas.split(",") if a.strip()]
    v1, v2 = reader_data.load_articles(args.v1), reader_data.load_articles(args.v2)
    _, held, titles = reader_data.split_articles(v1, v2, args.heldout_articles, args.seed)
    held = list(held)
    random.Random(args.seed).shuffle(held)
    calib, choose = held[: args.calibration], held[args.calibration : args.calibration + args.choose]

    reader = ExtractiveReader(model=args.model, precision="fp32", top_k=1, no_answer_bias=0.0)
    reader.warm_up()
    fp32 = reader._decoder.model  # noqa: SLF001
    t0 = time.perf_counter()
    absmax = collect_absmax(fp32, lambda: read_spans(reader, tqdm(calib, desc="ranges", file=sys.stderr)))
    reference = read_spans(reader, tqdm(choose, desc="fp32", file=sys.stderr))

    rows = []
    for alpha in [None, *alphas]:
        ranges = None if alpha is None else (absmax, alpha)
        int8 = quantize_int8(copy.deepcopy(fp32), "cpu", absmax=ranges)
        spans = read_spans(with_model(reader, int8), tqdm(choose, desc=f"int8 alpha={alpha}", file=sys.stderr))
        same = sum(a == b for a, b in zip(reference, spans)) / len(choose)
        rows.append({"alpha": alpha, "identical_spans": round(100 * same, 1)})
    smoothed = [r for r in rows if r["alpha"] is not None]
    best = max(smoothed, key=lambda r: (r["identical_spans"], -r["alpha"]))
    result = {"model": args.model, "heldout_articles": titles, "calibration_questions": len(calib),
              "choose_questions": len(choose), "rows": rows, "chosen_alpha": best["alpha"],
              "minutes": round((time.perf_counter() - t0) / 60, 1),
              "load_average": [round(x, 2) for x in os.getloadavg()]}
    if not args.dry_run:
        note = (f"ranges from {len(calib)} held-out training questions ({', '.join(titles)}); alpha chosen on "
                f"{len(choose)} others: {best['identical_spans']} % identical spans at null bias 0 against "
                f"{rows[0]['identical_spans']} % unsmoothed")
        result["written"] = str(save_absmax(args.model, absmax, best["alpha"], note))
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"int8 smoothing for {args.model} (load {result['load_average']}, {result['minutes']} min)")
    for r in rows:
        label = "unsmoothed" if r["alpha"] is None else f"alpha {r['alpha']}"
        print(f"  {label:>12}: {r['identical_spans']:5.1f} % identical answer spans on {len(choose)} held-out questions")
    print(f"  chosen: alpha {best['alpha']}" + (f" → {result['written']}" if "written" in result else " (dry run)"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
