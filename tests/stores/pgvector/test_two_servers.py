"""Stateless servers: two ``run.py --serve`` processes on different ports over the same PostgreSQL tables answer the
same question identically, and after a third process re-indexes a changed document both quote the new text (no
answer cache, BM25 mirror or source memo of either serves the old version)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

from tests.serving.conftest import comparable, http, serving
from tests.stores.pgvector.test_reindex_visibility import QUESTION, REINDEX, _write, corpus

ROOT = Path(__file__).resolve().parents[3]


def test_two_servers_answer_alike_and_both_see_a_reindex_by_a_third_process(pg_dsn, tmp_path, prefix):
    data = corpus(tmp_path)
    spec = yaml.safe_load((ROOT / "pipelines/extractive-postgres.yaml").read_text())
    spec["components"]["retriever"]["init_parameters"]["document_store"]["init_parameters"]["table_prefix"] = prefix
    path = tmp_path / "shared.yaml"
    path.write_text(yaml.safe_dump(spec))
    env = {"SPANQA_PG_DSN": pg_dsn}
    extra = ("--data", str(data), "--min-confidence", "0", "--cache-dir", str(tmp_path / "cache"))
    with serving(str(path), tmp_path / "a.log", *extra, env=env) as a, \
            serving(str(path), tmp_path / "b.log", *extra, env=env) as b:
        assert a.port != b.port
        answers = []
        for srv in (a, b):
            status, body, _ = http("POST", f"{srv.url}/shared/run", {"query": QUESTION})
            assert status == 200, body
            answers.append(body)
        assert "SN-00042-Q" in answers[0]["answer"]
        first, second = (comparable(x) for x in answers)
        assert first["answer"] == second["answer"] and first["spans"] == second["spans"]
        assert first["verdict"] == second["verdict"] and abs(first["confidence"] - second["confidence"]) < 1e-6

        _write(data / "item-42.md", "SN-99999-Z")
        out = subprocess.run([sys.executable, "-c", REINDEX, str(data), prefix], cwd=ROOT, capture_output=True,
                             text=True, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1", **env})
        assert out.returncode == 0 and out.stdout.split()[-1] == "1", out.stdout + out.stderr
        for srv in (a, b):
            for _ in range(2):  # the repeat may come from the answer cache, under the new version only
                status, body, _ = http("POST", f"{srv.url}/shared/run", {"query": QUESTION})
                assert status == 200 and "SN-99999-Z" in body["answer"], (srv.url, body)
                assert all("SN-00042-Q" not in s["text"] for s in body["spans"]), body["spans"]
