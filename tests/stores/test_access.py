"""Per-document access inside the search, in both stores: a document's `access: [groups]` decides who may read it;
an asker sees only those, top_k fills with readable documents, and `superseded: only` never names a forbidden one."""

from __future__ import annotations


import pytest

from components.core.errors import SpanQAError
from components.retrievers.hybrid_retriever import HybridRetriever
from components.stores.base import AccessRule
from components.stores.span_store import SpanStore
from tests.stores.conftest import either_store


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("access")
    for i in range(6):
        (d / f"public-{i}.md").write_text(f"# Refunds {i}\n\nRefund note {i}: annual plans are refunded within 30 days.\n")
    for i in range(6):
        (d / f"finance-{i}.md").write_text(f"---\naccess: [finance]\n---\n# Refunds ledger {i}\n\nRefund ledger {i}: "
                                           f"annual plans refunded this quarter total {1000 + i} euros.\n")
    (d / "legal.md").write_text("---\naccess: legal\n---\n# Refund dispute\n\nRefund disputes for annual plans go to "
                                "the legal team.\n")
    (d / "both.md").write_text("---\naccess: [finance, legal]\n---\n# Refund audit\n\nRefund audits of annual plans "
                               "are shared.\n")
    (d / "old.md").write_text("---\naccess: [finance]\nstatus: superseded\n---\n# Old refunds\n\nRefunds of annual "
                              "plans took 60 days.\n")
    return d


@pytest.fixture(scope="module", params=["memory", "postgres"])
def store(request, corpus, tmp_path_factory):
    return either_store(request, corpus, tmp_path_factory, "access")


def ids(out) -> set[str]:
    return {d.meta["doc_id"] for d in out["bm25_documents"] + out["dense_documents"]}


def test_each_asker_sees_only_what_its_groups_may_read(store):
    r = HybridRetriever(store, top_k=8)
    q = "refund annual plans"
    anonymous = r.run(query=q, groups=[])
    assert ids(anonymous) == {f"public-{i}.md" for i in range(6)}
    finance = r.run(query=q, groups=["finance"])
    assert ids(finance) <= {*(f"public-{i}.md" for i in range(6)), *(f"finance-{i}.md" for i in range(6)), "both.md"}
    assert not any(d.startswith("legal") for d in ids(finance))
    # top_k fills with readable documents: eight results, not eight minus the forbidden ones
    assert len(finance["bm25_documents"]) == len(finance["dense_documents"]) == 8
    legal = r.run(query=q, groups=["legal"])
    assert {"legal.md", "both.md"} <= ids(legal) and not any(d.startswith("finance") for d in ids(legal))
    assert "legal.md" in ids(r.run(query=q))  # no groups given: a local user, unrestricted


def test_superseded_only_never_names_a_forbidden_document(store):
    r = HybridRetriever(store, top_k=5)
    assert ids(r.run(query="refunds annual plans 60 days", superseded="only", groups=["finance"])) == {"old.md"}
    assert ids(r.run(query="refunds annual plans 60 days", superseded="only", groups=["legal"])) == set()


def test_default_access_closes_unlabelled_documents(store):
    r = HybridRetriever(store, top_k=20, default_access=["staff"])
    assert not any(d.startswith("public") for d in ids(r.run(query="refund annual plans", groups=["finance"])))
    assert any(d.startswith("public") for d in ids(r.run(query="refund annual plans", groups=["staff"])))


def test_the_access_rule():
    rule = AccessRule()
    assert rule.readable({}, frozenset()) and rule.readable({"access": ["public"]}, frozenset())
    assert not rule.readable({"access": "finance"}, frozenset({"legal"}))
    assert rule.readable({"access": ["finance", "legal"]}, frozenset({"legal"}))
    assert not rule.readable({"access": 5}, frozenset({"5"}))  # a value that is not a list of names: nobody
    assert rule.readable({"access": "finance"}, None)  # no scope: the local user
    with pytest.raises(SpanQAError, match="default_access must be null"):
        HybridRetriever(SpanStore(data_dir="data/kb"), default_access="staff")


def test_validate_lists_documents_no_key_can_read(tmp_path):
    """run.py --validate --keys: restricted documents counted, a document naming a group no key holds listed."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    data = tmp_path / "docs"
    data.mkdir()
    (data / "open.md").write_text("# Open\n\nEveryone reads this.\n")
    (data / "fin.md").write_text("---\naccess: [finance]\n---\n# Fin\n\nFinance reads this.\n")
    (data / "typo.md").write_text("---\naccess: [fnance]\n---\n# Typo\n\nNobody reads this.\n")
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"sk-alice-0123456789abcdef": {"principal": "alice", "groups": ["finance"]}}))
    done = subprocess.run([sys.executable, str(root / "run.py"), "pipelines/extractive.yaml", "--validate", "--json",
                           "--data", str(data), "--keys", str(keys)], cwd=root, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-1500:]
    access = json.loads(done.stdout)["access"]
    assert access == {"documents": 3, "restricted": 2, "key_groups": ["finance"],
                      "unknown_groups": {"typo.md": ["fnance"]},
                      "unreadable": {}, "groups_no_key_holds": ["fnance"], "skipped": []}


def test_the_query_embedding_memo_is_kept_apart_per_asker_scope(tmp_path):
    # a memo hit is faster: shared across scopes it would tell one asker what another asked
    store = SpanStore(data_dir="data/kb", cache_dir=str(tmp_path / "cache"), progress=False)
    finance, legal = frozenset({"finance"}), frozenset({"legal"})
    first = store.embed_query("What is the refund window?", finance)
    store.embed_query("What is the refund window?", legal)
    assert store.query_cache_hits == 0
    again = store.embed_query("What is the refund window?", finance)
    assert store.query_cache_hits == 1 and again is first
