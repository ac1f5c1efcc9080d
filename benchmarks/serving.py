"""Serving overhead: requests/s and p50/p95 latency at concurrency 1, 4 and 16 of ``run.py PIPELINE --serve``
over loopback, next to calling the same pipeline in-process (``QueryRunner.ask`` from as many threads).

Both sides run the same YAML with the answer cache off (a copy with ``answer_cache_ttl_s: 0``; otherwise every
pass after the first would be answered from memory), no audit log and ``--min-confidence 0`` (offline, the
shipped bar holds answers back; 0 runs the whole read-and-verify path). The questions are data/questions.jsonl
(the demo corpus data/kb). Each pass runs every question once at each concurrency on each side, alternating
which side goes first; one untimed round warms both up. The figures are the median over passes; overhead is
server / in-process (p50 latency, and in-process requests/s over the server's), goal ≤ 1.1× at concurrency 1.

    python benchmarks/serving.py [--pipelines retrieval extractive] [--questions 40] [--passes 2] [--json]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _common import ROOT

LEVELS = (1, 4, 16)


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def bench_yaml(name: str, folder: Path) -> Path:
    """A copy of pipelines/NAME.yaml (same stem, so the same served name) with the answer cache off."""
    import yaml

    spec = yaml.safe_load((ROOT / f"pipelines/{name}.yaml").read_text())
    spec.setdefault("metadata", {}).setdefault("spanqa", {})["answer_cache_ttl_s"] = 0
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


class Client:
    """One keep-alive HTTP connection per thread to the server (as a real client pool would)."""

    def __init__(self, port: int, name: str):
        self.port, self.path, self.local = port, f"/{name}/run", threading.local()

    def ask(self, query: str) -> dict:
        for attempt in (0, 1):  # a keep-alive connection the server closed while idle is opened again, once
            conn = getattr(self.local, "conn", None)
            if conn is None:
                conn = self.local.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
            try:
                conn.request("POST", self.path, body=json.dumps({"query": query}),
                             headers={"Content-Type": "application/json"})
                resp = conn.getresponse()
                break
            except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
                conn.close()
                self.local.conn = None
                if attempt:
                    raise
        body = resp.read()
        if resp.status != 200:
            raise RuntimeError(f"HTTP {resp.status}: {body[:200]!r}")
        return json.loads(body)


def start_server(path: Path, log: Path, wrap: tuple[str, ...] = (), env: dict | None = None
                 ) -> tuple[subprocess.Popen, int]:
    """``run.py PATH --serve`` on a free port (``wrap``: a command it runs under, e.g. ``taskset -c 0``), once ready."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with open(log, "wb") as out:
        proc = subprocess.Popen([*wrap, sys.executable, str(ROOT / "run.py"), str(path), "--serve", "--port", str(port),
                                 "--no-audit", "--min-confidence", "0"], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                env=env)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"server exited: {log.read_text()[-2000:]}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/ready")
            if conn.getresponse().status == 200:
                return proc, port
        except OSError:
            pass
        time.sleep(0.3)
    proc.kill()
    sys.exit(f"server never turned ready: {log.read_text()[-2000:]}")


def run_level(ask, questions, concurrency: int) -> dict:
    """Every question once with ``concurrency`` workers: requests/s and per-request latencies."""
    latencies = []

    def one(q):
        start = time.perf_counter()
        ask(q)
        latencies.append(time.perf_counter() - start)

    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, questions))
    wall = time.perf_counter() - start
    return {"rps": len(questions) / wall, "p50_ms": statistics.median(latencies) * 1000,
            "p95_ms": pct(latencies, 0.95) * 1000}


def bench_pipeline(name: str, questions, passes: int, folder: Path) -> dict:
    from components.app.pipeline_io import load_pipeline
    from components.app.runner import QueryRunner

    path = bench_yaml(name, folder)
    pipeline, _ = load_pipeline(path)
    runner = QueryRunner(pipeline)
    if runner.verifier:
        pipeline.get_component(runner.verifier).min_confidence = 0.0
    runner.warm_up()
    proc, port = start_server(path, folder / f"{name}-server.log")
    try:
        client = Client(port, name)
        sides = {"in_process": runner.ask, "server": client.ask}
        for q in questions:  # untimed: lazy loads and first-touch caches on both sides
            runner.ask(q), client.ask(q)
        runs = {side: {c: [] for c in LEVELS} for side in sides}
        for n in range(passes):
            for c in LEVELS:
                for side in (["in_process", "server"] if n % 2 == 0 else ["server", "in_process"]):
                    runs[side][c].append(run_level(sides[side], questions, c))
            print(f"  {name}: pass {n + 1} done; load average {os.getloadavg()[0]:.2f}", flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    out = {}
    for c in LEVELS:
        row = {side: {k: statistics.median(r[k] for r in runs[side][c]) for k in ("rps", "p50_ms", "p95_ms")}
               for side in sides}
        row["overhead_p50"] = row["server"]["p50_ms"] / row["in_process"]["p50_ms"]
        row["overhead_rps"] = row["in_process"]["rps"] / row["server"]["rps"]
        out[c] = row
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pipelines", nargs="+", default=["retrieval", "extractive"])
    ap.add_argument("--questions", type=int, default=40)
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = ap.parse_args()
    if args.passes < 2:
        sys.exit("--passes must be at least 2 (the figures are medians over passes)")
    sys.path.insert(0, str(ROOT))
    os.chdir(ROOT)
    questions = [json.loads(line)["question"] for line in (ROOT / "data/questions.jsonl").read_text().splitlines()
                 if line][: args.questions]
    load_start = os.getloadavg()[0]
    print(f"{len(questions)} questions × concurrency {LEVELS} × {args.passes} passes; {os.cpu_count()} CPUs; "
          f"load average {load_start:.2f}", file=sys.stderr if args.json else sys.stdout, flush=True)
    folder = Path(tempfile.mkdtemp(prefix="spanqa-serving-bench-"))
    results = {name: bench_pipeline(name, questions, args.passes, folder) for name in args.pipelines}
    load_end = os.getloadavg()[0]
    if args.json:
        print(json.dumps({"questions": len(questions), "passes": args.passes, "load_average": [load_start, load_end],
                          "results": results}))
        return 0
    print(f"\n{'pipeline':11} {'conc':>4} | {'in-process rps':>14} {'p50 ms':>8} {'p95 ms':>8} | {'server rps':>10} "
          f"{'p50 ms':>8} {'p95 ms':>8} | {'overhead p50':>12} {'rps':>6}")
    for name, rows in results.items():
        for c, row in rows.items():
            i, s = row["in_process"], row["server"]
            print(f"{name:11} {c:>4} | {i['rps']:>14.1f} {i['p50_ms']:>8.1f} {i['p95_ms']:>8.1f} | {s['rps']:>10.1f} "
                  f"{s['p50_ms']:>8.1f} {s['p95_ms']:>8.1f} | {row['overhead_p50']:>11.2f}× {row['overhead_rps']:>5.2f}×")
    print("overhead = server ÷ in-process (p50 latency; in-process rps ÷ server rps); goal ≤ 1.1× at concurrency 1")
    print(f"load average at the end {load_end:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
