"""No cross-site requests: the rules that keep a web page on another origin from driving the server through a
person's browser (CSRF, DNS rebinding), as a pure ASGI middleware in front of every route.

A request is refused before any route runs when

- its ``Host`` is not a name this server answers to (403): an IP literal, ``localhost``, or a name listed in
  ``metadata.spanqa.allowed_hosts``. DNS rebinding points an attacker's *name* at 127.0.0.1, so the browser
  sends that name as ``Host``; an IP literal or ``localhost`` cannot be rebound;
- it carries an ``Origin`` that is neither this server's own origin (same scheme, host and port as the
  request's ``Host``) nor listed in ``metadata.spanqa.cors_origins`` (403). Browsers send ``Origin`` with every
  cross-origin request and every POST, including ``mode: "no-cors"`` and form posts; ``Origin: null``
  (sandboxed frames, ``file:`` pages) is refused too;
- it sends a body (POST, PUT, PATCH, DELETE) that is not ``application/json`` (415): a form or ``text/plain``
  body is the one kind a page may send cross-site without a CORS preflight.

CORS is answered only for the listed origins (an allow-list, empty by default), by Hayhooks' own CORS
middleware, which this guard replaces the ``*`` of. Pure rules (``host_allowed``, ``origin_allowed``,
``json_body``) are functions so each is tested on its own::

    host_allowed("127.0.0.1:1416", set())            # True
    host_allowed("attacker.example:1416", set())      # False: a name that could be rebound
    origin_allowed("http://127.0.0.1:1416", "127.0.0.1:1416", set())   # True: same origin
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
from urllib.parse import urlsplit

BODY_METHODS = {"POST", "PUT", "PATCH", "DELETE"}


def _split_host(host: str) -> tuple[str, str]:
    """``(hostname, port)`` of a Host header value (``[::1]:8000`` → ``("::1", "8000")``)."""
    host = host.strip().lower()
    if host.startswith("["):
        name, _, rest = host[1:].partition("]")
        return name, rest.lstrip(":")
    name, _, port = host.partition(":") if host.count(":") == 1 else (host, "", "")
    return name, port


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return False


def host_allowed(host: str | None, allowed_hosts: set[str]) -> bool:
    """Whether a request's ``Host`` names this server: an IP literal, ``localhost``, or a listed name (a listed
    ``name`` matches any port, a listed ``name:port`` only that port)."""
    if not host:
        return False
    name, port = _split_host(host)
    if not name:
        return False
    if _is_ip(name) or name == "localhost":
        return True
    return name in allowed_hosts or f"{name}:{port}" in allowed_hosts


def origin_allowed(origin: str, host: str | None, cors_origins: set[str]) -> bool:
    """Whether a request's ``Origin`` is this server's own (same host and port as ``Host``) or listed."""
    origin = origin.strip()
    if origin.rstrip("/").lower() in cors_origins:
        return True
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https") or not parts.hostname or not host:
        return False
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return False
    name, host_port = _split_host(host)
    return parts.hostname.lower() == name and str(port) == (host_port or ("443" if parts.scheme == "https" else "80"))


def json_body(content_type: str | None) -> bool:
    """Whether a ``Content-Type`` declares JSON (``application/json`` or ``application/*+json``, any parameters)."""
    mime = (content_type or "").split(";", 1)[0].strip().lower()
    return mime == "application/json" or (mime.startswith("application/") and mime.endswith("+json"))


BODY_TIMEOUT_S = 30.0  # the whole body must arrive within this (a client sending a byte now and then is cut off)


def _limited_receive(receive, limit: int, deadline_s: float = BODY_TIMEOUT_S):
    """``receive`` that counts body bytes as they stream in (chunked bodies declare no length) and refuses the
    request with 413 once they pass ``limit`` — the body is never read whole before the refusal — and with 408
    when the body is not complete ``deadline_s`` after the app first asked for it."""
    from components.serving.limits import Refused

    seen, done, deadline = 0, False, None

    async def wrapped():
        nonlocal seen, done, deadline
        if done:  # after the body: waiting for a disconnect is the app's business, not a slow client
            return await receive()
        loop = asyncio.get_running_loop()
        deadline = deadline if deadline is not None else loop.time() + deadline_s
        try:
            message = await asyncio.wait_for(receive(), timeout=max(0.0, deadline - loop.time()))
        except asyncio.TimeoutError:
            raise Refused(408, f"the request body did not arrive within {deadline_s:g} s") from None
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                raise Refused(413, f"the request body passed the {limit:,}-byte limit while it was streaming in")
            done = not message.get("more_body", False)
        return message

    return wrapped


def cross_site_load(headers: dict[str, str], host: str | None, cors_origins: set[str]) -> str | None:
    """Why a request without an ``Origin`` header still comes from another site's page, or None: browsers send no
    Origin on an ``<img>`` or a link's GET, but say ``Sec-Fetch-Site: cross-site`` (or ``same-site``, another
    port or subdomain), and a ``Referer`` names the page. Such a load of a page image or a passage would tell that
    page whether a document exists (and its page count); the answer page's own loads are ``same-origin``. A client
    that sends neither header (curl, an SDK) is not a browser page and passes."""
    site = (headers.get("sec-fetch-site") or "").strip().lower()
    if site in ("cross-site", "same-site"):
        return f"a {site} load (Sec-Fetch-Site) from another page"
    referer = headers.get("referer")
    if referer:
        from urllib.parse import urlsplit

        parts = urlsplit(referer)
        origin = f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else referer
        if not origin_allowed(origin, host, cors_origins):
            return f"a load from the page {origin} (Referer)"
    return None


def _has_body(headers: dict[str, str]) -> bool:
    """Whether a request declares a body (a non-zero Content-Length, or any Transfer-Encoding)."""
    length = headers.get("content-length", "").strip()
    return "transfer-encoding" in headers or (length != "" and length != "0")


def normalise_origins(origins) -> set[str]:
    return {str(o).strip().rstrip("/").lower() for o in origins or ()}


class OriginGuard:
    """ASGI middleware applying the rules above to every HTTP and WebSocket request (``/ready`` included: a
    rebound name must not even learn that the server is there)."""

    def __init__(self, app, *, allowed_hosts=(), cors_origins=(), max_body_bytes: int | None = None):
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.allowed_hosts = {h.strip().lower() for h in allowed_hosts}
        self.cors_origins = normalise_origins(cors_origins)

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get("host")
        refusal = None
        if not host_allowed(host, self.allowed_hosts):
            refusal = (403, f"Host '{host}' is not a name this server answers to (it refuses names that could "
                            f"be DNS-rebound); use the address it listens on, or list the name in "
                            f"metadata.spanqa.allowed_hosts of the pipeline YAML")
        elif "origin" in headers and not origin_allowed(headers["origin"], host, self.cors_origins):
            refusal = (403, f"cross-origin request from '{headers['origin']}' refused; a page on another origin "
                            f"may call this server only when metadata.spanqa.cors_origins in the pipeline YAML lists it")
        elif "origin" not in headers and (why := cross_site_load(headers, host, self.cors_origins)):
            refusal = (403, f"cross-site request refused: {why}; a page on another origin may use this server only "
                            f"when metadata.spanqa.cors_origins in the pipeline YAML lists it")
        elif scope["type"] == "http" and scope.get("method") in BODY_METHODS and _has_body(headers) and not json_body(
                headers.get("content-type")):
            refusal = (415, f"the request body must be JSON (Content-Type: application/json), got "
                            f"'{headers.get('content-type', 'none')}'")
        length = headers.get("content-length", "").strip()
        if refusal is None and self.max_body_bytes is not None and length.isdigit() and int(length) > self.max_body_bytes:
            refusal = (413, f"the request body is {int(length):,} bytes, over the {self.max_body_bytes:,}-byte limit")
        if refusal is None:
            if self.max_body_bytes is not None and scope["type"] == "http":
                receive = _limited_receive(receive, self.max_body_bytes)
            return await self.app(scope, receive, send)
        if scope["type"] == "websocket":
            return await send({"type": "websocket.close", "code": 1008})
        status, reason = refusal
        body = json.dumps({"detail": reason}).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
