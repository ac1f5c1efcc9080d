"""Readiness and sources under load: with ``--in-flight`` questions sent at once to ``run.py
pipelines/extractive.yaml --serve`` (answer cache off, bar at 0), how long ``GET /ready`` and ``GET
/extractive/source`` take meanwhile — p50 / p95 / max over the samples taken while answers are still in flight
(issue 22: they must not queue behind the answers; goal /ready p95 ≤ 100 ms with 100 answers in flight).

    python benchmarks/serving_under_load.py [--in-flight 100] [--json]
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from serving import ROOT, bench_yaml, pct, start_server  # noqa: E402


def timed_get(port: int, path: str) -> float:
    start = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.request("GET", path)
    resp = conn.getresponse()
    resp.read()
    assert resp.status == 200, (path, resp.status)
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--in-flight", type=int, default=100)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    questions = [json.loads(line)["question"] for line in (ROOT / "data/questions.jsonl").read_text().splitlines()]
    with tempfile.TemporaryDirectory() as tmp:
        proc, port = start_server(bench_yaml("extractive", Path(tmp)), Path(tmp) / "server.log")
        try:
            done = []

            def ask(i: int) -> None:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=900)
                conn.request("POST", "/extractive/run", body=json.dumps({"query": questions[i % len(questions)]}),
                             headers={"Content-Type": "application/json"})
                conn.getresponse().read()
                done.append(time.perf_counter())

            start = time.perf_counter()
            threads = [threading.Thread(target=ask, args=(i,), daemon=True) for i in range(args.in_flight)]
            for t in threads:
                t.start()
            time.sleep(1.0)  # let the questions arrive
            ready, source = [], []
            src = "/extractive/source?doc_id=refund-policy.md&char_start=400&char_end=420"
            while len(done) < args.in_flight * 0.9 and len(ready) < 40:
                ready.append(timed_get(port, "/ready"))
                source.append(timed_get(port, src))
                time.sleep(0.2)
            for t in threads:
                t.join()
            wall = time.perf_counter() - start
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    ms = lambda xs, q: round(pct(xs, q) * 1000, 1)  # noqa: E731
    result = {"in_flight": args.in_flight, "answers_wall_s": round(wall, 1), "samples": len(ready),
              "ready_p50_ms": ms(ready, 0.5), "ready_p95_ms": ms(ready, 0.95), "ready_max_ms": ms(ready, 1.0),
              "source_p50_ms": ms(source, 0.5), "source_p95_ms": ms(source, 0.95), "source_max_ms": ms(source, 1.0)}
    if args.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"{k:16s} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
