"""Write the held-out articles (the ones ``train_reader.py`` never trains on, same seed) as one SQuAD 2.0 file, for
choosing and calibrating on data that is neither trained on nor the development article: the held-out SQuAD
training articles and, with ``--more``, the held-out SQuAD 2.0 development articles of ``squad2-more/`` (adversarial
unanswerable questions; ``train_reader.py --more`` holds out the same ones):

    python training/heldout.py --more ../shared/data/squad2-more/dev-v2.0-29-articles.json
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
from train_reader import DATA, check_not_development  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--v1", default=str(DATA / "train-v1.1.json"))
    p.add_argument("--v2", default=str(DATA / "train-v2.0-subset.json"))
    p.add_argument("--heldout-articles", type=int, default=4)
    p.add_argument("--seed", type=int, default=13, help="the training run's seed (train_reader.py --seed)")
    p.add_argument("--questions", type=int, default=1000,
                   help="a seeded sample of this many held-out questions, every article and the unanswerable share "
                        "kept in proportion (0: all); an end-to-end run reads about one question a second here")
    p.add_argument("--more", action="append", default=[], metavar="SQUAD2_JSON",
                   help="also the held-out articles of these SQuAD 2.0 files (train_reader.py --more)")
    p.add_argument("--more-heldout", type=int, default=6)
    p.add_argument("--more-questions", type=int, default=0,
                   help="a seeded stratified sample of this many of the --more held-out questions (0: all)")
    p.add_argument("--out", default=str(ROOT / ".spanqa" / "training" / "heldout-squad2.json"))
    args = p.parse_args(argv)
    v1, v2 = reader_data.load_articles(args.v1), reader_data.load_articles(args.v2)
    _, held, titles = reader_data.split_articles(v1, v2, args.heldout_articles, args.seed)
    if args.questions and args.questions < len(held):
        held = reader_data.stratified_sample(held, args.questions, args.seed)
    for path in args.more:
        check_not_development(path)
        _, more, more_titles = reader_data.split_more(reader_data.load_articles(path, adversarial=True),
                                                      args.more_heldout, args.seed)
        if args.more_questions and args.more_questions < len(more):
            more = reader_data.stratified_sample(more, args.more_questions, args.seed)
        held, titles = held + more, titles + more_titles
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(reader_data.to_squad(held)), encoding="utf-8")
    print(json.dumps({"out": str(out), "articles": titles, "questions": len(held),
                      "unanswerable": sum(not q.answers for q in held)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
