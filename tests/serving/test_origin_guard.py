"""The cross-site rules on their own (components/serving/origin_guard.py): which Host, Origin and body type pass."""

from __future__ import annotations

import asyncio
import json

import pytest

from components.serving.origin_guard import OriginGuard, host_allowed, json_body, origin_allowed


@pytest.mark.parametrize("host, listed, ok", [
    ("127.0.0.1:1416", set(), True),
    ("localhost:1416", set(), True),
    ("[::1]:1416", set(), True),
    ("10.0.0.5", set(), True),                       # an IP literal cannot be DNS-rebound
    ("attacker.example:1416", set(), False),         # a name could be: refused unless listed
    ("rebind.test", set(), False),
    ("qa.intranet:1416", {"qa.intranet"}, True),     # listed name, any port
    ("qa.intranet:1416", {"qa.intranet:8443"}, False),
    ("qa.intranet:8443", {"qa.intranet:8443"}, True),
    ("", set(), False),
    (None, set(), False),
])
def test_host_allowed(host, listed, ok):
    assert host_allowed(host, listed) is ok


@pytest.mark.parametrize("origin, host, listed, ok", [
    ("http://127.0.0.1:1416", "127.0.0.1:1416", set(), True),          # the page the server serves itself
    ("http://127.0.0.1:8000", "127.0.0.1:1416", set(), False),         # another port is another origin
    ("http://localhost:1416", "127.0.0.1:1416", set(), False),         # another host name too
    ("http://evil.example", "127.0.0.1:1416", set(), False),
    ("null", "127.0.0.1:1416", set(), False),                          # sandboxed frames, file: pages
    ("https://127.0.0.1:1416", "127.0.0.1:1416", set(), True),
    ("http://127.0.0.1", "127.0.0.1", set(), True),                    # default ports on both sides
    ("https://intranet.example.org", "127.0.0.1:1416", {"https://intranet.example.org"}, True),
    ("https://intranet.example.org/", "127.0.0.1:1416", {"https://intranet.example.org"}, True),
    ("http://127.0.0.1:99999", "127.0.0.1:99999", set(), False),       # an invalid port is no origin
])
def test_origin_allowed(origin, host, listed, ok):
    assert origin_allowed(origin, host, listed) is ok


@pytest.mark.parametrize("content_type, ok", [
    ("application/json", True), ("application/json; charset=utf-8", True), ("Application/JSON", True),
    ("application/merge-patch+json", True), ("text/plain", False), ("text/plain;charset=UTF-8", False),
    ("application/x-www-form-urlencoded", False), ("multipart/form-data; boundary=x", False), (None, False),
])
def test_json_body(content_type, ok):
    assert json_body(content_type) is ok


def _call(headers: dict, method: str = "POST"):
    """One request through the guard; ``(status, detail or None when the inner app ran)``."""
    ran = []

    async def inner(scope, receive, send):
        ran.append(scope["path"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    sent = []

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": method, "path": "/extractive/run",
             "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()]}
    asyncio.run(OriginGuard(inner, cors_origins=["https://ok.example"])(scope, None, send))
    status = sent[0]["status"]
    return status, (None if ran else json.loads(sent[1]["body"])["detail"])


def test_guard_refuses_before_the_route_runs():
    base = {"Host": "127.0.0.1:1416", "Content-Type": "application/json", "Content-Length": "20"}
    assert _call(base) == (200, None)
    assert _call({**base, "Origin": "http://127.0.0.1:1416"}) == (200, None)
    assert _call({**base, "Origin": "https://ok.example"}) == (200, None)
    status, detail = _call({**base, "Origin": "http://evil.example"})
    assert status == 403 and "cross-origin request from 'http://evil.example' refused" in detail
    assert "metadata.spanqa.cors_origins" in detail
    status, detail = _call({**base, "Host": "rebind.test:1416"})
    assert status == 403 and "Host 'rebind.test:1416'" in detail and "metadata.spanqa.allowed_hosts" in detail
    status, detail = _call({**base, "Content-Type": "text/plain"})
    assert status == 415 and "must be JSON" in detail and "'text/plain'" in detail
    no_type = {k: v for k, v in base.items() if k != "Content-Type"}
    assert _call(no_type)[0] == 415
    assert _call({**no_type, "Content-Length": "0"}) == (200, None)  # no body, nothing to smuggle
    assert _call({"Host": "127.0.0.1:1416", "Transfer-Encoding": "chunked"})[0] == 415
    assert _call({"Host": "127.0.0.1:1416"}, method="GET") == (200, None)


def test_a_body_that_does_not_arrive_in_time_is_408_and_a_complete_one_passes():
    import asyncio

    from components.serving.limits import Refused
    from components.serving.origin_guard import _limited_receive

    async def dribble():  # a first chunk, then nothing more
        if not hasattr(dribble, "sent"):
            dribble.sent = True
            return {"type": "http.request", "body": b'{"query": ', "more_body": True}
        await asyncio.sleep(60)

    async def whole():
        return {"type": "http.request", "body": b'{"query": "hi"}', "more_body": False}

    async def run():
        receive = _limited_receive(dribble, 1000, deadline_s=0.3)
        assert (await receive())["more_body"] is True
        try:
            await receive()
        except Refused as refused:
            return refused.status, refused.reason
        return None

    assert asyncio.run(run()) == (408, "the request body did not arrive within 0.3 s")
    assert asyncio.run(_limited_receive(whole, 1000, deadline_s=0.3)())["body"] == b'{"query": "hi"}'
