"""Two stateless servers against one: throughput of ``run.py pipelines/extractive-postgres.yaml --serve`` when one
server process answers, then when two (on other ports, over the same PostgreSQL tables) share the same load —
side by side in one run, each server pinned to one CPU (``taskset``, one torch thread).

The questions are data/questions.jsonl over the demo corpus (data/kb); answer cache off (every question is read
and verified), bar at 0. Each client thread keeps ``--per-server`` questions in flight per server (closed loop):
one server gets that many threads, two get twice as many, split evenly. Reported: requests/s, p50 and p95
latency of each side, and the ratio of requests/s (target ≥ 1.6× at a p95 no worse than one server's). Both sides
ask the same questions for ``--passes`` rounds after one untimed round; the answers of the two servers are
compared question by question (they must be identical: one truth). PostgreSQL and the clients share the machine's
cores with the servers, so on this 2-core machine the ratio is a floor.

    python benchmarks/two_servers.py [--per-server 2] [--passes 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from serving import ROOT, Client, pct, start_server  # noqa: E402

NAME = "extractive-postgres"


def served_yaml(folder: Path) -> Path:
    spec = yaml.safe_load((ROOT / f"pipelines/{NAME}.yaml").read_text())
    spec.setdefault("metadata", {}).setdefault("spanqa", {})["answer_cache_ttl_s"] = 0
    store = spec["components"]["retriever"]["init_parameters"]["document_store"]["init_parameters"]
    store["table_prefix"] = "bench_two_servers"
    path = folder / f"{NAME}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def load(clients: list[Client], questions: list[str], per_server: int, turn: int = 0) -> dict:
    """Every question once, spread over ``clients`` round robin from ``turn`` (so the next pass sends each question
    to the other server), ``per_server`` in flight on each."""
    latencies, answers = [], {}

    def one(item):
        i, q = item
        start = time.perf_counter()
        server = (i + turn) % len(clients)
        body = clients[server].ask(q)
        latencies.append(time.perf_counter() - start)
        answers[(server, q)] = (body.get("answer"), body.get("confidence"))

    start = time.perf_counter()
    with ThreadPoolExecutor(per_server * len(clients)) as pool:
        list(pool.map(one, enumerate(questions)))
    wall = time.perf_counter() - start
    return {"rps": len(questions) / wall, "p50_ms": statistics.median(latencies) * 1000,
            "p95_ms": pct(latencies, 0.95) * 1000, "answers": answers}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-server", type=int, default=2)
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if shutil.which("taskset") is None or (os.cpu_count() or 1) < 2:
        sys.exit("two_servers: needs taskset (util-linux) and at least 2 CPUs, one per server")
    os.chdir(ROOT)
    questions = [json.loads(line)["question"] for line in (ROOT / "data/questions.jsonl").read_text().splitlines()
                 if line]
    from components.stores.pgvector import server as pg_server

    dsn = os.environ.get("SPANQA_PG_DSN") or pg_server.embedded_dsn(str(ROOT / ".spanqa" / "bench-pg"))
    env = {**os.environ, "SPANQA_PG_DSN": dsn, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "HF_HUB_OFFLINE": "1", "HAYSTACK_TELEMETRY_ENABLED": "false"}
    report = {"questions": len(questions), "per_server": args.per_server, "passes": args.passes,
              "load_average_before": os.getloadavg()}
    folder = Path(tempfile.mkdtemp(prefix="spanqa-two-servers-"))
    path = served_yaml(folder)
    procs = []
    try:
        a, port_a = start_server(path, folder / "a.log", wrap=("taskset", "-c", "0"), env=env)
        procs.append(a)
        b, port_b = start_server(path, folder / "b.log", wrap=("taskset", "-c", "1"), env=env)
        procs.append(b)
        one, two = [Client(port_a, NAME)], [Client(port_a, NAME), Client(port_b, NAME)]
        load(two, questions * 2, args.per_server)  # untimed: lazy loads and first-touch caches of both
        runs: dict[str, list] = {"one_server": [], "two_servers": []}
        for n in range(args.passes):
            for side in (["one_server", "two_servers"] if n % 2 == 0 else ["two_servers", "one_server"]):
                runs[side].append(load(one if side == "one_server" else two, questions, args.per_server, n))
            print(f"  pass {n + 1} done; load average {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=60)
    for side, rs in runs.items():
        report[side] = {k: round(statistics.median(r[k] for r in rs), 2) for k in ("rps", "p50_ms", "p95_ms")}
    # one truth: each question's answer from server B equals server A's (the passes alternate which server gets it)
    by_question: dict[str, set] = {}
    for r in runs["two_servers"]:
        for (_, q), (answer, confidence) in r["answers"].items():
            by_question.setdefault(q, set()).add((answer, round(confidence or 0, 6)))
    report["questions_answered_differently"] = sum(len(v) > 1 for v in by_question.values())
    report["throughput_ratio"] = round(report["two_servers"]["rps"] / report["one_server"]["rps"], 2)
    report["load_average_after"] = os.getloadavg()
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{len(questions)} questions, {args.per_server} in flight per server, median of {args.passes} passes")
    for side in ("one_server", "two_servers"):
        r = report[side]
        print(f"  {side.replace('_', ' '):11}: {r['rps']:.2f} requests/s | p50 {r['p50_ms']:.0f} ms p95 "
              f"{r['p95_ms']:.0f} ms")
    print(f"  two / one: {report['throughput_ratio']}x requests/s (target 1.6x at no worse p95); questions whose "
          f"answer differed between the servers: {report['questions_answered_differently']}")
    print(f"load average {report['load_average_before'][0]:.2f} → {report['load_average_after'][0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
