"""A plain ``pip install .`` — what a Haystack app that embeds spanqa does, without ``make setup`` — in a fresh
virtual environment converts a PDF, an HTML page and a Word file: every library the converters need is declared
(lxml 6 no longer pulls lxml_html_clean, which trafilatura needs; without it every .html file was skipped)."""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow

CONVERT = r"""
import sys
from pathlib import Path
from components.core.documents.convert import convert_file
from components.core.retrieval.loaders import LoadLimits
for name in ("security-whitepaper.pdf", "hub-pro-datasheet.html", "service-level-agreement.docx"):
    doc = convert_file(Path(sys.argv[1]) / name, name, LoadLimits())
    assert len(doc.text) > 200, (name, doc.text[:80])
    print(name, len(doc.text))
"""


def test_a_plain_pip_install_converts_each_format(tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"

    def pip(*args):
        done = subprocess.run([str(python), "-m", "pip", "install", "--quiet", *args], capture_output=True, text=True,
                              timeout=1500)
        assert done.returncode == 0, done.stderr[-2000:]

    pip("torch==2.13.0")  # the CPU build first (README): a bare torch requirement would pull CUDA
    pip(str(ROOT))
    done = subprocess.run([str(python), "-c", CONVERT, str(ROOT / "data" / "kb")], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path)  # not the checkout: the installed package is what is imported
    assert done.returncode == 0, done.stderr[-2000:]
    assert [line.split()[0] for line in done.stdout.splitlines()] == [
        "security-whitepaper.pdf", "hub-pro-datasheet.html", "service-level-agreement.docx"]
