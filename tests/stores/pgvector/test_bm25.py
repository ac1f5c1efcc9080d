"""BM25 top k in SQL against the in-memory store (the oracle, itself tested against rank_bm25): the same chunks
in the same order for small and large k, with and without a filter, when equal scores straddle the k-th place
(the statement then reruns keeping every tie) and when they do not; and the same of the in-process postings mirror,
which answers only at the index version it holds."""

import random
import shutil

import pytest

from components.stores.pgvector import bm25 as pg_bm25
from components.stores.base import BM25Params, Selection
from components.stores.pgvector.store import PgSpanStore
from components.stores.span_store import SpanStore

WORDS = [f"w{i:03d}" for i in range(300)]


@pytest.fixture(scope="module")
def zipf_corpus(tmp_path_factory):
    """420 short documents over a Zipf-like vocabulary (a few very common words, a long tail), exact duplicates
    (equal scores: the load-order tie-break must survive the top-k cut) and a front-matter group."""
    rng = random.Random(7)
    weights = [1 / (i + 1) for i in range(len(WORDS))]
    d = tmp_path_factory.mktemp("zipf") / "kb"
    d.mkdir()
    texts = []
    for i in range(420):
        text = " ".join(rng.choices(WORDS, weights, k=rng.randint(4, 18)))
        if i % 10 == 7:
            text = texts[-rng.randint(1, 6)]  # an exact duplicate of a recent document
        texts.append(text)
        (d / f"d{i:04d}.md").write_text(f"---\ngroup: {'ab'[i % 2]}\n---\n{text}.\n", encoding="utf-8")
    return d


def queries():
    rng = random.Random(3)
    weights = [1 / (i + 1) ** 0.5 for i in range(len(WORDS))]  # common and rare words mixed
    return [rng.choices(WORDS, weights, k=rng.randint(1, 16)) for _ in range(30)]


def test_bm25_top_k_equals_the_memory_store(pg_dsn, zipf_corpus, prefix, tmp_path, monkeypatch):
    reruns = []
    cut = pg_bm25.cut_ties
    monkeypatch.setattr(pg_bm25, "cut_ties", lambda *a: reruns.append(cut(*a)) or reruns[-1])
    store = PgSpanStore(data_dir=str(zipf_corpus), table_prefix=prefix, search_strategy="exact", progress=False,
                        bm25_engine="sql")
    mem = SpanStore(data_dir=str(zipf_corpus), cache_dir=str(tmp_path / "cache"), progress=False)
    group_a = Selection(filters={"field": "meta.group", "operator": "==", "value": "a"})
    params = BM25Params(k1=1.2, b=0.6, epsilon=0.3)
    for tokens in queries():
        for k in (1, 3, 10, 50):
            for selection in (Selection(), group_a):
                got = store.bm25_search(tokens, k, selection, params)
                want = mem.bm25_search(tokens, k, selection, params)
                assert [d.id for d, _ in got] == [d.id for d, _ in want], (tokens, k, selection)
                assert all(abs(a - b) < 1e-6 for (_, a), (_, b) in zip(got, want))
                if selection is group_a:
                    assert all(d.meta["group"] == "a" for d, _ in got)
                one_trip, _, _ = store.hybrid_search(tokens, " ".join(tokens), k, selection, params)
                assert [d.id for d, _ in one_trip] == [d.id for d, _ in want]  # the fused statement's BM25 list
    assert any(reruns) and not all(reruns)  # both paths were compared: ties cut at the k-th place, and none


def test_cut_ties_reads_the_k_plus_first_score():
    rows = [("a", 3.0, 3, 1.0), ("b", 2.0, 3, 1.0)]  # (id, score, chunks scored, lowest of them)
    assert pg_bm25.cut_ties(rows, 2, 1, 2) is False  # the 3rd score 1.0 is below the 2nd: nothing was cut
    tied = [("a", 3.0, 3, 2.0), ("b", 2.0, 3, 2.0)]
    assert pg_bm25.cut_ties(tied, 2, 1, 2) is True  # the 3rd equals the 2nd: rerun keeping ties
    assert pg_bm25.cut_ties(tied[:1], 2, 1, 2) is False  # fewer than k chunks scored at all


def test_the_postings_mirror_equals_the_memory_store_and_answers_only_at_its_version(pg_dsn, zipf_corpus, prefix,
                                                                                   tmp_path, monkeypatch):
    kb = tmp_path / "kb"
    shutil.copytree(zipf_corpus, kb)
    store = PgSpanStore(data_dir=str(kb), table_prefix=prefix, search_strategy="exact", progress=False)
    mem = SpanStore(data_dir=str(kb), cache_dir=str(tmp_path / "cache"), progress=False)
    version = store.open()
    params = BM25Params(k1=1.2, b=0.6, epsilon=0.3)
    monkeypatch.setattr(pg_bm25, "COPY_GROUP", 1000)  # binary COPY parsed in many groups, rows split across them
    assert store.mirror.at(version, store._mirror_connection, store.tables) is None  # not built yet: it starts
    mirror = store.mirror.wait(120)
    assert mirror is not None and mirror.version == version and store.mirror.error is None
    assert mirror.index.n_docs == mem.open().n_chunks
    statements = []
    real = pg_bm25.statement
    monkeypatch.setattr(pg_bm25, "statement", lambda *a, **kw: statements.append(a) or real(*a, **kw))
    ids = [f"d{i:04d}.md" for i in range(0, 420, 3)]
    group_a = {"field": "meta.group", "operator": "==", "value": "a"}
    selections = [Selection(), Selection(exclude=frozenset(ids)), Selection(only=frozenset(ids)),
                  Selection(filters=group_a), Selection(exclude=frozenset(ids), filters=group_a)]
    for tokens in queries():
        for k in (1, 3, 10, 50):
            for selection in selections:
                got = store.bm25_search(tokens, k, selection, params)
                want = mem.bm25_search(tokens, k, selection, params)
                assert [d.id for d, _ in got] == [d.id for d, _ in want], (tokens, k, selection)
                assert all(abs(a - b) < 1e-9 for (_, a), (_, b) in zip(got, want))
                assert all(d.content == w.content and d.meta == w.meta for (d, _), (w, _) in zip(got, want))
            if k == 10:  # hybrid: BM25 from the mirror, then the dense statement and the fusion
                for selection in selections[:1] + selections[3:4]:
                    got_h = store.hybrid_search(tokens, " ".join(tokens), k, selection, params)
                    want_h = mem.hybrid_search(tokens, " ".join(tokens), k, selection, params)
                    assert [d.id for d, _ in got_h[0]] == [d.id for d, _ in want_h[0]]
                    assert [c for c, _, _ in got_h[2]] == [c for c, _, _ in want_h[2]], (tokens, selection)
    assert statements == []  # every search above was the mirror's, the filtered and hybrid ones included
    assert len(mirror.masks) == 1  # the filter's rows were read once and kept for every search after
    (kb / "zz-new.md").write_text("w000 w001 zzznew zzznew.\n", encoding="utf-8")
    assert store.open(refresh=True) == version + 1
    statements.clear()
    first = store.bm25_search(["zzznew"], 3, Selection(), params)
    assert [d.meta["doc_id"] for d, _ in first] == ["zz-new.md"] and len(statements) == 1  # SQL: the mirror is old
    assert store.mirror.wait(120).version == version + 1
    again = store.bm25_search(["zzznew"], 3, Selection(), params)
    assert [(d.id, s) for d, s in again] == [(d.id, s) for d, s in first] and len(statements) == 1  # the new mirror


def test_a_mirror_build_that_fails_is_not_retried_for_the_same_version():
    """A build that fails leaves searches to SQL with the reason kept; it is not started again on every search for
    that version (each would read every posting), only when the version moves on."""
    from components.stores.pgvector.schema import Tables

    calls = []

    def connect():
        calls.append(1)
        raise OSError("server gone")

    holder = pg_bm25.MirrorHolder()
    assert holder.at(3, connect, Tables("t")) is None
    holder.wait(10)
    assert holder.error == "OSError: server gone" and len(calls) == 1
    assert holder.at(3, connect, Tables("t")) is None and holder.wait(10) is None and len(calls) == 1
    assert holder.at(4, connect, Tables("t")) is None
    holder.wait(10)
    assert len(calls) == 2
