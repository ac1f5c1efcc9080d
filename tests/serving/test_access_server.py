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
    (data / "board-minutes-2026.pdf").write_bytes(b"%PDF-1.4 not really a PDF")  # skipped at indexing
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


def _mcp_streamable(server, key):
    """The pipeline's MCP tool called over Streamable HTTP with ``key``; the tool's JSON text."""
    import asyncio

    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    async def run():
        async with streamablehttp_client(server.url + "/mcp/mcp/", headers={"Authorization": f"Bearer {key}"}) as (
                read, write, _):
            async with ClientSession(read, write) as session:
                await session.initialize()
                result = await session.call_tool("extractive", {"query": QUESTION})
                return result.content[0].text

    return asyncio.run(run())


def _mcp_sse_cross(server, stream_key, call_key):
    """An MCP session over SSE opened with ``stream_key`` whose tool call is POSTed with ``call_key``."""
    import asyncio

    import httpx

    async def run():
        async with httpx.AsyncClient(timeout=120) as client:
            async with client.stream("GET", server.url + "/mcp/sse",
                                     headers={"Authorization": f"Bearer {stream_key}"}) as stream:
                lines = stream.aiter_lines()
                endpoint = None
                async for line in lines:
                    if line.startswith("data:"):
                        endpoint = line[5:].strip()
                        break
                url = server.url + ("/mcp" + endpoint if endpoint.startswith("/messages") else endpoint)
                headers = {"Authorization": f"Bearer {call_key}"}
                for body in ({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                         "clientInfo": {"name": "test", "version": "1"}}},
                             {"jsonrpc": "2.0", "method": "notifications/initialized"},
                             {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                              "params": {"name": "extractive", "arguments": {"query": QUESTION}}}):
                    await client.post(url, json=body, headers=headers)
                async for line in lines:
                    if line.startswith("data:") and '"id":2' in line:
                        return line[5:]

    return asyncio.run(run())


def test_an_mcp_tool_call_runs_as_the_key_that_sent_it(server):
    # Streamable HTTP: each principal its own documents
    assert "LX-4471" in _mcp_streamable(server, ALICE)
    bob = _mcp_streamable(server, BOB)
    assert "LX-4471" not in bob and "ledger.md" not in bob and "refunds.md" in bob
    # SSE: the session opened by alice, the call sent by bob → answered as bob (not as the stream's owner)
    crossed = _mcp_sse_cross(server, ALICE, BOB)
    assert crossed and "LX-4471" not in crossed and "ledger.md" not in crossed and "refunds.md" in crossed
    assert "LX-4471" in _mcp_sse_cross(server, BOB, ALICE)


def test_ready_names_nothing_without_a_key_and_counts_only_what_a_key_may_read(server):
    def ready(key=None):
        req = urllib.request.Request(server.url + "/ready", headers={"Authorization": f"Bearer {key}"} if key else {})
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.read().decode()

    bare = {"ready": True, "state": "ready", "version": "0.1.0"}
    assert json.loads(ready()) == bare
    assert json.loads(ready("sk-wrong-key-0000000000")) == bare  # a wrong key is anonymous here
    alice, bob = json.loads(ready(ALICE)), json.loads(ready(BOB))
    assert alice["warm_ups"] == bob["warm_ups"] == 1  # models and index loaded once, whatever the traffic
    assert alice["index"] == {"documents": 2, "skipped": 1} and bob["index"] == {"documents": 1, "skipped": 1}
    for text in (ready(), ready(ALICE), ready(BOB)):  # no file name, skipped or restricted, to anyone
        assert "board-minutes" not in text and "ledger" not in text
