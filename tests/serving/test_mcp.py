"""MCP offers the pipeline's query tool and nothing else, on a real server, keyed and unkeyed: no tool, route or hook
that deploys, undeploys or changes anything (Hayhooks' own MCP server offers deploy_pipeline / undeploy_pipeline: code
from any caller), and malformed MCP bodies are 4xx with one line, as REST's are."""

from __future__ import annotations

import asyncio
import json

import pytest

from components.serving.limits import Refused
from components.serving.mcp_tools import MAX_JSON_DEPTH, allowed_tools, check_json_message, json_depth
from tests.serving.conftest import http
from tests.serving.test_auth import ALICE, BOB, keyed_server  # noqa: F401  (the keyed server fixture)

pytestmark = pytest.mark.slow

DEPLOY_WRAPPER = {"name": "evil", "files": {"pipeline_wrapper.py": (
    "from hayhooks import BasePipelineWrapper\n"
    "class PipelineWrapper(BasePipelineWrapper):\n"
    "    def setup(self):\n        open('/tmp/spanqa-mcp-pwned', 'w').write('pwned')\n"
    "    def run_api(self, query: str) -> str:\n        return open('/etc/hostname').read()\n")}}


def _session(url: str, key: str | None, calls):
    """List the tools over Streamable HTTP and make ``calls`` [(tool, arguments)]; ``(names, [results])``."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    async def run():
        headers = {"Authorization": f"Bearer {key}"} if key else None
        async with streamablehttp_client(url + "/mcp/mcp/", headers=headers) as (read, write, _):
            async with ClientSession(read, write) as session:
                await session.initialize()
                names = [t.name for t in (await session.list_tools()).tools]
                return names, [await session.call_tool(tool, args) for tool, args in calls]

    return asyncio.run(run())


def _assert_only_the_query_tool(url: str, name: str, key: str | None, question: str, needle: str):
    names, (deploy, undeploy, status, answer) = _session(url, key, [
        ("deploy_pipeline", DEPLOY_WRAPPER), ("undeploy_pipeline", {"name": name}),
        ("get_all_pipeline_statuses", {}), (name, {"query": question})])
    assert names == list(allowed_tools(name)) == [name]  # an upgrade of Hayhooks that adds a tool fails here
    for refused in (deploy, undeploy, status):
        assert refused.isError and "this server offers only" in refused.content[0].text
    assert not answer.isError and needle in answer.content[0].text  # the pipeline was not undeployed


def test_unkeyed_server_offers_only_the_query_tool(server):
    import pathlib

    _assert_only_the_query_tool(server.url, "extractive", None, "What does ERR-4012 mean?", "ERR-4012")
    assert not pathlib.Path("/tmp/spanqa-mcp-pwned").exists()
    status, spec, _ = http("GET", server.url + "/openapi.json")
    assert status == 200 and not [p for p in spec["paths"] if "deploy" in p], sorted(spec["paths"])


def test_keyed_server_offers_only_the_query_tool_to_every_key(keyed_server):
    for key in (ALICE, BOB):  # BOB holds no group: exactly the key of the review that deployed code
        _assert_only_the_query_tool(keyed_server.url, "retrieval", key, "ERR-4012", "ERR-4012")


@pytest.mark.parametrize("raw, status, needle", [
    (b"[" * 50_000 + b"]" * 50_000, 400, "nested"),
    (b'{"jsonrpc": "2.0", "id": ' + b"9" * 5000 + b', "method": "tools/list"}', 400, "malformed JSON"),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": ' + b'{"a": ' * 40 + b"1" + b"}" * 40 + b"}",
     400, f"more than {MAX_JSON_DEPTH} levels"),
    (b'{"jsonrpc": ', 400, "malformed JSON"),
    (b"\xff\xfe", 400, "not UTF-8"),
])
def test_malformed_mcp_bodies_are_4xx_with_one_line(server, raw, status, needle):
    for path in ("/mcp/mcp/", "/mcp/messages/?session_id=0123"):
        got, body, _ = http("POST", server.url + path, raw=raw)
        assert got == status and needle in body["detail"] and "\n" not in body["detail"], (path, got, body)
    status_ok, *_ = http("GET", server.url + "/ready")
    assert status_ok == 200


def test_json_checks_on_hand_cases():
    assert json_depth(1) == 0 and json_depth([]) == 1 and json_depth({"a": [1, {"b": []}]}) == 4
    check_json_message(b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}')
    with pytest.raises(Refused) as info:
        check_json_message(b"x" * 1_000_001)
    assert info.value.status == 413


def test_keys_are_still_required_for_mcp(keyed_server):
    got, body, _ = http("POST", keyed_server.url + "/mcp/mcp/", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert got == 401 and isinstance(body["detail"], str)
