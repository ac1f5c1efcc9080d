"""PgSpanStore against a real PostgreSQL: BM25 in SQL equals rank_bm25, filters inside both searches,
incremental sync (unchanged / changed / deleted), settings and connection errors."""

import math
import re

import numpy as np
import pytest
from rank_bm25 import BM25Okapi as RankBM25

from components.core.errors import SpanQAError
from components.core.retrieval.index import index_text, split_document
from components.retrievers.hybrid_retriever import HybridRetriever
from components.stores.base import BM25Params, Selection
from components.stores.pgvector.schema import q
from components.stores.pgvector.store import PgSpanStore
from components.stores.pgvector.sync import sync_store
from components.stores.span_store import SpanStore
from tests.retrievers.test_hybrid_retriever import make_corpus

@pytest.fixture()
def corpus(tmp_path):
    d = make_corpus(tmp_path / "kb", note_repeats=lambda i: i + 1)  # notes of different lengths (BM25's |d|)
    (d / "same-a.txt").write_text("Scenes can be grouped.")  # equal scores: the tie-break must match memory
    (d / "same-b.txt").write_text("Scenes can be grouped.")
    return d


def chunk_tokens(mem):
    """BM25 tokens of every chunk of an in-memory store's index, in index order (what rank_bm25 is given)."""
    tokens = []
    for doc in mem.open().documents:
        blocks, _, chunks = split_document(doc, mem.settings)
        tokens += [mem.analyzer(index_text(doc, blocks, c, mem.settings)) for c in chunks]
    return tokens


def pg(corpus, prefix, **kw):
    return PgSpanStore(data_dir=str(corpus), table_prefix=prefix, progress=False, **kw)


def rows(store, sql, *args):
    return store._conn().execute(q(sql, store.tables), args).fetchall()


def test_bm25_in_sql_equals_rank_bm25_and_the_memory_store(pg_dsn, corpus, prefix, tmp_path):
    store = pg(corpus, prefix, search_strategy="exact")
    mem = SpanStore(data_dir=str(corpus), cache_dir=str(tmp_path / "cache"), progress=False)
    index = mem.open()
    oracle = RankBM25(chunk_tokens(mem), k1=1.2, b=0.6, epsilon=0.3)
    ids = [index.chunk_id(i) for i in range(index.n_chunks)]
    params = BM25Params(k1=1.2, b=0.6, epsilon=0.3)
    for query in ["scenes grouped rooms", "refund annual plans plans", "ERR-4012 hub", "lights note"]:
        toks = mem.analyzer(query)
        want = oracle.get_scores(toks)
        got = store.bm25_search(toks, 100, Selection(), params)
        assert got, query
        for doc, score in got:
            assert abs(score - want[ids.index(doc.id)]) < 1e-6
        assert {d.id for d, _ in got} == {ids[i] for i in np.flatnonzero(want > 0)}
        memory = mem.bm25_search(toks, 100, Selection(), params)
        assert [d.id for d, _ in got] == [d.id for d, _ in memory]  # same order, ties included
        assert [d.meta for d, _ in got] == [d.meta for d, _ in memory]


def test_dense_exact_equals_memory_and_documents_slice_their_source(pg_dsn, corpus, prefix, tmp_path):
    store = pg(corpus, prefix, search_strategy="exact")
    mem = SpanStore(data_dir=str(corpus), cache_dir=str(tmp_path / "cache"), progress=False)
    got = store.dense_search("how do I group lights into rooms", 8, Selection())
    want = mem.dense_search("how do I group lights into rooms", 8, Selection())
    assert [d.id for d, _ in got] == [d.id for d, _ in want]
    assert max(abs(a - b) for (_, a), (_, b) in zip(got, want)) < 1e-5
    doc = got[0][0]
    source, units, blocks = store.source(doc.meta["doc_id"])
    assert doc.content == source.text[doc.meta["char_start"]:doc.meta["char_end"]]
    assert np.array_equal(units, mem.source(doc.meta["doc_id"])[1])
    assert np.allclose(doc.embedding, want[0][0].embedding, atol=1e-7)


@pytest.mark.parametrize("strategy", ["exact", "hnsw"])
def test_filters_are_applied_inside_both_searches(pg_dsn, corpus, prefix, strategy):
    store = pg(corpus, prefix + strategy, search_strategy=strategy)
    retriever = HybridRetriever(store, top_k=4, superseded="include")
    f = {"field": "meta.status", "operator": "==", "value": "superseded"}
    out = retriever.run(query="refund window annual plans", filters=f)
    assert [d.meta["doc_id"] for d in out["dense_documents"]] == ["refund-policy-2023.md"]
    assert [d.meta["doc_id"] for d in out["bm25_documents"]] == ["refund-policy-2023.md"]
    notes = {"field": "meta.doc_id", "operator": "in", "value": [f"note-{i}.txt" for i in range(6)]}
    # the refund documents rank first without the filter; with it, four notes still come back (not 4 - k)
    dense = retriever.run(query="refund window annual plans", filters=notes)["dense_documents"]
    assert len(dense) == 4 and all(d.meta["doc_id"].startswith("note-") for d in dense)


def test_superseded_documents_are_left_out_by_default(pg_dsn, corpus, prefix):
    store = pg(corpus, prefix)
    assert store.superseded_documents(HybridRetriever(store).rule) == ["refund-policy-2023.md"]
    out = HybridRetriever(store, top_k=20).run(query="refund annual plans days")
    assert "refund-policy-2023.md" not in {d.meta["doc_id"] for d in out["bm25_documents"] + out["dense_documents"]}
    only = HybridRetriever(store, top_k=20).run(query="refund annual plans days", superseded="only")
    assert {d.meta["doc_id"] for d in only["bm25_documents"]} == {"refund-policy-2023.md"}


def df_consistent(store) -> bool:
    kept = dict(rows(store, "SELECT term, df FROM {terms}"))
    recount = dict(rows(store, "SELECT term, count(*) FROM {postings} GROUP BY term"))
    return kept == recount


def test_incremental_sync_unchanged_changed_deleted(pg_dsn, corpus, prefix):
    first = pg(corpus, prefix)
    first.open()
    assert first.stats["added"] == 11 and first.stats["built"]
    version = first.open()
    # a new process (here: a new sync) over the unchanged corpus touches nothing
    again = pg(corpus, prefix)
    assert sync_store(again)["stats"]["unchanged"] == 11
    assert again.open() == version
    (corpus / "errors.md").write_text("# Errors\n\nERR-5000 means the hub lost power.\n")
    (corpus / "note-3.txt").unlink()
    stats = sync_store(pg(corpus, prefix))["stats"]
    assert (stats["added"], stats["changed"], stats["deleted"], stats["unchanged"]) == (0, 1, 1, 9)
    assert not rows(first, "SELECT 1 FROM {documents} WHERE doc_id = 'note-3.txt'")
    assert not rows(first, "SELECT 1 FROM {chunkmap} WHERE doc_id = 'note-3.txt'")
    assert rows(first, "SELECT count(*) FROM {postings} p LEFT JOIN {chunkmap} m USING (ckey) WHERE m.ckey IS NULL") == [(0,)]
    assert not rows(first, "SELECT 1 FROM {chunks} WHERE meta->>'doc_id' = 'note-3.txt'")
    assert not rows(first, "SELECT 1 FROM {postings} WHERE term = 'err-4012'")
    hits = first.bm25_search(first.analyzer("ERR-5000 power"), 3, Selection())
    assert hits[0][0].meta["doc_id"] == "errors.md" and "ERR-5000" in hits[0][0].content
    assert df_consistent(first)
    assert rows(first, "SELECT count(*) FROM {chunks}")[0][0] == rows(first, "SELECT sum(n_chunks) FROM {documents}")[0][0]


def test_write_and_delete_documents_through_the_store_protocol(pg_dsn, corpus, prefix):
    from haystack import Document

    store = pg(corpus, prefix)
    before = store.count_documents()
    assert store.write_documents([Document(id="extra", content="The Glow plan costs 5 euros a month.")]) == 1
    assert store.count_documents() == before + 1
    assert store.bm25_search(store.analyzer("Glow plan euros"), 1, Selection())[0][0].meta["doc_id"] == "extra"
    with pytest.raises(SpanQAError, match="already exists"):
        store.write_documents([Document(id="extra", content="again")])
    store.delete_documents(["extra"])
    assert store.count_documents() == before and df_consistent(store)


def test_other_index_settings_are_an_error_not_a_silent_drop(pg_dsn, corpus, prefix):
    pg(corpus, prefix).open()
    with pytest.raises(SpanQAError, match=r"other index settings \(max_chunk_chars: built with 800, asked 400\)"):
        pg(corpus, prefix, max_chunk_chars=400).open()
    with pytest.raises(SpanQAError, match="search_strategy: built with \"hnsw\", asked \"exact\""):
        pg(corpus, prefix, search_strategy="exact").open()
    rebuilt = pg(corpus, prefix, max_chunk_chars=400, recreate=True)
    rebuilt.open()
    assert rebuilt.stats["added"] == 11


def test_another_embedding_dimension_is_an_error(pg_dsn, corpus, prefix):
    import psycopg

    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {prefix}_chunks (id varchar(128) PRIMARY KEY, embedding vector(8), "
                     f"content text, blob_data bytea, blob_meta jsonb, blob_mime_type varchar(255), meta jsonb)")
    with pytest.raises(SpanQAError, match=f"table {prefix}_chunks .* holds 8-dimensional embeddings, but the "
                                          f"embedding model gives 384"):
        pg(corpus, prefix).open()


def test_unreachable_server_names_host_and_port_never_the_password(corpus, prefix):
    from haystack.utils import Secret

    store = pg(corpus, prefix, dsn=Secret.from_token("postgresql://spanqa:s3cret-pw@127.0.0.1:1/kb"))
    with pytest.raises(SpanQAError) as err:
        store.open()
    text = str(err.value)
    assert "cannot connect to PostgreSQL at 127.0.0.1:1/kb" in text and "s3cret-pw" not in text


def test_bad_table_prefix_is_refused(corpus):
    with pytest.raises(SpanQAError, match=re.escape("table_prefix \"Robert'); DROP\" must be lower-case")):
        PgSpanStore(data_dir=str(corpus), table_prefix="Robert'); DROP")


def test_idf_floor_for_terms_in_most_chunks(pg_dsn, tmp_path, prefix):
    """A term in more than half the chunks has a negative Okapi idf: rank_bm25 floors it at epsilon × mean idf."""
    d = tmp_path / "kb"
    d.mkdir()
    words = ["amber", "beryl", "coral", "denim", "ebony", "fawn", "gold", "henna", "iris", "jade"]
    for i, w in enumerate(words):
        (d / f"{i}.txt").write_text(("lamp " if i < 8 else "") + f"{w} {w}x {w}y")
    store = pg(d, prefix)
    mem = SpanStore(data_dir=str(d), cache_dir=str(tmp_path / "cache"), progress=False)
    index = mem.open()
    oracle = RankBM25(chunk_tokens(mem))
    toks = store.analyzer("lamp amber")
    assert math.isclose(oracle.idf["lamp"], 0.25 * oracle.average_idf) and oracle.average_idf > 0
    got = {doc.id: s for doc, s in store.bm25_search(toks, 10, Selection())}
    want = oracle.get_scores(toks)
    assert len(got) == 8  # every lamp chunk scores (floored idf > 0); the two without lamp or amber do not
    for i in range(index.n_chunks):
        assert abs(got.get(index.chunk_id(i), 0.0) - want[i]) < 1e-6


@pytest.mark.parametrize("strategy", ["exact", "hnsw"])
def test_fusion_in_one_sql_statement_equals_the_rrf_joiner(pg_dsn, corpus, prefix, strategy):
    from components.joiners.rrf_joiner import RRFJoiner

    store = pg(corpus, prefix + strategy, search_strategy=strategy)
    two_lists = HybridRetriever(store, top_k=6)
    one_trip = HybridRetriever(store, top_k=6, fusion="store")
    joiner = RRFJoiner(top_k=6)
    notes = {"field": "meta.doc_id", "operator": "in", "value": [f"note-{i}.txt" for i in range(6)] + ["errors.md"]}
    for query, filters in [("group lights into rooms and scenes", None), ("refund annual plans", None),
                           ("ERR-4012 hub", notes), ("zzzz unknown words", None)]:
        lists = two_lists.run(query=query, filters=filters)
        want = joiner.run(bm25=lists["bm25_documents"], dense=lists["dense_documents"])["documents"]
        got = one_trip.run(query=query, filters=filters)["documents"]
        assert [d.id for d in got] == [d.id for d in want], query
        for a, b in zip(got, want):
            assert a.meta["ranks"] == b.meta["ranks"] and a.score == pytest.approx(b.score, abs=1e-12)
            assert a.meta["scores"]["bm25" if "bm25" in b.meta["ranks"] else "dense"] == pytest.approx(
                b.meta["scores"]["bm25" if "bm25" in b.meta["ranks"] else "dense"], abs=1e-6)


def test_fusion_in_the_memory_store_equals_the_rrf_joiner(corpus, tmp_path):
    from components.joiners.rrf_joiner import RRFJoiner

    store = SpanStore(data_dir=str(corpus), cache_dir=str(tmp_path / "cache"), progress=False)
    lists = HybridRetriever(store, top_k=5).run(query="refund annual plans")
    want = RRFJoiner(top_k=5).run(bm25=lists["bm25_documents"], dense=lists["dense_documents"])["documents"]
    got = HybridRetriever(store, top_k=5, fusion="store").run(query="refund annual plans")["documents"]
    assert [(d.id, d.score, d.meta) for d in got] == [(d.id, d.score, d.meta) for d in want]


def test_first_bulk_load_builds_the_vector_indexes_once_and_answers_as_row_by_row(pg_dsn, corpus, prefix,
                                                                                    monkeypatch):
    from components.stores.pgvector import sync as pg_sync

    monkeypatch.setattr(pg_sync, "BULK_DOCUMENTS", 1)
    bulk = pg(corpus, prefix + "b", search_strategy="hnsw")
    bulk.open()
    monkeypatch.setattr(pg_sync, "BULK_DOCUMENTS", 10**9)
    rows_ = pg(corpus, prefix + "r", search_strategy="hnsw")
    rows_.open()
    indexes = dict(rows(bulk, "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s", bulk.tables.chunks))
    hnsw = indexes[bulk.tables.name("chunks_hnsw")]
    assert "USING hnsw" in hnsw and "m='16'" in hnsw and "ef_construction='64'" in hnsw
    assert bulk.tables.name("chunks_keyword") in indexes
    for query in ["how do I group lights into rooms", "refund window annual plans"]:
        assert [d.id for d, _ in bulk.dense_search(query, 6, Selection())] == \
            [d.id for d, _ in rows_.dense_search(query, 6, Selection())]
    again = pg(corpus, prefix + "b", search_strategy="hnsw")  # a second process: nothing to load, no rebuild
    monkeypatch.setattr(pg_sync, "BULK_DOCUMENTS", 1)
    import components.stores.pgvector.store as mod

    mod._SYNCED.clear()
    again.open()
    assert again.stats["unchanged"] == bulk.stats["added"] and not again.stats["built"]


def test_converted_documents_keep_text_layout_and_locations_in_both_stores(pg_dsn, prefix, tmp_path):
    """A PDF, an HTML page and a Word file: PostgreSQL keeps the converted text and the layout (pages, headings,
    file hash) exactly as the memory store, and serves the same chunks with the same page and heading path."""
    from benchmarks.make_documents import write_demo

    data = tmp_path / "mixed"
    write_demo(data)
    store = pg(data, prefix, search_strategy="exact")
    mem = SpanStore(data_dir=str(data), cache_dir=str(tmp_path / "cache"), progress=False)
    for doc_id in ("security-whitepaper.pdf", "hub-pro-datasheet.html", "service-level-agreement.docx"):
        ours, theirs = store.source(doc_id)[0], mem.source(doc_id)[0]
        assert (ours.text, ours.meta, ours.layout) == (theirs.text, theirs.meta, theirs.layout)
        assert ours.layout["file"] == doc_id and len(ours.layout["sha256"]) == 64
    query = "bug bounty payout for a critical vulnerability"
    got = store.dense_search(query, 3, Selection())
    want = mem.dense_search(query, 3, Selection())
    assert [d.meta for d, _ in got] == [d.meta for d, _ in want]
    top = got[0][0]
    assert top.meta["doc_id"] == "security-whitepaper.pdf"
    assert (top.meta["page"], top.meta["heading_path"]) == (3, ["Reporting a vulnerability"])
