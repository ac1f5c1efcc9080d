"""A generative backend that does not answer in time: the request ends with 504 and one line, not a hang or a 500.
The backend is a deliberately slow OpenAI-compatible server on 127.0.0.1 in this process."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml

from tests.serving.conftest import ANSWERABLE, ROOT, Server, http


class _Slow(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 - http.server's name
        time.sleep(4)
        try:
            self.send_response(500)
            self.end_headers()
        except OSError:
            pass

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def slow_backend():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()


@pytest.fixture(scope="module")
def slow_server(slow_backend, tmp_path_factory):
    spec = yaml.safe_load((ROOT / "pipelines/generative.yaml").read_text())
    spec["components"]["reader"]["init_parameters"].update(backend="openai", base_url=slow_backend, model="slow",
                                                          timeout=1.0, api_key_env="SPANQA_TEST_NO_KEY")
    folder = tmp_path_factory.mktemp("slowgen")
    path = folder / "slowgen.yaml"
    path.write_text(yaml.safe_dump(spec))
    srv = Server(str(path), folder / "server.log", "--min-confidence", "0")
    try:
        srv.wait_ready()
        yield srv
    finally:
        srv.stop()


def test_backend_timeout_is_a_504_with_one_line(slow_server):
    status, body, _ = http("POST", f"{slow_server.url}/slowgen/run", {"query": ANSWERABLE})
    assert status == 504, body
    assert "timed out" in body["detail"] and "\n" not in body["detail"] and "Traceback" not in body["detail"]
    status, body, _ = http("POST", slow_server.url + "/v1/chat/completions",
                           {"model": "slowgen", "messages": [{"role": "user", "content": ANSWERABLE}]})
    assert status == 504 and "timed out" in body["detail"]
    status, body, _ = http("GET", slow_server.url + "/ready")
    assert status == 200  # a backend timeout does not take the server down
