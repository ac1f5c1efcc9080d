"""The documents a PostgreSQL search leaves out live in temporary tables filled once per set object."""

from components.stores.base import Selection
from components.stores.pgvector.selection import IdTables, posting_clause


def test_one_table_per_set_object_and_kind_and_a_bounded_number_kept(pg_dsn, tmp_path, prefix):
    from components.stores.pgvector.store import PgSpanStore

    corpus = tmp_path / "kb"
    corpus.mkdir()
    for i in range(3):
        (corpus / f"d{i}.md").write_text(f"# D{i}\n\nNote {i} about the hub.\n")
    store = PgSpanStore(data_dir=str(corpus), table_prefix=prefix, progress=False, search_strategy="exact")
    store.open()
    conn = store._conn()
    tables = IdTables(conn, store.tables)
    ids = frozenset({"d0.md", "d2.md"})
    first = tables.table(ids)
    assert tables.table(ids) is first  # the same object: filled once
    assert tables.table(frozenset(list(ids))) is not first  # an equal set from another version is filled again
    ckeys = tables.table(ids, "ckey")
    rendered = ckeys.as_string(conn)
    n = conn.execute(f"SELECT count(*) FROM {rendered}").fetchone()[0]
    assert n == 2  # one chunk each for d0 and d2
    for i in range(20):
        tables.table(frozenset({f"x{i}"}))
    assert len(tables._kept) == 16
    clause = posting_clause(Selection(exclude=ids, only=frozenset({"d1.md"})), tables.table).as_string(conn)
    assert clause.startswith(" WHERE NOT EXISTS (SELECT 1 FROM pg_temp.") and " AND EXISTS (" in clause
    assert posting_clause(Selection(), tables.table) is None
