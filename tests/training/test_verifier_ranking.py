"""The verifier as a ranker within a question (training/verifier_ranking.py): batches of whole questions, the
pairwise loss on hand-computed logits, and the held-out measure against the reader's own order."""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "training"))

import train_verifier  # noqa: E402
import verifier_data  # noqa: E402
from verifier_ranking import pair_loss, pairs, question_batches, within_question  # noqa: E402


def test_batches_hold_whole_questions_and_every_candidate_once():
    qids = ["a", "a", "b", "c", "c", "c", "d", "e", "e"]
    batches = question_batches(qids, 3, random.Random(5))
    assert sorted(i for b in batches for i in b) == list(range(len(qids)))
    for b in batches:
        for q in {qids[i] for i in b}:  # a question is never split across batches
            assert sum(qids[i] == q for i in b) == qids.count(q)
    assert all(len(b) >= 3 for b in batches[:-1])  # filled up to the size, the last takes what is left
    assert batches == question_batches(qids, 3, random.Random(5))  # seeded
    with pytest.raises(ValueError, match="batch_size must be 1 or more, not 0"):
        question_batches(qids, 0, random.Random(0))


def test_pairs_are_right_against_wrong_within_one_question_only():
    qids = ["a", "a", "a", "b", "b", "c"]
    labels = [1, 0, 0, 1, 1, 0]
    assert pairs(qids, labels) == [(0, 1), (0, 2)]  # b has no wrong candidate, c no right one


def test_the_pairwise_loss_is_the_mean_softplus_of_wrong_minus_right():
    import torch

    logits = torch.tensor([2.0, 0.0, 3.0, 1.0], requires_grad=True)
    loss = pair_loss(logits, ["a", "a", "a", "b"], [1, 0, 0, 1])
    want = (math.log1p(math.exp(0.0 - 2.0)) + math.log1p(math.exp(3.0 - 2.0))) / 2  # 0.1269 and 1.3133
    assert loss.item() == pytest.approx(want, abs=1e-6)
    loss.backward()
    assert logits.grad[0].item() < 0 < logits.grad[2].item()  # push the right one up, the wrong one down
    assert logits.grad[3].item() == 0.0  # a question without a wrong candidate adds nothing
    none = pair_loss(logits, ["a", "b", "c", "d"], [1, 0, 1, 0])
    assert none.item() == 0.0 and none.requires_grad


def test_within_question_counts_only_questions_with_a_right_and_a_wrong_candidate():
    qids = ["a", "a", "b", "b", "b", "c", "d", "d"]
    labels = [0, 1, 1, 0, 0, 1, 0, 0]
    probs = [0.9, 0.6, 0.2, 0.7, 0.1, 0.8, 0.5, 0.4]
    reader = [0.5, 0.4, 0.9, 0.3, 0.2, 0.9, 0.8, 0.7]
    # a: verifier picks index 0 (wrong), reader index 0 (wrong); b: verifier index 3 (wrong), reader 2 (right)
    assert within_question(probs, labels, qids, reader) == {"questions": 2, "verifier_first": 0.0,
                                                           "reader_first": 0.5}
    assert within_question([], [], [], []) == {"questions": 0, "verifier_first": None, "reader_first": None}


def test_a_negative_pairwise_weight_is_refused_with_what_to_give(capsys):
    with pytest.raises(SystemExit) as exit_:
        train_verifier.parse_args(["--minutes", "1", "--pairwise", "-1"])
    assert exit_.value.code == 2
    assert "--pairwise -1.0: give 0 (off) or a positive weight" in capsys.readouterr().err


DATA = ROOT.parent / "shared" / "data" / "squad-train"


@pytest.mark.skipif(not (DATA / "train-v2.0-subset.json").exists() or not train_verifier.MORE.exists(),
                    reason="needs ../shared/data (the training data)")
@pytest.mark.training
def test_a_tiny_pairwise_run_records_the_order_within_questions_and_exports(tmp_path):
    args = ["--tiny", "16", "--v1-questions", "200", "--heldout-questions", "100", "--examples", "96",
            "--batch-size", "16", "--lr", "1e-4", "--eval-every", "100000", "--pairwise", "1.0",
            "--work", str(tmp_path / "work"), "--out", str(tmp_path / "out")]
    assert train_verifier.main(args) == 0
    info = json.loads((tmp_path / "out" / "training.json").read_text())
    assert info["hyperparameters"]["pairwise"] == 1.0
    held = verifier_data.read_jsonl(tmp_path / "work" / "candidates-heldout.jsonl")
    mixed = {q for q in {r.qid for r in held}  # held-out questions with a right and a wrong candidate
             if len({r.label for r in held if r.qid == q}) == 2}
    first, final = info["first"]["within_question"], info["final"]["within_question"]
    assert first["questions"] == final["questions"] == len(mixed) > 0
    assert first["reader_first"] == final["reader_first"]  # the reader's order does not train
    assert info["examples_seen"] >= 96
