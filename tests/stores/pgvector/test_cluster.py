"""A real PostgreSQL cluster on loopback sockets (2 shards, each with a streaming replica; ``run.py cluster``'s
code): the cluster store gives the single store's BM25 ranking — the same chunks in the same order, scores equal to
1e-12 (the statistics are the same numbers; only the order a shard sums a chunk's terms in may differ in the last
bit) — and its dense lists, on the demo corpus and a SQuAD article; a replica whose replay is paused behind its
primary is never read; a shard stopped mid-search is one clear error, never a partial list; ``down`` stops every
server it started."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from haystack.utils import Secret

from components.core.errors import SpanQAError
from components.stores.base import BM25Params, Selection
from components.stores.pgvector import cluster, lifetime
from components.stores.pgvector.cluster_store import PgClusterStore
from components.stores.pgvector.store import PgSpanStore

ROOT = Path(__file__).resolve().parents[3]
ARTICLE = ROOT.parent / "shared" / "data" / "squad-train" / "train-v2.0-subset.json"


@pytest.fixture(scope="module")
def running(tmp_path_factory):
    where = tmp_path_factory.mktemp("cluster")
    manifest = cluster.up(where, shards=2, replicas=1)
    yield where, manifest
    stopped = cluster.down(where)
    assert all(how != "not running" for _, how in stopped)
    assert all(lifetime.postmaster_pid(data) is None for _, _, data in cluster.servers(manifest))


def same_ranking(a, b) -> bool:
    return [d.id for d, _ in a] == [d.id for d, _ in b] and all(
        abs(x - y) <= 1e-12 * max(1.0, abs(x)) for (_, x), (_, y) in zip(a, b))


def questions():
    return [json.loads(line)["question"] for line in (ROOT / "data" / "questions.jsonl").read_text().splitlines()]


def both(where, manifest, data_dir, prefix):
    single = PgSpanStore(data_dir=str(data_dir), dsn=Secret.from_token(manifest["shards"][0]["primary"]),
                         table_prefix=f"single_{prefix}", progress=False)
    spread = PgClusterStore(data_dir=str(data_dir), cluster_dir=str(where), table_prefix=f"spread_{prefix}",
                            progress=False)
    single.open()
    spread.open()
    return single, spread


def test_cluster_scores_are_the_single_stores(running, tmp_path):
    where, manifest = running
    single, spread = both(where, manifest, ROOT / "data" / "kb", "demo")
    assert (spread.stats["documents"], spread.stats["chunks"]) == (single.stats["documents"], single.stats["chunks"])
    assert all(s["documents"] for s in spread.stats["shards"])  # both shards hold documents
    group = Selection(filters={"field": "meta.status", "operator": "==", "value": "current"})
    for question in questions():
        tokens = single.analyzer(question)
        for selection in (Selection(), group):
            a = single.bm25_search(tokens, 10, selection, BM25Params())
            b = spread.bm25_search(tokens, 10, selection, BM25Params())
            assert same_ranking(a, b), question
        dense_a = single.dense_search(question, 5, Selection())
        dense_b = spread.dense_search(question, 5, Selection())
        assert [d.id for d, _ in dense_a] == [d.id for d, _ in dense_b]
    assert spread.replica_reads > 0  # the reads went to replicas at the primaries' version
    doc_id = spread.document_ids()[3]
    assert spread.source(doc_id)[0].text == single.source(doc_id)[0].text


@pytest.mark.skipif(not ARTICLE.exists(), reason="needs ../shared/data/squad-train")
def test_a_squad_article_ranks_the_same(running, tmp_path):
    where, manifest = running
    data = json.loads(ARTICLE.read_text())
    article = {"version": "v2.0", "data": data["data"][:1]}
    folder = tmp_path / "article"
    folder.mkdir()
    (folder / "article.json").write_text(json.dumps(article))
    single, spread = both(where, manifest, folder / "article.json", "squad")
    qs = [qa["question"] for p in article["data"][0]["paragraphs"] for qa in p["qas"]][:60]
    for question in qs:
        tokens = single.analyzer(question)
        a = single.bm25_search(tokens, 10, Selection(), BM25Params())
        b = spread.bm25_search(tokens, 10, Selection(), BM25Params())
        assert same_ranking(a, b), question


def test_a_replica_behind_its_primary_is_never_read(running, tmp_path):
    from haystack import Document

    from components.stores.pgvector.server import connect

    where, manifest = running
    single, spread = both(where, manifest, ROOT / "data" / "kb", "lag")
    replica_uri = manifest["shards"][0]["replicas"][0]["uri"]
    with connect(replica_uri) as conn:
        conn.execute("SELECT pg_wal_replay_pause()")
    try:
        new = Document(id="lag-note.md", content="The zebrafish mascot of the lag test is called Quillon.")
        spread.write_documents([new])
        spread.current_version()  # a new question starts at the primaries' versions
        shard = spread._shard("lag-note.md")
        reads, skips = spread.replica_reads, spread.replica_skips
        hits = spread.bm25_search(spread.analyzer("zebrafish mascot Quillon"), 3, Selection(), BM25Params())
        assert hits and hits[0][0].meta["doc_id"] == "lag-note.md"
        if shard == 0:
            assert spread.replica_skips > skips  # the paused replica was asked and passed over
        assert spread._reader(0) is spread.primaries[0] or spread.replica_reads > reads
    finally:
        with connect(replica_uri) as conn:
            conn.execute("SELECT pg_wal_replay_resume()")


def test_a_stopped_shard_is_one_clear_error(tmp_path_factory):
    where = tmp_path_factory.mktemp("cluster-stop")
    manifest = cluster.up(where, shards=2, replicas=0)
    try:
        spread = PgClusterStore(data_dir=str(ROOT / "data" / "kb"), cluster_dir=str(where), table_prefix="stop",
                                progress=False)
        spread.open()
        tokens = spread.analyzer("What is the refund window for annual plans?")
        assert spread.bm25_search(tokens, 5, Selection(), BM25Params())
        lifetime.stop_server(manifest["shards"][1]["data"])
        with pytest.raises(SpanQAError, match=r"shard 1 .* did not answer .* none is given"):
            spread.bm25_search(tokens, 5, Selection(), BM25Params())
    finally:
        cluster.down(where)
    rows = cluster.status(where)
    assert [r["running"] for r in rows] == [False, False]


def test_cluster_yaml_differs_from_postgres_only_in_where_the_servers_are():
    import yaml

    pg = yaml.safe_load((ROOT / "pipelines/extractive-postgres.yaml").read_text())
    spread = yaml.safe_load((ROOT / "pipelines/extractive-cluster.yaml").read_text())
    a = pg["components"]["retriever"]["init_parameters"].pop("document_store")
    b = spread["components"]["retriever"]["init_parameters"].pop("document_store")
    for spec in (pg, spread):
        for name in ("expander", "widener"):
            spec["components"][name]["init_parameters"].pop("document_store")
    assert pg == spread
    assert set(a["init_parameters"]) - set(b["init_parameters"]) == {"dsn", "embedded_dir"}
    assert set(b["init_parameters"]) - set(a["init_parameters"]) == {"cluster_dir", "shards"}
    shared = set(a["init_parameters"]) & set(b["init_parameters"])
    assert {k: a["init_parameters"][k] for k in shared} == {k: b["init_parameters"][k] for k in shared}


def test_demo_questions_answer_the_same_through_the_cluster(running, pg_dsn, tmp_path, monkeypatch):
    """The shipped pipeline end to end, one PostgreSQL against the cluster: the same answers, verdicts, spans."""
    from components.app.pipeline_io import load_pipeline
    from components.app.runner import QueryRunner, public

    where, _ = running
    monkeypatch.chdir(ROOT)
    text = (ROOT / "pipelines/extractive-cluster.yaml").read_text().replace(".spanqa/cluster", str(where))
    yaml_path = tmp_path / "extractive-cluster.yaml"
    yaml_path.write_text(text)
    runners = []
    for path in (ROOT / "pipelines/extractive-postgres.yaml", yaml_path):
        pipeline, _ = load_pipeline(path, data=str(ROOT / "data/kb"), cache_dir=str(tmp_path / "cache"))
        runner = QueryRunner(pipeline)
        runner.warm_up()
        runners.append(runner)
    assert runners[1].store().stats["store"].startswith("postgresql cluster of 2 shards")
    for question in questions()[:15]:
        got, want = (public(r.ask(question)) for r in reversed(runners))
        for key in ("answer", "verdict", "route", "spans"):
            assert got[key] == want[key], (question, key)
        assert [(d["doc_id"], d["char_start"]) for d in got["documents"]] == \
               [(d["doc_id"], d["char_start"]) for d in want["documents"]], question


def test_bm25_on_the_cluster_loads_no_embedding_model(running, tmp_path):
    """A coordinator that only ranks with BM25 never holds the embedder (its memory is the mirrors'); the first
    dense query loads one model, shared by every shard store."""
    where, manifest = running
    both(where, manifest, ROOT / "data" / "kb", "lazy")  # builds the tables (that embeds the chunks)
    reader = PgClusterStore(data_dir=str(ROOT / "data" / "kb"), cluster_dir=str(where), table_prefix="spread_lazy",
                            progress=False)
    reader.open()
    stores = [reader, *reader.primaries, *(r for rs in reader._replicas for r in rs)]
    question = questions()[0]
    assert reader.bm25_search(reader.analyzer(question), 5, Selection(), BM25Params())
    assert reader.embedding_dimension == 384
    assert not any("_embedder_model" in s.__dict__ for s in stores)
    assert reader.dense_search(question, 5, Selection())
    models = {id(s.__dict__["_embedder_model"]) for s in stores if "_embedder_model" in s.__dict__}
    assert len(models) == 1


def test_each_replica_streams_through_its_own_slot(running):
    """The primary keeps the WAL a replica has not received (a bulk write never strands it), within a bound."""
    from components.stores.pgvector.server import connect

    where, manifest = running
    for i, shard in enumerate(manifest["shards"]):
        with connect(shard["primary"]) as conn:
            slots = conn.execute("SELECT slot_name, slot_type, active FROM pg_replication_slots").fetchall()
            assert slots == [(f"shard{i}_replica0", "physical", True)]
            assert conn.execute("SHOW max_slot_wal_keep_size").fetchone()[0] == cluster.REPLICA_WAL_LIMIT
    assert all(r.get("streaming") for r in cluster.status(where) if r["role"] == "replica")
