"""Who may ask: API keys (``Authorization: Bearer <key>``) mapped to a principal and its groups.

The keys file (``run.py --serve --keys FILE`` or ``SPANQA_KEYS_FILE``) is a JSON object::

    {"sk-alice-…": {"principal": "alice", "groups": ["finance"]},
     "sha256:9f86d0…": {"principal": "bob", "groups": []}}

A key may be written as itself or as ``sha256:<hex digest>`` of it (so the file need not hold the secret). Keys
are compared as SHA-256 digests with ``hmac.compare_digest`` against every entry (no early exit), so the time
taken does not tell how much of a key was right. ``AuthGuard`` (ASGI) lets through only the answer page's own
files and ``/ready`` without a key; everything else — REST, chat, models, MCP, sources, docs — answers 401 with
one line and ``WWW-Authenticate: Bearer``. The principal of a request is in ``scope["state"]["principal"]``.

    keys = load_keys("keys.json")                       # SpanQAError in one paragraph when the file is wrong
    principal_for(keys, "Bearer sk-alice-…")            # Principal("alice", ("finance",)) or None
"""

from __future__ import annotations

import hashlib
import hmac
import contextvars
import json
from dataclasses import dataclass
from pathlib import Path

from components.core.errors import SpanQAError

OPEN_PATHS = ("/ready",)                # readiness stays open: without a key it says only whether it is ready
OPEN_PREFIXES = ("/page/",)             # the answer page's script and style: no data in them
OPEN_EXACT_GET = ("/",)                 # the page itself: it asks for a key and sends it with its calls


@dataclass(frozen=True)
class Principal:
    name: str
    groups: tuple[str, ...] = ()


def digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def load_keys(path: str | Path) -> dict[str, Principal]:
    """``{sha256 hex digest: Principal}`` from a keys file, or a one-paragraph ``SpanQAError``."""
    where = f"Keys file '{path}'"
    duplicates: list[str] = []

    def pairs(items):
        seen = {}
        for key, value in items:
            if key in seen:
                duplicates.append(key)
            seen[key] = value
        return seen

    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"), object_pairs_hook=pairs)
    except FileNotFoundError:
        raise SpanQAError(f"{where} does not exist. Create it (README, \"Security\": a JSON object mapping each key "
                          f"to {{\"principal\": name, \"groups\": [...]}}) or drop --keys.") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SpanQAError(f"{where} cannot be read as JSON ({type(exc).__name__}: {str(exc)[:120]}).") from None
    if not isinstance(raw, dict) or not raw:
        raise SpanQAError(f"{where} must be a non-empty JSON object mapping each key to "
                          f"{{\"principal\": name, \"groups\": [...]}}.")
    if duplicates:  # JSON lets a key repeat and keeps the last: which principal was meant?
        raise SpanQAError(f"{where} lists {len(duplicates)} key(s) twice (one entry each: "
                          f"{', '.join(_masked(k) for k in duplicates[:3])}); keep one entry per key.")
    warn_if_readable_by_others(Path(path))
    keys: dict[str, Principal] = {}
    for n, (key, entry) in enumerate(raw.items(), 1):
        if isinstance(key, str) and key != key.strip():
            raise SpanQAError(f"{where}: key #{n} starts or ends with whitespace, which no 'Authorization: Bearer' "
                              f"header can carry (it could never match); remove the spaces.")
        if not isinstance(key, str) or len(key.strip()) < 16 and not key.startswith("sha256:"):
            raise SpanQAError(f"{where}: key #{n} is shorter than 16 characters; use a long random key "
                              f"(e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))').")
        if not isinstance(entry, dict) or not isinstance(entry.get("principal"), str) or not entry["principal"]:
            raise SpanQAError(f"{where}: the entry of key #{n} must be {{\"principal\": \"name\", \"groups\": [...]}}.")
        groups = entry.get("groups", [])
        if not isinstance(groups, list) or not all(isinstance(g, str) and g for g in groups):
            raise SpanQAError(f"{where}: 'groups' of principal '{entry['principal']}' must be a list of names.")
        if key.startswith("sha256:"):
            hexd = key[len("sha256:"):].lower()
            if len(hexd) != 64 or any(c not in "0123456789abcdef" for c in hexd):
                raise SpanQAError(f"{where}: key #{n} starts with 'sha256:' but is not a 64-digit hex digest.")
        else:
            hexd = digest(key)
        keys[hexd] = Principal(entry["principal"], tuple(groups))
    return keys


def _masked(key: str) -> str:
    return key if key.startswith("sha256:") else key[:6] + "…"


def warn_if_readable_by_others(path: Path) -> None:
    """One line on stderr when the keys file may be read by other users of the machine (its keys are secrets)."""
    import stat
    import sys

    try:
        mode = path.stat().st_mode
    except OSError:
        return
    if mode & (stat.S_IRGRP | stat.S_IROTH):
        print(f"spanqa: warning: keys file '{path}' is readable by other users (mode {stat.filemode(mode)}); "
              f"chmod 600 it, or store sha256: digests instead of keys", file=sys.stderr, flush=True)


def principal_for(keys: dict[str, Principal], authorization: str | None) -> Principal | None:
    """The principal of an ``Authorization: Bearer <key>`` header value, or None. Constant time in the key."""
    if not authorization or not authorization[:7].lower() == "bearer ":
        return None
    presented = digest(authorization[7:].strip())
    found = None
    for stored, principal in keys.items():  # every entry is compared: no early exit
        if hmac.compare_digest(stored, presented):
            found = principal
    return found


def is_open(method: str, path: str) -> bool:
    return path in OPEN_PATHS or path.startswith(OPEN_PREFIXES) or (method == "GET" and path in OPEN_EXACT_GET)


# the principal of the request being served (None: no keys configured, or a route that needs none). Set around the
# rest of the app, so the route and what it runs in the thread pool (contextvars are copied) can read it.
REQUESTER: contextvars.ContextVar[Principal | None] = contextvars.ContextVar("spanqa_requester", default=None)


def requester_groups() -> list[str]:
    """The groups of the request being served: an anonymous request (no keys configured) has none, so it reads
    only documents without an access list (fail closed: never more than a key would give)."""
    principal = REQUESTER.get()
    return list(principal.groups) if principal is not None else []


def requester_name() -> str:
    principal = REQUESTER.get()
    return principal.name if principal is not None else "anonymous"


class AuthGuard:
    """ASGI middleware: a valid key for every request but the page's files and readiness."""

    def __init__(self, app, *, keys: dict[str, Principal]):
        self.app, self.keys = app, keys

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        method, path = scope.get("method", "GET"), scope.get("path", "")
        if method == "OPTIONS":  # a CORS preflight carries no credentials
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        header = headers.get("authorization")
        principal = principal_for(self.keys, header)
        if principal is None and is_open(method, path):  # open without a key, and then anonymous (/ready: bare)
            return await self.app(scope, receive, send)
        if principal is not None:
            scope.setdefault("state", {})["principal"] = principal
            token = REQUESTER.set(principal)
            try:
                return await self.app(scope, receive, send)
            finally:
                REQUESTER.reset(token)
        reason = ("this server needs an API key: send 'Authorization: Bearer <key>'" if not header
                  else "the API key is not valid (unknown key, or not sent as 'Authorization: Bearer <key>')")
        if scope["type"] == "websocket":
            return await send({"type": "websocket.close", "code": 1008})
        body = json.dumps({"detail": reason}).encode()
        await send({"type": "http.response.start", "status": 401, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
            (b"www-authenticate", b'Bearer realm="spanqa"')]})
        await send({"type": "http.response.body", "body": body})
