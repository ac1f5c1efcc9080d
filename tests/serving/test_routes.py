"""The server serves exactly its allow-list of routes (components/serving/routes.py) and never contacts another
host: a real server run with every proxy variable pointing at a recorder that counts connections, while every
route is requested — Hayhooks' /draw (which fetched a diagram from an outside service) included."""

from __future__ import annotations

import socket
import threading

import pytest

from components.serving.routes import compile_paths, served_paths
from tests.serving.conftest import Server, http

pytestmark = pytest.mark.slow


class Recorder:
    """A TCP listener that counts the connections made to it (what a proxy would see) and closes them."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port, self.connections = self.sock.getsockname()[1], 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()


def test_allow_list_patterns():
    m = compile_paths(served_paths("extractive"))
    for ok in ("/", "/ready", "/extractive/run", "/status/extractive", "/page/app.js", "/mcp/mcp/", "/mcp/sse",
               "/v1/chat/completions"):
        assert m.fullmatch(ok), ok
    for refused in ("/draw/extractive", "/deploy_files", "/deploy-yaml", "/undeploy/extractive", "/v1/files",
                    "/v1/responses", "/other/run", "/status/a/b", "/readyz", "/mcpx"):
        assert not m.fullmatch(refused), refused


def test_every_route_served_and_no_outbound_connection(tmp_path):
    recorder = Recorder()
    proxy = f"http://127.0.0.1:{recorder.port}"
    env = {k: proxy for k in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")}
    env.update(NO_PROXY="", no_proxy="")
    srv = Server("pipelines/retrieval.yaml", tmp_path / "server.log", env=env)
    try:
        srv.wait_ready()
        status, spec, _ = http("GET", srv.url + "/openapi.json")
        assert status == 200
        documented = set(spec["paths"])
        assert documented == {"/status", "/status/{pipeline_name}", "/models", "/v1/models", "/chat/completions",
                              "/v1/chat/completions", "/ready", "/retrieval/run", "/retrieval/source",
                              "/retrieval/page_image"}, sorted(documented)
        for path in ("/draw/retrieval", "/v1/files", "/v1/responses", "/deploy_files", "/undeploy/retrieval"):
            for method in ("GET", "POST"):
                got, body, _ = http(method, srv.url + path, body={} if method == "POST" else None)
                assert got == 404 and "no such route" in body["detail"], (method, path, got, body)
        requests = [("GET", "/"), ("GET", "/ready"), ("GET", "/docs"), ("GET", "/redoc"), ("GET", "/status"),
                    ("GET", "/status/retrieval"), ("GET", "/v1/models"), ("GET", "/page/app.js"),
                    ("POST", "/retrieval/run", {"query": "What does ERR-4012 mean?"}),
                    ("POST", "/v1/chat/completions", {"model": "retrieval",
                                                      "messages": [{"role": "user", "content": "ERR-4012"}]}),
                    ("GET", "/retrieval/source?doc_id=error-codes.md&char_start=0&char_end=5"),
                    ("GET", "/retrieval/page_image?doc_id=x.pdf&page=1&char_start=0&char_end=1"),
                    ("POST", "/mcp/mcp/", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})]
        for method, path, *body in requests:
            got, reply, _ = http(method, srv.url + path, body=body[0] if body else None)
            assert got < 500, (path, got, reply)
        assert recorder.connections == 0
    finally:
        srv.stop()
        recorder.sock.close()
