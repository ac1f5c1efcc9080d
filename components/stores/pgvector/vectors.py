"""PgSpanStore's use of pgvector-haystack: the chunk table's ``PgvectorDocumentStore`` (vector search, Haystack
filters as SQL, the HNSW and keyword indexes), the settings of our sessions, and the one-off index build after a
first bulk load."""

from __future__ import annotations

from collections.abc import Callable

from haystack.utils import Secret

from components.stores.pgvector.schema import Tables

WORK_MEM = "64MB"  # per sort/hash of one query: BM25 groups every chunk sharing a query term
_LOGGER = "haystack_integrations.document_stores.pgvector.document_store"


def session_options(strategy: str, ef_search: int) -> str:
    """Query settings of our connections: memory for BM25's aggregation over large postings lists (so it never
    spills to disk), and for HNSW the candidates per search and iterative scans (a filter still fills ``k``)."""
    options = f"-c work_mem={WORK_MEM}"
    if strategy == "hnsw":
        options += f" -c hnsw.ef_search={int(ef_search)} -c hnsw.iterative_scan=strict_order"
    return options


def vector_store(dsn: str, tables: Tables, dimension: int, strategy: str, m: int, ef_construction: int,
                 ef_search: int, extra_options: str = ""):
    """pgvector-haystack's store over ``tables.chunks`` (it creates the table and any missing index on connect)."""
    from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore
    from psycopg.conninfo import make_conninfo

    options = f"{session_options(strategy, ef_search)} {extra_options}".strip()
    return PgvectorDocumentStore(
        connection_string=Secret.from_token(make_conninfo(dsn, options=options)), create_extension=False,
        table_name=tables.chunks, embedding_dimension=dimension, vector_function="cosine_similarity",
        search_strategy="hnsw" if strategy == "hnsw" else "exact_nearest_neighbor",
        hnsw_index_creation_kwargs={"m": m, "ef_construction": ef_construction},
        hnsw_index_name=tables.name("chunks_hnsw"), hnsw_ef_search=ef_search,
        keyword_index_name=tables.name("chunks_keyword"))


def build_indexes(make_store: Callable, n_chunks: int, dimension: int, strategy: str, progress: bool) -> None:
    """The indexes dropped for a first bulk load, built once over its rows, with memory for the HNSW graph."""
    if progress:
        from components.core.logs import say as _say

        _say(f"building the {'HNSW and ' if strategy == 'hnsw' else ''}keyword index over {n_chunks:,} chunks")
    mb = min(4096, max(64, n_chunks * (dimension * 4 + 600) * 3 // 2 // 2**20))
    builder = make_store(f"-c maintenance_work_mem={mb}MB", cache=False)
    try:
        with quiet():
            builder.count_documents()  # a missing index is created when the store first connects
    finally:
        builder.close()


def quiet():
    """pgvector-haystack warns "index already exists" on every connect: not news for us."""
    from components.core.logs import quiet_logger

    return quiet_logger(_LOGGER)
