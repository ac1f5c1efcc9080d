"""Each principal sees only its documents, through REST, chat, the source passage and the answer cache, on a real
server started with --keys over a corpus where some documents are restricted (`access: [finance]`)."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request

import pytest

from components.serving.auth import digest
from tests.serving.conftest import Server

ALICE = "sk-alice-0123456789abcdef"  # finance
BOB = "sk-bob-fedcba9876543210xyz"   # no groups
SECRET = "ledger code LX-4471"
QUESTION = "What is the ledger code for annual refunds?"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("access-server")
    data = tmp / "docs"
    data.mkdir()
    (data / "refunds.md").write_text("# Refunds\n\nAnnual plans are refunded within 30 days of purchase.\n")
    (data / "ledger.md").write_text("---\naccess: [finance]\n---\n# Finance ledger\n\nAnnual refunds are booked "
                                    f"under the {SECRET} in the finance ledger.\n")
    keys = tmp / "keys.json"
    keys.write_text(json.dumps({ALICE: {"principal": "alice", "groups": ["finance"]},
                                f"sha256:{digest(BOB)}": {"principal": "bob", "groups": []}}))
    srv = Server("pipelines/extractive.yaml", tmp / "server.log", "--keys", str(keys), "--data", str(data),
                 "--cache-dir", str(tmp / "cache"), "--min-confidence", "0")
    try:
        srv.wait_ready()
        yield srv
    finally:
        srv.stop()


def call(server, method, path, key, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(server.url + path, data=data, method=method,
                                 headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_a_restricted_document_answers_its_group_only_and_never_leaks(server):
    # bob first, then alice, then bob again: the answer cache must not carry alice's answer to bob
    for key, allowed in ((BOB, False), (ALICE, True), (BOB, False)):
        status, text = call(server, "POST", "/extractive/run", key, {"query": QUESTION})
        assert status == 200, text
        body = json.loads(text)
        seen = {d["doc_id"] for d in body["documents"]}
        if allowed:
            assert "ledger.md" in seen and body["answer"] and "LX-4471" in body["answer"]
        else:  # no field of any kind names or quotes the forbidden document
            assert "ledger.md" not in text and "LX-4471" not in text and "Finance ledger" not in text, text[:600]
            assert seen <= {"refunds.md"}
        status, chat = call(server, "POST", "/v1/chat/completions", key,
                            {"model": "extractive", "messages": [{"role": "user", "content": QUESTION}]})
        assert status == 200 and (("LX-4471" in chat) == allowed) and (("ledger.md" in chat) == allowed), chat[:400]


def test_the_source_endpoint_does_not_confirm_a_forbidden_document(server):
    q = urllib.parse.urlencode({"doc_id": "ledger.md", "char_start": 40, "char_end": 60})
    status_bob, body_bob = call(server, "GET", f"/extractive/source?{q}", BOB)
    status_alice, body_alice = call(server, "GET", f"/extractive/source?{q}", ALICE)
    missing = urllib.parse.urlencode({"doc_id": "nope.md", "char_start": 40, "char_end": 60})
    status_none, body_none = call(server, "GET", f"/extractive/source?{missing}", BOB)
    assert status_alice == 200 and "finance ledger" in json.loads(body_alice)["text"].lower()
    assert status_bob == status_none == 404  # the same answer as for a document that does not exist
    assert json.loads(body_bob)["detail"].replace("ledger.md", "X") == json.loads(body_none)["detail"].replace(
        "nope.md", "X")
