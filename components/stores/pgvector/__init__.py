"""The PostgreSQL + pgvector span store (``PgSpanStore``) and what it is made of: the embedded server
(``server``), the schema (``schema``), incremental sync (``sync``), BM25 and dense search in SQL (``bm25``,
``vectors``) and the filter compiler (``filters``)."""
