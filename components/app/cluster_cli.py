"""``python run.py cluster up|down|status``: a PostgreSQL cluster on this machine for ``PgClusterStore``
(``components.stores.pgvector.cluster``): shard servers with streaming read replicas, their data in ``--dir``."""

from __future__ import annotations

import argparse
import json


def parse(argv):
    p = argparse.ArgumentParser(prog="run.py cluster", description=__doc__.split("\n\n")[0])
    p.add_argument("action", choices=("up", "down", "status"))
    p.add_argument("--dir", default=".spanqa/cluster", help="where the servers keep their data (default .spanqa/cluster)")
    p.add_argument("--shards", type=int, default=2, help="with up: shard servers (default 2)")
    p.add_argument("--replicas", type=int, default=1, help="with up: streaming replicas of each shard (default 1)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    return p.parse_args(argv)


def main(argv, console) -> int:
    from rich.table import Table

    from components.stores.pgvector import cluster

    args = parse(argv)
    if args.action == "up":
        cluster.up(args.dir, args.shards, args.replicas)
    if args.action == "down":
        stopped = cluster.down(args.dir)
        if args.json:
            print(json.dumps([{"name": n, "stopped": how} for n, how in stopped]))
        else:
            for name, how in stopped:
                console.print(f"{name}: {how}")
        return 0
    rows = cluster.status(args.dir)
    if args.json:
        print(json.dumps(rows))
        return 0
    table = Table(title=f"cluster in {args.dir}")
    for column in ("server", "role", "running", "replay lag (bytes)", "data"):
        table.add_column(column)
    for r in rows:
        running = "yes" if r["running"] else "no"
        if r["role"] == "replica" and r["running"] and not r.get("streaming", True):
            running = "yes, not streaming"
        table.add_row(r["name"], r["role"], running,
                      str(r.get("lag_bytes", "")) if r["role"] == "replica" else "", r["data"])
    console.print(table)
    stuck = [r["name"] for r in rows if r["role"] == "replica" and r["running"] and not r.get("streaming", True)]
    if stuck:  # reads skip a replica behind the question's version, so answers stay right; it serves nothing
        console.print(f"{', '.join(stuck)}: not streaming from the primary (its log in the data folder says why); "
                      f"questions read the primary meanwhile. If the primary removed WAL it needs, stop the cluster, "
                      f"remove that replica's folder and run `cluster up` again: it is copied afresh.")
    if args.action == "up":
        console.print(f"PgClusterStore(cluster_dir={args.dir!r}) reads {args.dir}/cluster.json; "
                      f"`python run.py cluster down --dir {args.dir}` stops every server.")
    return 0
