"""PgSpanStore across processes: an indexing run killed with SIGKILL leaves a consistent database that the
next run completes; two indexers at once write every row once."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[3]
INDEX = ("import sys; from components.stores.pgvector.store import PgSpanStore; "
         "s = PgSpanStore(data_dir=sys.argv[1], table_prefix=sys.argv[2], progress=False); s.open(); "
         "print(s.stats['added'], s.stats['unchanged'])")


def corpus(tmp_path, n=700):
    d = tmp_path / "kb"
    d.mkdir()
    for i in range(n):
        (d / f"doc-{i:04d}.txt").write_text(f"Document {i} says the lamp number {i} glows {'red' if i % 3 else 'blue'}.")
    return d


def index(data, prefix, **kw):
    return subprocess.Popen([sys.executable, "-c", INDEX, str(data), prefix], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, **kw)


def counts(dsn, prefix):
    with psycopg.connect(dsn) as conn:
        def one(sql):
            return conn.execute(sql.format(p=prefix)).fetchone()[0]
        return {
            "documents": one("SELECT count(*) FROM {p}_documents"),
            "chunks": one("SELECT count(*) FROM {p}_chunks"),
            "postings": one("SELECT count(*) FROM {p}_postings"),
            "terms": one("SELECT count(*) FROM {p}_terms"),
            "chunks_of_documents": one("SELECT coalesce(sum(n_chunks), 0) FROM {p}_documents"),
            "df_mismatch": one("SELECT count(*) FROM {p}_terms t FULL JOIN (SELECT term, count(*) n FROM {p}_postings "
                               "GROUP BY term) r USING (term) WHERE t.df IS DISTINCT FROM r.n"),
        }


def committed(dsn, prefix) -> int:
    try:
        with psycopg.connect(dsn) as conn:
            return conn.execute(f"SELECT count(*) FROM {prefix}_documents").fetchone()[0]
    except psycopg.Error:
        return 0


def test_sigkill_mid_index_leaves_whole_groups_and_the_next_run_completes(pg_dsn, tmp_path, prefix):
    data = corpus(tmp_path)
    proc = index(data, prefix)
    deadline = time.monotonic() + 120
    while committed(pg_dsn, prefix) == 0 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partial = counts(pg_dsn, prefix)
    assert 0 < partial["documents"] < 700, "the kill must land mid-index"
    assert partial["chunks"] == partial["chunks_of_documents"] and partial["df_mismatch"] == 0  # whole groups only
    again = index(data, prefix)
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    added, unchanged = map(int, out.split())
    assert (added, unchanged) == (700 - partial["documents"], partial["documents"])
    clean = index(data, prefix + "_clean")
    clean.communicate(timeout=300)
    assert counts(pg_dsn, prefix) == counts(pg_dsn, prefix + "_clean")


def test_two_indexers_at_once_write_each_row_once(pg_dsn, tmp_path, prefix):
    data = corpus(tmp_path, n=300)
    a, b = index(data, prefix), index(data, prefix)
    (out_a, err_a), (out_b, err_b) = a.communicate(timeout=300), b.communicate(timeout=300)
    assert a.returncode == b.returncode == 0, err_a + err_b
    results = sorted(tuple(map(int, o.split())) for o in (out_a, out_b))
    assert results == [(0, 300), (300, 0)]  # one built everything; the other waited, then found it unchanged
    assert "another process is indexing" in err_a + err_b
    c = counts(pg_dsn, prefix)
    assert c["documents"] == 300 and c["chunks"] == c["chunks_of_documents"] == 300 and c["df_mismatch"] == 0
