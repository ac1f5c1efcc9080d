"""Indexing throughput and memory for one large text and for many small files (issue 23): seconds per MB and
peak RSS, each size in a fresh process so the peak is its own.

1. **One large text** of ``--mb`` MB (CISI abstracts, a paragraph each, with a Markdown heading every 50
   paragraphs): the memory store indexes it with **random unit vectors for embeddings** (the cost measured is
   spanqa's: reading, splitting, BM25, chunk texts, saving) at each size, so the s/MB column shows whether the
   work grows linearly; then the real MiniLM embedder encodes the chunks of the smallest size alone ("raw encode")
   and inside a real index build — the ratio of the two is spanqa's overhead over the encoder.
2. **Many small files**: ``--files`` one-paragraph Markdown files, indexed the same way (random vectors).

    python benchmarks/large_inputs.py [--mb 1 5 20] [--files 5000] [--encode-mb 1] [--json]

Targets: split + embed ≤ 2× raw encode; peak RSS ≤ 1 GB for 20 MB; ≤ 500 MB for 5,000 files.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import CISI, finish, require_cisi  # noqa: E402

CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, {root!r})
from benchmarks._common import random_embedder
from components.stores.span_store import SpanStore
data, cache, real = sys.argv[1], sys.argv[2], sys.argv[3] == "real"
store = SpanStore(data_dir=data, cache_dir=cache, progress=False)
if not real:
    store.embed_passages = random_embedder()
    store.__dict__["_embedder_model"] = object()
start = time.perf_counter()
store.open()
took = time.perf_counter() - start
texts = None
if real:  # the same chunk texts encoded alone, the raw encoder's time
    from components.core.retrieval.index import index_text, split_document
    texts = []
    for doc in store.load_documents().documents:
        blocks, _, chunks = split_document(doc, store.settings)
        texts += [index_text(doc, blocks, c, store.settings) for c in chunks]
    store.embed_passages(texts[:64])
    start = time.perf_counter()
    store.embed_passages(texts)
    encode = time.perf_counter() - start
else:
    encode = None
print(json.dumps({{"seconds": took, "chunks": store.stats["chunks"], "encode_s": encode,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


def paragraphs() -> list[str]:
    with open(CISI / "corpus.jsonl", encoding="utf-8") as fh:
        return [json.loads(line)["text"].strip() for line in fh if json.loads(line)["text"].strip()]


def large_text(path: Path, mb: float, paras: list[str]) -> None:
    out, size, i = [], 0, 0
    while size < mb * 2**20:
        if i % 50 == 0:
            out.append(f"# Part {i // 50 + 1}")
        p = paras[i % len(paras)]
        out.append(p)
        size += len(p) + 2
        i += 1
    path.write_text("\n\n".join(out) + "\n", encoding="utf-8")


def run_child(data: Path, cache: Path, mode: str) -> dict:
    code = CHILD.format(root=str(Path(__file__).resolve().parent.parent))
    out = subprocess.run([sys.executable, "-c", code, str(data), str(cache), mode], capture_output=True, text=True,
                         env={**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"})
    if out.returncode != 0:
        sys.exit(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, nargs="+", default=[1, 5, 20])
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--encode-mb", type=float, default=1.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    require_cisi()
    paras = paragraphs()
    report: dict = {"load_average_before": os.getloadavg(), "large_text": [], "files": None}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for mb in args.mb:
            folder = tmp / f"text-{mb}"
            folder.mkdir()
            large_text(folder / "large.md", mb, paras)
            got = run_child(folder, tmp / f"cache-{mb}", "random")
            row = {"mb": mb, "chunks": got["chunks"], "seconds": round(got["seconds"], 1),
                   "s_per_mb": round(got["seconds"] / mb, 2), "peak_rss_mb": round(got["peak_rss_mb"])}
            report["large_text"].append(row)
            print(f"one {mb:g} MB text: {row['chunks']:,} chunks in {row['seconds']} s ({row['s_per_mb']} s/MB, random "
                  f"vectors), peak RSS {row['peak_rss_mb']} MB", flush=True)
        folder = tmp / "encode"
        folder.mkdir()
        large_text(folder / "large.md", args.encode_mb, paras)
        got = run_child(folder, tmp / "cache-encode", "real")
        report["encode"] = {"mb": args.encode_mb, "chunks": got["chunks"], "index_s": round(got["seconds"], 1),
                            "raw_encode_s": round(got["encode_s"], 1),
                            "ratio": round(got["seconds"] / got["encode_s"], 2)}
        e = report["encode"]
        print(f"one {args.encode_mb:g} MB text with the real MiniLM embedder: index {e['index_s']} s, raw encode of the "
              f"same {e['chunks']:,} chunk texts {e['raw_encode_s']} s: {e['ratio']}× (target ≤ 2×)", flush=True)
        folder = tmp / "files"
        for i in range(args.files):
            sub = folder / f"{i // 500:03d}"
            sub.mkdir(parents=True, exist_ok=True)
            (sub / f"doc-{i:05d}.md").write_text(f"# Document {i}\n\n{paras[i % len(paras)]}\n", encoding="utf-8")
        got = run_child(folder, tmp / "cache-files", "random")
        report["files"] = {"files": args.files, "chunks": got["chunks"], "seconds": round(got["seconds"], 1),
                           "peak_rss_mb": round(got["peak_rss_mb"])}
        f = report["files"]
        print(f"{f['files']:,} small files: {f['chunks']:,} chunks in {f['seconds']} s (random vectors), peak RSS "
              f"{f['peak_rss_mb']} MB (target ≤ 500 MB)", flush=True)
    return finish(report, args.json)


if __name__ == "__main__":
    sys.exit(main())
