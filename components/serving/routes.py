"""The routes a spanqa server serves: an allow-list, so that what Hayhooks adds is off until spanqa chooses it.

Hayhooks' app brings routes spanqa does not want: deploy/undeploy (a pipeline YAML or wrapper is code),
``/draw/{name}`` (it fetches a diagram from an outside web service — an offline server must never call out, and
any page could trigger it with an ``<img>``), and OpenAI ``/responses`` and ``/files``, which spanqa does not
implement. Rather than remove the ones known today, ``RouteAllowList`` answers 404 to every path not listed here,
and ``allowed_openapi`` leaves them out of ``/openapi.json`` — a Hayhooks upgrade that adds a route adds nothing
to a spanqa server (``tests/serving/test_routes.py`` asserts the served paths exactly).

    app.add_middleware(RouteAllowList, patterns=served_paths("extractive"))
"""

from __future__ import annotations

import json
import re

# Hayhooks' own routes that spanqa keeps: its API docs, pipeline status and the OpenAI-compatible chat
HAYHOOKS_PATHS = ("/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc", "/status", "/status/{pipeline_name}",
                  "/models", "/v1/models", "/chat/completions", "/v1/chat/completions")
# spanqa's routes (app.py); "{name}" is the pipeline's name, a trailing "*" a mounted app's subtree
SPANQA_PATHS = ("/", "/ready", "/{name}/run", "/{name}/source", "/{name}/page_image", "/page/*", "/mcp/*")


def served_paths(name: str) -> tuple[str, ...]:
    """Every path template a server of pipeline ``name`` answers."""
    return HAYHOOKS_PATHS + tuple(p.replace("{name}", name) for p in SPANQA_PATHS)


def compile_paths(patterns) -> re.Pattern:
    """One regular expression matching a path that one of ``patterns`` allows (``{x}``: one segment)."""
    parts = []
    for p in patterns:
        if p.endswith("/*"):
            parts.append(re.escape(p[:-2]) + r"(?:/.*)?")
        else:
            parts.append(re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(p)))
    return re.compile("(?:" + "|".join(parts) + ")")


def allowed_openapi(app, patterns) -> None:
    """``app``'s OpenAPI schema without the paths the allow-list refuses."""
    matcher, original = compile_paths(patterns), app.openapi

    def openapi():
        schema = original()
        schema["paths"] = {p: v for p, v in schema.get("paths", {}).items() if matcher.fullmatch(p)}
        return schema

    app.openapi = openapi


class RouteAllowList:
    """ASGI middleware: 404 with one line for any path the server does not serve (before any route runs)."""

    def __init__(self, app, *, patterns):
        self.app, self.matcher = app, compile_paths(patterns)

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket") or self.matcher.fullmatch(scope.get("path", "")):
            return await self.app(scope, receive, send)
        if scope["type"] == "websocket":
            return await send({"type": "websocket.close", "code": 1008})
        body = json.dumps({"detail": f"no such route: {scope.get('path', '')[:120]}"}).encode()
        await send({"type": "http.response.start", "status": 404,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
