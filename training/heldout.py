"""Write the held-out training articles (the ones ``train_reader.py`` never trains on, same seed) as a SQuAD 2.0
file, for choosing and calibrating on data that is neither trained on nor the development article:

    python training/heldout.py                      # → .spanqa/training/heldout-squad2.json
    python run.py pipelines/extractive.yaml --eval .spanqa/training/heldout-squad2.json --calibrate
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "training"))

import reader_data  # noqa: E402
from train_reader import DATA  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--v1", default=str(DATA / "train-v1.1.json"))
    p.add_argument("--v2", default=str(DATA / "train-v2.0-subset.json"))
    p.add_argument("--heldout-articles", type=int, default=4)
    p.add_argument("--seed", type=int, default=13, help="the training run's seed (train_reader.py --seed)")
    p.add_argument("--questions", type=int, default=1000,
                   help="a seeded sample of this many held-out questions, every article and the unanswerable share "
                        "kept in proportion (0: all); an end-to-end run reads about one question a second here")
    p.add_argument("--out", default=str(ROOT / ".spanqa" / "training" / "heldout-squad2.json"))
    args = p.parse_args(argv)
    v1, v2 = reader_data.load_articles(args.v1), reader_data.load_articles(args.v2)
    _, held, titles = reader_data.split_articles(v1, v2, args.heldout_articles, args.seed)
    if args.questions and args.questions < len(held):
        held = reader_data.stratified_sample(held, args.questions, args.seed)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(reader_data.to_squad(held)), encoding="utf-8")
    print(json.dumps({"out": str(out), "articles": titles, "questions": len(held),
                      "unanswerable": sum(not q.answers for q in held)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
