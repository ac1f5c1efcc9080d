"""API keys: the keys file's rules, constant-time lookup, and a real server started with --keys that refuses every
endpoint without a valid key except the page's own files and readiness; beyond loopback no keys, no server."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from components.core.errors import SpanQAError
from components.serving.auth import Principal, digest, load_keys, principal_for
from tests.serving.conftest import ANSWERABLE, ROOT, Server, free_port

ALICE = "sk-alice-0123456789abcdef"
BOB = "sk-bob-fedcba9876543210xyz"


def _keys_file(tmp_path):
    path = tmp_path / "keys.json"
    path.write_text(json.dumps({ALICE: {"principal": "alice", "groups": ["finance"]},
                                f"sha256:{digest(BOB)}": {"principal": "bob", "groups": []}}))
    return path


def test_keys_file_plain_and_hashed(tmp_path):
    keys = load_keys(_keys_file(tmp_path))
    assert principal_for(keys, f"Bearer {ALICE}") == Principal("alice", ("finance",))
    assert principal_for(keys, f"bearer {BOB}") == Principal("bob", ())   # the hashed entry
    for header in (None, "", ALICE, f"Basic {ALICE}", f"Bearer {ALICE}x", "Bearer "):
        assert principal_for(keys, header) is None, header


@pytest.mark.parametrize("content, needle", [
    (None, "does not exist"),
    ("{not json", "cannot be read as JSON"),
    ("{}", "non-empty JSON object"),
    (json.dumps({"short": {"principal": "a"}}), "shorter than 16 characters"),
    (json.dumps({"sha256:abc": {"principal": "a"}}), "not a 64-digit hex digest"),
    (json.dumps({ALICE: {"groups": []}}), "must be {\"principal\""),
    (json.dumps({ALICE: {"principal": "a", "groups": "finance"}}), "must be a list of names"),
])
def test_bad_keys_files_are_one_paragraph(tmp_path, content, needle):
    path = tmp_path / "keys.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(SpanQAError) as info:
        load_keys(path)
    assert needle in str(info.value) and "\n" not in str(info.value)


@pytest.fixture(scope="module")
def keyed_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("keyed")
    srv = Server("pipelines/retrieval.yaml", tmp / "server.log", "--keys", str(_keys_file(tmp)))
    try:
        srv.wait_ready()
        yield srv
    finally:
        srv.stop()


def _get(url, key=None):
    import urllib.error
    import urllib.request

    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"} if key else {})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, resp.headers
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers


def test_every_endpoint_refuses_a_missing_or_wrong_key(keyed_server):
    base = keyed_server.url
    posts = {"/retrieval/run": {"query": "ERR-4012"},
             "/v1/chat/completions": {"model": "retrieval", "messages": [{"role": "user", "content": "ERR-4012"}]},
             "/mcp/mcp/": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}}
    gets = ["/v1/models", "/status", "/docs", "/openapi.json",
            "/retrieval/source?doc_id=error-codes.md&char_start=0&char_end=5"]
    for path, body in posts.items():
        for headers in ({}, {"Authorization": "Bearer sk-wrong-key-0000000000"}, {"Authorization": ALICE}):
            status, reply, h = _post(base + path, body, headers)
            assert status == 401 and isinstance(reply["detail"], str), (path, headers, status, reply)
            assert h.get("www-authenticate", "").startswith("Bearer")
    for path in gets:
        assert _get(base + path)[0] == 401, path
        assert _get(base + path, "sk-wrong-key-0000000000")[0] == 401, path
    status, reply, _ = _post(base + "/retrieval/run", posts["/retrieval/run"], {"Authorization": f"Bearer {ALICE}"})
    assert status == 200 and reply["documents"], reply
    status, reply, _ = _post(base + "/retrieval/run", posts["/retrieval/run"], {"Authorization": f"Bearer {BOB}"})
    assert status == 200
    for path in ("/v1/models", "/status"):
        assert _get(base + path, ALICE)[0] == 200, path
    # open without a key: readiness and the page's own files (it asks for the key and keeps it for the tab)
    assert _get(base + "/ready")[0] == 200
    assert _get(base + "/")[0] == 200 and _get(base + "/page/app.js")[0] == 200


def _post(url, body, headers):
    import urllib.error
    import urllib.request

    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json",
                                          "Accept": "application/json, text/event-stream", **headers})
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            return resp.status, json.loads(resp.read().decode()), resp.headers
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read().decode()), exc.headers


def test_beyond_loopback_the_server_refuses_to_start_without_keys():
    proc = subprocess.run([sys.executable, str(ROOT / "run.py"), "pipelines/retrieval.yaml", "--serve", "--host",
                           "0.0.0.0", "--port", str(free_port())], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2, proc.stderr
    flat = " ".join(proc.stderr.split())  # the terminal wraps the paragraph
    assert "needs API keys: pass --keys FILE" in flat and "Traceback" not in flat


def test_the_page_asks_for_the_key_and_keeps_it_for_the_tab(keyed_server):
    from tests.serving.test_page_browser import CHROMEDRIVER, CHROMIUM

    if not (CHROMIUM and CHROMEDRIVER):
        pytest.skip("needs Debian's chromium and chromium-driver")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        driver.get(keyed_server.url + "/")
        assert not driver.find_element(By.ID, "auth").is_displayed()
        driver.find_element(By.ID, "question").send_keys(ANSWERABLE, Keys.ENTER)
        WebDriverWait(driver, 60).until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-answered") == "1")
        assert driver.find_element(By.ID, "auth").is_displayed()
        assert "needs an API key" in driver.find_element(By.ID, "error").text
        assert driver.switch_to.active_element == driver.find_element(By.ID, "key")
        driver.find_element(By.ID, "key").send_keys(ALICE, Keys.ENTER)  # resubmits the question with the key
        WebDriverWait(driver, 120).until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-answered") == "2")
        assert not driver.find_element(By.ID, "auth").is_displayed()
        assert driver.find_element(By.ID, "error").is_displayed() is False
        assert driver.find_elements(By.CSS_SELECTOR, "#sources li")  # the ranked passages came back
        assert driver.execute_script("return sessionStorage.getItem('spanqa-api-key')") == ALICE
        assert driver.execute_script("return localStorage.length") == 0 and driver.get_cookies() == []
    finally:
        driver.quit()



def test_keys_file_mistakes_that_used_to_pass_silently(tmp_path, capsys):
    path = tmp_path / "keys.json"
    path.write_text('{"%s": {"principal": "a"}, "%s": {"principal": "b"}}' % (ALICE, ALICE))
    with pytest.raises(SpanQAError, match="twice"):
        load_keys(path)
    path.write_text(json.dumps({" " + ALICE: {"principal": "a"}}))
    with pytest.raises(SpanQAError, match="whitespace"):
        load_keys(path)
    path.write_text(json.dumps({ALICE: {"principal": "a"}}))
    path.chmod(0o644)
    load_keys(path)
    assert "readable by other users" in capsys.readouterr().err
    path.chmod(0o600)
    load_keys(path)
    assert "readable by other users" not in capsys.readouterr().err


def test_an_empty_keys_file_variable_is_an_error_not_an_open_server(tmp_path):
    import os

    done = subprocess.run([sys.executable, str(ROOT / "run.py"), "pipelines/retrieval.yaml", "--serve", "--port",
                           str(free_port())], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "SPANQA_KEYS_FILE": ""})
    assert done.returncode == 2 and "SPANQA_KEYS_FILE is set but empty" in done.stderr
