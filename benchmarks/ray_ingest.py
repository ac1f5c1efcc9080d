"""Indexing with Ray on one node and on two, side by side on the same corpus: chunks/s of ``ray_index`` (convert,
split, embed on the cluster's nodes; the driver writes to PostgreSQL) with a Ray cluster of one node (one CPU), then
the same cluster with a second node (one CPU) added, each into empty tables.

The corpus is generated from real text: ``--files`` text files, each the paragraphs of one SQuAD 1.1 training
article (so the embedding, the costly step, dominates as it does on real folders). Both runs must write the same
rows (chunk, document and posting counts compared; the tables themselves are compared row by row in
``tests/stores/pgvector/test_ray_ingest.py``). On this 2-core machine the two nodes are two processes on loopback
with one CPU each, and the driver and PostgreSQL share the same two cores: the ratio is a floor for separate
machines. The figure is the whole run as a user times it — starting the actors and loading the model on each node
included — so a small corpus understates it (40 files: 1.60x; 80 files: 1.72x).

    python benchmarks/ray_ingest.py [--files 80] [--json]

PostgreSQL: SPANQA_PG_DSN, or the embedded server in ``.spanqa/bench-pg``. Ray's token authentication is on (a token
of this run's own), as ``docs/scaling.md`` asks of a real cluster.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, finish

from components.stores.pgvector import schema as pg_schema, server as pg_server
from components.stores.pgvector.schema import Tables

SQUAD = ROOT.parent / "shared" / "data" / "squad-train" / "train-v1.1.json"
RAY = str(Path(sys.executable).parent / "ray")
DRIVER = ("import json, sys; from haystack.utils import Secret; "
          "from components.stores.pgvector.store import PgSpanStore; "
          "from components.stores.pgvector.ray_ingest import ray_index; "
          "s = PgSpanStore(data_dir=sys.argv[1], dsn=Secret.from_token(sys.argv[2]), table_prefix=sys.argv[3], "
          "progress=False); r = ray_index(s, sys.argv[4]); r.pop('skipped'); print(json.dumps(r))")


def corpus(folder: Path, files: int) -> None:
    articles = json.loads(SQUAD.read_text(encoding="utf-8"))["data"][:files]
    for i, a in enumerate(articles):
        text = "\n\n".join(p["context"] for p in a["paragraphs"])
        (folder / f"a{i:03d}-{a['title'][:40]}.txt").write_text(f"# {a['title']}\n\n{text}\n", encoding="utf-8")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def index_once(folder: Path, dsn: str, prefix: str, address: str, env: dict) -> dict:
    conn = pg_server.connect(dsn)
    try:
        pg_schema.drop(conn, Tables(prefix))  # into empty tables: every document converted, split and embedded
    finally:
        conn.close()
    out = subprocess.run([sys.executable, "-c", DRIVER, str(folder), dsn, prefix, address], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        raise SystemExit(f"ray_ingest: the indexing run failed:\n{out.stderr[-3000:]}")
    done = json.loads(out.stdout.strip().splitlines()[-1])
    conn = pg_server.connect(dsn)
    try:
        done["rows"] = {part: conn.execute(f"SELECT count(*) FROM {prefix}_{part}").fetchone()[0]
                        for part in ("chunks", "documents", "postings")}
    finally:
        conn.close()
    done["chunks_per_s"] = round(done["chunks_written"] / done["seconds"], 2)
    return done


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--files", type=int, default=80)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if shutil.which(RAY) is None and not Path(RAY).exists():
        raise SystemExit("ray_ingest: Ray is the optional extra [cluster]: pip install -e '.[cluster]'")
    dsn = os.environ.get("SPANQA_PG_DSN") or pg_server.embedded_dsn(str(ROOT / ".spanqa" / "bench-pg"))
    report = {"files": args.files, "cpus": os.cpu_count(), "load_average_before": os.getloadavg()}
    with tempfile.TemporaryDirectory() as tmp:
        folder, token = Path(tmp) / "kb", Path(tmp) / "token"
        folder.mkdir()
        corpus(folder, args.files)
        token.write_text(secrets.token_hex(32))
        env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token",
               "RAY_AUTH_TOKEN_PATH": str(token)}
        port = free_port()
        common = ["--num-cpus", "1", "--node-ip-address", "127.0.0.1", "--disable-usage-stats"]
        subprocess.run([RAY, "start", "--head", "--port", str(port), "--include-dashboard=false", *common],
                       check=True, capture_output=True, env=env, timeout=180)
        address = f"127.0.0.1:{port}"
        try:
            print(f"{args.files} files; one Ray node (1 CPU) …", file=sys.stderr)
            report["one_node"] = index_once(folder, dsn, "bench_ray_one", address, env)
            subprocess.run([RAY, "start", "--address", address, *common], check=True, capture_output=True, env=env,
                           timeout=180)
            print("two Ray nodes (1 CPU each) …", file=sys.stderr)
            report["two_nodes"] = index_once(folder, dsn, "bench_ray_two", address, env)
        finally:
            subprocess.run([RAY, "stop", "--force"], capture_output=True, env=env, timeout=120)
    one, two = report["one_node"], report["two_nodes"]
    report["speedup"] = round(two["chunks_per_s"] / one["chunks_per_s"], 2)
    report["same_rows"] = one["rows"] == two["rows"]
    if not args.json:
        for name, r in (("one node ", one), ("two nodes", two)):
            print(f"  {name}: {r['nodes']} node(s), {r['written']} documents, {r['chunks_written']:,} chunks in "
                  f"{r['seconds']} s = {r['chunks_per_s']} chunks/s")
        print(f"  two nodes / one node: {report['speedup']}x (target 1.7x); the same rows in both: "
              f"{report['same_rows']} ({two['rows']})")
    return finish(report, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
