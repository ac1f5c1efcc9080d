"""A cache that heals: corrupt, truncated or foreign caches are reported in one line and rebuilt; temporaries
left by a killed run are removed; concurrent processes build once; a SIGKILL mid-build resumes."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from components.core.retrieval.index import IndexSettings, build_index
from components.core.retrieval.index_files import (
    FORMAT_VERSION, CorruptIndexError, load_index, remove_stale_temporaries, save_index,
)
from components.core.retrieval.loaders import SourceDocument

ROOT = Path(__file__).resolve().parents[3]


def _fake_embed(texts):
    return np.array([[len(t), t.count("e") + 1.0, 1.0] for t in texts], dtype=np.float32)


@pytest.fixture
def saved(tmp_path):
    docs = [SourceDocument("a.md", "Alpha is first. Beta is second.\n\nGamma is third."), SourceDocument("b.md", "Delta.")]
    index, _ = build_index(docs, IndexSettings(), _fake_embed)
    index.key = "k"
    save_index(index, tmp_path)
    return tmp_path


def test_round_trip(saved):
    index = load_index(saved)
    assert index.n_chunks >= 2 and index.chunk_text(0).startswith("Alpha")


@pytest.mark.parametrize("damage, message", [
    (lambda d: (d / "arrays.npz").write_bytes((d / "arrays.npz").read_bytes()[:100]), "checksum"),
    (lambda d: (d / "manifest.json").write_text(""), "manifest unreadable"),
    (lambda d: (d / "arrays.npz").unlink(), "arrays.npz missing"),
    (lambda d: (d / "manifest.json").write_text(json.dumps({**json.loads((d / "manifest.json").read_text()),
                                                             "format": FORMAT_VERSION - 1})), "format version"),
])
def test_damage_is_detected(saved, damage, message):
    damage(saved)
    with pytest.raises(CorruptIndexError, match=message):
        load_index(saved)


def test_stale_temporaries_are_removed(tmp_path):
    (tmp_path / "k").mkdir()
    (tmp_path / "k" / ".arrays.npz.abc.tmp").write_bytes(b"partial")
    (tmp_path / "keep.npz").write_bytes(b"x")
    assert remove_stale_temporaries(tmp_path) == 1
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == ["keep.npz"]


def _run(args, cache, data=ROOT / "data/kb"):
    return subprocess.run([sys.executable, str(ROOT / "run.py"), "pipelines/retrieval.yaml", "--data", str(data),
                           "--cache-dir", str(cache), "--json", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def test_corrupt_cache_is_rebuilt_through_run_py(tmp_path):
    cache = tmp_path / "cache"
    first = _run(["-q", "ERR-4012"], cache)
    assert first.returncode == 0, first.stderr
    (arrays,) = cache.glob("*/arrays.npz")
    arrays.write_bytes(arrays.read_bytes()[: arrays.stat().st_size // 2])
    second = _run(["-q", "ERR-4012"], cache)
    assert second.returncode == 0 and "Traceback" not in second.stderr
    assert "is unusable (arrays.npz does not match its checksum (truncated or changed)); rebuilding it" in " ".join(
        second.stderr.split())
    assert json.loads(second.stdout)["documents"] == json.loads(first.stdout)["documents"]
    third = _run(["-q", "ERR-4012"], cache)
    assert "rebuilding" not in third.stderr and "loaded from cache" in third.stderr


def test_concurrent_processes_build_once(tmp_path):
    cache = tmp_path / "cache"
    cmd = [sys.executable, str(ROOT / "run.py"), "pipelines/retrieval.yaml", "--data", str(ROOT / "data/kb"),
           "--cache-dir", str(cache), "--json", "-q", "ERR-4012"]
    procs = [subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e for _, e in outs]
    built = sum("(built in" in err for _, err in outs)
    assert built == 1, [e for _, e in outs]
    assert len({json.dumps(json.loads(out)["documents"]) for out, _ in outs}) == 1


def test_sigkill_during_indexing_then_the_next_run_completes(tmp_path):
    data = tmp_path / "kb"
    data.mkdir()
    for i in range(1200):  # enough text that embedding takes a few seconds, in several saved groups
        (data / f"doc{i:04}.txt").write_text(f"Document {i} explains topic number {i}. " * 12)
    (data / "answer.md").write_text("The pairing code of the zebra hub is 7319.\n")
    cache = tmp_path / "cache"
    cmd = [sys.executable, str(ROOT / "run.py"), "pipelines/retrieval.yaml", "--data", str(data), "--cache-dir",
           str(cache), "--json", "-q", "zebra hub pairing code"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while time.time() < deadline and not list(cache.glob("embeddings-*.npz")):
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not list(cache.glob("*/manifest.json")), "killed too late: the index was already complete"
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["documents"][0]["doc_id"] == "answer.md"
    assert not list(cache.rglob(".*.tmp"))
