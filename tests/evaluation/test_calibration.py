import math
import random

import numpy as np
import pytest
import yaml

from components.evaluation import calibration
from components.evaluation.calibration import (
    calibrate,
    choose_threshold,
    confusion,
    split_ids,
    threshold_metrics,
    yaml_snippet,
)

IDS = [f"q{i}" for i in range(10)]

# ------------------------------------------------------------------------------------------ split


def test_split_is_stable_across_runs_and_machines():
    # Golden value: the split must not change between Python processes (str hash() is salted per
    # process, so a split built on hash() would fail here) nor between machines.
    assert split_ids(IDS, seed=0) == (["q2", "q4", "q5", "q7", "q8"], ["q0", "q1", "q3", "q6", "q9"])


def test_split_partitions_keeps_order_and_ignores_input_order():
    cal, held = split_ids(IDS, seed=3)
    assert sorted(cal + held) == sorted(IDS) and not set(cal) & set(held)
    assert cal == [i for i in IDS if i in cal] and held == [i for i in IDS if i in held]
    shuffled = IDS[:]
    random.Random(1).shuffle(shuffled)
    cal2, held2 = split_ids(shuffled, seed=3)
    assert set(cal2) == set(cal) and set(held2) == set(held)


def test_split_depends_on_seed_and_fraction():
    ids = [f"q{i}" for i in range(40)]
    assert set(split_ids(ids, seed=0)[0]) != set(split_ids(ids, seed=1)[0])
    assert [len(part) for part in split_ids(IDS, fraction=0.3)] == [3, 7]
    assert [len(part) for part in split_ids(IDS, fraction=0.01)] == [1, 9]  # never empty
    assert [len(part) for part in split_ids(IDS, fraction=0.99)] == [9, 1]
    assert split_ids(["only"]) == (["only"], [])


def test_split_rejects_bad_fraction():
    with pytest.raises(ValueError, match="fraction"):
        split_ids(IDS, fraction=1.0)


# ------------------------------------------------------------------------------------------ threshold


def test_choose_threshold_by_hand():
    # sorted: 0.1 F, 0.35 T, 0.4 F, 0.7 T, 0.8 T  (P = 3 answerable, N = 2 unanswerable)
    # t=0.1  answer all             TPR 1,   TNR 0   -> 0.5
    # t=0.35 abstain {0.1F}         TPR 1,   TNR 1/2 -> 0.75
    # t=0.4  abstain {0.1F, 0.35T}  TPR 2/3, TNR 1/2 -> 0.583
    # t=0.7  abstain {F, T, F}      TPR 2/3, TNR 1   -> 0.833  <- best
    # t=0.8                         TPR 1/3, TNR 1   -> 0.667
    # t>0.8  abstain all            TPR 0,   TNR 1   -> 0.5
    scores = [0.1, 0.4, 0.35, 0.8, 0.7]
    labels = [False, False, True, True, True]
    assert choose_threshold(scores, labels) == 0.7


def test_choose_threshold_ties_go_to_the_lower_threshold():
    # t=0.5: TPR 1, TNR 1/2 -> 0.75;  t=0.9: TPR 1/2, TNR 1 -> 0.75  (tie) -> 0.5
    assert choose_threshold([0.2, 0.5, 0.6, 0.9], [False, True, False, True]) == 0.5


def test_choose_threshold_can_abstain_on_everything():
    t = choose_threshold([0.3, 0.6], [False, False], objective="accuracy")
    assert t > 0.6
    assert confusion([0.3, 0.6], [False, False], t) == (0, 0, 2, 0)


def test_choose_threshold_accepts_a_callable_objective():
    # maximise answered answerable minus answered unanswerable: answer 0.7 and 0.8 only -> t = 0.7
    def gain(tp, fp, tn, fn):
        return tp - 2 * fp

    assert choose_threshold([0.1, 0.4, 0.35, 0.8, 0.7], [False, False, True, True, True], gain) == 0.7


def test_choose_threshold_rejects_bad_input():
    with pytest.raises(ValueError, match="NaN"):
        choose_threshold([0.1, math.nan], [True, False])
    with pytest.raises(ValueError, match="no scores"):
        choose_threshold([], [])
    with pytest.raises(ValueError, match="objective"):
        choose_threshold([0.1], [True], objective="nope")


def test_threshold_metrics_by_hand():
    m = threshold_metrics([0.1, 0.4, 0.35, 0.8, 0.7], [False, False, True, True, True], 0.7)
    # answered 0.7T, 0.8T; abstained 0.1F, 0.35T, 0.4F -> tp 2, fp 0, tn 2, fn 1
    assert m["n"] == 5
    assert m["accuracy"] == pytest.approx(4 / 5)
    assert m["answer_recall"] == pytest.approx(2 / 3)
    assert m["abstention_precision"] == pytest.approx(2 / 3)
    assert m["abstention_recall"] == 1.0
    assert m["objective"] == m["balanced_accuracy"] == pytest.approx((2 / 3 + 1) / 2)


# ------------------------------------------------------------------------------------------ calibrate


def _poisoned_records(n=40):
    """Calibration records separate cleanly at 0.5; held-out records are poisoned with the opposite rule.

    If choosing looked at the held-out split, it could not pick 0.5 (and NaN scores would make
    choose_threshold raise).
    """
    ids = [f"q{i}" for i in range(n)]
    cal_ids, _ = split_ids(ids, seed=5)
    records = []
    for i, qid in enumerate(ids):
        answerable = i % 2 == 0
        if qid in cal_ids:
            score = (0.5 + i / 1000) if answerable else (0.1 + i / 1000)
            nan_score = score
        else:
            score = 0.01 if answerable else 0.99
            nan_score = math.nan
        records.append({"id": qid, "answerable": answerable, "reader": score, "nan": nan_score})
    return records, set(cal_ids)


def test_calibrate_chooses_on_calibration_split_only():
    records, cal_ids = _poisoned_records()
    result = calibrate(records, {"reader": {"threshold": "reader"}}, seed=5)
    cal = [r for r in records if r["id"] in cal_ids]
    expected = choose_threshold([r["reader"] for r in cal], [r["answerable"] for r in cal])
    assert result["values"] == {"reader": {"threshold": expected}}
    # reading the poisoned held-out records would have changed the choice
    assert expected != choose_threshold([r["reader"] for r in records], [r["answerable"] for r in records])
    assert result["calibration"]["reader"]["threshold"]["balanced_accuracy"] == 1.0
    # ...and the held-out metrics do come from the poisoned records: every answerable one is abstained on
    held = result["held_out"]["reader"]["threshold"]
    assert held["answer_recall"] == 0.0 and held["abstention_recall"] == 0.0
    assert result["calibration_size"] + result["held_out_size"] == len(records) == held["n"] + len(cal)


def test_calibrate_never_passes_held_out_scores_to_the_chooser(monkeypatch):
    records, cal_ids = _poisoned_records()
    seen_by_chooser: list[float] = []
    real = calibration.choose_threshold

    def spy(scores, labels, objective="balanced_accuracy"):
        seen_by_chooser.extend(scores)
        return real(scores, labels, objective)

    monkeypatch.setattr(calibration, "choose_threshold", spy)
    # the "nan" field is NaN on held-out records only: choosing on them would raise
    result = calibrate(records, {"reader": {"threshold": "nan"}}, seed=5)
    assert sorted(seen_by_chooser) == sorted(r["nan"] for r in records if r["id"] in cal_ids)
    assert result["held_out"]["reader"]["threshold"]["n"] == len(records) - len(cal_ids)


def test_calibrate_reads_held_out_scores_only_after_choosing():
    records, cal_ids = _poisoned_records()
    accesses: list[str] = []

    def score(record):
        accesses.append(record["id"])
        return record["reader"]

    calibrate(records, {"reader": {"threshold": score}}, seed=5)
    first_held_out = next(i for i, qid in enumerate(accesses) if qid not in cal_ids)
    # choosing (first pass over the calibration records) is complete before any held-out access
    assert set(accesses[: len(cal_ids)]) == cal_ids
    assert first_held_out >= len(cal_ids)


def test_calibrate_skips_missing_scores_and_handles_several_components():
    records, _ = _poisoned_records()
    for r in records[:4]:
        r["verifier"] = None
    for r in records[4:]:
        r["verifier"] = 1.0 - r["reader"]
    result = calibrate(records, {"reader": {"threshold": "reader"}, "verifier": {"min_support": "verifier"}}, seed=5)
    assert set(result["values"]) == {"reader", "verifier"}
    missing = (
        result["calibration"]["verifier"]["min_support"]["missing_scores"]
        + result["held_out"]["verifier"]["min_support"]["missing_scores"]
    )
    assert missing == 4


def test_calibrate_rejects_duplicate_ids():
    with pytest.raises(ValueError, match="duplicate"):
        calibrate([{"id": "a", "answerable": True, "s": 1}] * 2, {"r": {"t": "s"}})


# ------------------------------------------------------------------------------------------ yaml


def test_yaml_snippet_round_trips_as_pipeline_shape():
    text = yaml_snippet({"reader": {"threshold": np.float64(0.7), "top_k": 3}}, comment="calibrated\nseed 0")
    assert text.startswith("# calibrated\n# seed 0\n")
    assert yaml.safe_load(text) == {"components": {"reader": {"init_parameters": {"threshold": 0.7, "top_k": 3}}}}
