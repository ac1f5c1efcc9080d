"""The memory store sees another process's re-index of its corpus folder (as the PostgreSQL store does): the next
question reads the new index, and its version changes so no cache answers from the old one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from components.stores.span_store import SpanStore

ROOT = Path(__file__).resolve().parents[2]


def _open_elsewhere(data: Path, cache: Path) -> None:
    code = ("from components.stores.span_store import SpanStore; "
            f"SpanStore(data_dir={str(data)!r}, cache_dir={str(cache)!r}, progress=False).open()")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=300, capture_output=True)


def test_a_reindex_by_another_process_is_read_at_the_next_question(tmp_path):
    data, cache = tmp_path / "kb", tmp_path / "cache"
    data.mkdir()
    (data / "kettle.txt").write_text("The Zephyr kettle boils one litre in 140 seconds.\n")
    store = SpanStore(data_dir=str(data), cache_dir=str(cache), progress=False)
    store.open()
    before = store.current_version()
    assert store.current_version() == before  # nothing changed: the same index, no reload
    (data / "kettle.txt").write_text("The Zephyr kettle boils one litre in 95 seconds.\n")
    assert store.current_version() == before  # changed files alone are not a re-index
    _open_elsewhere(data, cache)
    after = store.current_version()
    assert after != before
    text = store.source("kettle.txt")[0].text
    assert "95 seconds" in text and "140" not in text
    assert store.current_version() == after
