"""The real server over HTTP: REST equals the in-process result, readiness, OpenAI chat, MCP, limits, concurrency."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from tests.serving.conftest import ANSWERABLE, ROOT, UNANSWERABLE, assert_same, comparable, http

QUESTIONS = [json.loads(line)["question"] for line in (ROOT / "data/questions.jsonl").read_text().splitlines() if line]
# The session's server keeps its answer cache (a repeat gets a first "cache:answer" route stage), so each test that
# compares a whole result asks a question no other test asks: QUESTIONS[4:20] for concurrency, these for the rest.
FRESH_SUPPORTED = QUESTIONS[27]    # "Where is data for European Union accounts stored?"
FRESH_NOT_FOUND = QUESTIONS[36]    # "Does Glimmerline offer a student discount on the Glow plan?"
FRESH_MCP = QUESTIONS[21]          # "What does ERR-5501 mean?"


def declared_body(server, length: int):
    """A request that announces a ``length``-byte body and sends none: an oversized body is refused from its
    Content-Length before it is read (sending 1 MB first would race the server's early answer)."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    try:
        conn.putrequest("POST", "/extractive/run")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(length))
        conn.endheaders()
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read().decode())
    finally:
        conn.close()


def ask(server, query, **kw):
    return http("POST", f"{server.url}/extractive/run", {"query": query}, **kw)


def test_ready_after_warm_up_and_indexing(server):
    status, body, _ = http("GET", server.url + "/ready")
    # without a key (this server has none) readiness names no file and counts no document
    assert status == 200 and body == {"ready": True, "state": "ready", "version": "0.1.0"}


def test_rest_returns_exactly_the_in_process_result(server, runner):
    from components.app.runner import public

    status, body, _ = ask(server, FRESH_SUPPORTED)
    assert status == 200
    expected = public(runner.ask(FRESH_SUPPORTED))
    assert set(body) == set(expected)
    assert comparable(body) == comparable(expected)
    assert body["verdict"] == "SUPPORTED" and body["answer"]
    span = body["spans"][0]
    from components.core.retrieval.loaders import load_folder

    source = next(d.text for d in load_folder(ROOT / "data/kb").documents if d.doc_id == span["doc_id"])
    assert source[span["char_start"]:span["char_end"]] == span["text"]
    assert body["route"][0] == "retrieve" and body["route"][-1] == "verify:SUPPORTED"
    assert set(body["timings_ms"]) >= {"retriever", "reader", "verifier"}


def test_rest_equals_run_py_json(server):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "run.py", "pipelines/extractive.yaml", "--min-confidence", "0", "--no-audit",
                           "--json", "-q", FRESH_NOT_FOUND], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    cli = json.loads(proc.stdout.splitlines()[0])
    status, body, _ = ask(server, FRESH_NOT_FOUND)
    assert status == 200
    assert comparable(body) == comparable(cli)
    assert body["answer"] is None and body["verdict"] == "NOT_FOUND"


def test_openai_chat_completion(server, runner):
    from components.app.runner import public

    q = "How many devices can the Hub Mini control?"
    status, body, _ = http("POST", server.url + "/v1/chat/completions",
                           {"model": "extractive", "messages": [{"role": "user", "content": q}]})
    assert status == 200, body
    text = body["choices"][0]["message"]["content"]
    expected = public(runner.ask(q))
    if expected["answer"] is None:
        assert text.startswith("not found in the source")
    else:
        assert text.startswith(expected["answer"])
        s = expected["spans"][0]
        assert s["location"]["cite"] == "hub-mini.md › Glimmerline Hub Mini"  # the file and its heading path
        assert f"[1] {s['location']['cite']}, chars {s['char_start']}–{s['char_end']}" in text
    status, body, _ = http("POST", server.url + "/v1/chat/completions",
                           {"model": "extractive", "messages": [{"role": "user", "content": UNANSWERABLE}]})
    assert status == 200 and body["choices"][0]["message"]["content"].startswith("not found in the source")
    status, body, _ = http("GET", server.url + "/v1/models")
    assert status == 200 and "extractive" in [m["id"] for m in body["data"]]


def test_mcp_exposes_the_pipeline_as_a_tool(server, runner):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    from components.app.runner import public

    q = FRESH_MCP

    async def call():
        async with streamablehttp_client(server.url + "/mcp/mcp/") as (read, write, _):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = {t.name: t for t in (await session.list_tools()).tools}
                result = await session.call_tool("extractive", {"query": q})
                return tools, result

    tools, result = asyncio.run(call())
    assert "extractive" in tools and tools["extractive"].inputSchema["required"] == ["query"]
    assert not result.isError
    assert comparable(json.loads(result.content[0].text)) == comparable(public(runner.ask(q)))


def test_bad_requests_are_4xx_with_one_line(server):
    cases = [
        (b'{"query":', 400, "malformed JSON"),
        (b"not json at all", 400, "malformed JSON"),
        (b'{"query": "   "}', 400, "empty question"),
        (json.dumps({"query": "x" * 2001}).encode(), 413, "over the limit of 2000"),
        (b"[1, 2]", 422, "must be a JSON object"),
        (b'{"question": "hi"}', 422, "no 'query'"),
        (b'{"query": 5}', 422, "must be a string"),
        (b'{"query": "hi", "top_kk": 3}', 422, "unknown field"),
    ]
    for raw, status, needle in cases:
        got, body, _ = http("POST", f"{server.url}/extractive/run", raw=raw)
        assert got == status, (raw, got, body)
        assert isinstance(body["detail"], str) and "\n" not in body["detail"] and needle in body["detail"], body
        assert "Traceback" not in body["detail"]
    got, body = declared_body(server, 1_100_000)
    assert got == 413 and "over the 1,000,000-byte limit" in body["detail"] and "\n" not in body["detail"]
    got, body, _ = http("POST", server.url + "/v1/chat/completions",
                        {"model": "extractive", "messages": [{"role": "user", "content": " "}]})
    assert got == 400 and "empty question" in body["detail"]
    got, body, _ = http("POST", server.url + "/v1/chat/completions", raw=b'{"model": ')
    assert got == 400 and body["detail"].startswith("malformed JSON") and "\n" not in body["detail"]
    got, body, _ = http("GET", f"{server.url}/extractive/source?doc_id=nope.md&char_start=0&char_end=1")
    assert got == 404 and "not in the index" in body["detail"]
    got, body, _ = http("GET", f"{server.url}/extractive/source?doc_id=refund-policy.md&char_start=5&char_end=999999")
    assert got == 400 and "char_end" in body["detail"]


def test_sixteen_concurrent_requests_return_the_serial_results(server, runner):
    from components.app.runner import public

    questions = QUESTIONS[4:20]  # asked nowhere else in these tests: no answer-cache hits
    assert len(set(questions)) == 16
    with ThreadPoolExecutor(16) as pool:
        responses = list(pool.map(lambda q: ask(server, q), questions))
    serial = [public(runner.ask(q)) for q in questions]
    for q, (status, body, _), expected in zip(questions, responses, serial):
        assert status == 200, (q, body)
        assert_same(comparable(body), comparable(expected), q)  # answers, spans, offsets, routes exactly


def test_source_passage_holds_the_span(server):
    status, body, _ = ask(server, ANSWERABLE)
    span = body["spans"][0]
    status, passage, _ = http("GET", f"{server.url}/extractive/source?doc_id={span['doc_id']}"
                                     f"&char_start={span['char_start']}&char_end={span['char_end']}")
    assert status == 200
    a, b = span["char_start"] - passage["start"], span["char_end"] - passage["start"]
    assert passage["text"][a:b] == span["text"] and len(passage["text"]) > len(span["text"])


PDF_QUESTION = "How much does the Glimmerline bug bounty pay for a critical vulnerability?"


def _get_bytes(url: str) -> tuple[int, bytes, str]:
    req = urllib.request.Request(url)
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            return resp.status, resp.read(), resp.headers.get("Content-Type", "")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), exc.headers.get("Content-Type", "")


def test_a_pdf_answer_names_its_page_everywhere_and_its_page_is_rendered_with_the_span_highlighted(server):
    """REST and chat name "page 3 of security-whitepaper.pdf"; the rendered page differs from the bare page exactly
    inside the span's character boxes (the highlight), and nowhere else."""
    import io

    import numpy as np
    from PIL import Image

    from components.core.documents.pdf import render_page, span_boxes
    from components.core.retrieval.loaders import load_folder

    status, body, _ = ask(server, PDF_QUESTION)
    assert status == 200 and body["answer"] == "2,500 euros"
    span = body["spans"][0]
    doc = next(d for d in load_folder(ROOT / "data/kb").documents if d.doc_id == "security-whitepaper.pdf")
    assert doc.text[span["char_start"]:span["char_end"]] == "2,500 euros"
    boxes = span["location"].pop("boxes")
    assert span["location"] == {"file": "security-whitepaper.pdf", "format": "pdf", "page": 3, "pages": 3,
                                "heading_path": ["Reporting a vulnerability"],
                                "cite": "page 3 of security-whitepaper.pdf (Reporting a vulnerability)"}
    expected = span_boxes(ROOT / "data/kb/security-whitepaper.pdf", doc.layout, span["char_start"], span["char_end"])
    assert boxes == [[round(v, 1) for v in b] for b in expected[3]] and len(boxes) == 1  # one line on page 3
    status, chat, _ = http("POST", f"{server.url}/v1/chat/completions",
                           {"model": "extractive", "messages": [{"role": "user", "content": PDF_QUESTION}]})
    assert status == 200
    assert (f"[1] page 3 of security-whitepaper.pdf (Reporting a vulnerability), chars {span['char_start']}–"
            f"{span['char_end']}") in chat["choices"][0]["message"]["content"]

    q = urllib.parse.urlencode({"doc_id": span["doc_id"], "page": 3, "char_start": span["char_start"],
                                "char_end": span["char_end"]})
    status, png, kind = _get_bytes(f"{server.url}/extractive/page_image?{q}")
    assert status == 200 and kind == "image/png"
    shown = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    bare = np.asarray(Image.open(io.BytesIO(render_page(ROOT / "data/kb/security-whitepaper.pdf", 3, []))).convert("RGB")).astype(int)
    assert shown.shape == bare.shape
    changed = np.abs(shown - bare).sum(axis=2) > 0
    boxes = span_boxes(ROOT / "data/kb/security-whitepaper.pdf", doc.layout, span["char_start"], span["char_end"])[3]
    inside = np.zeros_like(changed)
    height = bare.shape[0] / 1.5
    for left, bottom, right, top in boxes:
        inside[int((height - top) * 1.5) - 1:int((height - bottom) * 1.5) + 2,
               int(left * 1.5) - 1:int(right * 1.5) + 2] = True  # a pixel of rounding on each side
    assert changed.any() and not (changed & ~inside).any()  # highlighted there, and only there
    assert changed[inside].mean() > 0.8  # the line's box is filled, not a few glyphs


def test_page_image_refuses_what_it_cannot_render(server):
    base = f"{server.url}/extractive/page_image?"
    for params, code, words in (
        ({"doc_id": "refund-policy.md", "page": 1, "char_start": 0, "char_end": 5}, 404, "is not a PDF"),
        ({"doc_id": "nope.pdf", "page": 1, "char_start": 0, "char_end": 5}, 404, "is not in the index"),
        ({"doc_id": "security-whitepaper.pdf", "page": 9, "char_start": 0, "char_end": 5}, 400, "has 3 pages"),
        ({"doc_id": "security-whitepaper.pdf", "page": 1, "char_start": 0, "char_end": 5, "evidence": "1-x"}, 400,
         "evidence must be ranges"),
        ({"doc_id": "security-whitepaper.pdf", "page": 1, "char_start": 5, "char_end": 99999}, 400, "must satisfy"),
    ):
        status, body, _ = http("GET", base + urllib.parse.urlencode(params))
        assert status == code and words in body["detail"], (params, status, body)


def test_silent_and_slow_header_clients_are_disconnected(server):
    import socket
    import threading

    from components.serving.slow_clients import HEAD_TIMEOUT_S

    closed_after: dict[str, float] = {}

    def hold(name, lines, gap):
        sock = socket.create_connection(("127.0.0.1", server.port))
        sock.settimeout(HEAD_TIMEOUT_S + 20)
        started = time.monotonic()
        try:
            for line in lines:  # one header line now and then, never the blank line that ends the head
                sock.sendall(line)
                time.sleep(gap)
            while sock.recv(1024):
                pass
        except OSError:
            pass
        closed_after[name] = time.monotonic() - started
        sock.close()

    threads = [threading.Thread(target=hold, args=("silent", [], 0)),
               threading.Thread(target=hold, args=("dribbling", [b"GET /ready HTTP/1.1\r\n"] +
                                                   [b"X-Slow: 1\r\n"] * 60, 0.5))]
    for t in threads:
        t.start()
    status, _, _ = http("GET", server.url + "/ready")  # others are served meanwhile
    for t in threads:
        t.join(timeout=HEAD_TIMEOUT_S + 40)
    assert status == 200
    assert HEAD_TIMEOUT_S - 1 <= closed_after["silent"] <= HEAD_TIMEOUT_S + 5
    assert HEAD_TIMEOUT_S - 1 <= closed_after["dribbling"] <= HEAD_TIMEOUT_S + 5  # not its 30 s of dribbling
