"""PDF, HTML and Word files built here are indexed through ``run.py`` (as a user would: ``--data FOLDER``) and each
answers its question with the right document, page and offsets; a bad file beside them is listed, not fatal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.make_documents import write_demo, write_scanned_pdf
from components.core.retrieval.loaders import load_folder

ROOT = Path(__file__).resolve().parent.parent
CASES = [  # question, document, answer, page, heading path
    ("How much does the Glimmerline bug bounty pay for a critical vulnerability?", "security-whitepaper.pdf",
     "2,500 euros", 3, ["Reporting a vulnerability"]),
    ("Which key signs every firmware image?", "security-whitepaper.pdf", None, 2, ["Firmware signing"]),
    ("How much does the Hub Pro weigh?", "hub-pro-datasheet.html", "310 g", None,
     ["Glimmerline Hub Pro datasheet", "Specifications"]),
    ("How far ahead must planned maintenance be announced?", "service-level-agreement.docx", "48 hours", None,
     ["Availability"]),
]


def test_mixed_files_answer_through_run_py_with_pages_and_offsets(tmp_path):
    data = tmp_path / "docs"
    write_demo(data)
    write_scanned_pdf(data / "scanned-terms.pdf")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HAYSTACK_TELEMETRY_ENABLED": "false"}
    cmd = [sys.executable, str(ROOT / "run.py"), "pipelines/extractive.yaml", "--data", str(data), "--cache-dir",
           str(tmp_path / "cache"), "--no-audit", "--json", "--min-confidence", "0"]
    for question, *_ in CASES:
        cmd += ["--query", question]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    said = " ".join(proc.stderr.split())  # the terminal output wraps
    assert "skipped 1 of 4 file(s): scanned-terms.pdf (no text layer (a scanned PDF?) — OCR is not supported" in said
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    texts = {d.doc_id: d.text for d in load_folder(data).documents}
    assert len(results) == len(CASES)
    for result, (question, doc_id, answer, page, path) in zip(results, CASES):
        assert result["query"] == question
        assert result["verdict"] == "SUPPORTED", result
        span = result["spans"][0]
        assert span["doc_id"] == doc_id
        assert texts[doc_id][span["char_start"]:span["char_end"]] == span["text"]  # offsets into the stored text
        if answer is not None:
            assert result["answer"] == answer
        where = span["location"]
        assert where.get("page") == page and where["heading_path"] == path, where
        holder = next(d for d in result["documents"] if d["doc_id"] == doc_id
                      and d["char_start"] <= span["char_start"] < d["char_end"])  # the chunk the answer came from
        assert holder["heading_path"][-1] == path[-1] and holder.get("page") == page
