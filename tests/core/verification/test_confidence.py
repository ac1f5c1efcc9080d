"""Confidence: monotone in its signals, fitted on one half only, a threshold chosen for a target precision,
and the risk–coverage numbers on tiny hand-computed cases."""

import math
from dataclasses import asdict

import pytest

from components.evaluation import confidence_eval
from components.core.verification.confidence import (SIGNALS, CalibrationFile, Calibrator, fit, prior_weights,
                                                     threshold_for_precision)
from components.evaluation.selective import (aurc, coverage_at_precision, ece_if_calibrated, expected_calibration_error,
                                      risk_coverage, summary)


def _signals(**kw):
    base = dict.fromkeys(SIGNALS, 0.0)
    base.update(kw)
    return base


def _calibrator(coef):
    return Calibrator(list(SIGNALS), [0.0] * len(SIGNALS), [1.0] * len(SIGNALS), coef, 0.0)


def test_confidence_is_monotone_in_each_signal_by_its_coefficient_sign():
    coef = [0.0] * len(SIGNALS)
    coef[SIGNALS.index("reader_score")], coef[SIGNALS.index("window_rank")] = 2.0, -1.0
    cal = _calibrator(coef)
    scores = [cal.predict(_signals(reader_score=x)) for x in (0.1, 0.4, 0.7, 0.9)]
    assert scores == sorted(scores) and scores[0] < scores[-1]
    ranks = [cal.predict(_signals(window_rank=r)) for r in (1, 2, 3)]
    assert ranks == sorted(ranks, reverse=True)
    assert cal.predict(_signals()) == pytest.approx(0.5)
    assert cal.predict(_signals(reader_score=1.0)) == pytest.approx(1 / (1 + math.exp(-2.0)))


def test_a_signal_beyond_the_fitted_range_is_read_at_its_edge_and_the_file_keeps_the_range(tmp_path):
    coef = [0.0] * len(SIGNALS)
    coef[SIGNALS.index("reader_margin")] = 2.0
    n = len(SIGNALS)
    cal = Calibrator(list(SIGNALS), [0.0] * n, [1.0] * n, coef, 0.0, low=[-0.5] * n, high=[0.5] * n)
    edge = 1 / (1 + math.exp(-1.0))  # 2.0 × 0.5
    assert cal.predict(_signals(reader_margin=0.5)) == pytest.approx(edge)
    assert cal.predict(_signals(reader_margin=13.0)) == pytest.approx(edge)  # not 1 - 5e-12
    assert cal.predict(_signals(reader_margin=-9.0)) == pytest.approx(1 - edge)
    assert cal.predict(_signals(reader_margin=0.25)) == pytest.approx(1 / (1 + math.exp(-0.5)))  # inside: as is
    fitted = fit([_signals(reader_score=0.1 * i, reader_margin=0.01 * i) for i in range(40)],
                 [i >= 20 for i in range(40)], target_precision=0.9)
    k = SIGNALS.index("reader_margin")
    assert (fitted.low[k], fitted.high[k]) == pytest.approx((0.0, 0.39))
    path = tmp_path / "cal.json"
    CalibrationFile({"extractive": fitted}).save(str(path))
    again = CalibrationFile.load(str(path)).calibrators["extractive"]
    assert again.high == fitted.high and again.predict(_signals(reader_margin=5.0)) == fitted.predict(
        _signals(reader_margin=0.39, reader_score=0.0))
    with pytest.raises(ValueError, match="low and high"):
        Calibrator.from_dict({**asdict(fitted), "high": None})


def test_fitted_combiner_learns_the_direction_of_a_signal_and_chooses_a_bar():
    signals = [_signals(reader_score=i / 40, term_coverage=(i % 3) / 2) for i in range(40)]
    correct = [i >= 20 for i in range(40)]
    cal = fit(signals, correct, target_precision=0.9)
    assert cal.coef[SIGNALS.index("reader_score")] > 0
    assert cal.predict(signals[39]) > cal.predict(signals[0])
    kept = [c for s, c in zip(signals, correct) if cal.predict(s) >= cal.min_confidence]
    assert kept and sum(kept) / len(kept) >= 0.9


def test_the_bar_is_chosen_on_out_of_fold_confidences_and_holds_its_precision_on_new_answers():
    import random

    # one informative signal and 17 of noise a combiner can overfit (named here, so that adding a signal to
    # SIGNALS does not redraw this data)
    names = ("reader_score", *(f"noise_{i}" for i in range(17)))

    def answers(n, rng):
        signals, right = [], []
        for _ in range(n):
            ok = rng.random() < 0.7
            s = {f: rng.gauss(0, 1) for f in names}
            s["reader_score"] = rng.gauss(1.0 if ok else 0.0, 1.0)
            signals.append(s)
            right.append(ok)
        return signals, right

    def precision_at(cal, bar, signals, right):
        kept = [r for s, r in zip(signals, right) if cal.predict(s) >= bar]
        return sum(kept) / len(kept)

    oof, in_sample = [], []
    for seed in range(4):
        rng = random.Random(seed)
        (fit_s, fit_r), (new_s, new_r) = answers(300, rng), answers(5000, rng)
        cal = fit(fit_s, fit_r, target_precision=0.9, features=names)
        assert cal.fitted_on["bar_chosen_on"] == "out-of-fold confidences"
        oof.append(precision_at(cal, cal.min_confidence, new_s, new_r))
        in_sample_bar = threshold_for_precision([cal.predict(s) for s in fit_s], fit_r, 0.9)
        in_sample.append(precision_at(cal, in_sample_bar, new_s, new_r))
    # a bar chosen on the answers the combiner was fitted on falls short of 0.9 on new ones (0.83-0.88 here)
    assert max(in_sample) < 0.89 and sum(oof) / 4 > 0.88 and sum(oof) / 4 > sum(in_sample) / 4 + 0.02


def test_threshold_for_precision_on_a_hand_case():
    # sorted by confidence: right, right, wrong, right, wrong -> precision 1, 1, .67, .75, .6
    confs, right = [0.9, 0.8, 0.7, 0.6, 0.5], [True, True, False, True, False]
    assert threshold_for_precision(confs, right, 0.75) == 0.6
    assert threshold_for_precision(confs, right, 0.9) == 0.8
    assert threshold_for_precision(confs, right, 1.01) == 1.0


def test_risk_coverage_numbers_on_a_hand_case():
    confs, right = [0.9, 0.8, 0.8, 0.3], [True, False, True, False]
    assert risk_coverage(confs, right, n_total=5) == [(0.2, 1.0), (0.6, 2 / 3), (0.8, 0.5)]
    # risks: 0 (1 answer), then the tie pair enters with risk 1/3 each, then 1/2: (0 + 2/3 + 1/2) / 5
    assert aurc(confs, right, 5) == pytest.approx((0 + 2 * (1 / 3) + 0.5) / 5)
    assert coverage_at_precision(risk_coverage(confs, right, 5), 0.9) == 0.2
    assert coverage_at_precision(risk_coverage(confs, right, 5), 0.6) == 0.6
    ece, bins = expected_calibration_error([0.95, 0.85, 0.15], [True, False, False], bins=10)
    # bins 0.9-1: |1 - .95| ; 0.8-0.9: |0 - .85| ; 0.1-0.2: |0 - .15|, each weighted 1/3
    assert ece == pytest.approx((0.05 + 0.85 + 0.15) / 3)
    assert [b["n"] for b in bins if b["n"]] == [1, 1, 1]
    s = summary(confs, right, 5, threshold=0.8)
    assert s["answered"] == 3 and s["precision_answered"] == pytest.approx(2 / 3) and s["precision_supported"] == 0.5


def test_ece_a_calibrated_predictor_shows_on_few_answers():
    # two answers at 0.5 from a calibrated predictor: both right or both wrong (p = 1/2) give ECE 0.5, one of
    # each gives 0 -> expected 0.25; the observed 0 is reached or exceeded by every draw
    floor, share = ece_if_calibrated([0.5, 0.5], observed=0.0, draws=20000)
    assert floor == pytest.approx(0.25, abs=0.01) and share == 1.0
    # certain answers: a calibrated predictor at 1.0 is always right, so ECE 0 and nothing reaches 0.9
    assert ece_if_calibrated([1.0] * 5, observed=0.0) == (0.0, 1.0)
    floor, share = ece_if_calibrated([0.9] * 10, observed=0.9)  # ten confident answers, all wrong
    assert share == 0.0 and floor == pytest.approx(0.0697, abs=0.006)  # E|Binomial(10, .9)/10 - .9| = 0.0697
    assert ece_if_calibrated([], observed=None) == (None, None)
    s = summary([0.9] * 10, [False] * 10, 10)
    assert s["ece"] == pytest.approx(0.9) and s["ece_consistency"] == 0.0


class _Sealed(dict):
    """A row of the report half: reading anything but its id fails the test."""

    def __getitem__(self, key):
        if key != "id":
            raise AssertionError(f"the report half was read while fitting ({key})")
        return super().__getitem__(key)

    def get(self, key, default=None):
        if key != "id":
            raise AssertionError(f"the report half was read while fitting ({key})")
        return super().get(key, default)


def test_prior_weights_and_a_weighted_bar_on_a_hand_case():
    # 10 questions, 2 unanswerable: at a share of 0.5 an answer to an unanswerable one counts 8 / 2 = 4 times
    w = prior_weights([False, True, False], n_questions=10, n_unanswerable=2, unanswerable_share=0.5)
    assert w.tolist() == [1.0, 4.0, 1.0]
    assert prior_weights([True], 10, 2, None).tolist() == [1.0]
    assert prior_weights([True], 10, 5, 0.25).tolist() == [pytest.approx(1 / 3)]
    for bad in (0.0, 1.0):
        with pytest.raises(ValueError, match="strictly between 0 and 1"):
            prior_weights([True], 10, 2, bad)
    with pytest.raises(ValueError, match="0 of 10 are unanswerable"):
        prior_weights([False], 10, 0, 0.5)
    # sorted: right, right, wrong (weight 4), right -> weighted precision 1, 1, 2/6, 3/7
    confs, right, weights = [0.9, 0.8, 0.7, 0.6], [True, True, False, True], [1, 1, 4, 1]
    assert threshold_for_precision(confs, right, 0.7) == 0.6  # unweighted: 3/4 at 0.6
    assert threshold_for_precision(confs, right, 0.7, weights) == 0.8


def test_calibration_at_an_unanswerable_share_reports_the_half_counted_at_it():
    # answered unanswerable questions (wrong) and answerable ones (right when reader_score is high)
    rows = [{"id": f"q{i}", "answerable": i % 5 != 0, "supported": True,
             "signals": _signals(reader_score=(i % 10) / 10), "answer_correct": i % 5 != 0 and i % 10 >= 3,
             "confidence": None} for i in range(200)]
    plain = confidence_eval.fit_calibrator(rows, 0.9, {})
    shifted = confidence_eval.fit_calibrator(rows, 0.9, {}, unanswerable_share=0.5)
    assert shifted.fitted_on["unanswerable_share"] == 0.5 and plain.fitted_on["unanswerable_share"] is None
    assert shifted.intercept < plain.intercept  # more unanswerable questions asked: less confident at equal signals
    counted = confidence_eval.at_share(rows, shifted, 0.5)
    assert counted["unanswerable_share"] == 0.5 and counted["answered"] <= len(rows)
    assert confidence_eval.at_share(rows, shifted, None) is None
    only_answerable = [r for r in rows if r["answerable"]]
    assert "0 of 160 are unanswerable" in confidence_eval.at_share(only_answerable, shifted, 0.5)["note"]


def test_calibration_never_reads_the_reported_half():
    rows = [{"id": f"q{i}", "supported": True, "signals": _signals(reader_score=(i % 10) / 10),
             "answer_correct": i % 10 >= 5, "confidence": None} for i in range(80)]
    choose, report = confidence_eval.halves(rows)
    report_ids = {r["id"] for r in report}
    sealed = [_Sealed(r) if r["id"] in report_ids else r for r in rows]
    choose_again, _ = confidence_eval.halves(sealed)  # splitting reads ids only
    cal = confidence_eval.fit_calibrator(choose_again, 0.9, {})
    assert cal.fitted_on["size"] == len(choose) and cal.coef[SIGNALS.index("reader_score")] > 0


def test_resplits_refit_each_other_split_and_report_its_report_half_at_its_own_bar():
    # right when reader_score >= 0.5, with a noisy middle: each split's bar and numbers differ a little
    rows = [{"id": f"q{i}", "supported": i % 7 != 0, "signals": _signals(reader_score=(i * 37 % 100) / 100),
             "answer_correct": (i * 37 % 100) >= 50 or i % 9 == 0, "confidence": None} for i in range(300)]
    spread = confidence_eval.resplits(rows, 0.9, 3)
    assert [s["seed"] for s in spread["per_split"]] == [1, 2, 3] and spread["splits"] == 3
    # split 2 recomputed by hand: fit on its choose half, score its report half at that fit's bar
    choose, report = confidence_eval.halves(rows, 2)
    assert {r["id"] for r in choose} != {r["id"] for r in confidence_eval.halves(rows)[0]}  # not the shipped split
    cal = confidence_eval.fit_calibrator(choose, 0.9, {})
    kept = [r for r in report if r["supported"] and cal.predict(r["signals"]) >= cal.min_confidence]
    assert spread["per_split"][1]["precision_answered"] == pytest.approx(
        sum(r["answer_correct"] for r in kept) / len(kept))
    assert spread["per_split"][1]["coverage_answered"] == pytest.approx(len(kept) / len(report))
    values = [s["precision_answered"] for s in spread["per_split"]]
    assert spread["precision_answered"]["mean"] == pytest.approx(sum(values) / 3, abs=1e-4)
    assert spread["precision_answered"]["min"] == pytest.approx(min(values), abs=1e-4)
    assert spread["at_target"] == pytest.approx(sum(v >= 0.9 for v in values) / 3, abs=1e-4)
    assert confidence_eval.resplits(rows, 0.9, 0) is None
    # a split whose choose half holds no wrong answer cannot be fitted: it is listed, not dropped
    all_right = [dict(r, answer_correct=True) for r in rows[:40]]
    assert confidence_eval.resplits(all_right, 0.9, 2)["per_split"] == [
        {"seed": 1, "note": "too few answers to fit"}, {"seed": 2, "note": "too few answers to fit"}]


def test_resplits_fit_the_features_they_are_given():
    # right when reader_score >= 0.5; "echo" carries the same information and "noise" none
    rows = [{"id": f"q{i}", "supported": True,
             "signals": _signals(reader_score=(i * 37 % 100) / 100, echo=(i * 37 % 100) / 100, noise=(i * 53 % 7) / 7),
             "answer_correct": (i * 37 % 100) >= 50 or i % 9 == 0, "confidence": None} for i in range(300)]
    assert confidence_eval.resplits(rows, 0.9, 2, features=SIGNALS) == confidence_eval.resplits(rows, 0.9, 2)
    choose, _ = confidence_eval.halves(rows, 1)
    cal = confidence_eval.fit_calibrator(choose, 0.9, {}, features=("echo", "noise"))
    assert cal.features == ["echo", "noise"] and cal.coef[0] > 0
    echo = confidence_eval.resplits(rows, 0.9, 2, features=("echo",))
    blind = confidence_eval.resplits(rows, 0.9, 2, features=("noise",))
    assert echo["per_split"] == confidence_eval.resplits(rows, 0.9, 2, features=("reader_score",))["per_split"]
    assert echo["coverage_at_precision_0.9"]["mean"] > blind["coverage_at_precision_0.9"]["mean"]


def test_resplits_fit_on_fit_only_rows_in_every_split_and_never_report_them():
    rows = [{"id": f"q{i}", "supported": i % 7 != 0, "signals": _signals(reader_score=(i * 37 % 100) / 100),
             "answer_correct": (i * 37 % 100) >= 50 or i % 9 == 0, "confidence": None} for i in range(300)]
    # extra rows that say a high reader score is often wrong: the fit must see them, the report must not
    extra = [{"id": f"x{i}", "supported": True, "signals": _signals(reader_score=0.6 + (i % 40) / 100),
              "answer_correct": i % 3 == 0, "confidence": None} for i in range(200)]
    spread = confidence_eval.resplits(rows, 0.9, 2, fit_only=extra)
    choose, report = confidence_eval.halves(rows, 2)
    cal = confidence_eval.fit_calibrator(choose + extra, 0.9, {})
    kept = [r for r in report if r["supported"] and cal.predict(r["signals"]) >= cal.min_confidence]
    assert spread["per_split"][1]["coverage_answered"] == pytest.approx(len(kept) / len(report))  # old rows only
    assert spread["per_split"] != confidence_eval.resplits(rows, 0.9, 2)["per_split"]  # the extra rows were fitted
    assert confidence_eval.resplits(rows, 0.9, 2, fit_only=[]) == confidence_eval.resplits(rows, 0.9, 2)


def test_a_confidence_under_the_bar_is_written_with_the_decimals_that_tell_them_apart():
    from components.core.verification.confidence import against_bar

    assert against_bar(0.63, 0.782) == ("0.63", "0.78")
    assert against_bar(0.776, 0.7822) == ("0.776", "0.782")
    assert against_bar(0.78121, 0.78139) == ("0.7812", "0.7814")
    assert against_bar(0.99991, 0.99994) == ("0.9999", "0.9999")  # four decimals at most
    assert against_bar(0.123456, 0.123457, digits=5) == ("0.12346", "0.12346")  # or as many as asked


def test_calibration_file_keeps_one_combiner_per_kind(tmp_path):
    path = tmp_path / "c.json"
    CalibrationFile({"extractive": _calibrator([0.0] * len(SIGNALS))}).save(path)
    loaded = CalibrationFile.load(path)
    loaded.calibrators["generative"] = _calibrator([1.0] * len(SIGNALS))
    loaded.save(path)
    again = CalibrationFile.load(path)
    assert sorted(again.calibrators) == ["extractive", "generative"] and again.get("none") is None
