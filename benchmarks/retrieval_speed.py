"""Hybrid retrieval queries/s against stock Haystack hybrid retrieval at 1k, 10k and 100k chunks, side by side.

Stock: InMemoryBM25Retriever + SentenceTransformersTextEmbedder → InMemoryEmbeddingRetriever → DocumentJoiner
(reciprocal rank fusion), top 50 each. Ours: HybridRetriever (SpanStore) → RRFJoiner, top 50 each. Both embed
the question with the same real all-MiniLM-L6-v2 (packaged) and search the same chunk texts with the same
chunk vectors. **Random unit vectors stand in for the chunk embeddings** (embedding 100k texts on two CPU
cores takes longer than this benchmark should; search time does not depend on what the vectors mean).
The corpus is recombined CISI sentences, one chunk per document. Alternating question by question, median of
2 passes; also the query-embedding forward alone (the floor) and the resident memory each index added.

    python benchmarks/retrieval_speed.py [--sizes 1000 10000 100000] [--questions 20] [--json]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import random_embedder, require_cisi, synthetic_corpus


def rss_mb() -> float:
    import psutil

    gc.collect()
    return psutil.Process().memory_info().rss / 2**20


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def ours(folder: Path, tmp: Path):
    from haystack import Pipeline

    from components.joiners.rrf_joiner import RRFJoiner
    from components.retrievers.hybrid_retriever import HybridRetriever
    from components.stores.span_store import SpanStore

    store = SpanStore(data_dir=str(folder), cache_dir=str(tmp / "cache"), progress=False)
    store.embed_passages = random_embedder()
    start = time.perf_counter()
    store.open()
    build = time.perf_counter() - start
    p = Pipeline()
    p.add_component("retriever", HybridRetriever(store, top_k=50))
    p.add_component("joiner", RRFJoiner(top_k=50))
    p.connect("retriever.bm25_documents", "joiner.bm25")
    p.connect("retriever.dense_documents", "joiner.dense")
    p.warm_up()
    return store, build, lambda q: p.run({"retriever": {"query": q}})["joiner"]["documents"]


def stock(store, model_path: str):
    from haystack import Document, Pipeline
    from haystack_integrations.components.embedders.sentence_transformers import SentenceTransformersTextEmbedder
    from haystack.components.joiners import DocumentJoiner
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever, InMemoryEmbeddingRetriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    index = store.open()
    docs = [Document(id=index.chunk_id(i), content=index.chunk_text(i), embedding=index.embeddings[i].tolist())
            for i in range(index.n_chunks)]
    base = rss_mb()
    start = time.perf_counter()
    ds = InMemoryDocumentStore()
    ds.write_documents(docs)
    build = time.perf_counter() - start
    del docs
    index_mb = rss_mb() - base  # the store alone (its embedder model is not counted, as ours is not)
    p = Pipeline()
    p.add_component("embedder", SentenceTransformersTextEmbedder(model=model_path, progress_bar=False))
    p.add_component("bm25", InMemoryBM25Retriever(ds, top_k=50))
    p.add_component("dense", InMemoryEmbeddingRetriever(ds, top_k=50))
    p.add_component("joiner", DocumentJoiner(join_mode="reciprocal_rank_fusion", top_k=50))
    p.connect("embedder.embedding", "dense.query_embedding")
    p.connect("bm25", "joiner")
    p.connect("dense", "joiner")
    p.warm_up()
    return build, index_mb, lambda q: p.run({"embedder": {"text": q}, "bm25": {"query": q}})["joiner"]["documents"]


def one_size(n: int, questions: list[str], passes: int, model_path: str) -> dict:
    from components.core.backends.models import load_sentence_transformer

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        folder = tmp / "corpus"
        synthetic_corpus(folder, n)
        encoder = load_sentence_transformer(model_path, "cpu")  # loaded once, shared: not part of either index
        base = rss_mb()
        store, our_build, ask_ours = ours(folder, tmp)
        our_mb = rss_mb() - base
        stock_build, stock_mb, ask_stock = stock(store, model_path)
        times = {"ours": [], "stock": [], "embed": []}
        for q in questions[:2]:
            ask_ours(q), ask_stock(q), encoder.encode([q])
        from components.core.memo import Memo

        def ours_cold(q):  # a question not seen before: no query-embedding memo hit (repeats are another benchmark)
            store._query_vectors = Memo(maxsize=4096)
            return ask_ours(q)

        for _ in range(passes):
            for q in questions:
                for name, fn in (("ours", ours_cold), ("stock", ask_stock),
                                 ("embed", lambda x: encoder.encode([x], show_progress_bar=False))):
                    start = time.perf_counter()
                    fn(q)
                    times[name].append(time.perf_counter() - start)
        row = {"chunks": store.open().n_chunks, "load_average": os.getloadavg()[0],
               "build_s": {"ours": round(our_build, 2), "stock_write": round(stock_build, 2)},
               "index_rss_mb": {"ours": round(our_mb, 1), "stock": round(stock_mb, 1)}}
        for name, values in times.items():
            row[name] = {"p50_ms": round(statistics.median(values) * 1000, 2),
                         "p95_ms": round(pct(values, 0.95) * 1000, 2),
                         "qps": round(len(values) / sum(values), 1)}
        row["qps_ratio_ours_vs_stock"] = round(row["ours"]["qps"] / row["stock"]["qps"], 2)
        row["p50_ratio_ours_vs_embed"] = round(row["ours"]["p50_ms"] / row["embed"]["p50_ms"], 2)
        return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[1_000, 10_000, 100_000])
    ap.add_argument("--questions", type=int, default=20)
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    require_cisi()
    from components.core.backends.models import resolve_model

    model_path = resolve_model("sentence-transformers/all-MiniLM-L6-v2").path
    with tempfile.TemporaryDirectory() as tmp:
        questions = synthetic_corpus(Path(tmp) / "q", 1)[: args.questions]
    rows = {}
    print(f"{'chunks':>9}  {'ours q/s':>9} {'stock q/s':>9} {'ratio':>6}  {'ours p50':>9} {'embed p50':>9} "
          f"{'ours/embed':>10}  {'RSS ours':>9} {'RSS stock':>9}  load", flush=True)
    for n in args.sizes:
        r = rows[n] = one_size(n, questions, args.passes, model_path)
        print(f"{r['chunks']:>9,}  {r['ours']['qps']:>9.1f} {r['stock']['qps']:>9.1f} {r['qps_ratio_ours_vs_stock']:>5.1f}x  "
              f"{r['ours']['p50_ms']:>7.1f}ms {r['embed']['p50_ms']:>7.1f}ms {r['p50_ratio_ours_vs_embed']:>9.2f}x  "
              f"{r['index_rss_mb']['ours']:>7.0f}MB {r['index_rss_mb']['stock']:>7.0f}MB  {r['load_average']:.2f}",
              flush=True)
    print("targets: ≥ 10× stock q/s at 100k chunks, ≥ 1× at 1k; ours p50 ≤ 1.3× the query-embedding forward at 100k")
    if args.json:
        print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
