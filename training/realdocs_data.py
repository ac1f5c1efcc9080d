"""The real-document calibration set (``training/realdocs/``) as SQuAD-shaped blocks for the verifier's training:
each document's text, as spanqa extracts it, cut at blank lines into blocks of about ``--block-chars``; each
answerable question is attached to the block that holds its answer (the one sharing most words with its evidence
when the answer occurs in several), each unanswerable one to the block sharing most words with the question — what
a search would hand the reader. Titles start ``structured-realdocs-`` so ``train_verifier.py --structured`` reads
each block whole and repeats it with ``--structured-repeat``.

Documents are split by a hash of their file name, never a question at a time: ``--split train`` (about two thirds)
and ``--split heldout`` (the rest, for the training curve and the judges). The development set
(``benchmarks/realdocs/``) is never read.

    python training/realdocs_data.py --split train --out .spanqa/training/realdocs-train.json
    python training/realdocs_data.py --merge A.json B.json --out AB.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from components.evaluation.docsets import document_text, load_docset, split_of  # noqa: E402

SET = ROOT / "training" / "realdocs"
WORD = re.compile(r"[a-z0-9]{3,}")


def blocks_of(text: str, block_chars: int) -> list[tuple[int, str]]:
    """``(start, block)`` pieces of ``text`` cut at blank lines, each grown to about ``block_chars``; a piece longer
    than that stays whole (never cut inside a paragraph)."""
    pieces = [(m.start(), m.group()) for m in re.finditer(r"\S(?:.*?\S)?(?=\n\s*\n|\s*\Z)", text, re.S)]
    out: list[tuple[int, str]] = []
    for start, piece in pieces:
        if out and len(out[-1][1]) + len(piece) < block_chars:
            first = out[-1][0]
            out[-1] = (first, text[first:start + len(piece)])
        else:
            out.append((start, piece))
    return out


def words(s: str) -> set[str]:
    return set(WORD.findall(s.lower()))


def attach(q: dict, blocks: list[tuple[int, str]]) -> tuple[int, int | None, str | None]:
    """``(block index, answer start in it, answer)`` of question ``q``; no answer for an unanswerable one."""
    if q["answerable"]:
        found = [(len(words(q.get("evidence", "")) & words(b)), -i, i, b.find(a), a)
                 for a in q["answers"] for i, (_, b) in enumerate(blocks) if a in b]
        if found:
            _, _, i, start, answer = max(found)
            return i, start, answer
        return -1, None, None  # the answer crosses two blocks: left out, counted by the caller
    scores = [(len(words(q["question"]) & words(b)), -i) for i, (_, b) in enumerate(blocks)]
    return -max(scores)[1], None, None


def build(split: str, block_chars: int = 1200, folder: Path = SET) -> tuple[dict, dict]:
    """The SQuAD-shaped data of ``split``'s documents, and counts (questions kept, left out)."""
    questions, files = load_docset(folder)
    texts = {p.name: document_text(p) for p in files if split_of(p.name) == split}
    data, counts = [], {"documents": len(texts), "questions": 0, "answerable": 0, "left_out": 0}
    for name, text in sorted(texts.items()):
        blocks = blocks_of(text, block_chars)
        paragraphs = [{"context": b, "qas": []} for _, b in blocks]
        for q in questions:
            if q["doc_id"] != name:
                continue
            i, start, answer = attach(q, blocks)
            if i < 0:
                counts["left_out"] += 1
                continue
            qa = {"id": q["id"], "question": q["question"], "is_impossible": not q["answerable"],
                  "answers": [{"text": answer, "answer_start": start}] if q["answerable"] else []}
            paragraphs[i]["qas"].append(qa)
            counts["questions"] += 1
            counts["answerable"] += q["answerable"]
        data.append({"title": f"structured-realdocs-{name}", "paragraphs": [p for p in paragraphs if p["qas"]]})
    return {"version": "v2.0", "data": data}, counts


def merge(paths: list[Path]) -> dict:
    """One SQuAD-shaped file of the articles of ``paths`` (``train_verifier.py --structured`` takes one file)."""
    data = [a for path in paths for a in json.loads(path.read_text(encoding="utf-8"))["data"]]
    return {"version": "v2.0", "data": data}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--split", choices=("train", "heldout"))
    p.add_argument("--merge", nargs="+", metavar="SQUAD2_JSON",
                   help="instead of --split: one SQuAD-shaped file of these files' articles, in order")
    p.add_argument("--out", required=True)
    p.add_argument("--block-chars", type=int, default=1200)
    args = p.parse_args(argv)
    if bool(args.split) == bool(args.merge):
        p.error("give --split train|heldout, or --merge FILE [FILE ...]")
    if args.merge:
        data = merge([Path(f) for f in args.merge])
        counts = {"articles": len(data["data"])}
    else:
        data, counts = build(args.split, args.block_chars)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    print(json.dumps(dict(counts, split=args.split, out=args.out)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
