"""What per-document access costs at scale, in both stores, side by side.

A synthetic corpus of N one-chunk documents (recombined CISI sentences, as in benchmarks/pg_store.py; random unit
vectors stand in for embeddings — the cost of a vector search does not depend on what the vectors mean): a quarter
of the documents `access: [finance]`, a quarter `access: [legal]`, half public. For each store (memory; PostgreSQL
with HNSW) the p50 / p95 of BM25, dense and hybrid search for the same questions:

- unrestricted (a local user: nothing forbidden),
- as an asker in no group (half the corpus forbidden: excluded inside the search),

and whether every restricted search still returned top_k readable chunks (it must, while enough exist), and
returned no forbidden one. Goal: restricted p50 ≤ 1.1× unrestricted.

    python benchmarks/access_cost.py [--chunks 100000] [--queries 50] [--top-k 50] [--stores memory postgres] [--json]

The embedded PostgreSQL runs in a temporary folder unless SPANQA_PG_DSN is set. At 100,000 chunks building both
indexes takes ~15 minutes on two cores (splitting and BM25 dominate; progress is shown).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import random_embedder, require_cisi, synthetic_corpus  # noqa: E402


GROUPS = ("finance", "legal", "", "")  # document i's group: GROUPS[i % 4] ("" public)


def corpus(folder: Path, n: int) -> tuple[list[str], dict[str, str]]:
    """``n`` one-chunk documents, a quarter each for finance and legal; the questions; ``{doc_id: group}``."""
    def head(i: int) -> str:
        return f"---\naccess: [{GROUPS[i % 4]}]\n---\n" if GROUPS[i % 4] else ""

    questions = synthetic_corpus(folder, n, head=head, suffix=".md")
    return questions, {f"{i // 1000:04d}/{i:07d}.md": GROUPS[i % 4] for i in range(n)}


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def measure(store, questions: list[str], top_k: int, forbidden: frozenset[str]) -> dict:
    from components.stores.base import BM25Params, Selection

    free, scoped = Selection(), Selection(exclude=forbidden)
    params = BM25Params()
    searches = {
        "bm25": lambda q, s: store.bm25_search(store.analyzer(q), top_k, s, params),
        "dense": lambda q, s: store.dense_search(q, top_k, s),
        "hybrid": lambda q, s: _fused_documents(store.hybrid_search(store.analyzer(q), q, top_k, s, params)),
    }
    row: dict = {}
    for name, search in searches.items():
        for q in questions[:3]:  # warm plans and caches
            search(q, free), search(q, scoped)
        times = {"unrestricted": [], "restricted": []}
        short, leaked = 0, 0
        for q in questions:  # alternate, so both see the same machine
            for label, sel in (("unrestricted", free), ("restricted", scoped)):
                start = time.perf_counter()
                hits = search(q, sel)
                times[label].append((time.perf_counter() - start) * 1000)
                if label == "restricted":
                    ids = [doc.meta["doc_id"] for doc, _ in hits]
                    short += len(ids) < top_k
                    leaked += sum(d in forbidden for d in ids)
        p50 = {k: statistics.median(v) for k, v in times.items()}
        row[name] = {"unrestricted_p50_ms": round(p50["unrestricted"], 2),
                     "restricted_p50_ms": round(p50["restricted"], 2),
                     "restricted_p95_ms": round(pct(times["restricted"], 0.95), 2),
                     "ratio": round(p50["restricted"] / p50["unrestricted"], 3),
                     "short_results": short, "forbidden_returned": leaked}
    return row


def _fused_documents(result) -> list[tuple]:
    """``hybrid_search``'s fused list as ``(Document, rrf)`` (its chunks come from the two lists it returns)."""
    bm25, dense, fused = result
    by_id = {doc.id: doc for doc, _ in [*bm25, *dense]}
    return [(by_id[cid], score) for cid, score, _ in fused]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--top-k", type=int, default=50)
    ap.add_argument("--stores", nargs="+", default=["memory", "postgres"], choices=["memory", "postgres"])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    require_cisi()
    import numpy as np

    from components.stores.base import AccessRule
    from components.stores.pgvector.store import PgSpanStore
    from components.stores.span_store import SpanStore

    results = {"chunks": args.chunks, "top_k": args.top_k, "load_average": os.getloadavg()}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        questions, groups = corpus(tmp / "corpus", args.chunks)
        questions = questions[: args.queries]
        qvec = random_embedder(seed=1)
        vectors = {q: qvec([q])[0] for q in questions}
        for label in args.stores:
            if label == "memory":
                store = SpanStore(data_dir=str(tmp / "corpus"), cache_dir=str(tmp / "cache"))
            else:
                store = PgSpanStore(data_dir=str(tmp / "corpus"), table_prefix="bench_access", recreate=True,
                                    embedded_dir=str(tmp / "pg"), search_strategy="hnsw")
            store.embed_passages = random_embedder()
            store.__dict__["_embedder_model"] = type("Dim", (), {"get_embedding_dimension": lambda self: 384})()
            store.embed_query = lambda q, scope=None, v=vectors: np.asarray(v[q], dtype=np.float32)
            start = time.perf_counter()
            store.open()
            build = time.perf_counter() - start
            start = time.perf_counter()
            forbidden = store.forbidden_documents(AccessRule("access", None), frozenset())
            rule_ms = (time.perf_counter() - start) * 1000
            expected = {d for d, g in groups.items() if g}
            assert forbidden == expected, f"{label}: forbidden set differs from the corpus labels: {sorted(forbidden)[:3]} vs {sorted(expected)[:3]} ({len(forbidden)} vs {len(expected)})"
            row = {"build_s": round(build, 1), "forbidden": len(forbidden), "forbidden_set_ms": round(rule_ms, 1),
                   **measure(store, questions, args.top_k, forbidden)}
            results[label] = row
            if label == "postgres" and store._embedded:  # stop it before its temporary folder goes
                from components.stores.pgvector import lifetime

                lifetime.release(str(Path(store.embedded_dir).resolve()))
            print(f"{label:<9} {args.chunks:,} chunks, {len(forbidden):,} documents forbidden (set built in "
                  f"{rule_ms:.0f} ms, then kept per index version); build {build:.0f} s", flush=True)
            for name in ("bm25", "dense", "hybrid"):
                r = row[name]
                print(f"  {name:<7} p50 unrestricted {r['unrestricted_p50_ms']:>8.2f} ms  restricted "
                      f"{r['restricted_p50_ms']:>8.2f} ms  ({r['ratio']:.2f}×; p95 {r['restricted_p95_ms']:.2f} ms)  "
                      f"short results {r['short_results']}, forbidden returned {r['forbidden_returned']}", flush=True)
    results["load_average_after"] = os.getloadavg()
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
