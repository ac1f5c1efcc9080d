"""Shared bits of the benchmark scripts: repository on sys.path, offline, CISI location, timing."""

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "false")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
CISI = Path(os.environ.get("SPANQA_CISI", ROOT.parent / "shared" / "data" / "cisi"))


def best_of(fn, repeats: int = 3) -> float:
    """The fastest of ``repeats`` runs of ``fn()`` in seconds (least disturbed by other load)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def require_cisi() -> None:
    if not (CISI / "corpus.jsonl").exists():
        sys.exit(f"CISI not found at {CISI}; set SPANQA_CISI to a BEIR folder.")
