"""Indexing throughput against raw ``SentenceTransformer.encode`` on the same chunk texts, and the cached re-run.

Targets: first index ≥ 90 % of raw encode throughput; re-running on an unchanged corpus ≥ 50× faster.
    python benchmarks/indexing_speed.py [--docs N]
"""

import argparse
import tempfile
import time

from _common import CISI, require_cisi

from components.core.index import IndexSettings, index_text, split_document
from components.core.loaders import load_corpus
from components.core.models import load_sentence_transformer, resolve_model
from components.stores import span_store
from components.stores.span_store import SpanStore

MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=None, help="only the first N CISI documents")
    args = ap.parse_args()
    require_cisi()
    with tempfile.TemporaryDirectory() as tmp:
        data = CISI if args.docs is None else _subset(CISI, args.docs, tmp)
        docs = load_corpus(data).documents
        settings = IndexSettings(embedding_model=MODEL)
        texts = [index_text(d, b, c, True) for d in docs for b, _, cs in [split_document(d, settings)] for c in cs]
        model = load_sentence_transformer(resolve_model(MODEL).path)
        model.encode(texts[:64], batch_size=64)  # warm the model once for both contenders

        start = time.perf_counter()
        model.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
        raw = time.perf_counter() - start

        store = SpanStore(data_dir=str(data), cache_dir=f"{tmp}/cache", progress=False)
        start = time.perf_counter()
        store.open()
        first = time.perf_counter() - start
        span_store._OPEN.clear()  # a new process: nothing in memory
        again = SpanStore(data_dir=str(data), cache_dir=f"{tmp}/cache", progress=False)
        start = time.perf_counter()
        again.open()
        cached = time.perf_counter() - start
        assert again.stats["built"] is False
    n = len(texts)
    print(f"documents {len(docs)}, chunks {n}")
    print(f"raw SentenceTransformer.encode   {raw:8.2f} s  {n / raw:8.1f} chunks/s")
    print(f"spanqa first index (split+BM25+embed+save) {first:8.2f} s  {n / first:8.1f} chunks/s")
    print(f"throughput ratio spanqa / raw encode: {raw / first:.2f} (target >= 0.90)")
    print(f"spanqa re-run, unchanged corpus: {cached:.3f} s -> {first / cached:.0f}x faster than the first index (target >= 50x)")


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
