"""Speed of spanqa's ExtractiveReader against transformers-haystack's TransformersExtractiveReader.

Both readers load the SAME full-size stand-in (roberta-base shape: ``RobertaConfig()``, 12 layers, 768
hidden, random seeded weights, the MiniLM WordPiece tokenizer) from a temporary directory — no download
needed, and the cost of a forward pass is that of deepset/roberta-base-squad2. Inputs are ~20 (question,
window) pairs from the demo corpus (``data/questions.jsonl`` + the ~1000-character window of the
article that holds the answer). Two scenarios, run side by side with the order alternating per round:

- ``per pair``: one ``run`` per (question, window), as a pipeline with top-1 retrieval would do; the
  readers take turns on each pair (rotating order), so drifting machine load hits all alike;
- ``one query``: one ``run`` with all windows as documents (our reader batches ``batch_size`` windows of
  similar length; the peer pads everything into one batch).

The peer runs with its defaults except ``top_k``; ours with its defaults (``max_answer_length=30``,
"cls" no-answer) and once more in peer-parity mode (``max_answer_length=None``, "complement"), where the
top answers must also agree. Prints total seconds, the ratio of totals ours/peer (< 1: ours is faster)
and the median of the per-run ratios.

Usage: ``python benchmarks/reader_speed.py [--pairs 20] [--rounds 3] [--model-dir DIR]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "false")


def load_pairs(n: int) -> list[tuple[str, str]]:
    """``n`` (question, window text) pairs: the ~1000-char chunk of the answer's article holding an answer."""
    from components.core.text.splitting import chunk_units, split_blocks, split_units

    pairs = []
    for line in (ROOT / "data" / "questions.jsonl").read_text().splitlines():
        row = json.loads(line)
        path = ROOT / "data" / "kb" / Path(row.get("doc_id") or "").name
        if not row.get("answerable") or not path.is_file():
            continue
        text = path.read_text()
        units = [u for b in split_blocks(text) for u in split_units(text, b)]
        chunks = [c.slice(text) for c in chunk_units(units, max_chars=1000, overlap=0.0)]
        hit = next((c for c in chunks for a in row["answers"] if a in c), chunks[0])
        pairs.append((row["question"], hit))
        if len(pairs) == n:
            break
    return pairs


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--model-dir", help="reuse/keep the stand-in here instead of a temporary directory")
    args = ap.parse_args()

    import torch
    from haystack import Document
    from haystack_integrations.components.readers.transformers import TransformersExtractiveReader

    from components.readers import ExtractiveReader
    from tests.standins import build_full_size_qa_model

    tmp = None
    model_dir = args.model_dir
    if model_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="spanqa-reader-bench-")
        model_dir = tmp.name
    if not (Path(model_dir) / "config.json").exists():
        t = timed(lambda: build_full_size_qa_model(model_dir))
        print(f"built roberta-base-shaped stand-in in {t:.1f}s at {model_dir}")

    pairs = load_pairs(args.pairs)
    docs = [Document(content=w, meta={"doc_id": f"w{i}", "char_start": 0}) for i, (_, w) in enumerate(pairs)]
    print(f"{len(pairs)} (question, window) pairs, windows {min(len(w) for _, w in pairs)}-"
          f"{max(len(w) for _, w in pairs)} chars; torch threads: {torch.get_num_threads()}")

    peer = TransformersExtractiveReader(model=model_dir, top_k=5)
    ours = ExtractiveReader(model=model_dir, device="cpu", top_k=5)
    parity = ExtractiveReader(model=model_dir, device="cpu", top_k=5, max_answer_length=None,
                              no_answer_score="complement")
    for r in (peer, ours, parity):
        r.warm_up()
        r.run(query=pairs[0][0], documents=docs[:1])  # first-call overheads out of the timing

    readers = {"ours": ours, "ours (parity)": parity, "peer": peer}
    names = list(readers)
    # side by side: every pair is read by all readers back to back, in an order that rotates, so that a
    # change in machine load hits all of them alike
    per_pair = {name: [] for name in names}  # seconds per (round, pair)
    one_query = {name: [] for name in names}  # seconds per round
    for rnd in range(args.rounds):
        for i, ((q, _), d) in enumerate(zip(pairs, docs)):
            shift = (rnd + i) % len(names)
            for name in names[shift:] + names[:shift]:
                per_pair[name].append(timed(lambda: readers[name].run(query=q, documents=[d])))
        for name in names if rnd % 2 == 0 else names[::-1]:
            one_query[name].append(timed(lambda: readers[name].run(query=pairs[0][0], documents=docs)))

    agree = sum(
        [a.data for a in parity.run(query=q, documents=[d])["answers"][:3]]
        == [a.data for a in peer.run(query=q, documents=[d])["answers"][:3]]
        for (q, _), d in zip(pairs, docs)
    )
    print(f"peer-parity mode: top-3 answers identical to the peer's on {agree}/{len(pairs)} pairs\n")
    print(f"{'scenario':<24} {'reader':<14} {'total s':>8} {'ms/pair':>8} {'ours/peer':>10} {'median pair ratio':>18}")
    for label, times in ((f"per pair ({len(pairs)} runs)", per_pair), (f"one query ({len(docs)} windows)", one_query)):
        peer_total = sum(times["peer"])
        for name in names:
            total = sum(times[name])
            ratio = median_ratio = ""
            if name != "peer":
                ratio = f"{total / peer_total:.2f}"
                median_ratio = f"{statistics.median(a / b for a, b in zip(times[name], times['peer'])):.2f}"
            per = 1000 * total / (args.rounds * len(pairs))
            print(f"{label:<24} {name:<14} {total:>8.2f} {per:>8.0f} {ratio:>10} {median_ratio:>18}")
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
