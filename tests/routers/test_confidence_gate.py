"""The verifier's confidence bar: a SUPPORTED answer below min_confidence becomes NOT_FOUND low_confidence with
the refused answer kept; above it, the answer carries its confidence."""

import pytest

from components.core.verification.confidence import SIGNALS, CalibrationFile, Calibrator
from components.routers.verifier_router import VerifierRouter
from haystack.dataclasses import ExtractedAnswer

from tests.routers.test_verifier_router import QUERY, SOURCE, ans, doc


@pytest.fixture
def calibration(tmp_path):
    coef = [0.0] * len(SIGNALS)
    coef[SIGNALS.index("reader_score")] = 3.0
    cal = Calibrator(list(SIGNALS), [0.5] * len(SIGNALS), [1.0] * len(SIGNALS), coef, 0.0, min_confidence=0.6)
    path = tmp_path / "cal.json"
    CalibrationFile({"extractive": cal}).save(path)
    return str(path)


def _run(calibration, score, **kw):
    v = VerifierRouter(calibration=calibration, **kw)
    v.warm_up()
    start = SOURCE.index("30 days")
    return v.run(query=QUERY, answers=[ans("30 days", start, start + 7, score=score)], documents=[doc(0, 127)])


def test_below_the_bar_the_answer_is_refused_and_kept(calibration):
    out = _run(calibration, score=0.4)  # 3 * (0.4 - 0.5) -> sigmoid(-0.3) = 0.43 < 0.6 (the file's bar)
    (refused,) = out["not_found"]
    assert refused.meta["reason"].startswith("low_confidence: confidence 0.43 below min_confidence 0.60")
    assert refused.meta["candidate"] == "30 days" and refused.meta["confidence"] == pytest.approx(0.4256, abs=1e-3)
    assert refused.meta["route"][-1] == "confidence:low"


def test_a_confidence_just_under_the_bar_never_reads_as_equal_to_it(calibration):
    out = _run(calibration, score=0.4, min_confidence=0.4284)  # confidence 0.4256: "0.43" and "0.43" at 2 decimals
    (refused,) = out["not_found"]
    assert refused.meta["reason"].startswith("low_confidence: confidence 0.426 below min_confidence 0.428")


def test_above_the_bar_the_answer_carries_its_confidence(calibration):
    (answer,) = _run(calibration, score=0.9)["answers"]
    assert answer.meta["verdict"] == "SUPPORTED" and answer.meta["confidence"] == pytest.approx(0.7685, abs=1e-3)
    assert set(answer.meta["signals"]) == set(SIGNALS)


def test_min_confidence_in_yaml_overrides_the_files_bar(calibration):
    assert _run(calibration, score=0.4, min_confidence=0.0).get("answers")
    assert _run(calibration, score=0.9, min_confidence=0.9).get("not_found")


def test_a_generated_answer_uses_the_generative_combiner(tmp_path):
    from haystack.dataclasses import GeneratedAnswer

    coef = [0.0] * len(SIGNALS)
    coef[SIGNALS.index("evidence_coverage")] = 2.0
    extractive = Calibrator(list(SIGNALS), [0.0] * len(SIGNALS), [1.0] * len(SIGNALS), [0.0] * len(SIGNALS), -3.0)
    generative = Calibrator(list(SIGNALS), [0.0] * len(SIGNALS), [1.0] * len(SIGNALS), coef, 0.0)
    path = tmp_path / "cal.json"
    CalibrationFile({"extractive": extractive, "generative": generative}).save(path)
    v = VerifierRouter(calibration=str(path), min_confidence=0.0)
    v.warm_up()
    g = GeneratedAnswer(data="within 30 days", query=QUERY, documents=[],
                        meta={"evidence": [{"doc_id": "billing", "char_start": 18, "char_end": 127}], "score": 0.5})
    (a,) = v.run(query=QUERY, answers=[g], documents=[doc(18, 127)])["answers"]
    assert a.meta["signals"]["evidence_coverage"] == 1.0  # verbatim in its cited passage
    assert a.meta["confidence"] == pytest.approx(1 / (1 + __import__("math").exp(-2.0)))  # not the extractive 0.047


def test_a_runner_up_the_verifier_rules_out_is_no_rival_in_the_supported_margin(calibration):
    """'14 days' is Acme Basic's refund window: the reader rates it almost as high as Acme Pro's '30 days', so the
    plain margin is 0.01, but its sentence never names Acme Pro — the verifier refuses it and the supported margin
    is the full score. A second source stating Acme Pro's window differently is a rival, and counts (and, judged
    once for both, it is also reported as a conflict)."""
    from haystack import Document

    v = VerifierRouter(calibration=calibration, min_confidence=0.0)
    v.warm_up()
    pro, basic = SOURCE.index("30 days"), SOURCE.index("14 days")
    answers = [ans("30 days", pro, pro + 7, score=0.80), ans("14 days", basic, basic + 7, score=0.79)]
    (answer,) = v.run(query=QUERY, answers=answers, documents=[doc(0, 277)])["answers"]
    assert answer.data == "30 days"
    assert answer.meta["signals"]["reader_margin"] == pytest.approx(0.01)
    assert answer.meta["signals"]["supported_margin"] == pytest.approx(0.80)

    other = "Acme Pro update\n\nRefunds for Acme Pro are available within 60 days."
    second = Document(content=other, meta={"doc_id": "update", "char_start": 0, "char_end": len(other),
                                           "level": "window", "route": ["retrieve", "rerank", "expand"]})
    at = other.index("60 days")
    rival = ExtractedAnswer(query=QUERY, score=0.70, data="60 days",
                            meta={"doc_id": "update", "char_start": at, "char_end": at + 7})
    (answer,) = v.run(query=QUERY, answers=[*answers, rival], documents=[doc(0, 277), second])["answers"]
    assert answer.meta["signals"]["supported_margin"] == pytest.approx(0.10)
    assert answer.meta["reason"].startswith("conflict:") and answer.meta["conflicts"][0]["answer"] == "60 days"
