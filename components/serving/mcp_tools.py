"""The MCP server of a spanqa deployment: the pipeline's one query tool, nothing that deploys or changes anything.

Hayhooks' own MCP server (``create_mcp_server``) also offers its core tools — ``deploy_pipeline`` and
``undeploy_pipeline`` among them, i.e. *code* sent by any caller and run in the server. So spanqa builds its MCP
server from the MCP SDK's ``Server`` itself, with an allow-list of one tool — the deployed pipeline, named after its
YAML — and keeps only Hayhooks' transport (``create_starlette_app``: Streamable HTTP and SSE under ``/mcp``). A
Hayhooks upgrade that adds core tools therefore adds none here, and ``tests/serving/test_mcp.py`` asserts the tool
list of a real server, keyed and unkeyed.

Usage::

    server = query_tool_server("extractive", wrapper)      # wrapper: the deployment's SpanQAPipelineWrapper
    app.mount("/mcp", JsonBodyCheck(create_starlette_app(server)))

A tool call runs as the principal of the HTTP request that carried it (the auth guard put it in the request's
``state``), exactly as ``POST /{name}/run`` does; its result is the same ``run.py --json`` object as text.
"""

from __future__ import annotations

import json
from typing import Any

from components.serving.auth import REQUESTER
from components.serving.limits import MAX_BODY_BYTES, Refused, one_line, parse_json

MAX_JSON_DEPTH = 32  # a JSON-RPC message is a few levels deep; thousands of levels are an attack on the parser


def allowed_tools(name: str) -> tuple[str, ...]:
    """The names of every MCP tool a deployment of pipeline ``name`` offers: its query tool, nothing else."""
    return (name,)


def query_tool_schema(max_question_chars: int) -> dict[str, Any]:
    """The JSON schema of the query tool's arguments (the REST route's body)."""
    return {"type": "object", "required": ["query"], "additionalProperties": False,
            "properties": {"query": {"type": "string", "maxLength": max_question_chars,
                                     "description": "The question, in natural language."}}}


def query_tool_server(name: str, wrapper, max_question_chars: int = 2000):
    """An MCP ``Server`` whose only tool is ``name``: it answers ``{"query": ...}`` with ``wrapper.run_api``."""
    from mcp import types
    from mcp.server.lowlevel import Server
    from starlette.concurrency import run_in_threadpool

    server = Server(f"spanqa-{name}")
    tool = types.Tool(name=name, inputSchema=query_tool_schema(max_question_chars),
                      description=f"Answer a question from the sources of the spanqa pipeline '{name}': the answer "
                                  "(null when not found in the source), its verdict, confidence and the exact "
                                  "character spans it was read from.")

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        return [tool]

    @server.call_tool(validate_input=False)
    async def call_tool(tool_name: str, arguments: dict[str, Any]) -> list[types.TextContent]:
        if tool_name not in allowed_tools(name):
            raise ValueError(f"unknown tool {one_line(tool_name, 80)!r}: this server offers only {name!r}")
        unknown = sorted(set(arguments or {}) - {"query"})
        if unknown:
            raise ValueError(f"unknown argument(s) {unknown}: the tool takes only 'query'")
        carried = getattr(server.request_context, "request", None)
        state = (getattr(carried, "scope", None) or {}).get("state") or {}
        token = REQUESTER.set(state.get("principal"))
        try:
            result = await run_in_threadpool(wrapper.run_api, query=(arguments or {}).get("query"))
        except Refused as exc:
            raise ValueError(f"{exc.status}: {exc.reason}") from None
        finally:
            REQUESTER.reset(token)
        return [types.TextContent(type="text", text=json.dumps(result))]

    return server


def json_depth(value: Any) -> int:
    """How deeply ``value`` (parsed JSON) nests lists and objects, counted without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (list, dict)):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))
    return deepest


def check_json_message(raw: bytes) -> None:
    """``Refused(400/413)`` unless ``raw`` is JSON the MCP transport can parse safely (``limits.parse_json``, as
    REST's bodies) and nests at most ``MAX_JSON_DEPTH`` levels."""
    if json_depth(parse_json(raw)) > MAX_JSON_DEPTH:
        raise Refused(400, f"malformed JSON: nested more than {MAX_JSON_DEPTH} levels deep")


class JsonBodyCheck:
    """ASGI wrapper of the MCP app: a POST body that is not safe JSON is answered 400/413 with one line before the
    MCP SDK parses it (it answered 500 to deep nesting and huge numbers); other requests pass untouched."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") != "POST":
            return await self.app(scope, receive, send)
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > MAX_BODY_BYTES or not message.get("more_body"):
                break
        raw = b"".join(chunks)
        try:
            check_json_message(raw)
        except Refused as exc:
            from starlette.responses import JSONResponse

            return await JSONResponse({"detail": exc.reason}, status_code=exc.status)(scope, receive, send)
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": raw, "more_body": False}
            return await receive()

        return await self.app(scope, replay, send)
