"""`run.py --serve` takes the query options (--data, --cache-dir) and reports bad input as for queries: one
paragraph, exit code 2, before any server starts."""

from __future__ import annotations

import subprocess
import sys

from tests.serving.conftest import ROOT, Server, http


def test_serve_with_data_and_cache_dir(tmp_path):
    data = tmp_path / "kb"
    data.mkdir()
    (data / "kettle.md").write_text("# Kettle\n\nThe Zephyr kettle boils one litre of water in 140 seconds.\n")
    (data / "toaster.md").write_text("# Toaster\n\nThe Ember toaster has six browning levels.\n")
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    srv = Server("pipelines/retrieval.yaml", tmp_path / "server.log", "--data", str(data), "--cache-dir",
                 str(tmp_path / "cache"), env={"TMPDIR": str(tmpdir)})
    try:
        srv.wait_ready()  # without a key /ready counts nothing; the index is built in the --cache-dir given
        assert any((tmp_path / "cache").iterdir())
        status, body, _ = http("POST", f"{srv.url}/retrieval/run", {"query": "How fast does the Zephyr kettle boil?"})
        assert status == 200
        assert body["documents"][0]["doc_id"] == "kettle.md"
        assert {d["doc_id"] for d in body["documents"]} <= {"kettle.md", "toaster.md"}  # --data, not data/kb
        assert set(body) == {"query", "documents", "models", "timings_ms"}
    finally:
        srv.stop()  # SIGTERM: uvicorn shuts down gracefully, then re-raises it (atexit never runs)
    assert srv.proc.returncode is not None
    assert not [p.name for p in tmpdir.iterdir() if p.name.startswith("spanqa")]  # no folder left behind


def _serve(*args):
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args, "--serve"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def test_serve_bad_input_is_one_paragraph(tmp_path):
    for args, needle in [(["pipelines/retrieval.yaml", "--data", str(tmp_path / "nope")], "does not exist"),
                         (["pipelines/nope.yaml"], "does not exist"),
                         (["pipelines/retrieval.yaml", "--port", "0"], "--port"),
                         (["pipelines/retrieval.yaml", "-q", "ERR-4012"], "does not take --query")]:
        proc = _serve(*args)
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr and needle in " ".join(proc.stderr.split())
