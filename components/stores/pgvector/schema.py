"""PgSpanStore's schema: pgvector-haystack's chunk table plus the SQL it lacks (offsets, BM25 statistics).

For a table prefix ``p``:

- ``p_chunks`` — **pgvector-haystack's** table (``PgvectorDocumentStore``: id, ``vector(n)`` embedding with its
  HNSW index, content, meta jsonb). Its Haystack-filter → SQL conversion filters both searches. Each chunk's
  meta holds ``doc_id``, ``char_start``/``char_end`` and the document's front matter, exactly as in memory.
- ``p_documents`` — one row per source document: the exact text, front matter (jsonb), content hash,
  sentence (``units``) and paragraph (``blocks``) offsets as flat int arrays, load order (``ord``, the
  in-memory tie-break), chunk count and token total (for avgdl).
- ``p_postings`` — BM25 postings: term → chunk (an integer key, mapped to the chunk id, document and position
  in ``p_chunkmap``) with tf and the chunk's length; ``p_terms`` — document frequencies. With N and avgdl these give BM25 Okapi in SQL, equal to the in-memory scorer (hence rank_bm25).
- ``p_state`` — one row: the index settings the tables were built with and a version bumped by every write.

pgvector-haystack has no BM25 (its keyword search is ``ts_rank_cd``) and writes each table on its own;
spanqa writes a document's rows in all tables in one transaction, so readers see the old or the new
document, never half of it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from psycopg import sql

from components.core.errors import SpanQAError

PREFIX = re.compile(r"^[a-z_][a-z0-9_]{0,40}$")


@dataclass(frozen=True)
class Tables:
    prefix: str

    def __post_init__(self):
        if not PREFIX.match(self.prefix):
            raise SpanQAError(f"PgSpanStore: table_prefix {self.prefix!r} must be lower-case letters, digits and "
                              f"underscores (at most 41, not starting with a digit).")

    def name(self, part: str) -> str:
        return f"{self.prefix}_{part}"

    def id(self, part: str) -> sql.Identifier:
        return sql.Identifier(self.name(part))

    @property
    def chunks(self) -> str:
        return self.name("chunks")


SCHEMA_VERSION = 3  # part of the settings a prefix was built with: another layout is never mixed in

DDL = [
    """CREATE TABLE IF NOT EXISTS {documents} (
        doc_id text PRIMARY KEY, ord integer NOT NULL, origin text NOT NULL, content_hash text NOT NULL,
        text text NOT NULL, meta jsonb NOT NULL, body_start integer NOT NULL, layout jsonb NOT NULL, units integer[] NOT NULL,
        blocks integer[] NOT NULL, n_words integer NOT NULL, n_chunks integer NOT NULL,
        total_len double precision NOT NULL)""",
    # chunk ids are text (pgvector-haystack's key); postings use a small integer key so BM25 groups fast
    """CREATE TABLE IF NOT EXISTS {chunkmap} (
        ckey integer PRIMARY KEY, chunk_id varchar(128) NOT NULL UNIQUE, doc_id text NOT NULL,
        chunk_ord integer NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS {chunkmap_doc} ON {chunkmap} (doc_id)",
    "CREATE SEQUENCE IF NOT EXISTS {ckey_seq} AS integer",
    """CREATE TABLE IF NOT EXISTS {postings} (
        term text NOT NULL, ckey integer NOT NULL, tf real NOT NULL, dl double precision NOT NULL,
        PRIMARY KEY (term, ckey) INCLUDE (tf, dl))""",
    "CREATE INDEX IF NOT EXISTS {postings_ckey} ON {postings} (ckey)",
    "CREATE TABLE IF NOT EXISTS {terms} (term text PRIMARY KEY, df integer NOT NULL)",
    """CREATE TABLE IF NOT EXISTS {state} (
        id integer PRIMARY KEY CHECK (id = 1), version bigint NOT NULL, settings jsonb NOT NULL)""",
]
PARTS = ("chunks", "documents", "chunkmap", "postings", "terms", "state")


def _names(t: Tables) -> dict[str, sql.Identifier]:
    return {k: t.id(k) for k in (*PARTS, "chunkmap_doc", "ckey_seq", "postings_ckey", "chunks_doc")}


def q(text: str, t: Tables) -> sql.Composed:
    """A statement with ``{documents}``, ``{postings}``, ``{terms}``, ``{state}``, ``{chunks}`` filled in."""
    return sql.SQL(text).format(**_names(t))


def existing_dimension(conn, t: Tables) -> int | None:
    """The embedding dimension of an existing chunk table (None: no table)."""
    row = conn.execute("SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                       "WHERE attrelid = to_regclass(%s) AND attname = 'embedding'", (t.chunks,)).fetchone()
    if not row:
        return None
    m = re.search(r"\((\d+)\)", row[0] or "")
    return int(m.group(1)) if m else None


def state_settings(conn, t: Tables) -> dict | None:
    if conn.execute("SELECT to_regclass(%s)", (t.name("state"),)).fetchone()[0] is None:
        return None
    row = conn.execute(q("SELECT settings FROM {state} WHERE id = 1", t)).fetchone()
    return row[0] if row else None


def check_compatible(conn, t: Tables, wanted: dict, where: str) -> None:
    """Existing tables built with other settings are an error, never silently dropped or mixed."""
    dim = existing_dimension(conn, t)
    if dim is not None and dim != wanted["embedding_dimension"]:
        raise SpanQAError(
            f"PgSpanStore: table {t.chunks} in {where} holds {dim}-dimensional embeddings, but the embedding model "
            f"gives {wanted['embedding_dimension']}. Use another table_prefix, or set recreate: true to drop and "
            f"rebuild these tables.")
    have = state_settings(conn, t)
    if have is None:
        return
    differ = sorted(k for k in set(have) | set(wanted) if have.get(k) != wanted.get(k))
    if differ:
        detail = "; ".join(f"{k}: built with {json.dumps(have.get(k))}, asked {json.dumps(wanted.get(k))}"
                           for k in differ[:4])
        raise SpanQAError(
            f"PgSpanStore: tables '{t.prefix}_*' in {where} were built with other index settings ({detail}). "
            f"Use another table_prefix, or set recreate: true to drop and rebuild them.")


def create(conn, t: Tables, wanted: dict) -> None:
    """Our tables (the chunk table is pgvector-haystack's), and the state row with the settings."""
    with conn.transaction():
        for statement in DDL:
            conn.execute(q(statement, t))
        conn.execute(q("INSERT INTO {state} (id, version, settings) VALUES (1, 0, %s) ON CONFLICT (id) DO NOTHING", t),
                     (json.dumps(wanted),))


def index_chunks_by_document(conn, t: Tables) -> None:
    conn.execute(q("CREATE INDEX IF NOT EXISTS {chunks_doc} ON {chunks} ((meta->>'doc_id'))", t))


def drop_search_indexes(conn, t: Tables) -> None:
    """pgvector-haystack's HNSW and keyword indexes (it recreates missing ones when a store connects)."""
    for part in ("chunks_hnsw", "chunks_keyword"):
        conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(t.id(part)))


def drop(conn, t: Tables) -> None:
    with conn.transaction():
        for part in PARTS:
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {} CASCADE").format(t.id(part)))
        conn.execute(sql.SQL("DROP SEQUENCE IF EXISTS {}").format(t.id("ckey_seq")))


def version(conn, t: Tables) -> int:
    row = conn.execute(q("SELECT version FROM {state} WHERE id = 1", t)).fetchone()
    return int(row[0]) if row else 0
