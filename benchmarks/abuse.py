"""The hostile probes against the real server, counted: none may succeed, none may be a 500, and the
server's memory may not grow by more than the body limit.

Starts ``run.py pipelines/extractive.yaml --serve`` on loopback (no keys: the open loopback mode, the weakest one)
and sends, each ``--rounds`` times:

- Hayhooks' deploy endpoints with a pipeline wrapper (same origin, another origin, text/plain) — must be 404/403/415;
- a question from another origin, from a DNS-rebound ``Host``, as ``text/plain`` and as a form — must be 403/415;
- a 50 MB chunked body — must be cut off with 413 while it streams;
- a lone surrogate, JSON nested 100,000 deep, a 5,000-digit number — must be 4xx, on REST and on MCP;
- MCP ``tools/call`` of Hayhooks' ``deploy_pipeline`` / ``undeploy_pipeline`` — must be refused (counted as 422 when
  the refusal is inside a 200 JSON-RPC reply);
- 200 clients that open a connection and send nothing or one header line at a time — must be disconnected
  (``components/serving/slow_clients.py``) while ``/ready`` keeps answering.

Prints each probe's statuses, the server's peak RSS growth (``/proc/<pid>/status`` VmHWM) and the load average.
``/ready`` under 100 answers in flight is ``benchmarks/serving_under_load.py``.

    python benchmarks/abuse.py [--rounds 3] [--slow-clients 200] [--json]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from serving import bench_yaml, start_server  # noqa: E402

WRAPPER = b"from hayhooks import BasePipelineWrapper\nclass PipelineWrapper(BasePipelineWrapper):\n  pass\n"


def send(port: int, method: str, path: str, body: bytes | None = None, headers: dict | None = None) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        headers = {"Host": f"127.0.0.1:{port}", **(headers or {})}
        if body is not None:
            headers.setdefault("Content-Length", str(len(body)))
        for k, v in headers.items():
            conn.putheader(k, v)
        conn.endheaders(body)
        resp = conn.getresponse()
        resp.read()
        return resp.status
    finally:
        conn.close()


def mcp_call(port: int, tool: str, arguments: dict) -> int:
    """A JSON-RPC ``tools/call`` of ``tool`` on the MCP endpoint (stateless Streamable HTTP): the HTTP status, or
    422 when the server answered 200 with the call refused in the protocol (``isError`` or a JSON-RPC error) —
    so that only a tool that ran counts as a success."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": tool, "arguments": arguments}}).encode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("POST", "/mcp/mcp/", body, {"Content-Type": "application/json",
                                                  "Accept": "application/json, text/event-stream"})
        resp = conn.getresponse()
        text = resp.read().decode("utf-8", "replace")
        if resp.status != 200:
            return resp.status
        refused = '"isError":true' in text.replace(" ", "") or '"error":' in text
        return 422 if refused else 200
    finally:
        conn.close()


def chunked_50mb(port: int) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.putrequest("POST", "/extractive/run", skip_host=True)
        for k, v in (("Host", f"127.0.0.1:{port}"), ("Content-Type", "application/json"),
                     ("Transfer-Encoding", "chunked")):
            conn.putheader(k, v)
        conn.endheaders()
        chunk = b"x" * 65536
        try:
            for _ in range(800):
                conn.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            conn.send(b"0\r\n\r\n")
        except OSError:
            pass
        resp = conn.getresponse()
        resp.read()
        return resp.status
    finally:
        conn.close()


def slow_clients(port: int, n: int, timeout: float) -> dict:
    """``n`` connections, half silent, half sending a header line every second; how long each stayed open."""
    held: list[float] = []
    lock = threading.Lock()

    def hold(dribble: bool) -> None:
        start = time.monotonic()
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
                if dribble:
                    sock.sendall(b"GET /ready HTTP/1.1\r\n")
                    for _ in range(int(timeout)):
                        sock.sendall(b"X-Slow: 1\r\n")
                        time.sleep(1)
                while sock.recv(1024):
                    pass
        except OSError:
            pass
        with lock:
            held.append(time.monotonic() - start)

    threads = [threading.Thread(target=hold, args=(i % 2 == 1,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    time.sleep(1)
    ready = [send(port, "GET", "/ready") for _ in range(5)]
    for t in threads:
        t.join(timeout + 10)
    return {"clients": n, "disconnected": len(held), "max_held_s": round(max(held, default=0), 1),
            "ready_meanwhile": ready}


def rss_kb(pid: int, field: str = "VmHWM") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--slow-clients", type=int, default=200)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from components.serving.limits import MAX_BODY_BYTES
    from components.serving.slow_clients import HEAD_TIMEOUT_S

    evil = {"Origin": "http://evil.example"}
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    json_type = {"Content-Type": "application/json"}
    probes = {
        "deploy_files (same origin)": lambda p: send(p, "POST", "/deploy_files", json.dumps(
            {"name": "x", "files": {"pipeline_wrapper.py": WRAPPER.decode()}}).encode(), json_type),
        "deploy_files (other origin)": lambda p: send(p, "POST", "/deploy_files", WRAPPER, {**evil, **json_type}),
        "deploy-yaml (text/plain)": lambda p: send(p, "POST", "/deploy-yaml", b"x", {"Content-Type": "text/plain"}),
        "ask from another origin": lambda p: send(p, "POST", "/extractive/run", b'{"query": "hi"}',
                                                  {**evil, **json_type}),
        "ask with a rebound Host": lambda p: send(p, "POST", "/extractive/run", b'{"query": "hi"}',
                                                  {"Host": "rebind.example:80", **json_type}),
        "ask as text/plain": lambda p: send(p, "POST", "/extractive/run", b'{"query": "hi"}',
                                            {"Content-Type": "text/plain"}),
        "ask as a form": lambda p: send(p, "POST", "/extractive/run", b"query=hi", form),
        "chunked 50 MB body": chunked_50mb,
        "lone surrogate": lambda p: send(p, "POST", "/extractive/run", b'{"query": "\\ud800"}', json_type),
        "JSON nested 100k deep": lambda p: send(p, "POST", "/extractive/run", b"[" * 100_000 + b"]" * 100_000,
                                                json_type),
        "5,000-digit number": lambda p: send(p, "POST", "/extractive/run",
                                             b'{"query": "hi", "top_k": ' + b"9" * 5000 + b"}", json_type),
        "MCP deploy_pipeline": lambda p: mcp_call(p, "deploy_pipeline", {
            "name": "evil", "files": {"pipeline_wrapper.py": WRAPPER.decode()}}),
        "MCP undeploy_pipeline": lambda p: mcp_call(p, "undeploy_pipeline", {"name": "extractive"}),
        "MCP JSON nested 100k deep": lambda p: send(p, "POST", "/mcp/mcp/", b"[" * 100_000 + b"]" * 100_000,
                                                    json_type),
        "MCP 5,000-digit number": lambda p: send(p, "POST", "/mcp/mcp/", b'{"jsonrpc": "2.0", "id": ' + b"9" * 5000
                                                 + b', "method": "tools/list"}', json_type),
    }
    results: dict = {"load_average_before": os.getloadavg(), "probes": {}}
    with tempfile.TemporaryDirectory() as tmp:
        proc, port = start_server(bench_yaml("extractive", Path(tmp)), Path(tmp) / "server.log")
        try:
            send(port, "POST", "/extractive/run", b'{"query": "What does ERR-4012 mean?"}', json_type)  # warm
            base = rss_kb(proc.pid)
            for name, probe in probes.items():
                statuses = [probe(port) for _ in range(args.rounds)]
                results["probes"][name] = statuses
            results["slow_clients"] = slow_clients(port, args.slow_clients, HEAD_TIMEOUT_S + 30)
            growth = rss_kb(proc.pid) - base
            results["peak_rss_growth_kb"] = growth
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    statuses = [s for v in results["probes"].values() for s in v]
    results["successes"] = sum(200 <= s < 300 for s in statuses)
    results["server_errors"] = sum(s >= 500 for s in statuses)
    results["load_average_after"] = os.getloadavg()
    for name, got in results["probes"].items():
        print(f"  {name:<30} {got}")
    slow = results["slow_clients"]
    print(f"  {slow['clients']} slow/silent clients: {slow['disconnected']} disconnected, held at most "
          f"{slow['max_held_s']} s (head deadline {HEAD_TIMEOUT_S:g} s); /ready meanwhile {slow['ready_meanwhile']}")
    print(f"successes {results['successes']}, 500s {results['server_errors']}, peak RSS growth "
          f"{growth / 1024:.1f} MB (body limit {MAX_BODY_BYTES / 2**20:.1f} MB); load average "
          f"{results['load_average_before'][0]:.2f} → {results['load_average_after'][0]:.2f}")
    if args.json:
        print(json.dumps(results, indent=2))
    return 0 if results["successes"] == 0 and results["server_errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
