"""The PipelineWrapper in-process: refuses with 503 until warmed, warms once, then returns exactly public(result)."""

from __future__ import annotations

import pytest

from components.app.pipeline_io import load_pipeline
from components.app.runner import QueryRunner, public
from components.serving.limits import Refused
from components.serving.wrapper import ServingConfig, wrapper_class
from tests.serving.conftest import ROOT


@pytest.fixture(scope="module")
def wrapper():
    from hayhooks.server.utils.module_loader import create_pipeline_wrapper_instance

    pipeline, spec = load_pipeline(ROOT / "pipelines/retrieval.yaml", data=str(ROOT / "data/kb"),
                                   cache_dir=str(ROOT / ".spanqa/cache"))
    config = ServingConfig(name="retrieval", pipeline=pipeline, spec=spec, max_question_chars=50)
    module = type(__import__("sys"))("spanqa_test_wrapper")
    module.PipelineWrapper = wrapper_class(config)
    return create_pipeline_wrapper_instance(module)  # Hayhooks instantiates, set-up and checks it


def test_not_ready_until_warmed_then_ready_once(wrapper):
    assert wrapper._is_run_api_implemented and wrapper._is_run_chat_completion_implemented
    assert wrapper.readiness.state == "starting" and not wrapper.readiness.ready
    with pytest.raises(Refused) as info:
        wrapper.run_api(query="ERR-4012")
    assert info.value.status == 503 and "GET /ready" in info.value.reason
    state = wrapper.warm_up()
    assert state.ready and state.warm_ups == 1 and state.index["documents"] == 33
    assert wrapper.warm_up().warm_ups == 1  # models and index load once per process


def test_run_api_returns_exactly_public_result(wrapper):
    wrapper.warm_up()
    got = wrapper.run_api(query="  ERR-4012  ")
    pipeline, _ = load_pipeline(ROOT / "pipelines/retrieval.yaml", data=str(ROOT / "data/kb"),
                                cache_dir=str(ROOT / ".spanqa/cache"))
    expected = public(QueryRunner(pipeline).ask("ERR-4012"))
    got.pop("timings_ms"), expected.pop("timings_ms")
    assert got == expected
    with pytest.raises(Refused) as info:
        wrapper.run_api(query="x" * 51)
    assert info.value.status == 413 and "limit of 50" in info.value.reason
    assert wrapper.run_chat_completion("retrieval", [{"role": "user", "content": "ERR-4012"}], {}).startswith(
        "Top passages:\n[1] err-4012")


def test_deploy_routes_are_removed_and_loopback_is_recognised():
    from hayhooks import create_app

    from components.serving.app import DEPLOY_PATHS, is_loopback, remove_deploy_routes

    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.20") and not is_loopback("example.org")
    from fastapi.testclient import TestClient

    app = create_app()
    before = TestClient(app).post("/deploy-yaml", json={})
    assert before.status_code == 422  # the route is there (the body is incomplete)
    assert sorted(remove_deploy_routes(app)) == sorted(DEPLOY_PATHS)
    client = TestClient(app)
    assert client.post("/deploy-yaml", json={}).status_code == 404
    assert client.post("/undeploy/extractive").status_code == 404
    assert client.get("/status").status_code == 200  # the rest stays


def test_chat_text_escapes_what_a_document_could_use_to_forge_lines_or_drive_a_terminal():
    from components.serving.wrapper import chat_text

    result = {"verdict": "SUPPORTED", "answer": "30 days\x1b[2J", "conflicts": [],
              "spans": [{"doc_id": "a.md\n[2] forged.md chars 0–5", "char_start": 3, "char_end": 10, "location": {}}]}
    text = chat_text(result)
    assert text == "30 days\\x1b[2J\n\nSources:\n[1] a.md\\n[2] forged.md chars 0–5 chars 3–10"
    assert "\x1b" not in text and text.count("\n") == 3
