"""The verifier's training recipe on a tiny slice: the reader's candidates are labelled from gold and shaped by the
pipeline's own ``verifier_pair``, held-out articles never train, and a short run lowers the loss on what it read
and exports a model the resolver's loader reads."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data" / "squad-train"
sys.path.insert(0, str(ROOT / "training"))

import train_verifier  # noqa: E402
import verifier_data  # noqa: E402

needs_data = pytest.mark.skipif(not (DATA / "train-v2.0-subset.json").exists() or not train_verifier.MORE.exists(),
                                reason="needs ../shared/data (the training data)")


def _log_loss(model, tokenizer, rows) -> float:
    probs = train_verifier.probabilities(model, tokenizer, rows, 192)
    return -sum(math.log(max(p if r.label else 1 - p, 1e-6)) for p, r in zip(probs, rows)) / len(rows)


@needs_data
@pytest.mark.training
def test_a_tiny_run_labels_candidates_lowers_its_loss_and_exports(tmp_path):
    import transformers

    from components.core.backends.models import load_hf_model, resolve_model
    from components.evaluation.metrics import answer_correct

    args = ["--tiny", "16", "--v1-questions", "200", "--heldout-questions", "100", "--examples", "192",
            "--batch-size", "16", "--lr", "1e-4", "--eval-every", "100000", "--work", str(tmp_path / "work"),
            "--out", str(tmp_path / "out")]
    assert train_verifier.main(args) == 0
    train = verifier_data.read_jsonl(tmp_path / "work" / "candidates-train.jsonl")
    held = verifier_data.read_jsonl(tmp_path / "work" / "candidates-heldout.jsonl")
    assert train and held
    _, _, held_titles = train_verifier.question_sets(train_verifier.parse_args(args))
    assert not {r.article for r in train} & set(held_titles)  # held-out articles never train
    assert all(r.article in held_titles for r in held)
    for r in train:  # the label is the project's rule, the text is marked where the reader's span stands
        assert r.label == int(answer_correct(r.answer, r.golds, r.answerable))
        assert r.read_text[r.char_start:r.char_end] == r.answer
        assert "« " + " ".join(r.answer.split()) + " »" in r.text_b
        assert r.answerable or r.label == 0
    body = resolve_model("spanqa/reader-minilm-l6-squad2").path
    tokenizer = transformers.AutoTokenizer.from_pretrained(body)
    transformers.logging.set_verbosity_error()
    # the same seeded head as the run started from: the loss it read falls
    import torch
    torch.manual_seed(13)
    before = transformers.AutoModelForSequenceClassification.from_pretrained(body, num_labels=1)
    tok, after = load_hf_model(str(tmp_path / "out"), "AutoModelForSequenceClassification", "cpu")
    assert _log_loss(after.float(), tok, train) < _log_loss(before, tokenizer, train)
    assert (tmp_path / "out" / "training.json").exists()


def _question(qid, question, context, answers=((0, "x"),), article="A", paragraph=0):
    from questions import Question

    return Question(qid, question, context, tuple(answers), (), article, paragraph)


def test_constructed_questions_are_unanswerable_twins_of_answerable_training_questions():
    context = "The mayor of Springfield opened the largest bridge in 1990. The river is wide."
    other = "Shelbyville built a small tunnel under the harbour in 1985."
    qs = [_question("q1", "Who opened the largest bridge?", context, ((0, "The mayor of Springfield"),)),
          _question("q2", "When was the largest bridge opened?", context, ((55, "1990"),)),
          _question("q3", "What did Shelbyville build?", other, ((19, "a small tunnel"),), paragraph=1),
          _question("q4", "Which question has no answer?", context, ())]  # unanswerable: never a source
    made = verifier_data.constructed(qs, 10, seed=3)
    assert made and len(made) <= 3 and {q.qid.split("~")[1] for q in made} >= {"swap", "negation"}
    for q in made:
        base, kind = q.qid.split("~")
        source = next(s for s in qs if s.qid == base)
        assert kind in verifier_data.CONSTRUCTED and source.answers and base != "q4"
        assert q.answers == () and q.adversarial and q.context == source.context and q.question != source.question
    assert [q.qid for q in made] == [q.qid for q in verifier_data.constructed(qs, 10, seed=3)]  # seeded
    assert len(verifier_data.constructed(qs, 1, seed=3)) == 1


def test_a_structured_repeat_under_one_is_refused_with_what_to_give(capsys):
    with pytest.raises(SystemExit) as exit_:
        train_verifier.parse_args(["--minutes", "1", "--structured-repeat", "0"])
    assert exit_.value.code == 2
    assert "--structured-repeat 0: give 1 or more" in capsys.readouterr().err


def test_cached_candidates_are_keyed_by_the_contents_they_are_made_of(tmp_path, monkeypatch):
    blocks = tmp_path / "structured.json"
    blocks.write_text('{"data": []}')
    args = train_verifier.parse_args(["--examples", "1", "--structured", str(blocks)])
    first = train_verifier.candidate_fingerprint(args)
    assert train_verifier.candidate_fingerprint(args) == first
    blocks.write_text('{"data": [], "version": "v2.0"}')  # the same path, other blocks
    second = train_verifier.candidate_fingerprint(args)
    assert second != first
    # the code that shapes a pair changes (a copy of the tree's files, one of them edited)
    for pattern in train_verifier.PAIR_CODE:
        for f in train_verifier.ROOT.glob(pattern):
            rel = f.relative_to(train_verifier.ROOT)
            (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / rel).write_bytes(f.read_bytes())
    monkeypatch.setattr(train_verifier, "ROOT", tmp_path)
    assert train_verifier.candidate_fingerprint(args) == second
    with (tmp_path / "components" / "core" / "reading" / "span_edges.py").open("a") as f:  # the reader's span edges
        f.write("# widen otherwise\n")
    assert train_verifier.candidate_fingerprint(args) != second
    (tmp_path / "components" / "core" / "verification" / "verifier_input.py").unlink()
    with pytest.raises(SystemExit, match="verifier_input.py matches no file"):
        train_verifier.candidate_fingerprint(args)
