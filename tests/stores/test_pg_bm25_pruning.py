"""MaxScore pruning of BM25 in SQL against its oracle, the exhaustive statement (every posting scored):
the same chunks in the same order, ties included, the same scores — with and without filters, for small and
large k — and proof that the pruning really left terms and chunks out."""

import random

import pytest

from components.stores import pg_bm25
from components.stores.base import BM25Params, Selection
from components.stores.pg_span_store import PgSpanStore

WORDS = [f"w{i:03d}" for i in range(300)]


@pytest.fixture(scope="module")
def zipf_corpus(tmp_path_factory):
    """420 short documents over a Zipf-like vocabulary (a few very common words, a long tail), eight exact
    duplicate pairs (equal scores: the tie-break must survive the pruning) and a front-matter group."""
    rng = random.Random(7)
    weights = [1 / (i + 1) for i in range(len(WORDS))]
    d = tmp_path_factory.mktemp("zipf") / "kb"
    d.mkdir()
    texts = []
    for i in range(420):
        text = " ".join(rng.choices(WORDS, weights, k=rng.randint(4, 18)))
        if i % 50 == 7:
            text = texts[-1]  # an exact duplicate of the previous document
        texts.append(text)
        (d / f"d{i:04d}.md").write_text(f"---\ngroup: {'ab'[i % 2]}\n---\n{text}.\n", encoding="utf-8")
    return d


def queries():
    rng = random.Random(3)
    weights = [1 / (i + 1) ** 0.5 for i in range(len(WORDS))]  # common and rare words mixed
    return [rng.choices(WORDS, weights, k=rng.randint(2, 16)) for _ in range(25)]


@pytest.mark.parametrize("seed_postings", [pg_bm25.SEED_POSTINGS, 40])
def test_pruned_bm25_equals_the_exhaustive_statement(pg_dsn, zipf_corpus, prefix, monkeypatch, seed_postings):
    monkeypatch.setattr(pg_bm25, "SEED_POSTINGS", seed_postings)
    store = PgSpanStore(data_dir=str(zipf_corpus), table_prefix=prefix, search_strategy="exact", progress=False)
    group_a = Selection(filters={"field": "meta.group", "operator": "==", "value": "a"})
    pruned_terms = pruned_chunks = 0
    for tokens in queries():
        for k in (1, 10, 50):
            for selection in (Selection(), group_a):
                got = store.bm25_search(tokens, k, selection)
                want = store.bm25_search(tokens, k, selection, pruned=False)
                assert [d.id for d, _ in got] == [d.id for d, _ in want], (tokens, k)
                assert all(abs(a - b) < 1e-9 for (_, a), (_, b) in zip(got, want))
                if selection is group_a:
                    assert all(d.meta["group"] == "a" for d, _ in got)
                stats = store.bm25_pruning(tokens, k, selection)
                pruned_terms += stats["non_essential"]
                pruned_chunks += stats["candidates"] - stats["completed"]
    assert pruned_terms > 0 and pruned_chunks > 0  # the oracle comparison covered real pruning


def test_exhaustive_statement_serves_where_the_bound_does_not_hold(pg_dsn, zipf_corpus, prefix):
    store = PgSpanStore(data_dir=str(zipf_corpus), table_prefix=prefix, search_strategy="exact", progress=False)
    tokens = ["w000", "w001", "w150"]
    assert store.bm25_pruning(tokens, 5, Selection(), BM25Params(b=0.75)) is not None
    # b > 1 can make a term's contribution exceed idf * (k1 + 1): no pruning, the exhaustive scores
    assert store.bm25_pruning(tokens, 5, Selection(), BM25Params(b=1.5)) is None
    got = store.bm25_search(tokens, 5, Selection(), BM25Params(b=1.5))
    assert got == store.bm25_search(tokens, 5, Selection(), BM25Params(b=1.5), pruned=False)
