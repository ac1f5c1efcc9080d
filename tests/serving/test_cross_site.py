"""No cross-site requests against the real server on 127.0.0.1: a page on another origin — a second loopback
port, opened in the real Chromium — cannot deploy code, ask, or read; a DNS-rebound name is refused; a body
that is not JSON is refused. Traffic goes to loopback only."""

from __future__ import annotations

import http.client
import json
import shutil
import subprocess
import sys
import time

import pytest

from tests.serving.conftest import ANSWERABLE, free_port

WRAPPER = """
from pathlib import Path
Path({marker!r}).write_text("the server ran code a web page sent")
from hayhooks import BasePipelineWrapper
class PipelineWrapper(BasePipelineWrapper):
    def setup(self): pass
    def run_api(self, query: str) -> str: return query
"""


def request(server, method, path, body=None, headers=None):
    """``(status, headers, parsed body)`` with full control of Host, Origin and Content-Type."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        headers = {"Host": f"127.0.0.1:{server.port}", **(headers or {})}
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        if data is not None:
            headers.setdefault("Content-Length", str(len(data)))
        for k, v in headers.items():
            conn.putheader(k, v)
        conn.endheaders(data)
        resp = conn.getresponse()
        raw = resp.read().decode()
        try:
            return resp.status, resp.headers, json.loads(raw)
        except json.JSONDecodeError:
            return resp.status, resp.headers, raw
    finally:
        conn.close()


def test_deploy_endpoints_are_off_on_loopback(server, tmp_path):
    marker = tmp_path / "pwned"
    files = {"name": "pwned", "files": {"pipeline_wrapper.py": WRAPPER.format(marker=str(marker))}, "overwrite": True}
    for path in ("/deploy_files", "/deploy-yaml", "/undeploy/extractive"):
        status, _, _ = request(server, "POST", path, files, {"Content-Type": "application/json"})
        assert status == 404, path  # not there at all, whoever asks
    status, _, body = request(server, "POST", "/deploy_files", files,
                              {"Content-Type": "application/json", "Origin": "http://evil.example"})
    assert status == 403 and "cross-origin" in body["detail"]
    assert not marker.exists()


def test_cross_origin_dns_rebinding_and_plain_text_are_refused(server):
    question = {"query": ANSWERABLE}
    json_type = {"Content-Type": "application/json"}
    status, headers, body = request(server, "POST", "/extractive/run", question,
                                    {**json_type, "Origin": f"http://127.0.0.1:{server.port}"})
    assert status == 200 and body["answer"]  # the server's own page
    assert headers.get("access-control-allow-origin") is None  # no CORS for anyone by default
    for extra, code, needle in [
        ({**json_type, "Origin": "http://evil.example"}, 403, "cross-origin request from 'http://evil.example'"),
        ({**json_type, "Origin": f"http://127.0.0.1:{server.port + 1}"}, 403, "cross-origin"),
        ({**json_type, "Origin": "null"}, 403, "cross-origin"),
        ({**json_type, "Host": f"rebind.test:{server.port}"}, 403, "Host 'rebind.test"),
        ({"Content-Type": "text/plain"}, 415, "must be JSON"),
        ({}, 415, "must be JSON"),
        ({"Content-Type": "application/x-www-form-urlencoded"}, 415, "must be JSON"),
    ]:
        status, headers, body = request(server, "POST", "/extractive/run", question, extra)
        assert status == code and needle in body["detail"], (extra, status, body)
        assert headers.get("access-control-allow-origin") is None
    # a preflight from another origin gets no permission
    status, headers, _ = request(server, "OPTIONS", "/extractive/run", None, {
        "Origin": "http://evil.example", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type"})
    assert status == 403 and headers.get("access-control-allow-origin") is None
    # reading through a rebound name: refused before any route (the page, sources and readiness alike)
    for path in ("/", "/ready", "/extractive/source?doc_id=refund-policy.md&char_start=0&char_end=5"):
        status, _, _ = request(server, "GET", path, None, {"Host": f"rebind.test:{server.port}"})
        assert status == 403, path
    # the chat endpoint follows the same rules
    chat = {"model": "extractive", "messages": [{"role": "user", "content": ANSWERABLE}]}
    status, _, _ = request(server, "POST", "/v1/chat/completions", json.dumps(chat).encode(),
                           {"Content-Type": "text/plain"})
    assert status == 415


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")

EVIL_PAGE = """<!doctype html><title>loading</title><script>
const target = "{target}";
const results = {{}};
async function attempt(name, make) {{
  try {{ const r = await make(); results[name] = r.type === "opaque" ? "opaque" : r.status; }}
  catch (e) {{ results[name] = "blocked"; }}
}}
(async () => {{
  const deploy = JSON.stringify({deploy});
  await attempt("deploy_json", () => fetch(target + "/deploy_files", {{method: "POST",
      headers: {{"Content-Type": "application/json"}}, body: deploy}}));
  await attempt("deploy_plain", () => fetch(target + "/deploy_files", {{method: "POST", mode: "no-cors",
      headers: {{"Content-Type": "text/plain"}}, body: deploy}}));
  await attempt("ask_json", () => fetch(target + "/extractive/run", {{method: "POST",
      headers: {{"Content-Type": "application/json"}}, body: JSON.stringify({{query: {question}}})}}));
  await attempt("read_source", () => fetch(target + "/extractive/source?doc_id=refund-policy.md&char_start=0&char_end=5"));
  document.title = "done " + JSON.stringify(results);
}})();
</script>"""


@pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER), reason="needs Debian's chromium and chromium-driver "
                    "(apt-get install chromium chromium-driver; .ci/run does it)")
def test_a_page_on_another_loopback_origin_cannot_drive_the_server(server, tmp_path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import WebDriverWait

    marker = tmp_path / "pwned"
    deploy = {"name": "pwned", "files": {"pipeline_wrapper.py": WRAPPER.format(marker=str(marker))}, "overwrite": True}
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(EVIL_PAGE.format(target=server.url, deploy=json.dumps(deploy),
                                                      question=json.dumps(ANSWERABLE)))
    port = free_port()
    evil = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                             "--directory", str(site)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--disable-extensions", "--disable-background-networking",
                # rebind.test resolves to 127.0.0.1 (what DNS rebinding does); nothing else leaves the machine
                "--host-resolver-rules=MAP rebind.test 127.0.0.1 , MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:  # the evil server is up when it answers
            try:
                http.client.HTTPConnection("127.0.0.1", port, timeout=2).request("GET", "/")
                break
            except OSError:
                time.sleep(0.2)
        driver.set_page_load_timeout(60)
        driver.get(f"http://127.0.0.1:{port}/index.html")
        WebDriverWait(driver, 120).until(lambda d: d.title.startswith("done "))
        results = json.loads(driver.title[len("done "):])
        # CORS-mode requests fail in the browser (no permission); the no-cors one is opaque to the page and was
        # refused by the server (the HTTP test above shows the 403/415 it got)
        assert results == {"deploy_json": "blocked", "deploy_plain": "opaque", "ask_json": "blocked",
                           "read_source": "blocked"}, results
        assert not marker.exists()
        # DNS rebinding: the attacker's name now points at 127.0.0.1, so the page is "same-origin" with the
        # server in the browser's eyes — the server refuses the name
        driver.get(f"http://rebind.test:{server.port}/")
        assert "is not a name this server answers to" in driver.page_source
    finally:
        driver.quit()
        evil.terminate()
        evil.wait(timeout=10)


def test_a_chunked_body_is_cut_off_while_it_streams(server):
    """A body without Content-Length is counted as it arrives and refused past the 1 MB limit — never read whole."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    try:
        conn.putrequest("POST", "/extractive/run", skip_host=True)
        conn.putheader("Host", f"127.0.0.1:{server.port}")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Transfer-Encoding", "chunked")
        conn.endheaders()
        chunk = b"x" * 65536
        sent = 0
        try:
            for _ in range(800):  # up to 50 MB, stopped by the server's answer
                conn.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        try:
            conn.send(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        resp = conn.getresponse()
        body = json.loads(resp.read().decode())
    finally:
        conn.close()
    assert resp.status == 413 and "while it was streaming in" in body["detail"], body
    for raw in (b'{"query": "\\ud800"}', b"[" * 50_000 + b"]" * 50_000):
        status, _, body = request(server, "POST", "/extractive/run", raw, {"Content-Type": "application/json"})
        assert status == 400, (status, body)


def test_a_cross_site_image_or_link_load_is_refused(server):
    """An <img> or a link from another site sends no Origin, but Sec-Fetch-Site or a Referer: refused (it would tell
    that page whether a PDF exists and how many pages it has); the page's own loads and plain clients pass."""
    image = "/extractive/page_image?doc_id=security-whitepaper.pdf&page=1&char_start=0&char_end=5"
    for headers in ({"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Dest": "image"}, {"Sec-Fetch-Site": "same-site"},
                    {"Referer": "http://evil.example/page.html"}):
        for path in (image, "/extractive/source?doc_id=refund-policy.md&char_start=0&char_end=5"):
            status, _, body = request(server, "GET", path, None, headers)
            assert status == 403 and "cross-site request refused" in body["detail"], (headers, path, status)
    passage = "/extractive/source?doc_id=refund-policy.md&char_start=140&char_end=160"  # JSON (the image is PNG)
    for headers in ({"Sec-Fetch-Site": "same-origin", "Referer": f"http://127.0.0.1:{server.port}/"}, {}):
        status, _, body = request(server, "GET", passage, None, headers)
        assert status == 200 and body["doc_id"] == "refund-policy.md", (headers, status, body)
