"""The confidence bar through run.py: the shipped bar holds back an answer whose confidence is below it (kept as
rejected_answer), and --min-confidence 0 lets the verifier's answer through with its confidence."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
Q = "How many devices can the Hub Mini control?"


def _ask(tmp_path, *extra):
    proc = subprocess.run([sys.executable, "run.py", "pipelines/extractive.yaml", "--cache-dir", str(tmp_path / "c"),
                           "--no-audit", "--json", "-q", Q, *extra], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_bar_holds_back_and_zero_lets_through(tmp_path):
    held = _ask(tmp_path, "--min-confidence", "0.99")
    assert held["verdict"] == "NOT_FOUND" and held["answer"] is None and held["reason"].startswith("low_confidence")
    assert held["rejected_answer"] == "48" and 0 < held["confidence"] < 0.99  # the trained reader's minimal span
    given = _ask(tmp_path, "--min-confidence", "0")
    assert given["verdict"] == "SUPPORTED" and given["answer"] == "48"
    assert given["confidence"] == held["confidence"]


def test_unanswerable_share_outside_zero_to_one_is_one_paragraph(tmp_path):
    for value, says in (("0", "--unanswerable-share is 0, but it must lie strictly between 0 and 1"),
                        ("1", "'--unanswerable-share' is 1.0, but it must be a number from 0 to 1.0 (excluded)")):
        proc = subprocess.run([sys.executable, "run.py", "pipelines/extractive.yaml", "--unanswerable-share", value,
                               "-q", Q], cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert proc.returncode != 0 and "Traceback" not in proc.stderr
        assert says in " ".join(proc.stderr.split()), proc.stderr


def test_negative_resplits_is_one_paragraph():
    proc = subprocess.run([sys.executable, "run.py", "pipelines/extractive.yaml", "--resplits", "-1", "-q", Q],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "--resplits is -1, but it counts the extra choose/report splits" in " ".join(proc.stderr.split())
