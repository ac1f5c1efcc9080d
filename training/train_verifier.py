"""Train spanqa's offline verifier: a MiniLM cross-encoder that reads (question, the answer marked in its sentence
with lead-in) and gives the probability that the answer is right, learnt on the shipped reader's own candidates
over training articles (``verifier_data``; Hu et al. 2019, "Read + Verify").

    python training/train_verifier.py --minutes 40                     # candidates, training, export
    python training/train_verifier.py --tiny 40 --examples 256          # a smoke run on a tiny slice

Candidates come from the squad2-more training articles (adversarial unanswerable questions) and a seeded sample
of SQuAD 1.1 / 2.0 training questions; the articles ``train_reader.py`` holds out (same ``--seed``) are read the
same way for model selection and never train. The development article is never read. Progress is a tqdm bar;
every ``--eval-every`` examples the held-out log loss and AUC are recorded (the learning curve, in
``training.json``). The export (``--out``, outside git) is a transformers ``BertForSequenceClassification``
(one logit, fp16 safetensors) that ``components.core.backends.models`` resolves; a verifier ships when it is
copied to ``models/spanqa-verifier-minilm-l6/``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "training"))

import reader_data  # noqa: E402
import verifier_data  # noqa: E402
import train_reader  # noqa: E402
from train_reader import DATA, check_not_development  # noqa: E402
from verifier_ranking import pair_loss, question_batches, within_question  # noqa: E402

MORE = ROOT.parent / "shared" / "data" / "squad2-more" / "dev-v2.0-29-articles.json"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--v1", default=str(DATA / "train-v1.1.json"))
    p.add_argument("--v2", default=str(DATA / "train-v2.0-subset.json"))
    p.add_argument("--more", default=str(MORE), help="SQuAD 2.0 articles with adversarial unanswerable questions")
    p.add_argument("--seed", type=int, default=13, help="train_reader.py's seed: the same held-out articles")
    p.add_argument("--heldout-articles", type=int, default=4)
    p.add_argument("--more-heldout", type=int, default=6)
    p.add_argument("--v1-questions", type=int, default=5000, help="seeded sample of SQuAD 1.1/2.0 training questions")
    p.add_argument("--structured", default=None, metavar="SQUAD2_JSON",
                   help="table and config blocks to train on (training/structured_data.py --split train)")
    p.add_argument("--structured-heldout", default=None, metavar="SQUAD2_JSON",
                   help="held-out table and config blocks, judged with the held-out articles (--split heldout)")
    p.add_argument("--structured-repeat", type=int, default=1,
                   help="times each candidate on a --structured block is in a pass (a few thousand beside tens of "
                        "thousands on articles)")
    p.add_argument("--constructed", type=int, default=0,
                   help="also this many unanswerable questions made from answerable training questions (a word "
                        "swapped, the question negated, an antonym: verifier_data.constructed), of SQuAD 1.1 articles")
    p.add_argument("--heldout-questions", type=int, default=1200, help="seeded stratified sample of held-out questions")
    p.add_argument("--reader", default="spanqa/reader-minilm-l6-squad2", help="whose candidates are judged")
    p.add_argument("--init", default="spanqa/reader-minilm-l6-squad2",
                   help="the body the cross-encoder starts from (the reader's: it already aligns question and text)")
    p.add_argument("--hard", type=float, default=0.3, help="chance of also reading a BM25-close other paragraph")
    p.add_argument("--per-context", type=int, default=2, help="reader spans kept per context")
    p.add_argument("--minutes", type=float, default=None, help="time budget for training (the LR schedule fits it)")
    p.add_argument("--examples", type=int, default=None, help="example budget (instead of --minutes)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--warmup", type=float, default=0.06)
    p.add_argument("--max-seq-length", type=int, default=192)
    p.add_argument("--pairwise", type=float, default=0.0, metavar="W",
                   help="also W x a pairwise loss over each question's right and wrong candidates, in batches of "
                        "whole questions (verifier_ranking.py); 0 (default): per-candidate loss, length-sorted batches")
    p.add_argument("--eval-every", type=int, default=4096)
    p.add_argument("--tiny", type=int, default=0, help="use only this many questions of each set (tests)")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--device", default=None)
    p.add_argument("--work", default=str(ROOT / ".spanqa" / "training" / "verifier"), help="candidates, curve")
    p.add_argument("--out", default=str(ROOT / ".spanqa" / "training" / "verifier-out"))
    args = p.parse_args(argv)
    if (args.minutes is None) == (args.examples is None):
        p.error("give one budget: --minutes or --examples")
    if args.pairwise < 0:
        p.error(f"--pairwise {args.pairwise}: give 0 (off) or a positive weight")
    if args.structured_repeat < 1:
        p.error(f"--structured-repeat {args.structured_repeat}: give 1 or more (times each structured candidate is "
                "in a pass)")
    return args


def question_sets(args):
    """``(train, heldout, held_titles)`` questions, split by article exactly as ``train_reader.py`` splits them."""
    v1, v2 = reader_data.load_articles(args.v1), reader_data.load_articles(args.v2)
    train, held, titles = reader_data.split_articles(v1, v2, args.heldout_articles, args.seed)
    if args.v1_questions and args.v1_questions < len(train):
        train = random.Random(args.seed).sample(train, args.v1_questions)
    check_not_development(args.more)
    more_train, more_held, more_titles = reader_data.split_more(
        reader_data.load_articles(args.more, adversarial=True), args.more_heldout, args.seed)
    if args.constructed:  # from the training articles only: held-out articles stay unread
        train = train + verifier_data.constructed(train, args.constructed, args.seed)
    train, held = train + more_train, held + more_held
    if args.heldout_questions and args.heldout_questions < len(held):
        held = reader_data.stratified_sample(held, args.heldout_questions, args.seed)
    for path, into in ((args.structured, train), (args.structured_heldout, held)):
        if path:
            into += [q for qs in reader_data.load_articles(path, structured=True).values() for q in qs]
    if args.tiny:
        rng = random.Random(args.seed)
        train, held = rng.sample(train, min(args.tiny, len(train))), rng.sample(held, min(args.tiny, len(held)))
    return train, held, titles + more_titles


# the code that makes a candidate (the reader's spans and their edges), shapes its text (the pair the model reads,
# the lead-in, the units) and labels it; globs under the project root
PAIR_CODE = ("components/readers/extractive_reader.py", "components/core/reading/*.py",
             "components/core/verification/verifier_input.py", "components/core/verification/checks.py",
             "components/core/text/splitting.py", "components/evaluation/metrics.py", "training/verifier_data.py")


def candidate_fingerprint(args) -> str:
    """SHA-256 over what the candidates are made of beyond the arguments: the structured files' contents (the same
    path rebuilt by another ``structured_data.py`` is other data), the reader's weights and the code that shapes and
    labels a pair — so a cache is never reused for an input the model would not see (a run once trained on cached
    candidates of an input since reverted)."""
    import hashlib

    from components.core.backends.models import resolve_model

    h = hashlib.sha256()
    files = []
    for pattern in PAIR_CODE:
        found = sorted(ROOT.glob(pattern))
        if not found:  # never a key that silently ignores code it was meant to cover
            raise SystemExit(f"train_verifier: {pattern} matches no file under {ROOT}; fix PAIR_CODE.")
        files += found
    files += [Path(p) for p in (args.structured, args.structured_heldout) if p]
    weights = Path(resolve_model(args.reader, component="train_verifier").path)
    files += sorted(weights.glob("*.safetensors")) if weights.is_dir() else []
    for f in files:
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def candidates(args, work: Path, train, held):
    """The labelled candidates of both sets, cached in ``work`` under a key of everything that shapes them."""
    from components.readers.extractive_reader import ExtractiveReader

    key = json.dumps({**{k: getattr(args, k) for k in ("v1", "v2", "more", "seed", "heldout_articles", "more_heldout",
                                                       "v1_questions", "heldout_questions", "reader", "hard",
                                                       "per_context", "tiny", "structured", "structured_heldout",
                                                       "constructed")},
                      "contents": candidate_fingerprint(args)}, sort_keys=True)
    paths = {"train": work / "candidates-train.jsonl", "heldout": work / "candidates-heldout.jsonl"}
    stamp = work / "candidates.key"
    if not (stamp.exists() and stamp.read_text(encoding="utf-8") == key and all(p.exists() for p in paths.values())):
        reader = ExtractiveReader(model=args.reader, top_k=args.per_context, no_answer=True)
        reader.warm_up()
        for name, qs, seed in (("heldout", held, args.seed + 1), ("train", train, args.seed)):
            stats = verifier_data.write_jsonl(paths[name], verifier_data.build(qs, reader, seed=seed, hard=args.hard,
                                                                               per_context=args.per_context))
            print(f"{name}: {stats['candidates']:,} candidates, {stats['right']:,} right", file=sys.stderr)
        stamp.write_text(key, encoding="utf-8")
    return verifier_data.read_jsonl(paths["train"]), verifier_data.read_jsonl(paths["heldout"])


def encode(tokenizer, rows, max_len: int):
    return tokenizer([r.text_a for r in rows], [r.text_b for r in rows], truncation="only_second",
                     max_length=max_len, padding=True, return_tensors="pt")


def probabilities(model, tokenizer, rows, max_len: int, batch: int = 64) -> list[float]:
    import torch

    model.eval()
    order = sorted(range(len(rows)), key=lambda i: len(rows[i].text_a) + len(rows[i].text_b))
    out = [0.0] * len(rows)
    with torch.inference_mode():
        for s in range(0, len(order), batch):
            idx = order[s: s + batch]
            enc = encode(tokenizer, [rows[i] for i in idx], max_len).to(model.device)
            for i, p in zip(idx, torch.sigmoid(model(**enc).logits[:, 0].float()).tolist()):
                out[i] = p
    model.train()
    return out


def scores(probs: list[float], rows) -> dict:
    """Held-out log loss, AUC and accuracy at 0.5 (all candidates, and the reader's best on adversarial data)."""
    from sklearn.metrics import roc_auc_score

    labels = [r.label for r in rows]
    eps = 1e-6
    loss = -sum(y * math.log(max(p, eps)) + (1 - y) * math.log(max(1 - p, eps)) for p, y in zip(probs, labels))
    out = {"log_loss": round(loss / max(1, len(rows)), 4),
           "accuracy": round(sum((p >= 0.5) == bool(y) for p, y in zip(probs, labels)) / max(1, len(rows)), 4),
           "candidates": len(rows), "right": sum(labels)}
    if 0 < sum(labels) < len(labels):
        out["auc"] = round(float(roc_auc_score(labels, probs)), 4)
    out["within_question"] = within_question(probs, labels, [r.qid for r in rows], [r.reader_score for r in rows])
    adv = [(p, r.label) for p, r in zip(probs, rows) if r.adversarial and r.rank == 0]
    if adv and 0 < sum(y for _, y in adv) < len(adv):
        out["auc_adversarial_best"] = round(float(roc_auc_score([y for _, y in adv], [p for p, _ in adv])), 4)
    return out


def export(model, tokenizer, out: Path, info: dict) -> None:
    """``train_reader.export`` (fp16 safetensors, tokenizer, ``training.json``) with the one label named."""
    model.config.id2label, model.config.label2id = {0: "right"}, {"right": 0}
    train_reader.export(model, tokenizer, out, info)


def main(argv=None) -> int:
    args = parse_args(argv)
    import torch
    import transformers
    from tqdm import tqdm

    from components.core.backends.models import resolve_model

    device, work = train_reader.start_run(args)
    train_qs, held_qs, held_titles = question_sets(args)
    print(f"questions: {len(train_qs):,} train, {len(held_qs):,} held out (articles {held_titles})", file=sys.stderr)
    train, held = candidates(args, work, train_qs, held_qs)
    if not train or not held:
        raise SystemExit("train_verifier: no candidates to learn from (is the reader answering at all?)")
    train += [r for r in train if r.article.startswith("structured-")] * (args.structured_repeat - 1)

    body = resolve_model(args.init, component="training").path
    tokenizer = transformers.AutoTokenizer.from_pretrained(body)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(
        body, num_labels=1, dtype=torch.float32).to(device)
    model.bert.embeddings.word_embeddings.weight.requires_grad_(False)  # as the reader: the vocabulary's geometry kept
    params = [p for p in model.parameters() if p.requires_grad]
    optim = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.01)
    budget_s = args.minutes * 60 if args.minutes is not None else None
    t0, seen, curve = time.time(), 0, []

    def progress() -> float:
        return min(1.0, (time.time() - t0) / budget_s) if budget_s is not None else min(1.0, seen / args.examples)

    def evaluate() -> dict:
        point = {"examples": seen, **scores(probabilities(model, tokenizer, held, args.max_seq_length), held)}
        curve.append(point)
        tqdm.write(json.dumps(point), file=sys.stderr)
        return point

    rng = random.Random(args.seed)
    first = evaluate()
    bar = tqdm(desc="verifier", unit="ex", total=args.examples)
    next_eval, epoch = args.eval_every, 0
    while progress() < 1.0:
        if args.pairwise:  # whole questions per batch, so a batch holds the pairs the pairwise loss compares
            batches = question_batches([r.qid for r in train], args.batch_size, rng)
        else:
            order = list(range(len(train)))
            rng.shuffle(order)
            # length-sorted buffers of 50 batches: little padding, still shuffled
            chunks = [order[i: i + 50 * args.batch_size] for i in range(0, len(order), 50 * args.batch_size)]
            batches = [c[j: j + args.batch_size] for c in chunks
                       for c in [sorted(c, key=lambda i: len(train[i].text_a) + len(train[i].text_b))]
                       for j in range(0, len(c), args.batch_size)]
            rng.shuffle(batches)
        for idx in batches:
            done = progress()
            if done >= 1.0:
                break
            lr = args.lr * (done / args.warmup if done < args.warmup else (1 - done) / (1 - args.warmup))
            for g in optim.param_groups:
                g["lr"] = lr
            rows = [train[i] for i in idx]
            enc = encode(tokenizer, rows, args.max_seq_length).to(device)
            logits = model(**enc).logits[:, 0]
            target = torch.tensor([float(r.label) for r in rows], device=device)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, target)
            if args.pairwise:
                loss = loss + args.pairwise * pair_loss(logits, [r.qid for r in rows], [r.label for r in rows])
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optim.step()
            optim.zero_grad(set_to_none=True)
            seen += len(rows)
            bar.update(len(rows))
            bar.set_postfix(loss=f"{loss.item():.3f}", lr=f"{lr:.1e}", epoch=epoch)
            if seen >= next_eval:
                evaluate()
                next_eval += args.eval_every
        epoch += 1
    bar.close()
    last = evaluate()
    info = {"command": "python training/train_verifier.py " + " ".join(sys.argv[1:] if argv is None else argv),
            "reader": args.reader, "init": args.init, "heldout_articles": held_titles,
            "train_questions": len(train_qs), "heldout_questions": len(held_qs),
            "train_candidates": len(train), "train_right": sum(r.label for r in train),
            "examples_seen": seen, "epochs": round(seen / len(train), 2), "seconds": round(time.time() - t0),
            "curve": curve, "first": first, "final": last, "load_average": os.getloadavg(),
            "hyperparameters": {k: getattr(args, k) for k in ("lr", "batch_size", "warmup", "max_seq_length", "hard",
                                                               "per_context", "v1_questions", "structured_repeat",
                                                               "seed", "pairwise")},
            "input": "components.core.verification.verifier_input.verifier_pair", "output": "sigmoid(logit) = P(right)",
            "torch": torch.__version__, "transformers": transformers.__version__}
    export(model, tokenizer, Path(args.out), info)
    print(json.dumps({"out": args.out, "first": first, "final": last}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
