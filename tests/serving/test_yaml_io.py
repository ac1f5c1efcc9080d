"""The pipeline YAMLs carry Hayhooks' inputs/outputs: Haystack still loads them, Hayhooks' deploy-yaml accepts them
(the real `hayhooks pipeline deploy-yaml` against Hayhooks' own server), and validate.py checks them."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from components.app.validate import validate_spec
from components.core.errors import SpanQAError
from tests.serving.conftest import ROOT, http

PIPELINES = ["retrieval", "extractive", "generative"]


def _load(name):
    from haystack import Pipeline

    with open(ROOT / f"pipelines/{name}.yaml") as f:
        return Pipeline.load(f, allowed_modules=["components"])


@pytest.mark.parametrize("name", PIPELINES)
def test_haystack_loads_the_yaml_and_query_fans_out_to_every_component_that_takes_it(name):
    pipeline = _load(name)
    spec = yaml.safe_load((ROOT / f"pipelines/{name}.yaml").read_text())
    takes_query = {f"{comp}.query" for comp, sockets in pipeline.inputs().items() if "query" in sockets}
    assert set(spec["inputs"]) == {"query"}
    assert sorted(spec["inputs"]["query"]) == sorted(takes_query)
    for out, target in spec["outputs"].items():
        comp, socket = target.split(".")
        assert socket in pipeline.get_component(comp).__haystack_output__._sockets_dict, target
    assert "documents" in spec["outputs"]


@pytest.mark.parametrize("name", PIPELINES)
def test_hayhooks_yaml_wrapper_accepts_the_yaml(name, monkeypatch):
    from hayhooks import YAMLPipelineWrapper

    monkeypatch.setenv("HAYSTACK_DESERIALIZATION_ALLOWLIST", "haystack.*,components.*")
    wrapper = YAMLPipelineWrapper.from_yaml((ROOT / f"pipelines/{name}.yaml").read_text())
    spec = yaml.safe_load((ROOT / f"pipelines/{name}.yaml").read_text())
    assert set(wrapper.input_resolutions) == {"query"}
    assert wrapper.input_resolutions["query"].required
    assert wrapper.include_outputs_from == {t.split(".")[0] for t in spec["outputs"].values()}
    wrapper.setup()
    assert {n for n, _ in wrapper.pipeline.walk()} == set(spec["components"])


@pytest.fixture(scope="module")
def hayhooks_server(tmp_path_factory):
    """Hayhooks' own server (`hayhooks run`) on 127.0.0.1: where a user deploys our YAMLs into their Hayhooks.
    spanqa's server has no deploy endpoints (a deployed YAML is code; tests/serving/test_cross_site.py)."""
    from tests.serving.conftest import free_port

    port = free_port()
    env = {**os.environ, "HAYSTACK_DESERIALIZATION_ALLOWLIST": "haystack.*,components.*", "HF_HUB_OFFLINE": "1",
           "HAYHOOKS_PIPELINES_DIR": str(tmp_path_factory.mktemp("hayhooks-pipelines"))}
    log = tmp_path_factory.mktemp("hayhooks") / "hayhooks.log"
    hayhooks = Path(sys.executable).with_name("hayhooks")
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(hayhooks), "run", "--host", "127.0.0.1", "--port", str(port)], cwd=ROOT,
                                env=env, stdout=out, stderr=subprocess.STDOUT)
    srv = SimpleNamespace(port=port, url=f"http://127.0.0.1:{port}")
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, log.read_text()[-3000:]
            try:
                if http("GET", srv.url + "/status", timeout=5)[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.3)
        yield srv
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _deploy_yaml(server, name, path):
    env = {**os.environ, "HAYHOOKS_HOST": "127.0.0.1", "HAYHOOKS_PORT": str(server.port)}
    hayhooks = Path(sys.executable).with_name("hayhooks")
    proc = subprocess.run([str(hayhooks), "pipeline", "deploy-yaml", "-n", name, "--no-save-file", "--overwrite",
                           str(path)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "successfully deployed" in proc.stdout


def test_hayhooks_deploy_yaml_cli_on_a_hayhooks_server(hayhooks_server, runner):
    server = hayhooks_server
    from components.app.pipeline_io import load_pipeline
    from components.app.runner import QueryRunner

    _deploy_yaml(server, "retrieval_yaml", ROOT / "pipelines/retrieval.yaml")
    status, body, _ = http("POST", f"{server.url}/retrieval_yaml/run", {"query": "ERR-4012"})
    assert status == 200, body
    pipeline, _ = load_pipeline(ROOT / "pipelines/retrieval.yaml", data=str(ROOT / "data/kb"),
                                cache_dir=str(ROOT / ".spanqa/cache"))
    expected = QueryRunner(pipeline).ask("ERR-4012")["documents"]
    got = body["result"]["joiner"]["documents"]
    assert [d["meta"]["chunk_id"] for d in got] == [d["chunk_id"] for d in expected]
    assert [d["score"] for d in got] == pytest.approx([d["score"] for d in expected], rel=1e-9)

    _deploy_yaml(server, "extractive_yaml", ROOT / "pipelines/extractive.yaml")
    q = "How many devices can the Hub Mini control?"
    status, body, _ = http("POST", f"{server.url}/extractive_yaml/run", {"query": q})
    assert status == 200, body
    result = body["result"]
    assert [d["meta"]["chunk_id"] for d in result["ranker"]["documents"]] == [
        d["chunk_id"] for d in runner.ask(q)["documents"]]
    verdicts = [a["meta"]["verdict"] for key in ("answers", "not_found") for a in result["verifier"].get(key, [])]
    assert verdicts and set(verdicts) <= {"SUPPORTED", "NOT_FOUND"}


def _spec(mutate):
    spec = yaml.safe_load((ROOT / "pipelines/retrieval.yaml").read_text())
    mutate(spec)
    return spec


@pytest.mark.parametrize("mutate, needle", [
    (lambda s: s["metadata"]["spanqa"].update(max_question_chars=0), "max_question_chars is 0"),
    (lambda s: s["metadata"]["spanqa"].update(max_question_chars="long"), "max_question_chars is 'long'"),
    (lambda s: s["inputs"].update(query=["nope.query"]), "inputs.query is 'nope.query'"),
    (lambda s: s.update(outputs=["joiner.documents"]), "'outputs' must map names"),
    (lambda s: s["outputs"].update(documents="joiner"), "outputs.documents is 'joiner'"),
])
def test_validate_checks_limits_and_io(mutate, needle):
    with pytest.raises(SpanQAError) as info:
        validate_spec("p.yaml", _spec(mutate))
    assert needle in str(info.value)
