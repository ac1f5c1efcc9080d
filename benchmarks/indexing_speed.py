"""Indexing throughput against raw ``SentenceTransformer.encode`` on the same chunk texts, the cached re-run,
and the int8 embedder (``embedding_precision: int8``): its speed and its agreement with fp32 retrieval.

Side by side in one process: each pass times raw encode and spanqa's first index (split + BM25 + embed +
save, into an empty cache) back to back, alternating which goes first; the medians over the passes are
compared, and so are the two within each pass (the median of the per-pass ratios), with the load average at
the start and the end. This machine's speed wanders by ±10 % over tens of seconds, more than the gap being
measured: many short passes (``--docs 400 --passes 8``) pair the two under the same conditions better than a
few long ones.

Targets (issue 10): first index >= 0.95x raw encode throughput; re-running on an unchanged corpus >= 100x
faster than the first index. The int8 row reports throughput and, over the CISI queries, how often the dense
top 5 equals fp32's and both nDCG@10 (there is no target for int8 indexing; it is off by default).

    python benchmarks/indexing_speed.py [--docs N] [--passes 2] [--no-int8]
"""

import argparse
import os
import resource
import statistics
import tempfile
import time

from _common import CISI, require_cisi

from components.core.retrieval.index import IndexSettings, index_text, split_document
from components.core.retrieval.loaders import load_corpus
from components.core.backends.models import load_sentence_transformer, resolve_model
from components.stores import span_store
from components.stores.base import Selection
from components.stores.span_store import SpanStore

MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def _first_index(data, cache_dir, precision="fp32"):
    span_store._OPEN.clear()  # a new process: nothing in memory
    store = SpanStore(data_dir=str(data), cache_dir=cache_dir, progress=False, embedding_precision=precision)
    start = time.perf_counter()
    store.open()
    return time.perf_counter() - start, store


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=None, help="only the first N CISI documents")
    ap.add_argument("--passes", type=int, default=2, help="alternating passes; medians are compared (>= 2)")
    ap.add_argument("--no-int8", action="store_true", help="skip the int8 embedder row")
    args = ap.parse_args()
    require_cisi()
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        data = CISI if args.docs is None else _subset(CISI, args.docs, tmp)
        docs = load_corpus(data).documents
        settings = IndexSettings(embedding_model=MODEL)
        texts = [index_text(d, b, c, settings) for d in docs for b, _, cs in [split_document(d, settings)] for c in cs]
        model = load_sentence_transformer(resolve_model(MODEL).path)
        model.encode(texts[:64], batch_size=64)  # warm the model once for both contenders

        raw_times, first_times = [], []
        store = None
        for n in range(max(2, args.passes)):
            def raw():
                start = time.perf_counter()
                model.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
                raw_times.append(time.perf_counter() - start)

            def ours():
                nonlocal store
                took, store = _first_index(data, f"{tmp}/cache-{n}")
                first_times.append(took)

            for step in ((raw, ours) if n % 2 == 0 else (ours, raw)):
                step()
            print(f"pass {n + 1}: raw encode {raw_times[-1]:.2f} s, spanqa first index {first_times[-1]:.2f} s; "
                  f"load average {os.getloadavg()[0]:.2f}", flush=True)
        span_store._OPEN.clear()
        again = SpanStore(data_dir=str(data), cache_dir=f"{tmp}/cache-0", progress=False)
        start = time.perf_counter()
        again.open()
        cached = time.perf_counter() - start
        assert again.stats["built"] is False
        raw_s, first_s = statistics.median(raw_times), statistics.median(first_times)
        nchunks = len(texts)
        print(f"documents {len(docs)}, chunks {nchunks}, passes {len(raw_times)}")
        print(f"raw SentenceTransformer.encode   median {raw_s:8.2f} s  {nchunks / raw_s:8.1f} chunks/s")
        print(f"spanqa first index (split+BM25+embed+save) median {first_s:8.2f} s  {nchunks / first_s:8.1f} chunks/s")
        paired = sorted(r / f for r, f in zip(raw_times, first_times))
        print(f"throughput ratio spanqa / raw encode: {raw_s / first_s:.2f} of the medians, {statistics.median(paired):.2f} "
              f"the median of the per-pass ratios (range {paired[0]:.2f}-{paired[-1]:.2f}; target >= 0.95)")
        print(f"spanqa re-run, unchanged corpus: {cached:.3f} s -> {first_s / cached:.0f}x faster than the first "
              f"index (target >= 100x)")
        if not args.no_int8:
            took, int8 = _first_index(data, f"{tmp}/cache-int8", "int8")
            print(f"int8 embedder first index {took:8.2f} s  {nchunks / took:8.1f} chunks/s "
                  f"({first_s / took:.2f}x spanqa fp32, {raw_s / took:.2f}x raw fp32 encode)")
            _agreement(data, store, int8)
    print(f"peak resident memory of the process {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB; "
          f"load average {load0:.2f} at the start, {os.getloadavg()[0]:.2f} at the end")


def _agreement(data, fp32, int8) -> None:
    """Dense top-5 agreement and nDCG@10 of the int8 embedder against fp32 over the CISI queries."""
    from components.evaluation.evaluate import load_beir_queries
    from components.evaluation.metrics import ndcg_at_k

    queries, qrels = load_beir_queries(CISI)
    judged = [q for q in queries if q in qrels]
    same, nd = 0, {"fp32": [], "int8": []}
    for qid in judged:
        lists = {}
        for name, store in (("fp32", fp32), ("int8", int8)):
            hits = list(dict.fromkeys(d.meta["doc_id"] for d, _ in store.dense_search(queries[qid], 20, Selection())))
            lists[name] = hits
            nd[name].append(ndcg_at_k(hits, qrels[qid], 10))
        same += lists["fp32"][:5] == lists["int8"][:5]
    print(f"int8 vs fp32 dense retrieval over {len(judged)} queries: same top 5 {same}/{len(judged)}; nDCG@10 "
          f"fp32 {statistics.fmean(nd['fp32']):.4f}, int8 {statistics.fmean(nd['int8']):.4f}")


def _subset(src, n, tmp):
    from pathlib import Path

    out = Path(tmp) / "cisi-subset"
    out.mkdir()
    with open(src / "corpus.jsonl", encoding="utf-8") as fh, open(out / "corpus.jsonl", "w", encoding="utf-8") as w:
        for i, line in enumerate(fh):
            if i >= n:
                break
            w.write(line)
    return out


if __name__ == "__main__":
    main()
