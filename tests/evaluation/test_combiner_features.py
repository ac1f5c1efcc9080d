import math

import pytest

from benchmarks.combiner_features import logit, variants, with_derived
from components.core.verification.confidence import SIGNALS


def test_derived_signals_are_logits_held_inside_the_clip():
    s = with_derived({"verifier": 0.5, "reader_score": 1.0, "no_answer": None, "window_no_answer": 0.25})
    assert s["verifier_logit"] == 0.0
    assert s["reader_score_logit"] == pytest.approx(math.log((1 - 1e-4) / 1e-4))
    assert s["no_answer_logit"] == pytest.approx(-math.log((1 - 1e-4) / 1e-4))  # missing reads 0, clipped
    assert s["window_no_answer_logit"] == pytest.approx(math.log(1 / 3))
    assert s["verifier_logit_x_window_no_answer"] == 0.0 and s["verifier"] == 0.5
    assert logit(0.9) == pytest.approx(math.log(9))


def test_every_variant_names_signals_the_rows_carry():
    derived = with_derived(dict.fromkeys(SIGNALS, 0.3))
    found = variants(tuple(SIGNALS))
    assert found["shipped signals"] == tuple(SIGNALS)
    assert "verifier" not in found["verifier as its logit"] and "verifier_logit" in found["verifier as its logit"]
    for features in found.values():
        assert set(features) <= set(derived)
