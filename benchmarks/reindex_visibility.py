"""Re-index visibility across processes (issue 23): questions asked while another process changes and re-indexes
documents in the same PostgreSQL tables — how many answers were stale, and whether the first answer after each
re-index quotes the new text.

One process runs ``pipelines/extractive-postgres.yaml`` (answer cache on, bar at 0) over a folder of ``--docs``
documents "The <product> has the serial code SN-<version>-<n>."; a second process, in a loop, rewrites one document with the
next version and re-indexes (``PgSpanStore.open()``), ``--rounds`` times. Meanwhile the first asks "What is the
serial code of the <product>?" for every document in turn. An answer is **stale** when it quotes a version older than
the one whose re-index had finished before the question was asked; **mixed** when its spans quote two versions.
Questions go on (at least ``--questions``) until the writer has finished all its rounds.

With ``--servers 2`` the questions go instead to two ``run.py … --serve`` processes (other ports, the same tables,
answer cache on), in turn: so the writer is a third process, and each server must see the other's and the writer's
re-index, its cache entries naming the index version they were answered from (issue 40's "0 stale or mixed answers
during a re-index from a third process").

    python benchmarks/reindex_visibility.py [--questions 200] [--rounds 20] [--docs 5] [--servers 0|2] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

ROOT = Path(__file__).resolve().parent.parent
REINDEX = """
import json, sys, time
from pathlib import Path
from components.stores.pgvector.store import PgSpanStore
data, prefix, rounds, docs = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
names = json.loads(sys.argv[5])
for r in range(1, rounds + 1):
    n = r % docs
    (data / f"item-{n}.md").write_text(f"---\\ntitle: {names[n]}\\n---\\nThe {names[n]} has the serial code "
                                       f"SN-{r:04d}-{n}. It ships in a grey box.\\n")
    PgSpanStore(data_dir=str(data), table_prefix=prefix, progress=False).open(refresh=True)
    print(f"{n} {r} {time.time()}", flush=True)   # document n now holds version r, visible from this moment
    time.sleep(0.5)
"""
CODE = re.compile(r"SN-(\d{4})-(\d+)")
FILLER = ["# Opening hours\n\nThe warehouse opens at nine and closes at five on weekdays.\n",
          "# Deliveries\n\nDeliveries arrive on Mondays and Thursdays by truck.\n",
          "# Returns\n\nA product can be returned within thirty days with its receipt.\n",
          "# Warranty\n\nEvery appliance carries a two-year warranty against defects.\n"]
NAMES = ["Aurora lamp", "Basalt kettle", "Cobalt speaker", "Dune router", "Ember heater", "Fjord blender",
         "Garnet clock", "Harbor fan"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--questions", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--docs", type=int, default=1, choices=range(1, 9),
                    help="documents rewritten in turn (more than one: near-identical documents the reader confuses)")
    ap.add_argument("--servers", type=int, default=0, choices=range(0, 5),
                    help="0: ask in this process; N: ask N `run.py --serve` processes in turn over HTTP")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from components.app.pipeline_io import load_pipeline
    from components.app.runner import QueryRunner, public
    from components.stores.pgvector.server import embedded_dsn

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        data = tmp / "kb"
        data.mkdir()
        for i, text in enumerate(FILLER):  # unrelated documents around the one that changes
            (data / f"other-{i}.md").write_text(text)
        for n in range(args.docs):
            (data / f"item-{n}.md").write_text(f"---\ntitle: {NAMES[n]}\n---\nThe {NAMES[n]} has the serial code "
                                               f"SN-0000-{n}. It ships in a grey box.\n")
        dsn = os.environ.get("SPANQA_PG_DSN") or embedded_dsn(str(tmp / "pg"))
        os.environ["SPANQA_PG_DSN"] = dsn
        spec = yaml.safe_load((ROOT / "pipelines/extractive-postgres.yaml").read_text())
        spec["components"]["retriever"]["init_parameters"]["document_store"]["init_parameters"].update(
            table_prefix="bench_visibility", progress=False)
        spec["metadata"]["spanqa"]["audit_log"] = None
        path = tmp / "pg.yaml"
        servers = []
        if args.servers:  # the served pipeline reads the same folder and tables; the answer cache stays on
            from serving import Client, start_server

            store = spec["components"]["retriever"]["init_parameters"]["document_store"]["init_parameters"]
            store["data_dir"] = str(data)
            spec["metadata"]["spanqa"]["answer_cache_ttl_s"] = 300
            path = tmp / "extractive-postgres.yaml"
            path.write_text(yaml.safe_dump(spec))
            env = {**os.environ, "HF_HUB_OFFLINE": "1", "HAYSTACK_TELEMETRY_ENABLED": "false", "OMP_NUM_THREADS": "1"}
            try:
                for k in range(args.servers):
                    servers.append(start_server(path, tmp / f"server-{k}.log", env=env))
            except BaseException:  # one that never turned ready: the others stop too
                for proc, _ in servers:
                    proc.terminate()
                raise
            clients = [Client(port, path.stem) for _, port in servers]

            def ask(question: str, turn: int) -> dict:
                return clients[turn % len(clients)].ask(question)
        else:
            path.write_text(yaml.safe_dump(spec))
            pipeline, _ = load_pipeline(path, data=str(data))
            runner = QueryRunner(pipeline, answer_cache_ttl_s=300)
            pipeline.get_component(runner.verifier).min_confidence = 0.0
            runner.warm_up()

            def ask(question: str, turn: int) -> dict:
                return public(runner.ask(question))

        visible: dict[int, list[tuple[float, int]]] = {n: [(0.0, 0)] for n in range(args.docs)}
        lock = threading.Lock()
        try:  # the servers stop whatever happens (nothing left running)
            writer = subprocess.Popen([sys.executable, "-c", REINDEX, str(data), "bench_visibility", str(args.rounds),
                                       str(args.docs), json.dumps(NAMES)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                      text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})

            def follow() -> None:
                for line in writer.stdout:
                    n, r, t = line.split()
                    with lock:
                        visible[int(n)].append((float(t), int(r)))

            threading.Thread(target=follow, daemon=True).start()
            asked = stale = mixed = first_after_new = first_after_total = unanswered = 0
            reasons: dict[str, int] = {}
            seen_round: dict[int, int] = {}
            examples = []
            while asked < args.questions or writer.poll() is None:  # at least --questions, and until the writer is done
                n = asked % args.docs
                with lock:
                    expected = max(r for t, r in visible[n] if t <= time.time())
                result = ask(f"What is the serial code of the {NAMES[n]}?", asked // args.docs)
                asked += 1
                quoted = {int(v) for v, d in CODE.findall(" ".join([result["answer"] or ""] +
                                                                   [s["text"] for s in result["spans"]])) if int(d) == n}
                if not quoted:
                    unanswered += 1
                    reasons[result["reason"].split(":")[0]] = reasons.get(result["reason"].split(":")[0], 0) + 1
                if len(quoted) > 1:
                    mixed += 1
                if quoted and min(quoted) < expected:
                    stale += 1
                    examples.append({"item": n, "expected": expected, "quoted": sorted(quoted)})
                if expected and seen_round.get(n) != expected:  # the first question after this re-index finished
                    seen_round[n] = expected
                    first_after_total += 1
                    first_after_new += expected in quoted
                time.sleep(0.05)
            writer.wait(timeout=600)
        finally:
            for proc, _ in servers:
                proc.terminate()
                proc.wait(timeout=60)
    report = {"servers": args.servers or "in process", "questions": asked, "reindexes": args.rounds, "stale": stale, "mixed": mixed,
              "not_answered": unanswered, "not_answered_reasons": reasons,
              "first_after_reindex_new": first_after_new, "first_after_reindex": first_after_total,
              "stale_examples": examples[:5], "load_average": os.getloadavg()}
    print(f"{asked} questions to {args.servers or 'this'} process(es) while another process re-indexed {args.rounds} times: {stale} stale, {mixed} mixing "
          f"versions; {unanswered} not answered {reasons}; the first answer after a re-index quoted the new text "
          f"{first_after_new}/{first_after_total}; "
          f"load average {report['load_average'][0]:.2f}")
    if args.json:
        print(json.dumps(report, indent=2))
    return 0 if stale == 0 and mixed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
