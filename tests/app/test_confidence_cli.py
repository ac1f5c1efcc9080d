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


def test_calibrate_fits_for_the_yaml_unanswerable_share_and_writes_where_it_is_told(tmp_path):
    """--calibrate without --unanswerable-share fits for metadata.spanqa.unanswerable_share (0.2 as shipped):
    the fit records it; the combiner goes to --calibration-out, not to pipelines/calibration/offline.json."""
    import yaml

    shipped = (ROOT / "pipelines/calibration/offline.json").read_bytes()
    spec = yaml.safe_load((ROOT / "pipelines/extractive.yaml").read_text())
    assert spec["metadata"]["spanqa"]["unanswerable_share"] == 0.2  # the shipped default (docs/confidence.md)
    paragraphs = [
        ("The Hub Mini controls up to 48 devices. The Hub Pro controls up to 150 devices.",
         [("How many devices can the Hub Mini control?", "48"), ("How many devices does the Hub Pro control?", "150"),
          ("How many devices can the Hub Max control?", None)]),
        ("Annual plans can be refunded within 30 days of purchase. Monthly plans are not refunded.",
         [("How long after purchase can an annual plan be refunded?", "30 days"),
          ("How long after purchase can a weekly plan be refunded?", None)]),
    ]
    data = {"version": "v2.0", "data": [{"title": "T", "paragraphs": [
        {"context": ctx, "qas": [{"id": f"q{i}{j}", "question": q, "is_impossible": a is None,
                                  "answers": [] if a is None else [{"text": a, "answer_start": ctx.index(a)}]}
                                 for j, (q, a) in enumerate(qas)]} for i, (ctx, qas) in enumerate(paragraphs)]}]}
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(data))
    out = tmp_path / "fit.json"
    proc = subprocess.run([sys.executable, "run.py", "pipelines/extractive.yaml", "--eval", str(path), "--calibrate",
                           "--calibration-out", str(out), "--resplits", "0", "--no-audit", "--json",
                           "--cache-dir", str(tmp_path / "c")], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    fit = json.loads(proc.stdout)["confidence_calibration"]
    if fit.get("saved_to"):  # five questions may be too few to fit: then one warning, never a traceback
        assert fit["fitted_on"]["unanswerable_share"] == 0.2 and Path(fit["saved_to"]) == out
    else:
        assert fit["warnings"] and "\n" not in fit["warnings"][0], fit
    assert (ROOT / "pipelines/calibration/offline.json").read_bytes() == shipped
