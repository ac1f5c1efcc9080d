"""Indexing with Ray Data on a real two-node Ray cluster (a head and a worker node, separate processes on
loopback, one CPU each): the tables hold exactly the rows a local build writes (chunks, documents, postings, term
frequencies; embeddings equal to 1e-5), and a driver killed mid-index leaves, after a second run, the complete
index with nothing written twice."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="Ray is the optional extra [cluster] (make setup installs it)")

from haystack.utils import Secret  # noqa: E402

from components.stores.pgvector.store import PgSpanStore  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
RAY = str(Path(sys.executable).parent / "ray")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    """A head and a worker node with Ray's token authentication on (a token of this test's own): every process
    of the cluster, and the drivers below, read it from RAY_AUTH_TOKEN_PATH."""
    import secrets

    port = free_port()
    token = tmp_path_factory.mktemp("ray") / "token"
    token.write_text(secrets.token_hex(32))
    settings = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)}
    saved = {k: os.environ.get(k) for k in settings}
    os.environ.update(settings)
    env = dict(os.environ)
    common = ["--num-cpus", "1", "--node-ip-address", "127.0.0.1", "--disable-usage-stats"]
    subprocess.run([RAY, "start", "--head", "--port", str(port), "--include-dashboard=false", *common],
                   check=True, capture_output=True, env=env, timeout=180)
    try:
        subprocess.run([RAY, "start", "--address", f"127.0.0.1:{port}", *common], check=True, capture_output=True,
                       env=env, timeout=180)
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([RAY, "stop", "--force"], capture_output=True, env=env, timeout=120)
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("kb")
    for name in sorted(os.listdir(ROOT / "data" / "kb"))[:10]:  # text, Markdown, HTML among them
        shutil.copy(ROOT / "data" / "kb" / name, folder / name)
    return folder


def tables(store: PgSpanStore) -> dict:
    conn, p = store._conn(), store.tables.prefix
    out = {}
    for name, sql in (("chunks", "SELECT id, content, meta FROM {p}_chunks ORDER BY id"),
                      ("documents", "SELECT doc_id, ord, content_hash, text, units, blocks, n_chunks, total_len "
                                    "FROM {p}_documents ORDER BY doc_id"),
                      ("postings", "SELECT p.term, m.chunk_id, p.tf, p.dl FROM {p}_postings p JOIN {p}_chunkmap m "
                                   "USING (ckey) ORDER BY 1, 2"),
                      ("terms", "SELECT term, df FROM {p}_terms ORDER BY term")):
        out[name] = conn.execute(sql.format(p=p)).fetchall()
    out["embeddings"] = {cid: np.asarray(e.to_numpy()) for cid, e in
                         conn.execute(f"SELECT id, embedding FROM {p}_chunks").fetchall()}
    return out


def same(a: dict, b: dict) -> None:
    for name in ("chunks", "documents", "postings", "terms"):
        assert a[name] == b[name], name
    assert a["embeddings"].keys() == b["embeddings"].keys()
    assert max(float(np.abs(a["embeddings"][k] - b["embeddings"][k]).max()) for k in a["embeddings"]) < 1e-5


def run_index(corpus, prefix, address, dsn) -> subprocess.Popen:
    code = ("import sys; from haystack.utils import Secret; "
            "from components.stores.pgvector.store import PgSpanStore; "
            "from components.stores.pgvector.ray_ingest import ray_index; "
            f"s = PgSpanStore(data_dir={str(corpus)!r}, dsn=Secret.from_token({dsn!r}), table_prefix={prefix!r}, "
            "progress=False); print(ray_index(s, sys.argv[1]))")
    return subprocess.Popen([sys.executable, "-c", code, address], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def report(out: str) -> dict:
    """The driver's report (a dict literal), its last such line: Ray may log to stdout after it (a restarted task)."""
    return eval(next(line for line in reversed(out.splitlines()) if line.startswith("{")))


def test_ray_index_writes_what_a_local_build_writes_and_resumes(pg_dsn, ray_cluster, corpus):
    local = PgSpanStore(data_dir=str(corpus), table_prefix="ray_local", progress=False)
    local.open()
    want = tables(local)
    # a driver killed once documents are being written
    first = run_index(corpus, "ray_remote", ray_cluster, pg_dsn)
    remote = PgSpanStore(data_dir=str(corpus), table_prefix="ray_remote", progress=False)
    deadline = time.time() + 300
    while time.time() < deadline and first.poll() is None:
        try:
            if remote._conn().execute("SELECT count(*) FROM ray_remote_documents").fetchone()[0] >= 2:
                break
        except Exception:  # noqa: BLE001 - the tables do not exist yet
            pass
        time.sleep(0.5)
    killed = first.poll() is None
    if killed:
        first.send_signal(signal.SIGKILL)
        first.wait()
    partial = remote._conn().execute("SELECT count(*) FROM ray_remote_documents").fetchone()[0]
    # the second run completes it
    second = run_index(corpus, "ray_remote", ray_cluster, pg_dsn)
    out, errors = second.communicate(timeout=600)
    assert second.returncode == 0, errors[-3000:]
    done = report(out)  # the driver's report (a dict literal)
    assert done["nodes"] == 2
    assert done["written"] + done["unchanged"] == len(want["documents"])
    assert done["unchanged"] == (partial if killed else len(want["documents"]))
    same(tables(remote), want)


def map_workers() -> list[int]:
    """The pids of Ray Data's map actors (converting or embedding), by their process title."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                title = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if title.startswith("ray::") and "MapWorker" in title:
                pids.append(int(entry.name))
    return pids


def test_a_ray_worker_killed_mid_index_leaves_the_complete_index(pg_dsn, ray_cluster, tmp_path):
    """A map actor (converting or embedding) killed while documents are being written: Ray restarts it and retries
    its task, the run completes, and the tables hold exactly what a local build writes — nothing lost, nothing
    twice."""
    folder = tmp_path / "kb"
    folder.mkdir()
    for name in sorted(os.listdir(ROOT / "data" / "kb")):  # the whole demo folder: long enough to kill mid-run
        shutil.copy(ROOT / "data" / "kb" / name, folder / name)
    local = PgSpanStore(data_dir=str(folder), table_prefix="ray_local_all", progress=False)
    local.open()
    want = tables(local)
    run = run_index(folder, "ray_worker_killed", ray_cluster, pg_dsn)
    remote = PgSpanStore(data_dir=str(folder), table_prefix="ray_worker_killed", progress=False)
    killed, deadline = [], time.time() + 300
    while not killed and time.time() < deadline and run.poll() is None:
        try:
            written = remote._conn().execute("SELECT count(*) FROM ray_worker_killed_documents").fetchone()[0]
        except Exception:  # noqa: BLE001 - the tables do not exist yet
            written = 0
        if written >= 1:
            for pid in map_workers()[:1]:
                os.kill(pid, signal.SIGKILL)
                killed.append((pid, written))
        time.sleep(0.2)
    out, errors = run.communicate(timeout=600)
    assert killed, f"no Ray Data worker was found to kill while the index was written: {errors[-2000:]}"
    assert killed[0][1] < len(want["documents"]), "the worker was killed after every document was written"
    assert run.returncode == 0, errors[-3000:]
    done = report(out)
    assert done["written"] == len(want["documents"]) and done["unchanged"] == 0
    same(tables(remote), want)
