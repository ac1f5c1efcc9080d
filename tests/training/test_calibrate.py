"""training/calibrate.py: held-out SQuAD rows are told apart by kind (squad2-more's adversarial articles, the
training articles), and a missing run says which command makes it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "training"))

import calibrate  # noqa: E402


def test_rows_are_kinded_by_the_squad2_more_file(tmp_path):
    more = tmp_path / "more.json"
    more.write_text(json.dumps({"data": [{"title": "T", "paragraphs": [{"context": "c", "qas": [{"id": "m1"}]}]}]}))
    rows = calibrate.squad_kinds([{"id": "m1"}, {"id": "t1"}], more)
    assert [r["kind"] for r in rows] == ["squad2-more", "training articles"]
    assert [r["kind"] for r in calibrate.squad_kinds([{"id": "m1"}], tmp_path / "absent.json")] == ["training articles"]


def test_a_missing_run_names_the_command_that_makes_it(tmp_path):
    with pytest.raises(SystemExit) as exc:
        calibrate.main(["--squad-rows", str(tmp_path / "none" / "per_query.jsonl")])
    assert "does not exist" in str(exc.value) and "--eval .spanqa/training/heldout-squad2.json" in str(exc.value)


def test_a_saved_combiner_keeps_the_other_kind_of_the_file(tmp_path):
    from components.core.verification.confidence import CalibrationFile, Calibrator
    from components.evaluation.confidence_eval import save_calibrator

    def cal(bar):
        return Calibrator(["verifier"], [0.5], [0.1], [1.0], 0.0, bar, 0.9)

    path = tmp_path / "calibration.json"
    assert save_calibrator(cal(0.7), "generative", str(path)) == str(path)
    assert save_calibrator(cal(0.8), "extractive", str(path)) == str(path)
    file = CalibrationFile.load(path)
    assert file.get("generative").min_confidence == 0.7 and file.get("extractive").min_confidence == 0.8
    assert save_calibrator(cal(0.8), "extractive", None) is None


def test_cached_document_rows_are_read_and_kinded_without_asking_again(tmp_path, monkeypatch, capsys):
    cache = tmp_path / "documents.jsonl"
    row = {"kind": "pdf", "answerable": True, "supported": True, "signals": {"verifier": 0.9}, "answer_correct": True}
    # cpdf-01's document is on the train side of docsets.split_of, cpdf-11's on the held-out side
    cache.write_text("".join(json.dumps(dict(row, id=i)) + "\n" for i in ("cpdf-01", "cpdf-11")))
    import components.evaluation.docsets as docsets

    monkeypatch.setattr(docsets, "docset_runner", lambda *a, **k: pytest.fail("the cache was not read"))
    pipeline = ROOT / "pipelines" / "extractive.yaml"
    rows = calibrate.document_rows(pipeline, cache)
    assert [(r["id"], r["kind"], r["doc_kind"]) for r in rows] == [("cpdf-11", "documents", "pdf")]
    err = capsys.readouterr().err
    assert "1 of 2 rows" in err and "holds no row for 543 of the 544 questions of the heldout side" in err
    assert [r["id"] for r in calibrate.document_rows(pipeline, cache, "train")] == ["cpdf-01"]
    assert [r["id"] for r in calibrate.document_rows(pipeline, cache, "all")] == ["cpdf-01", "cpdf-11"]
    err = capsys.readouterr().err
    assert err.count("left out") == 1 and "holds no row for" in err  # one row of each side, of many questions
