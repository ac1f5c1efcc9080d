"""Filters mean the same in both stores: 1,200 random filters (fields of every type, every operator, wrong types,
nesting, invalid ones) give the same documents — or the same one-paragraph error — in memory and in PostgreSQL,
through ``filter_documents`` and inside the BM25, dense and hybrid searches."""

from __future__ import annotations

import random

import pytest

from components.core.errors import SpanQAError
from components.core.retrieval.filters import check_filters, matches, parse_filters
from components.stores.base import BM25Params, Selection
from components.stores.pgvector.store import PgSpanStore
from components.stores.span_store import SpanStore

STATUSES = ["current", "superseded", "draft", "Current", "5"]
DATES = ["2024-01-31", "2024-12-01", "2025-03-01", "2025-03-01T10:30", "2026-07-15T08:00:00Z", "not a date"]
N_FILTERS = 1_200


# YAML scalars as written in front matter: numbers, a quoted number, booleans, a "yes" string, dates
YAML_VALUES = {
    "status": [repr(v) for v in STATUSES] + ["null"],
    "version": ["1", "2", "3", "2.5", "10", "-1", '"3"', "true"],
    "score": ["0.1", "0.5", "0.75", "1", "0", "1.0e-05"],
    "flag": ["true", "false", "1", "0", '"yes"'],
    "date": [repr(d) for d in DATES],
    "owner-team": ["finance", "legal", "ops", "Finance"],
}


def _front_matter(rng: random.Random) -> str:
    lines = [f"{key}: {rng.choice(values)}" for key, values in YAML_VALUES.items() if rng.random() < 0.75]
    if rng.random() < 0.5:
        lines.append(f"tags: [{', '.join(rng.sample(['a', 'b', 'c', 'd'], rng.randint(0, 3)))}]")
    if rng.random() < 0.3:
        lines.append("extra: {a: 1}")
    return "---\n" + "\n".join(lines) + "\n---\n" if lines else ""


@pytest.fixture(scope="module")
def stores(tmp_path_factory, pg_dsn):
    rng = random.Random(2026)
    data = tmp_path_factory.mktemp("meta")
    for i in range(48):
        words = rng.sample(["refund", "hub", "plan", "light", "scene", "error", "bridge", "sensor"], 3)
        (data / f"doc-{i:02d}.md").write_text(_front_matter(rng) + f"# Note {i}\n\nThis note is about "
                                              f"{' and '.join(words)}. It has number {i}.\n")
    mem = SpanStore(data_dir=str(data), cache_dir=str(tmp_path_factory.mktemp("cache")), progress=False)
    pg = PgSpanStore(data_dir=str(data), table_prefix=f"parity{__import__('os').getpid()}", progress=False,
                     search_strategy="exact")
    mem.open(), pg.open()
    return mem, pg


FIELDS = ["status", "version", "score", "flag", "date", "tags", "extra", "owner-team", "missing", "doc_id"]
BAD_FIELDS = ["content", "id", "meta.page", "meta.char_start", "meta.a.b", "doc_id", "meta.", "meta.x y", "", None]


def _value(rng: random.Random):
    return rng.choice([
        rng.choice(STATUSES), rng.choice(DATES), rng.choice(["finance", "legal", "a", "doc-03.md", "doc-17.md"]),
        rng.choice([1, 2, 3, 2.5, 10, -1, 0, 0.5, 1e-05, 3.0]), rng.choice([True, False]), None,
        rng.choice(["yesterday", {"a": 1}, [1, 2], float("nan"), "x\x00y", 2 ** 60]),  # refused ones
    ])


def random_filter(rng: random.Random, depth: int = 0):
    if depth < 3 and rng.random() < 0.35:
        op = rng.choice(["AND", "OR", "NOT"])
        conditions = [random_filter(rng, depth + 1) for _ in range(rng.randint(0 if rng.random() < 0.03 else 1, 3))]
        return {"operator": op, "conditions": conditions}
    field = f"meta.{rng.choice(FIELDS)}" if rng.random() < 0.93 else rng.choice(BAD_FIELDS)
    op = rng.choice(["==", "!=", ">", ">=", "<", "<=", "in", "not in"] + (["~="] if rng.random() < 0.02 else []))
    if op in ("in", "not in"):
        kind = rng.random()
        if kind < 0.45:
            value = rng.sample(STATUSES + ["finance", "legal", "doc-05.md"], rng.randint(0, 3))
        elif kind < 0.75:
            value = rng.sample([1, 2, 3, 2.5, 10, 0.5, None], rng.randint(1, 3))
        elif kind < 0.9:
            value = [rng.choice([True, False]), None]
        else:
            value = ["a", 1]  # mixed types: refused
    else:
        value = rng.choice(DATES) if op in (">", ">=", "<", "<=") and rng.random() < 0.4 else _value(rng)
    return {"field": field, "operator": op, "value": value}


def outcome(fn):
    try:
        return sorted({d.meta["doc_id"] for d in fn()})
    except SpanQAError as exc:
        return f"error: {exc}"


def test_a_thousand_random_filters_select_the_same_documents_or_fail_alike(stores):
    mem, pg = stores
    rng = random.Random(7)
    kinds = {"documents": 0, "errors": 0, "empty": 0}
    for n in range(N_FILTERS):
        f = random_filter(rng)
        got_mem = outcome(lambda: mem.filter_documents(f))
        got_pg = outcome(lambda: pg.filter_documents(f))
        assert got_mem == got_pg, (n, f, got_mem, got_pg)
        key = "errors" if isinstance(got_mem, str) else ("documents" if got_mem else "empty")
        kinds[key] += 1
    # the draw covers all three outcomes in earnest, not only errors or only empty selections
    print(f"filter parity: {N_FILTERS} random filters, 100 % the same in both stores: {kinds}")
    assert min(kinds.values()) > 150, kinds


def test_filters_inside_the_searches_agree_too(stores):
    mem, pg = stores
    rng = random.Random(11)
    tokens = mem.analyzer("refund hub plan light scene note")
    checked = 0
    while checked < 60:
        f = random_filter(rng)
        try:
            check_filters(f)
        except SpanQAError:
            continue
        checked += 1
        sel = Selection(filters=f)
        want = {d.meta["doc_id"] for d in mem.filter_documents(f)}
        for name, search in (("bm25", lambda s: s.bm25_search(tokens, 100, sel, BM25Params())),
                             ("dense", lambda s: s.dense_search("a note about lights", 100, sel))):
            ids_mem = [d.meta["doc_id"] for d, _ in search(mem)]
            ids_pg = [d.meta["doc_id"] for d, _ in search(pg)]
            assert set(ids_mem) == set(ids_pg) <= want, (name, f)
            if name == "dense":
                assert set(ids_pg) == want, f  # k = 100 > chunks: every permitted chunk comes back
        _, _, fused = pg.hybrid_search(tokens, "a note about lights", 100, sel, BM25Params())
        assert {cid.split(":")[0] for cid, _, _ in fused} == want, f


def test_documents_left_out_or_kept_agree_in_every_search(stores):
    # the forbidden / superseded sets: PostgreSQL keeps each set in a temporary table (document ids for the dense
    # search, chunk keys for BM25 over the postings) — the same documents as the memory store's mask, any size
    mem, pg = stores
    rng = random.Random(5)
    tokens = mem.analyzer("refund hub plan light scene note")
    all_ids = sorted({d.meta["doc_id"] for d in mem.filter_documents()})
    for round_ in range(12):
        ids = frozenset(rng.sample(all_ids, rng.randint(0, len(all_ids))))
        f = {"field": "meta.status", "operator": "!=", "value": "draft"} if round_ % 3 == 0 else None
        for sel in (Selection(filters=f, exclude=ids), Selection(filters=f, only=ids)):
            allowed = {d.meta["doc_id"] for d in mem.filter_documents(f)}
            want = allowed - ids if sel.only is None else allowed & ids
            for name, search in (("bm25", lambda s: s.bm25_search(tokens, 100, sel, BM25Params())),
                                 ("dense", lambda s: s.dense_search("a note about lights", 100, sel))):
                ids_mem = {d.meta["doc_id"] for d, _ in search(mem)}
                ids_pg = {d.meta["doc_id"] for d, _ in search(pg)}
                assert ids_mem == ids_pg <= want, (name, round_)
                if name == "dense":
                    assert ids_pg == want
            _, _, fused = pg.hybrid_search(tokens, "a note about lights", 100, sel, BM25Params())
            assert {cid.split(":")[0] for cid, _, _ in fused} == want


def test_the_meaning_on_hand_made_cases():
    meta = {"status": "current", "version": 3, "score": 0.5, "flag": True, "date": "2025-03-01T10:30",
            "tags": ["a"], "nothing": None}
    yes = [
        {"field": "meta.version", "operator": "==", "value": 3.0},
        {"field": "meta.flag", "operator": "==", "value": True},
        {"field": "meta.missing", "operator": "==", "value": None},
        {"field": "meta.nothing", "operator": "==", "value": None},
        {"field": "meta.missing", "operator": "!=", "value": "x"},
        {"field": "meta.date", "operator": ">", "value": "2025-03-01"},
        {"field": "meta.version", "operator": "not in", "value": ["3"]},
        {"operator": "NOT", "conditions": [{"field": "meta.status", "operator": "==", "value": "current"},
                                           {"field": "meta.version", "operator": "<", "value": 2}]},
    ]
    no = [
        {"field": "meta.flag", "operator": "==", "value": 1},          # a boolean is not a number
        {"field": "meta.version", "operator": "==", "value": "3"},     # nor a number a string
        {"field": "meta.status", "operator": ">", "value": 2},         # a string field never compares to a number
        {"field": "meta.tags", "operator": "==", "value": "a"},        # a list equals no scalar
        {"field": "meta.missing", "operator": ">=", "value": 0},
        {"field": "meta.status", "operator": "in", "value": []},
    ]
    for f in yes + no:
        check_filters(f)
    assert [matches(f, meta) for f in yes] == [True] * len(yes)
    assert [matches(f, meta) for f in no] == [False] * len(no)


@pytest.mark.parametrize("bad, words", [
    ({"field": "meta.date", "operator": ">", "value": "yesterday"}, "needs a number or an ISO date"),
    ({"field": "meta.x", "operator": "in", "value": ["a", 1]}, "needs values of one type, got number and str"),
    ({"field": "meta.x", "operator": "==", "value": "a\x00b"}, "contains a NUL character"),
    ({"field": "meta.x", "operator": "==", "value": {"a": 1}}, "must be a string, number, boolean or null"),
    ({"field": "doc_id", "operator": "==", "value": "a"}, "is not document metadata"),
    ({"field": "meta.page", "operator": "==", "value": 1}, "belongs to each chunk"),
    ({"field": "meta.a.b", "operator": "==", "value": 1}, "nested names"),
])
def test_refused_filters_say_why(bad, words):
    with pytest.raises(SpanQAError, match=words.replace("(", r"\(")):
        check_filters(bad)


def test_a_filter_nested_thirty_thousand_deep_is_one_sentence():
    deep = '{"operator": "NOT", "conditions": [' * 30_000 + "{}" + "]}" * 30_000
    with pytest.raises(SpanQAError, match="nested too deeply|nested deeper than"):
        parse_filters(deep)
