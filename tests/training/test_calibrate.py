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
