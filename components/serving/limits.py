"""What the server refuses, and how a failure is told to a client: an HTTP status and one line, never a traceback.

Pure functions (no FastAPI, no Haystack) so each rule is tested on its own::

    check_question("  ", 2000)        # raises Refused(400, "empty question: ...")
    classify_failure(exc)             # (504, "the generative backend timed out: ...") for a timeout in exc's chain
"""

from __future__ import annotations

import json
import urllib.error
from typing import Any

from components.core.errors import causes

DEFAULT_MAX_QUESTION_CHARS = 2000
MAX_BODY_BYTES = 1_000_000  # a question is a line of text; a megabyte of JSON is a mistake or an attack
MAX_REASON_CHARS = 400


class Refused(Exception):
    """A request the server will not run: ``status`` (4xx/5xx) and a one-line ``reason``."""

    def __init__(self, status: int, reason: str, headers: dict[str, str] | None = None):
        super().__init__(reason)
        self.status = status
        self.reason = one_line(reason)
        self.headers = headers or {}


def one_line(text: Any, limit: int = MAX_REASON_CHARS) -> str:
    """``text`` on one line (whitespace runs collapsed), cut to ``limit`` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def max_question_chars(spec: dict[str, Any]) -> int:
    """The question length limit of a pipeline YAML (``metadata.spanqa.max_question_chars``)."""
    meta = (spec.get("metadata") or {}).get("spanqa") or {}
    return int(meta.get("max_question_chars") or DEFAULT_MAX_QUESTION_CHARS)


def check_question(query: Any, limit: int) -> str:
    """The question to run (stripped), or ``Refused``: not a string 422, empty 400, over ``limit`` 413."""
    if not isinstance(query, str):
        raise Refused(422, f"'query' must be a string, got {type(query).__name__}: send {{\"query\": \"your question\"}}")
    question = query.strip()
    if not question:
        raise Refused(400, "empty question: send {\"query\": \"your question\"} with a non-empty question")
    if "\x00" in question:
        raise Refused(400, "the question contains a NUL character")
    try:
        question.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate (JSON "\ud800") is no text
        raise Refused(400, f"the question is not valid Unicode text (an unpaired surrogate at character "
                           f"{exc.start})") from None
    if len(question) > limit:
        raise Refused(413, f"the question is {len(question)} characters, over the limit of {limit} "
                           f"(metadata.spanqa.max_question_chars in the pipeline YAML)")
    return question


def parse_json(raw: bytes) -> Any:
    """The JSON value of a request body, or ``Refused`` (400 malformed — not UTF-8, nested too deeply, a number
    past Python's digit limit — or 413 too large). REST's bodies and MCP's messages are read alike."""
    if len(raw) > MAX_BODY_BYTES:
        raise Refused(413, f"the request body is {len(raw):,} bytes, over the {MAX_BODY_BYTES:,}-byte limit")
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise Refused(400, f"malformed JSON: the body is not UTF-8 (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise Refused(400, f"malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise Refused(400, "malformed JSON: nested too deeply") from None
    except ValueError as exc:  # an integer of thousands of digits (Python's int conversion limit)
        raise Refused(400, f"malformed JSON: {one_line(exc, 120)}") from None


def parse_body(raw: bytes) -> dict[str, Any]:
    """The JSON object of a request body, or ``Refused`` (400 malformed / 413 too large / 422 not an object)."""
    body = parse_json(raw)
    if not isinstance(body, dict):
        raise Refused(422, f"the body must be a JSON object like {{\"query\": \"your question\"}}, got "
                           f"{type(body).__name__}")
    if "query" not in body:
        raise Refused(422, "the body has no 'query': send {\"query\": \"your question\"}")
    unknown = sorted(set(body) - {"query"})
    if unknown:
        raise Refused(422, f"unknown field(s) {unknown}: the body takes only 'query'")
    return body


def describe_validation_errors(errors: list[dict[str, Any]]) -> tuple[int, str]:
    """FastAPI's request validation errors as ``(status, one line)``: malformed JSON is 400, the rest 422."""
    if any(e.get("type") == "json_invalid" for e in errors):
        first = next(e for e in errors if e.get("type") == "json_invalid")
        detail = (first.get("ctx") or {}).get("error") or first.get("msg") or "invalid JSON"
        return 400, one_line(f"malformed JSON: {detail}")
    parts = []
    for e in errors[:3]:
        where = ".".join(str(p) for p in e.get("loc", ()) if p != "body") or "body"
        parts.append(f"{where}: {e.get('msg', 'invalid')}")
    return 422, one_line("invalid request: " + "; ".join(parts))




def _is_timeout(exc: BaseException) -> bool:
    return isinstance(exc, TimeoutError) or (
        isinstance(exc, urllib.error.URLError) and isinstance(getattr(exc, "reason", None), TimeoutError))


def classify_failure(exc: BaseException) -> tuple[int, str]:
    """The status and one-line reason for an exception raised while answering.

    A timeout anywhere in the chain (the generative backend's HTTP call) is 504; a ``SpanQAError`` (a
    problem the operator can fix, e.g. an unreachable backend) is 502 with its message; anything else is 500
    naming the exception type and message — never a traceback."""
    from components.core.errors import SpanQAError

    from components.core.errors import ParameterError

    chain = list(causes(exc))
    if isinstance(exc, Refused):
        return exc.status, exc.reason
    for e in chain:  # a parameter out of range (a request's override, e.g. top_k): the request's fault
        if isinstance(e, ParameterError):
            return 422, one_line(str(e))
    for e in chain:
        if _is_timeout(e):
            told = next((c for c in chain if isinstance(c, SpanQAError)), e)
            return 504, one_line(f"the generative backend timed out: {told}")
    for e in chain:
        if isinstance(e, SpanQAError):
            return 502, one_line(str(e))
    root = chain[-1]
    return 500, one_line(f"internal error ({type(root).__name__}): {root}")
