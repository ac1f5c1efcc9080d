"""Fine-tune the all-MiniLM-L6-v2 body into spanqa's offline reader: a SQuAD 2.0-style span head (start/end
logits; no-answer = the span at [CLS]) trained on windows shaped like the pipeline's (``reader_data``).

One seeded, resumable command, CPU or GPU:

    python training/train_reader.py --minutes 80                 # a time budget: the schedule fits it
    python training/train_reader.py --examples 30000             # or an example budget
    python training/train_reader.py --minutes 80 --resume        # go on from the last checkpoint
    python training/train_reader.py --minutes 150 --pause-after 90   # 90 minutes now, the rest with --resume

Progress is a tqdm bar (examples, loss, examples/s). Every ``--eval-every`` examples the model is scored on
questions of the held-out training articles (paragraph contexts, SQuAD 2.0 rules: EM/F1, HasAns F1) — the
learning curve, written to ``<work>/curve.jsonl`` and to the exported ``training.json`` — and a checkpoint
(model, optimiser, schedule, stream position) is written to ``<work>/checkpoint.pt``. At the end the model is
exported in fp16 safetensors with its tokenizer to ``--out`` (a transformers ``BertForQuestionAnswering``
directory that ``components.core.backends.models`` resolves like any hub model). Never reads the development article.
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

DATA = ROOT.parent / "shared" / "data" / "squad-train"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--v1", default=str(DATA / "train-v1.1.json"), help="SQuAD 1.1 training JSON")
    p.add_argument("--v2", default=str(DATA / "train-v2.0-subset.json"), help="SQuAD 2.0 training subset JSON")
    p.add_argument("--heldout-articles", type=int, default=4, help="SQuAD 2.0 articles held out whole")
    p.add_argument("--more", action="append", default=[], metavar="SQUAD2_JSON",
                   help="SQuAD 2.0 development articles with adversarial unanswerable questions (e.g. "
                        "../shared/data/squad2-more/dev-v2.0-29-articles.json); repeatable. Never the development "
                        "article of ../shared/data/squad2/")
    p.add_argument("--more-heldout", type=int, default=6, help="--more articles held out whole (seeded by --seed)")
    p.add_argument("--more-repeat", type=int, default=1,
                   help="times each --more training question is in a pass (their weight against SQuAD 1.1)")
    p.add_argument("--structured", action="append", default=[], metavar="SQUAD2_JSON",
                   help="table and config blocks (training/structured_data.py --split train); repeatable")
    p.add_argument("--structured-repeat", type=int, default=1, help="times each --structured question is in a pass")
    p.add_argument("--v1-questions", type=int, default=0,
                   help="a seeded sample of this many SQuAD 1.1 / 2.0 training questions (0: all): the answerable "
                        "reading kept while a stage learns the --more questions")
    p.add_argument("--out", default=str(ROOT / ".spanqa" / "training" / "reader-out"),
                   help="export directory (outside git: copy a reader into models/ only to ship it)")
    p.add_argument("--work", default=str(ROOT / ".spanqa" / "training" / "reader"), help="checkpoints, curve")
    p.add_argument("--minutes", type=float, default=None, help="time budget (the LR schedule runs on time used)")
    p.add_argument("--examples", type=int, default=None, help="example budget (instead of --minutes)")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lr", type=float, default=8e-5)
    p.add_argument("--warmup", type=float, default=0.06, help="share of the budget spent warming up the LR")
    p.add_argument("--max-seq-length", type=int, default=256)
    p.add_argument("--stride", type=int, default=64)
    p.add_argument("--negatives", type=float, default=0.35, help="chance of a negative window per question")
    p.add_argument("--swaps", type=float, default=0.0,
                   help="chance of a swapped-word question (no answer) per answerable question")
    p.add_argument("--negations", type=float, default=0.0,
                   help="chance of a negated question (no answer: 'When did the war not end?') per answerable one")
    p.add_argument("--negated-repeat", type=int, default=1,
                   help="answer windows per answerable question that is itself negated (a negation alone must "
                        "not read as no answer once --negations is on)")
    p.add_argument("--antonyms", type=float, default=0.0,
                   help="chance of a question with a WordNet antonym (no answer: 'the smallest city') per answerable "
                        "one (training/wordnet-antonyms.tsv)")
    p.add_argument("--hard-negatives", action="store_true",
                   help="a negative from another paragraph is one of the 3 that BM25 ranks closest to the question "
                        "(without its answer), whole or the window of its best sentence, instead of any paragraph")
    p.add_argument("--unanswerable-repeat", type=int, default=1,
                   help="windows per SQuAD 2.0 unanswerable question in each pass")
    p.add_argument("--distil", default=None, metavar="TEACHER",
                   help="a reader (path or id) whose start/end distributions the student also learns on every "
                        "example that is not a constructed no-answer (swap, negation, antonym): keeps what the "
                        "teacher reads while the student learns the new kinds")
    p.add_argument("--distil-weight", type=float, default=1.0, help="weight of the distillation loss")
    p.add_argument("--distil-temperature", type=float, default=2.0, help="softmax temperature of the distillation")
    p.add_argument("--init", default="sentence-transformers/all-MiniLM-L6-v2",
                   help="the model to start from: the MiniLM body (a hub id the resolver finds) or a reader "
                        "directory (a second stage from a shipped reader; fresh optimiser and schedule)")
    p.add_argument("--skip", type=int, default=0,
                   help="start after the first N examples of the seeded stream: a second stage that continues its "
                        "first stage's data where it stopped (same --seed; see `stream_consumed` in training.json)")
    p.add_argument("--eval-every", type=int, default=4000, help="examples between evaluations and checkpoints")
    p.add_argument("--eval-questions", type=int, default=300)
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--stream-seed", type=int, default=None,
                   help="seed of the example stream alone (default: --seed, which also draws the held-out articles "
                        "and evaluation questions): a later stage reads a fresh shuffle of the questions without "
                        "replaying the stream with --skip")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: all cores)")
    p.add_argument("--device", default=None, help="cpu / cuda (default: cuda when present)")
    p.add_argument("--bf16", action="store_true",
                   help="bfloat16 autocast for the forward and backward passes (weights and optimiser stay fp32): "
                        "1.4-1.6x a forward and backward pass, 1.2x a short run on an AVX-512-BF16 CPU; about 18x slower "
                        "than float32 on an AVX2-only CPU, where it is emulated (measured; the run warns)")
    p.add_argument("--resume", action="store_true", help="continue from <work>/checkpoint.pt")
    p.add_argument("--pause-after", type=float, default=None, metavar="MINUTES",
                   help="stop this invocation after MINUTES of its own wall time, at a checkpoint and without "
                        "exporting: a --minutes budget longer than one sitting, gone on with --resume later")
    p.add_argument("--tiny", type=int, default=None, help="train on only the first N training questions (tests)")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    if (args.minutes is None) == (args.examples is None):
        p.error("give exactly one budget: --minutes M or --examples N")
    return args


def check_not_development(path: str) -> None:
    """Refuse the development article (reporting only) as training data."""
    if Path(path).resolve().parent.name == "squad2" or "dev-computational-complexity" in Path(path).name:
        raise SystemExit(f"train_reader: {path} is the development article, which is for reporting only; "
                         "give the squad2-more articles (../shared/data/squad2-more/) to --more instead.")


def answer_tokens(offsets, sequence_ids, start: int, end: int) -> tuple[int, int] | None:
    """Token indices of the first and last context tokens covering characters ``[start, end)``, or None when
    the answer is not wholly inside this sequence's context."""
    ctx = [i for i, s in enumerate(sequence_ids) if s == 1]
    if not ctx or offsets[ctx[0]][0] > start or offsets[ctx[-1]][1] < end:
        return None
    first = next(i for i in ctx if offsets[i][1] > start)
    last = next(i for i in reversed(ctx) if offsets[i][0] < end)
    return (first, last) if first <= last else None


def featurize(tokenizer, batch, max_len: int, stride: int, rng: random.Random):
    """One sequence per example: one that holds the answer (a random one when overflow gives several), or any
    sequence for a no-answer example (label [CLS] = 0). A feature is ``(ids, types, start, end, taught)``, taught
    when the example is not a constructed no-answer. Returns ``(features, skipped)``."""
    enc = tokenizer([e.question for e in batch], [e.context for e in batch], truncation="only_second",
                    max_length=max_len, stride=stride, return_overflowing_tokens=True, return_offsets_mapping=True)
    per_example: dict[int, list[int]] = {}
    for f, s in enumerate(enc["overflow_to_sample_mapping"]):
        per_example.setdefault(s, []).append(f)
    features, skipped = [], 0
    for s, feats in per_example.items():
        ex = batch[s]
        taught = ex.kind not in reader_data.UNTAUGHT_KINDS  # a teacher's reading is right to learn from here
        if ex.answer_start is None:
            f = rng.choice(feats)
            features.append((enc["input_ids"][f], enc["token_type_ids"][f], 0, 0, taught))
            continue
        hits = []
        for f in feats:
            span = answer_tokens(enc["offset_mapping"][f], enc.sequence_ids(f), ex.answer_start, ex.answer_end)
            if span:
                hits.append((f, span))
        if not hits:
            skipped += 1
            continue
        f, (a, b) = rng.choice(hits)
        features.append((enc["input_ids"][f], enc["token_type_ids"][f], a, b, taught))
    return features, skipped


def collate(features, pad_id: int):
    import torch

    width = max(len(f[0]) for f in features)
    ids = torch.full((len(features), width), pad_id, dtype=torch.long)
    types = torch.zeros((len(features), width), dtype=torch.long)
    mask = torch.zeros((len(features), width), dtype=torch.long)
    for r, (i, t, *_) in enumerate(features):
        ids[r, : len(i)], types[r, : len(t)], mask[r, : len(i)] = torch.tensor(i), torch.tensor(t), 1
    starts = torch.tensor([f[2] for f in features])
    ends = torch.tensor([f[3] for f in features])
    return {"input_ids": ids, "token_type_ids": types, "attention_mask": mask,
            "start_positions": starts, "end_positions": ends}


def distillation_loss(student, teacher, mask, temperature: float):
    """KL(teacher ‖ student) of the start and of the end distributions softened by ``temperature``, over the real
    tokens of each row (``mask``), averaged over rows and the two ends and scaled by T² so that its gradients keep
    the size of the hard loss's (Hinton et al. 2015). ``student`` and ``teacher`` are ``(start_logits,
    end_logits)`` pairs of ``(rows, length)`` tensors."""
    import torch.nn.functional as F

    pad = ~mask.bool()
    total = 0.0
    for s, t in zip(student, teacher):
        s = F.log_softmax(s.float().masked_fill(pad, -1e4) / temperature, dim=-1)
        t = F.log_softmax(t.float().masked_fill(pad, -1e4) / temperature, dim=-1)
        total = total + F.kl_div(s, t, log_target=True, reduction="batchmean")
    return total / 2 * temperature ** 2


def evaluate(model, tokenizer, questions, max_len: int) -> dict:
    """SQuAD 2.0 EM/F1 of the model on ``questions`` with their paragraphs as contexts, decoded by the pipeline's
    own decoder (no answer when the best span's logit does not beat the null logit)."""
    from components.evaluation.metrics import squad_summary
    from components.readers.qa_decoder import QADecoder

    model.eval()
    decoder = QADecoder(tokenizer, model, max_seq_length=max_len, stride=64, batch_size=16, answers_per_seq=1,
                        max_answer_length=30, calibration_factor=0.1, memo_size=1)
    records = []
    for q in questions:
        seqs = decoder.decode_contexts(q.question, [q.context])[0]
        best = max((s for d in seqs for s in d.spans), key=lambda s: s.logit, default=None)
        null = min(d.null_logit for d in seqs)
        pred = q.context[best.char_start : best.char_end] if best and best.logit > null else None
        records.append({"answerable": bool(q.answers), "prediction": pred, "golds": [t for _, t in q.answers]})
    model.train()
    s = squad_summary(records)
    return {k: round(100 * s[k], 2) if isinstance(s[k], float) else s[k]
            for k in ("exact", "f1", "HasAns_f1", "NoAns_f1", "total")}


def export(model, tokenizer, out: Path, info: dict) -> None:
    """fp16 safetensors + tokenizer + ``training.json`` (the command, data split, learning curve)."""
    import copy

    import torch

    out.mkdir(parents=True, exist_ok=True)
    half = copy.deepcopy(model).to("cpu").to(torch.float16)
    half.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    (out / "training.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")


def emulated_bf16(device: str, cpuinfo: str | None = None) -> bool:
    """Whether bfloat16 autocast on ``device`` is emulated: a CPU whose flags (``/proc/cpuinfo``, or ``cpuinfo``)
    name neither ``avx512_bf16`` nor ``amx_bf16``. Measured on an AVX2-only CPU: 0.4 examples a second under bf16
    autocast against 7.4 in float32. Unknown (no ``/proc/cpuinfo``) counts as native."""
    if not device.startswith("cpu"):
        return False
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
    flags = {f for line in cpuinfo.splitlines()
             if line.startswith("flags") and ":" in line for f in line.split(":", 1)[1].split()}
    return bool(flags) and not flags & {"avx512_bf16", "amx_bf16"}


def start_run(args):
    """``(device, work dir)`` of a training run: quiet transformers, ``--threads``, seeded ``random`` and torch, the
    work folder made."""
    import torch
    import transformers

    from components.core.backends.models import torch_device

    transformers.logging.set_verbosity_error()
    if args.threads:
        torch.set_num_threads(args.threads)
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    device = torch_device(args.device)
    if getattr(args, "bf16", False) and emulated_bf16(device):
        print("train_reader.py: --bf16 asks for bfloat16 autocast, but this CPU has no native bfloat16 (no AVX-512 "
              "BF16 or AMX flag in /proc/cpuinfo), so torch emulates it: about 18x slower than float32 on an AVX2 "
              "CPU (measured). The run goes on as asked; drop --bf16 to train in float32.", file=sys.stderr)
    return device, work


def main(argv=None) -> int:
    args = parse_args(argv)
    import torch
    import transformers
    from tqdm import tqdm

    from components.core.backends.models import load_hf_model, resolve_model

    device, work = start_run(args)

    v1, v2 = reader_data.load_articles(args.v1), reader_data.load_articles(args.v2)
    train, heldout, held_titles = reader_data.split_articles(v1, v2, args.heldout_articles, args.seed)
    if args.v1_questions and args.v1_questions < len(train):
        train = random.Random(args.seed).sample(train, args.v1_questions)
    more_titles = []
    for path in args.more:
        check_not_development(path)
        more_train, more_held, titles = reader_data.split_more(
            reader_data.load_articles(path, adversarial=True), args.more_heldout, args.seed)
        train += more_train * args.more_repeat
        heldout += more_held
        more_titles += titles
    held_titles = held_titles + more_titles
    for path in args.structured:  # training sources only: the held-out sources are another file, never read here
        train += [q for qs in reader_data.load_articles(path, structured=True).values() for q in qs] \
            * args.structured_repeat
    if args.tiny:
        train = train[: args.tiny]
    eval_qs = random.Random(args.seed).sample(heldout, min(args.eval_questions, len(heldout)))
    print(f"training questions {len(train):,} · held-out articles {held_titles} ({len(heldout):,} questions, "
          f"{sum(not q.answers for q in heldout)} unanswerable) · device {device}", file=sys.stderr)

    body = resolve_model(args.init, component="training").path
    previous = Path(body) / "training.json"
    previous = json.loads(previous.read_text(encoding="utf-8")) if previous.exists() else None
    tokenizer = transformers.AutoTokenizer.from_pretrained(body)
    model = transformers.AutoModelForQuestionAnswering.from_pretrained(body, dtype=torch.float32).to(device)
    model.bert.embeddings.word_embeddings.weight.requires_grad_(False)  # 11.7 M of 22.7 M: frozen, as measured
    params = [p for p in model.parameters() if p.requires_grad]
    teacher = None
    if args.distil:
        teacher_tokenizer, teacher = load_hf_model(resolve_model(args.distil, component="training").path,
                                                   "AutoModelForQuestionAnswering", device)
        if teacher_tokenizer.get_vocab() != tokenizer.get_vocab():
            raise SystemExit(f"train_reader: the --distil teacher {args.distil!r} tokenizes differently from the "
                             f"model it teaches ({args.init!r}), so its start and end logits point at other tokens. "
                             "Give a teacher trained from the same body (all-MiniLM-L6-v2), such as "
                             "models/spanqa-reader-minilm-l6.")
        teacher.requires_grad_(False)
    optim = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.01)

    state = {"consumed": args.skip, "seen": 0, "step": 0, "curve": [], "skipped": 0,
             "seconds": 0.0}
    ckpt = work / "checkpoint.pt"
    if args.resume and ckpt.exists():
        saved = torch.load(ckpt, map_location=device, weights_only=False)
        model.load_state_dict(saved["model"])
        optim.load_state_dict(saved["optim"])
        state = saved["state"]
        print(f"resumed at {state['seen']:,} examples", file=sys.stderr)

    def progress() -> float:
        """Share of the budget used: of the time budget (robust to a machine that slows down) or of the examples."""
        if budget_s is not None:
            return min(1.0, (started + time.time() - t0) / budget_s)
        return min(1.0, state["seen"] / args.examples)

    def lr_now() -> float:  # linear warm-up, then linear decay to 0 at the end of the budget
        done = progress()
        return args.lr * (done / args.warmup if done < args.warmup else (1 - done) / (1 - args.warmup))

    stream_seed = args.seed if args.stream_seed is None else args.stream_seed
    stream = reader_data.examples(train, stream_seed, args.negatives, args.swaps, args.unanswerable_repeat,
                                   args.hard_negatives, args.negations, args.antonyms, args.negated_repeat)
    for _ in range(state["consumed"]):  # the stream is seeded: skip what the checkpoint (or --skip) already used
        next(stream)
    rng = random.Random(args.seed + state["consumed"])
    t0, started = time.time(), state["seconds"]
    budget_s = args.minutes * 60 if args.minutes else None
    bar = tqdm(total=args.examples, initial=state["seen"], unit="ex", disable=args.no_progress, file=sys.stderr)
    next_eval = (state["seen"] // args.eval_every + 1) * args.eval_every
    loss_ema = None
    model.train()

    def checkpoint():
        state["seconds"] = started + time.time() - t0
        torch.save({"model": model.state_dict(), "optim": optim.state_dict(), "state": state}, ckpt)

    while progress() < 1.0:
        buffer = [next(stream) for _ in range(args.batch_size * 16)]
        state["consumed"] += len(buffer)
        buffer.sort(key=lambda e: len(e.question) + len(e.context))  # similar lengths pad least
        batches = [buffer[i : i + args.batch_size] for i in range(0, len(buffer), args.batch_size)]
        rng.shuffle(batches)
        for batch in batches:
            if progress() >= 1.0:
                break
            features, skipped = featurize(tokenizer, batch, args.max_seq_length, args.stride, rng)
            state["skipped"] += skipped
            if not features:
                continue
            inputs = {k: v.to(device) for k, v in collate(features, tokenizer.pad_token_id).items()}
            taught = torch.tensor([f[4] for f in features], device=device)
            for group in optim.param_groups:
                group["lr"] = lr_now()
            with torch.autocast(device.split(":")[0], dtype=torch.bfloat16, enabled=args.bf16):
                out = model(**inputs)
                loss = out.loss
                if teacher is not None and taught.any():
                    rows = {k: inputs[k][taught] for k in ("input_ids", "token_type_ids", "attention_mask")}
                    with torch.no_grad():
                        t = teacher(**rows)
                    kd = distillation_loss((out.start_logits[taught], out.end_logits[taught]),
                                           (t.start_logits, t.end_logits), rows["attention_mask"],
                                           args.distil_temperature)
                    loss = loss + args.distil_weight * kd
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optim.step()
            optim.zero_grad(set_to_none=True)
            state["seen"] += len(features)
            state["step"] += 1
            loss_ema = loss.item() if loss_ema is None else 0.95 * loss_ema + 0.05 * loss.item()
            state.setdefault("loss_first", round(loss.item(), 4))
            bar.update(len(features))
            bar.set_postfix(loss=f"{loss_ema:.3f}", lr=f"{lr_now():.1e}")
        if state["seen"] >= next_eval:
            next_eval += args.eval_every
            point = {"examples": state["seen"], "loss": round(loss_ema, 4),
                     "minutes": round((started + time.time() - t0) / 60, 1), **evaluate(model, tokenizer, eval_qs,
                                                                                     args.max_seq_length)}
            state["curve"].append(point)
            with open(work / "curve.jsonl", "a", encoding="utf-8") as fh:
                fh.write(json.dumps(point) + "\n")
            tqdm.write(json.dumps(point), file=sys.stderr)
            checkpoint()
        if args.pause_after is not None and time.time() - t0 >= args.pause_after * 60 and progress() < 1.0:
            checkpoint()  # at a buffer's end: the stream position and the schedule's time resume exactly
            bar.close()
            done = (started + time.time() - t0) / 60
            print(f"train_reader: paused after {args.pause_after:g} minutes ({state['seen']:,} examples, "
                  f"{done:.1f} of the budget's minutes used; checkpoint {ckpt}). Nothing was exported: go on with "
                  "the same command and --resume.", file=sys.stderr)
            print(json.dumps({"paused": True, "examples_seen": state["seen"], "minutes_used": round(done, 1),
                              "checkpoint": str(ckpt)}))
            return 0
    bar.close()
    final = evaluate(model, tokenizer, eval_qs, args.max_seq_length)
    state["curve"].append({"examples": state["seen"], "loss": round(loss_ema or math.nan, 4),
                           "minutes": round((started + time.time() - t0) / 60, 1), **final})
    checkpoint()
    info = {
        "command": "python training/train_reader.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "base": "sentence-transformers/all-MiniLM-L6-v2", "init": args.init, "seed": args.seed,
        "stream_seed": stream_seed, "examples_seen": state["seen"],
        "steps": state["step"], "stream_skipped": args.skip, "stream_consumed": state["consumed"],
        "skipped_answers_cut_by_truncation": state["skipped"],
        "loss_first_batch": state.get("loss_first"), "loss_last_ema": round(loss_ema, 4) if loss_ema else None,
        "heldout_articles": held_titles, "train_questions": len(train), "minutes": round(state["seconds"] / 60, 1),
        "device": device, "threads": torch.get_num_threads(), "curve": state["curve"],
        "load_average": os.getloadavg(), "hyperparameters": {k: getattr(args, k) for k in (
            "batch_size", "lr", "warmup", "max_seq_length", "stride", "negatives", "swaps", "negations", "antonyms",
            "negated_repeat", "unanswerable_repeat", "hard_negatives", "bf16", "distil", "distil_weight",
            "distil_temperature", "more", "more_heldout", "more_repeat", "v1_questions", "structured",
            "structured_repeat")},
        "previous_stage": previous,
    }
    export(model, tokenizer, Path(args.out), info)
    print(json.dumps({"out": args.out, **final, "examples_seen": state["seen"]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
