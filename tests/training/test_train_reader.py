"""The reader's training recipe on a tiny slice (seconds): articles are held out whole, windows hold their
answers at the stated offsets, labels point at the right tokens, and a short run's loss falls, checkpoints,
resumes and exports a model the resolver can load."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data" / "squad-train"
sys.path.insert(0, str(ROOT / "training"))

import reader_data  # noqa: E402
import unanswerable  # noqa: E402
import train_reader  # noqa: E402

needs_data = pytest.mark.skipif(not (DATA / "train-v2.0-subset.json").exists(),
                                reason="needs ../shared/data/squad-train (the training data)")


def _q(context, answers, qid="q1", plausible=()):
    return reader_data.Question(qid, "What colour is the lamp?", context, tuple(answers), tuple(plausible), "A", 0)


def test_windows_hold_the_answer_at_its_offsets_and_negatives_do_not():
    context = ("The shop opens at nine. The lamp is red and tall. It was made in 1990. "
               "Deliveries come on Monday. The owner is Ada.")
    start = context.index("red")
    questions = [_q(context, [(start, "red")], qid=f"q{i}") for i in range(40)]
    questions.append(_q(context, [], qid="noans", plausible=[(start, "red")]))
    kinds = set()
    stream = reader_data.examples(questions, seed=3, negatives=1.0)
    for _ in range(200):
        ex = next(stream)
        kinds.add(ex.kind)
        if ex.answer_start is None:
            if ex.kind == "neg-window":
                assert "red" not in ex.context
        else:
            assert ex.context[ex.answer_start : ex.answer_end] == "red"
    assert {"window", "paragraph", "neg-window", "unanswerable"} <= kinds


def test_answer_tokens_label_the_covering_tokens():
    from components.core.backends.models import resolve_model
    import transformers

    tok = transformers.AutoTokenizer.from_pretrained(resolve_model("sentence-transformers/all-MiniLM-L6-v2").path)
    context = "The lamp was made in 1990 by Ada Lovelace."
    enc = tok(["When was it made?"], [context], return_offsets_mapping=True)
    offsets, seq = enc["offset_mapping"][0], enc.sequence_ids(0)
    start = context.index("Ada Lovelace")
    first, last = train_reader.answer_tokens(offsets, seq, start, start + len("Ada Lovelace"))
    assert tok.decode(enc["input_ids"][0][first : last + 1]) == "ada lovelace"
    assert train_reader.answer_tokens(offsets, seq, 0, len(context) + 5) is None  # not wholly inside


@needs_data
def test_split_holds_out_whole_articles_and_drops_their_squad1_copies():
    v1 = reader_data.load_articles(DATA / "train-v1.1.json")
    v2 = reader_data.load_articles(DATA / "train-v2.0-subset.json")
    train, held, titles = reader_data.split_articles(v1, v2, heldout=4, seed=13)
    assert len(titles) == 4 and all(t in v2 for t in titles)
    assert not {q.article for q in train} & set(titles)
    assert {q.article for q in held} == set(titles)
    assert any(not q.answers for q in held) and any(not q.answers for q in train)  # both see unanswerables
    assert len(held) >= 1000  # enough held-out questions to calibrate on
    assert "Computational_complexity_theory" not in {q.article for q in train}  # never the development article


@needs_data
def test_a_tiny_run_lowers_its_loss_resumes_and_exports(tmp_path):
    from components.core.backends.models import load_hf_model

    out, work = tmp_path / "model", tmp_path / "work"
    common = ["--tiny", "12", "--eval-questions", "8", "--eval-every", "48", "--batch-size", "8", "--lr", "3e-4",
              "--warmup", "0.1", "--out", str(out), "--work", str(work), "--no-progress", "--threads", "2"]
    assert train_reader.main(["--examples", "96", *common]) == 0
    info = json.loads((out / "training.json").read_text())
    assert info["examples_seen"] >= 96 and info["loss_last_ema"] < info["loss_first_batch"], info
    assert info["curve"] and {"examples", "f1", "HasAns_f1"} <= set(info["curve"][0])
    assert (work / "checkpoint.pt").exists() and (out / "model.safetensors").exists()
    assert train_reader.main(["--examples", "144", "--resume", *common]) == 0
    assert json.loads((out / "training.json").read_text())["examples_seen"] >= 144
    tokenizer, model = load_hf_model(str(out), "AutoModelForQuestionAnswering")
    assert type(model).__name__ == "BertForQuestionAnswering" and str(model.dtype) == "torch.float32"
    # a second stage starts from the exported reader and records the stage it came from
    second = tmp_path / "second"
    stage2 = [a if a != str(out) else str(second) for a in common]
    stage2 = [a if a != str(work) else str(tmp_path / "work2") for a in stage2]
    assert train_reader.main(["--examples", "32", "--init", str(out), "--swaps", "1.0", "--skip", "512", "--bf16",
                              "--negations", "0.5", "--antonyms", "0.5", "--stream-seed", "5",
                              "--distil", str(out), *stage2]) == 0
    info2 = json.loads((second / "training.json").read_text())
    assert info2["stream_skipped"] == 512 and info2["stream_consumed"] >= 512 + 32  # it went on where it was told
    assert info2["init"] == str(out) and info2["previous_stage"]["examples_seen"] >= 144
    assert info2["hyperparameters"]["swaps"] == 1.0 and info2["examples_seen"] >= 32
    assert info2["stream_seed"] == 5 and info["stream_seed"] == info["seed"]  # the stream alone took the new seed
    assert info2["heldout_articles"] == info["heldout_articles"]  # the held-out split follows --seed, not the stream
    assert info2["hyperparameters"]["negations"] == 0.5 and info2["hyperparameters"]["antonyms"] == 0.5
    assert info2["hyperparameters"]["bf16"] is True and info["hyperparameters"]["bf16"] is False
    assert info2["hyperparameters"]["distil"] == str(out) and info["hyperparameters"]["distil"] is None
    _, half = load_hf_model(str(second), "AutoModelForQuestionAnswering")  # bf16 autocast still exports fp16 weights
    assert all(p.isfinite().all() for p in half.parameters())
    # a teacher whose tokenizer differs would teach logits of other tokens: a clear error, before any training
    other = tmp_path / "other-vocab"
    other_tokenizer, other_model = load_hf_model(str(out), "AutoModelForQuestionAnswering")
    other_tokenizer.add_tokens(["glimmerlinezz"])
    other_tokenizer.save_pretrained(other)
    other_model.save_pretrained(other)
    with pytest.raises(SystemExit, match="tokenizes differently from the model it teaches"):
        train_reader.main(["--examples", "16", "--init", str(out), "--distil", str(other), *stage2])


@needs_data
def test_a_paused_run_checkpoints_without_exporting_and_resumes_where_it_stopped(tmp_path, capsys):
    out, work = tmp_path / "model", tmp_path / "work"
    common = ["--examples", "160", "--tiny", "12", "--eval-questions", "4", "--eval-every", "10000", "--batch-size",
              "4", "--out", str(out), "--work", str(work), "--no-progress", "--threads", "2"]
    assert train_reader.main(["--pause-after", "0", *common]) == 0  # a budget of 0 minutes: one buffer, then pause
    printed = capsys.readouterr()
    paused = json.loads(printed.out.strip().splitlines()[-1])
    assert paused["paused"] is True and 0 < paused["examples_seen"] < 160, paused
    assert (work / "checkpoint.pt").exists() and not (out / "model.safetensors").exists()
    assert "Nothing was exported: go on with the same command and --resume." in printed.err
    assert train_reader.main(["--resume", *common]) == 0
    info = json.loads((out / "training.json").read_text())
    assert info["examples_seen"] >= 160 and info["stream_consumed"] > paused["examples_seen"]


def test_stratified_sample_keeps_each_article_and_the_unanswerable_share():
    qs = [reader_data.Question(f"{a}{i}", "q?", "c", () if i % 4 == 0 else ((0, "c"),), (), a, 0)
          for a in ("A", "B") for i in range(100)]
    sample = reader_data.stratified_sample(qs, 50, seed=1)
    assert len(sample) == 50
    assert sum(q.article == "A" for q in sample) == 25
    assert sum(not q.answers for q in sample) == 12 or sum(not q.answers for q in sample) == 13  # 25 % of 50
    assert [qs.index(q) for q in sample] == sorted(qs.index(q) for q in sample)  # file order kept
    squad = reader_data.to_squad(sample)
    assert sum(len(p["qas"]) for a in squad["data"] for p in a["paragraphs"]) == 50
    assert all(qa["is_impossible"] == (not qa["answers"]) for a in squad["data"] for p in a["paragraphs"]
               for qa in p["qas"])


def test_swapped_question_trades_a_word_the_paragraph_has_for_one_of_another_paragraph_it_lacks():
    import random

    context = "The lamp was made in 1990 by Ada Lovelace. It is red."
    other = "The clock was built in 1875 by Charles Babbage."
    q = reader_data.Question("q", "Who made the lamp in 1990?", context, ((context.index("Ada"), "Ada Lovelace"),),
                             (), "A", 0)
    made = {unanswerable.swapped_question(q, [context, other], random.Random(s)) for s in range(30)}
    assert made == {"Who made the clock in 1990?", "Who made the lamp in 1875?"}  # noun for noun, number for number
    in_answer = reader_data.Question("q", "Who made the lamp in 1990?", context,
                                     ((context.index("lamp"), "lamp"),), (), "A", 0)
    assert {unanswerable.swapped_question(in_answer, [context, other], random.Random(s)) for s in range(30)} == {
        "Who made the lamp in 1875?"}  # a word of the answer is never the one swapped
    assert unanswerable.swapped_question(q, [context], random.Random(0)) is None  # no other paragraph
    stream = reader_data.examples([q, reader_data.Question("r", "What colour is it?", other, ((0, "The"),), (), "A", 1)],
                                  seed=1, negatives=0.0, swaps=1.0)
    swaps = [ex for ex in (next(stream) for _ in range(40)) if ex.kind == "swap"]
    assert swaps and all(ex.answer_start is None and ex.question != "Who made the lamp in 1990?" for ex in swaps)
    assert all("Ada Lovelace" in ex.context for ex in swaps if ex.qid == "q")  # read on the answer's own window


def test_hard_negatives_are_the_closest_paragraphs_of_the_article_that_lack_the_answer():
    import random

    here = "The lamp was made in 1990 by Ada Lovelace. It is red."
    paras = [here,
             "The lamp factory closed. Lamps made there were sold in Paris. Ada visited it once.",  # close, no answer
             "Ada Lovelace made a lamp in 1990 for the museum.",  # closest, but it holds the answer: never a negative
             "Rivers flood in spring.", "Bread is baked at dawn.", "Snow fell on the hills."]
    article = [reader_data.Question(f"p{i}", "Who made the lamp in 1990?", p, ((0, p.split()[0]),) if i else
                                    ((here.index("Ada"), "Ada Lovelace"),), (), "A", i) for i, p in enumerate(paras)]
    q = article[0]
    search = reader_data.ArticleSearch({"A": paras})
    closest = search.closest_without(q, k=2)
    assert closest[0] == paras[1] and paras[2] not in closest and here not in closest
    seen = set()
    for s in range(40):
        text, kind = reader_data.hard_negative(q, search, random.Random(s))
        seen.add(kind)
        assert "Ada Lovelace" not in text
        if kind == "hard-window":
            assert text in paras[1] or text in paras[3:]  # a window of one paragraph, cut at its sentences
    assert seen == {"hard-paragraph", "hard-window"}
    stream = reader_data.examples(article, seed=2, negatives=1.0, hard_negatives=True)
    kinds = [ex.kind for ex in (next(stream) for _ in range(60))]
    assert "neg-paragraph" not in kinds and {"hard-paragraph", "hard-window"} & set(kinds)


def test_distillation_is_the_tempered_kl_over_real_tokens_and_skips_constructed_no_answers():
    import math

    import torch

    student = (torch.tensor([[0.0, 0.0, 9.0]]), torch.tensor([[1.0, 2.0, -9.0]]))
    teacher = (torch.tensor([[math.log(3), 0.0, -9.0]]), torch.tensor([[1.0, 2.0, 9.0]]))
    mask = torch.tensor([[1, 1, 0]])  # the third token is padding: never counted
    # start: teacher (3/4, 1/4) against the student's (1/2, 1/2); end: the same distribution, 0
    kl = 0.75 * math.log(0.75 / 0.5) + 0.25 * math.log(0.25 / 0.5)
    assert train_reader.distillation_loss(student, teacher, mask, 1.0).item() == pytest.approx(kl / 2, abs=1e-6)
    p = math.sqrt(3) / (math.sqrt(3) + 1)  # T = 2 softens the teacher to (√3, 1)/(√3 + 1); the loss scales by T²
    kl2 = p * math.log(p / 0.5) + (1 - p) * math.log((1 - p) / 0.5)
    assert train_reader.distillation_loss(student, teacher, mask, 2.0).item() == pytest.approx(2 * kl2, abs=1e-6)
    assert train_reader.distillation_loss(teacher, teacher, mask, 2.0).item() == pytest.approx(0.0, abs=1e-7)

    from transformers import AutoTokenizer

    from components.core.backends.models import resolve_model

    tokenizer = AutoTokenizer.from_pretrained(resolve_model("sentence-transformers/all-MiniLM-L6-v2").path)
    context = "The lamp is red. It was made in Oslo."
    batch = [reader_data.Example("a", "What colour is the lamp?", context, 12, 15, "window"),
             reader_data.Example("a", "What colour is the lamp not?", context, None, None, "negation"),
             reader_data.Example("a", "What colour is the lamp?", "It was made in Oslo.", None, None, "neg-window"),
             reader_data.Example("a", "What colour is the lamp?", context, None, None, "unanswerable")]
    features, skipped = train_reader.featurize(tokenizer, batch, 64, 16, random.Random(0))
    assert skipped == 0 and [f[4] for f in features] == [True, False, True, True]
    assert tokenizer.decode(features[0][0][features[0][2] : features[0][3] + 1]) == "red"


def test_reader_benchmark_scores_negated_questions_apart():
    from benchmarks.reader_squad import by_negation

    qs = [{"question": "What did Tesla not sell?", "answerable": False, "golds": []},
          {"question": "What isn't red?", "answerable": True, "golds": ["the blue sky"]},
          {"question": "What did Tesla sell?", "answerable": True, "golds": ["coils"]},
          {"question": "Whether or not it rains, who plays?", "answerable": False, "golds": []}]  # no negation
    preds = [{"prediction": None}, {"prediction": "sky"}, {"prediction": "coils"}, {"prediction": "Ann"}]
    assert by_negation(qs, preds) == {
        # "sky" against "blue sky" (articles dropped): precision 1, recall 1/2, F1 2/3
        "negated": {"answerable": 1, "unanswerable": 1, "f1": 83.3, "HasAns_f1": 66.7, "NoAns_f1": 100.0},
        "other": {"answerable": 1, "unanswerable": 1, "f1": 50.0, "HasAns_f1": 100.0, "NoAns_f1": 0.0}}


def test_learning_curve_counts_a_second_stage_from_the_first_stages_start():
    from benchmarks.reader_squad import learning_curve

    first = {"examples_seen": 100, "minutes": 10.0, "curve": [{"examples": 50, "minutes": 5.0, "f1": 40.0},
                                                              {"examples": 100, "minutes": 10.0, "f1": 50.0}]}
    second = {"examples_seen": 60, "minutes": 4.0, "previous_stage": first,
              "curve": [{"examples": 60, "minutes": 4.0, "f1": 55.0}]}
    assert [(p["stage"], p["examples"], p["minutes"], p["f1"]) for p in learning_curve(second)] == [
        (1, 50, 5.0, 40.0), (1, 100, 10.0, 50.0), (2, 160, 14.0, 55.0)]
    assert learning_curve(first)[-1]["examples"] == 100


MORE = ROOT.parent / "shared" / "data" / "squad2-more" / "dev-v2.0-29-articles.json"


def test_more_articles_are_held_out_whole_and_read_as_adversarial_no_answers(tmp_path):
    paragraph = "The lamp is red. It was made in Oslo. It costs ten euros. The shop sells it."
    articles = {}
    for t in ("A", "B", "C", "D"):
        articles[t] = [reader_data.Question(f"{t}1", "What colour is the lamp?", paragraph, ((12, "red"),), (), t, 0,
                                            True),
                       reader_data.Question(f"{t}2", "Where was the lamp not made?", paragraph, (), (), t, 0, True)]
    train, held, titles = reader_data.split_more(articles, 2, seed=13)
    assert len(titles) == 2 and {q.article for q in held} == set(titles)
    assert not {q.article for q in train} & set(titles) and len(train) + len(held) == 8
    stream = reader_data.examples(train, seed=1, negatives=0.0, unanswerable_repeat=3)
    drawn = [next(stream) for _ in range(40)]
    adversarial = [e for e in drawn if e.kind == "adversarial"]
    assert adversarial and all(e.answer_start is None and e.context in paragraph for e in adversarial)
    assert {e.context for e in adversarial} - {paragraph}  # sometimes the window a search finds, not the paragraph
    assert "adversarial" in reader_data.UNTAUGHT_KINDS and "unanswerable" not in reader_data.UNTAUGHT_KINDS


def test_the_development_article_is_refused_as_training_data():
    with pytest.raises(SystemExit, match="for reporting only"):
        train_reader.check_not_development(str(ROOT.parent / "shared/data/squad2/dev-computational-complexity.json"))
    train_reader.check_not_development(str(MORE))  # the squad2-more articles are training data


@pytest.mark.skipif(not MORE.exists(), reason="needs ../shared/data/squad2-more")
def test_heldout_writes_the_more_articles_train_reader_holds_out(tmp_path):
    import subprocess

    out = tmp_path / "held.json"
    done = subprocess.run([sys.executable, str(ROOT / "training/heldout.py"), "--questions", "50", "--more", str(MORE),
                           "--more-questions", "60", "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-800:]
    written = json.loads(out.read_text())
    titles = {a["title"] for a in written["data"]}
    _, _, more_titles = reader_data.split_more(reader_data.load_articles(MORE, adversarial=True), 6, 13)
    assert set(more_titles) <= titles and len(more_titles) == 6
    assert "Computational_complexity_theory" not in titles


def test_bf16_counts_as_emulated_only_on_a_cpu_without_native_bfloat16():
    avx2 = "processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma\nprocessor\t: 1\nflags\t\t: fpu sse2 avx avx2 fma\n"
    sapphire = "flags\t\t: avx2 avx512f avx512_bf16 amx_bf16 amx_tile\n"
    assert train_reader.emulated_bf16("cpu", avx2) is True
    assert train_reader.emulated_bf16("cpu", sapphire) is False
    assert train_reader.emulated_bf16("cpu", "model name\t: unknown\n") is False  # no flags line: unknown
    assert train_reader.emulated_bf16("cuda:0", avx2) is False
