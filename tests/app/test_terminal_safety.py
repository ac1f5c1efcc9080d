"""Document and question text reach the terminal as text: rich markup is shown, not obeyed; control
characters (ANSI escapes) are shown as escapes, never sent."""

import subprocess
import sys
from pathlib import Path

from rich.console import Console

from components.app import render

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = "Click [link=http://evil.example]here[/link] or [/note] now [x] \x1b[31mRED\x1b[0m done."


def test_render_answer_escapes_markup_and_control_characters():
    console = Console(record=True, width=200, color_system=None)
    doc = type("Doc", (), {"text": "Intro. " + HOSTILE, "body_start": 0})()
    start = len("Intro. ")
    result = {"query": "What is [bold]this[/bold]?", "answer": HOSTILE, "verdict": "SUPPORTED", "reason": "ok [x]",
              "confidence": 0.5, "route": ["read"], "spans": [{"doc_id": "d[x].md", "char_start": start,
                                                                "char_end": start + len(HOSTILE), "text": HOSTILE}]}
    render.print_answer(console, result, lambda _: doc)
    text = console.export_text()
    assert "[link=http://evil.example]here[/link]" in text and "[/note]" in text and "[x]" in text
    assert "What is [bold]this[/bold]?" in text and "d[x].md" in text
    assert "\x1b" not in text and "\\x1b[31mRED\\x1b[0m" in text


def test_run_py_prints_a_hostile_document_without_crashing(tmp_path):
    data = tmp_path / "kb"
    data.mkdir()
    (data / "hostile.md").write_text("# Notes\n\nThe zebra hub notes say: " + HOSTILE + "\n")
    proc = subprocess.run([sys.executable, "run.py", "pipelines/retrieval.yaml", "--data", str(data), "--cache-dir",
                           str(tmp_path / "c"), "-q", "zebra hub notes"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b[31m" not in proc.stdout and "[/note]" in proc.stdout and "\\x1b[31m" in proc.stdout
