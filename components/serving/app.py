"""The Hayhooks server of one spanqa pipeline (``run.py PIPELINE.yaml --serve``).

Hayhooks' app (``create_app``: status, OpenAI-compatible ``/v1/chat/completions``, deploy-yaml) with the
pipeline deployed through its ``PipelineWrapper`` under the YAML file's stem, plus:

- ``POST /{name}/run`` — ``{"query": ...}`` → exactly the ``run.py --json`` object (Hayhooks' own route would
  wrap it as ``{"result": ...}``, so it is replaced by one that returns the wrapper's ``run_api`` as is);
- ``GET /ready`` — 200 once models are loaded and the corpus indexed, 503 before (or when warm-up failed);
- ``GET /{name}/source`` — the source passage around a span, for the page;
- ``GET /`` — the answer page (``page/``); ``/mcp/mcp/`` — MCP (Streamable HTTP; SSE at ``/mcp/sse``) with the
  pipeline's query tool as its only tool (``mcp_tools``: no deploy/undeploy);
- every refusal or failure as ``{"detail": "<one line>"}`` with a 4xx/5xx status, never a traceback.
"""

from __future__ import annotations

import contextlib
import html
import os
import sys
import threading
from pathlib import Path
from types import ModuleType

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool

from components.serving.limits import (MAX_BODY_BYTES, Refused, classify_failure, describe_validation_errors,
                                       parse_body)
from components.serving.auth import AuthGuard, load_keys, requester_groups
from components.serving.origin_guard import OriginGuard, normalise_origins
from components.serving.slow_clients import http_protocol
from components.serving.wrapper import ServingConfig, SpanQAPipelineWrapper, wrapper_class

PAGE_DIR = Path(__file__).parent / "page"
DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 1416


def configure_hayhooks(host: str, port: int, cors_origins=()) -> None:
    """Hayhooks settings for a spanqa server (before ``create_app``): no startup deploy of ``./pipelines``
    (its YAMLs would all be deployed) and no pipelines folder at all, local tracing and
    monitoring off unless their ``HAYHOOKS_*`` variables ask for them (they add work to every request), and
    CORS only for the YAML's allow-list (Hayhooks answers ``*`` by default: any page could read answers)."""
    from hayhooks.settings import settings

    settings.host, settings.port = host, port
    settings.cors_allow_origins = sorted(normalise_origins(cors_origins))
    settings.cors_allow_methods, settings.cors_allow_headers = ["GET", "POST"], ["Content-Type", "Authorization"]
    settings.cors_allow_origin_regex, settings.cors_allow_credentials = None, False
    if "HAYHOOKS_PIPELINES_DIR" not in os.environ:
        # no folder at all: Hayhooks deploys a folder's pipelines at startup only when it names one, and spanqa's
        # pipeline is committed in memory (``deploy``), so nothing is written and nothing is left behind when
        # uvicorn re-raises SIGTERM after its graceful shutdown (which skips atexit)
        settings.pipelines_dir = ""
    for key, attr in (("HAYHOOKS_TRACING_ENABLED", "tracing_enabled"),
                      ("HAYHOOKS_MONITORING_ENABLED", "monitoring_enabled"),
                      ("HAYHOOKS_TRACING_INCLUDE_HAYSTACK_SPANS", "tracing_include_haystack_spans")):
        if key not in os.environ:
            setattr(settings, attr, False)
    # `hayhooks pipeline deploy-yaml` of a spanqa YAML must be able to build its components
    os.environ.setdefault("HAYSTACK_DESERIALIZATION_ALLOWLIST", "haystack.*,components.*")


def deploy(app: FastAPI, config: ServingConfig) -> SpanQAPipelineWrapper:
    """Deploy ``config``'s pipeline into ``app`` through Hayhooks (registry, MCP tool, OpenAI model name)."""
    from hayhooks.server.utils.deploy_utils import commit_prepared_pipeline
    from hayhooks.server.utils.models import PreparedPipeline
    from hayhooks.server.utils.module_loader import create_pipeline_wrapper_instance

    module = ModuleType(f"spanqa_serving_{config.name}")
    module.PipelineWrapper = wrapper_class(config)
    wrapper = create_pipeline_wrapper_instance(module)
    commit_prepared_pipeline(PreparedPipeline(name=config.name, wrapper=wrapper), app=app, overwrite=True,
                             cleanup_files_on_overwrite=False)  # no files: it is committed in memory
    return wrapper


def _replace_route(app: FastAPI, path: str, method: str) -> None:
    app.router.routes[:] = [r for r in app.router.routes
                            if not (getattr(r, "path", None) == path and method in (getattr(r, "methods", None) or ()))]


_ASIDE = None  # the threads of source passages and page images: never queued behind the answers' threads


async def _aside(fn, *args):
    """``fn(*args)`` in a thread of its own small pool, so /source and /page_image answer while the shared thread
    pool is full of questions (measured: /source waited 13 s behind 100 questions)."""
    import anyio.to_thread

    global _ASIDE
    if _ASIDE is None:
        _ASIDE = anyio.CapacityLimiter(8)
    return await anyio.to_thread.run_sync(lambda: fn(*args), limiter=_ASIDE)


def add_routes(app: FastAPI, config: ServingConfig, wrapper: SpanQAPipelineWrapper) -> None:
    """The run route (bare result), readiness, the source passage and the page."""
    name = config.name
    _replace_route(app, f"/{name}/run", "POST")

    @app.post(f"/{name}/run", tags=["pipelines"], summary=f"Ask {name}: {{\"query\": ...}} → the run.py --json object",
              openapi_extra={"requestBody": {"required": True, "content": {"application/json": {"schema": {
                  "type": "object", "required": ["query"], "additionalProperties": False,
                  "properties": {"query": {"type": "string", "maxLength": config.max_question_chars}}}}}}})
    async def run(request: Request) -> JSONResponse:
        body = parse_body(await request.body())  # the OriginGuard already refused an oversized body, declared or not
        return JSONResponse(await run_in_threadpool(wrapper.run_api, query=body["query"]))

    @app.get("/ready", tags=["status"], summary="200 once models are loaded and the corpus is indexed, else 503")
    async def ready() -> JSONResponse:
        from components.serving.auth import REQUESTER
        from components.serving.wrapper import readable_index

        state, index = wrapper.readiness, None
        if REQUESTER.get() is not None:  # a valid key: what it may know of the index; without one, nothing
            index = await _aside(readable_index, wrapper.runner.store(), wrapper.access_rule(), requester_groups(),
                                 state.index) if state.ready else {}
        return JSONResponse(state.as_json(name, index), status_code=200 if state.ready else 503,
                            headers=None if state.ready else {"Retry-After": "2"})

    @app.get(f"/{name}/source", tags=["pipelines"], summary="The source passage around a span (doc_id, offsets)")
    async def source(doc_id: str, char_start: int, char_end: int) -> JSONResponse:
        from components.serving.passage import source_passage

        wrapper._require_ready()
        return JSONResponse(await _aside(source_passage, wrapper.runner.store(), doc_id, char_start, char_end,
                                         wrapper.access_rule(), requester_groups()))

    @app.get(f"/{name}/page_image", tags=["pipelines"], response_class=Response,
             summary="A PDF page rendered as PNG with the span [char_start, char_end) highlighted")
    async def page_image(doc_id: str, page: int, char_start: int, char_end: int, evidence: str = "") -> Response:
        from components.serving.page_image import page_image as render

        wrapper._require_ready()
        png = await _aside(render, wrapper.runner.store(), doc_id, page, char_start, char_end, evidence,
                           wrapper.access_rule(), requester_groups())
        return Response(png, media_type="image/png", headers={"Cache-Control": "no-store"})

    page = (PAGE_DIR / "index.html").read_text(encoding="utf-8")
    page = page.replace("{{PIPELINE}}", html.escape(name, quote=True)).replace(
        "{{READING}}", "true" if wrapper.runner.readers else "false")

    @app.get("/", include_in_schema=False)
    async def index() -> HTMLResponse:
        return HTMLResponse(page, headers={"Content-Security-Policy": "default-src 'self'; img-src 'self' blob:; frame-ancestors 'none'"})

    app.mount("/page", StaticFiles(directory=PAGE_DIR), name="spanqa-page")


def add_error_handlers(app: FastAPI) -> None:
    """Every refusal and failure as ``{"detail": one line}`` with its status; never a traceback."""

    @app.exception_handler(Refused)
    async def refused(_request: Request, exc: Refused) -> JSONResponse:
        return JSONResponse({"detail": exc.reason}, status_code=exc.status, headers=exc.headers or None)

    @app.exception_handler(RequestValidationError)
    async def invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        status, reason = describe_validation_errors(list(exc.errors()))
        return JSONResponse({"detail": reason}, status_code=status)

    @app.exception_handler(Exception)
    async def failed(_request: Request, exc: Exception) -> JSONResponse:
        status, reason = classify_failure(exc)
        return JSONResponse({"detail": reason}, status_code=status)


def mount_mcp(app: FastAPI, config: ServingConfig, wrapper: SpanQAPipelineWrapper):
    """The MCP server under ``/mcp`` with the pipeline's one query tool (``mcp_tools``: Hayhooks' own MCP server
    also offers deploy/undeploy, i.e. code from any caller); returns its app, whose lifespan (the session manager)
    the main lifespan must run. ``None`` without the ``mcp`` package."""
    try:
        from hayhooks.server.utils.mcp_utils import create_starlette_app
    except ImportError:
        return None
    from components.serving.mcp_tools import JsonBodyCheck, query_tool_server

    mcp_app = create_starlette_app(query_tool_server(config.name, wrapper, config.max_question_chars))
    app.mount("/mcp", JsonBodyCheck(mcp_app), name="mcp")
    return mcp_app


def _warm_up(app: FastAPI, wrapper: SpanQAPipelineWrapper) -> None:
    """Warm the wrapper; when that fails, call ``app.state.spanqa_on_warm_up_failure`` (``serve`` stops the server
    then, so a bad ``--data`` ends as it does for queries: one paragraph, exit code 2)."""
    if wrapper.warm_up().state == "failed":
        callback = getattr(app.state, "spanqa_on_warm_up_failure", None)
        if callback is not None:
            callback()


def _chain_lifespan(app: FastAPI, mcp_app, wrapper: SpanQAPipelineWrapper) -> None:
    """Run Hayhooks' lifespan and the MCP session manager, and start warm-up in the background, so the server
    answers ``/ready`` (503) at once and turns ready when models and index are loaded."""
    hayhooks_lifespan = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(a):
        async with hayhooks_lifespan(a):
            async with (mcp_app.router.lifespan_context(mcp_app) if mcp_app is not None
                        else contextlib.nullcontext()):
                threading.Thread(target=_warm_up, args=(app, wrapper), name="spanqa-warm-up", daemon=True).start()
                yield

    app.router.lifespan_context = lifespan


DEPLOY_PATHS = ("/deploy-yaml", "/deploy_files", "/undeploy/{pipeline_name}", "/draw/{pipeline_name}")


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or name to listen on) is reachable from this machine only."""
    import ipaddress

    if host in ("localhost", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _paths(route) -> list[str]:
    """The paths a top-level route serves (FastAPI ≥ 0.16x keeps an included router as one entry)."""
    inner = getattr(route, "original_router", None)
    if inner is not None:
        return [p for r in inner.routes for p in _paths(r)]
    return [route.path] if getattr(route, "path", None) else []


def remove_deploy_routes(app: FastAPI) -> list[str]:
    """Drop Hayhooks' deploy/undeploy routers (they accept a pipeline YAML, i.e. code to run) and its draw router
    (it fetches from an outside web service); their paths. ``routes.RouteAllowList`` refuses anything else unlisted."""
    drop = [r for r in app.router.routes if _paths(r) and set(_paths(r)) <= set(DEPLOY_PATHS)]
    app.router.routes[:] = [r for r in app.router.routes if r not in drop]
    return [p for r in drop for p in _paths(r)]


def build_app(config: ServingConfig, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
              keys: dict | None = None) -> FastAPI:
    """The Hayhooks app serving ``config``'s pipeline (not started; ``serve`` runs it with uvicorn).

    Hayhooks' deploy/undeploy endpoints are removed wherever the server listens, with or without keys: a pipeline
    YAML or wrapper is code, and on loopback any web page the user opens could post one. Every request passes the
    ``OriginGuard`` first (Host, Origin, JSON bodies, the body limit), then — with ``keys`` — the ``AuthGuard``."""
    meta = (config.spec.get("metadata") or {}).get("spanqa") or {}
    configure_hayhooks(host, port, meta.get("cors_origins") or ())
    from hayhooks import create_app

    app = create_app()
    remove_deploy_routes(app)
    wrapper = deploy(app, config)
    add_routes(app, config, wrapper)
    add_error_handlers(app)
    _chain_lifespan(app, mount_mcp(app, config, wrapper), wrapper)
    from components.serving.routes import RouteAllowList, allowed_openapi, served_paths

    allowed_openapi(app, served_paths(config.name))
    app.add_middleware(RouteAllowList, patterns=served_paths(config.name))  # /draw, /files, … : 404, never run
    if keys:  # inside the cross-site guard: a refused origin never learns whether a key was right
        app.add_middleware(AuthGuard, keys=keys)
    app.add_middleware(OriginGuard, allowed_hosts=meta.get("allowed_hosts") or (), max_body_bytes=MAX_BODY_BYTES,
                       cors_origins=meta.get("cors_origins") or ())  # outermost: before CORS and every route
    app.state.spanqa_wrapper = wrapper
    return app


def config_from_args(args) -> ServingConfig:
    """A ``ServingConfig`` from ``run.py``'s options (``--data``, ``--cache-dir``, ``--min-confidence``, …)."""
    from components.app.pipeline_io import load_pipeline
    from components.serving.limits import max_question_chars

    pipeline, spec = load_pipeline(args.pipeline, data=args.data, cache_dir=args.cache_dir)
    meta = (spec.get("metadata") or {}).get("spanqa") or {}
    return ServingConfig(
        name=Path(args.pipeline).stem, pipeline=pipeline, spec=spec, max_question_chars=max_question_chars(spec),
        audit_log=None if args.no_audit else meta.get("audit_log"), answer_cache_ttl_s=meta.get("answer_cache_ttl_s"),
        min_confidence=args.min_confidence, top_k=args.top_k, filters=args.filters)


def serve(args) -> int:
    """``run.py --serve``: load the pipeline (errors are one paragraph), then run the server until stopped."""
    import uvicorn

    from components.core.params import check_positive_int

    from components.core.errors import SpanQAError

    clashing = [flag for flag, value in (("--query", args.query), ("--eval", args.eval), ("--calibrate", args.calibrate),
                                         ("--report", args.report)) if value]
    if clashing:
        raise SpanQAError(f"--serve answers questions sent over HTTP; it does not take {', '.join(clashing)}. Run "
                          f"the server and POST {{\"query\": ...}} to /{Path(args.pipeline).stem}/run, or drop --serve.")
    host, port = args.host or DEFAULT_HOST, DEFAULT_PORT if args.port is None else args.port
    check_positive_int("run.py", "--port", port)
    if os.environ.get("SPANQA_KEYS_FILE") is not None and not os.environ["SPANQA_KEYS_FILE"].strip() \
            and not getattr(args, "keys", None):  # set but empty: a mistake, never "serve without keys"
        raise SpanQAError("SPANQA_KEYS_FILE is set but empty: name the keys file (--keys FILE or "
                          "SPANQA_KEYS_FILE=path), or unset the variable to serve without keys on loopback.")
    keys_file = getattr(args, "keys", None) or os.environ.get("SPANQA_KEYS_FILE")
    keys = load_keys(keys_file) if keys_file else None
    if keys is None and not is_loopback(host):
        raise SpanQAError(f"--serve on {host} reaches beyond this machine, so it needs API keys: pass --keys FILE "
                          f"(or set SPANQA_KEYS_FILE) with a JSON object mapping each key to {{\"principal\": name, "
                          f"\"groups\": [...]}} (docs/security.md), or listen on 127.0.0.1.")
    config = config_from_args(args)
    app = build_app(config, host, port, keys=keys)
    if keys is None:
        print("spanqa: no --keys: the server is open to every program on this machine (loopback only; web pages "
              "on other origins are still refused)", file=sys.stderr, flush=True)
    else:
        print(f"spanqa: {len(keys)} API key(s) from {keys_file}: every endpoint but the page's files and /ready "
              f"needs 'Authorization: Bearer <key>'", file=sys.stderr, flush=True)
    print(f"spanqa: serving '{config.name}' on http://{host}:{port}/ — POST /{config.name}/run, GET /ready, "
          f"POST /v1/chat/completions (model '{config.name}'), MCP /mcp/mcp/; warming up …", file=sys.stderr, flush=True)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_config=None, access_log=False,
                                           timeout_graceful_shutdown=5, http=http_protocol()))
    app.state.spanqa_on_warm_up_failure = lambda: setattr(server, "should_exit", True)
    server.run()
    failure = app.state.spanqa_wrapper.readiness.error
    if failure is not None:
        if isinstance(failure, SpanQAError):
            raise failure
        raise SpanQAError(f"The server stopped: {app.state.spanqa_wrapper.readiness.reason}") from None
    return 0
