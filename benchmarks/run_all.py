"""Run every benchmark, one after the other, printing each one's side-by-side ratios (make bench)."""

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SCRIPTS = ["bm25_speed.py", "indexing_speed.py", "retrieval_speed.py", "ranker_speed.py", "reader_speed.py", "e2e_latency.py",
           "reliability.py", "pg_store.py", "serving.py"]


def main() -> int:
    failed = []
    for script in SCRIPTS:
        if not (HERE / script).exists():
            continue
        print(f"\n=== {script} ===", flush=True)
        if subprocess.call([sys.executable, str(HERE / script)], cwd=ROOT) != 0:
            failed.append(script)
    print("\n=== CISI retrieval quality (run.py --eval) ===", flush=True)
    subprocess.call([sys.executable, "run.py", "pipelines/retrieval.yaml", "--eval", "../shared/data/cisi"], cwd=ROOT)
    print("anchors measured on this machine: rank-bm25 0.304, bm25s 0.349, MiniLM dense 0.419, RRF(bm25s, dense) 0.422")
    if failed:
        print(f"failed: {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
