"""End-to-end extractive latency: pipelines/extractive.yaml against a stock Haystack 3 extractive QA pipeline
with the SAME models, side by side in one process, alternating question by question.

Stock: InMemoryBM25Retriever + SentenceTransformersTextEmbedder → InMemoryEmbeddingRetriever (top 20 each) →
DocumentJoiner (reciprocal rank fusion) → SentenceTransformersSimilarityRanker (top 5 of the fused) →
TransformersExtractiveReader. Ours: pipelines/extractive.yaml (hybrid retrieval, RRF, ranker, sentence windows,
reader, verifier loop) with its ranker and reader pointed at the same stand-ins. The models are full-size
stand-ins built here with random seeded weights (no download): a roberta-base-shaped QA model (``RobertaConfig()``)
and a MiniLM-L6-shaped cross-encoder, plus the real packaged all-MiniLM-L6-v2 embedder for both. The corpus is
the SQuAD article in ../shared/data/squad2 (each paragraph a document); questions are its first N.

Prints p50/p95 seconds of each, the ratio ours/stock (< 1: ours faster), for fp32 and for ``precision: int8``
(ours), the share of identical answers and of identical re-ranked top 5 int8 vs fp32, the tokens the reader was sent, and the load average.

    python benchmarks/e2e_latency.py [--questions 40] [--passes 2] [--qa-model spanqa/reader-minilm-l6-squad2]
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

from _common import ROOT

sys.path.insert(0, str(ROOT))
SQUAD = ROOT.parent / "shared" / "data" / "squad2" / "dev-computational-complexity.json"


def stock_pipeline(paragraphs, embedder_dir: str, ce_dir: str, qa_dir: str):
    from haystack import Document, Pipeline
    from haystack.components.joiners import DocumentJoiner
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever, InMemoryEmbeddingRetriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore
    from haystack_integrations.components.embedders.sentence_transformers import (
        SentenceTransformersDocumentEmbedder,
        SentenceTransformersTextEmbedder,
    )
    from haystack_integrations.components.rankers.sentence_transformers import SentenceTransformersSimilarityRanker
    from haystack_integrations.components.readers.transformers import TransformersExtractiveReader

    store = InMemoryDocumentStore()
    docs = [Document(content=text, meta={"doc_id": doc_id}) for doc_id, text in paragraphs]
    embedder = SentenceTransformersDocumentEmbedder(model=embedder_dir, progress_bar=False)
    embedder.warm_up()
    store.write_documents(embedder.run(documents=docs)["documents"])
    p = Pipeline()
    p.add_component("text_embedder", SentenceTransformersTextEmbedder(model=embedder_dir, progress_bar=False))
    p.add_component("bm25", InMemoryBM25Retriever(store, top_k=20))
    p.add_component("dense", InMemoryEmbeddingRetriever(store, top_k=20))
    p.add_component("joiner", DocumentJoiner(join_mode="reciprocal_rank_fusion"))
    p.add_component("ranker", SentenceTransformersSimilarityRanker(model=ce_dir, top_k=5))
    p.add_component("reader", TransformersExtractiveReader(model=qa_dir, top_k=5))
    p.connect("text_embedder.embedding", "dense.query_embedding")
    p.connect("bm25", "joiner")
    p.connect("dense", "joiner")
    p.connect("joiner", "ranker")
    p.connect("ranker", "reader")
    p.warm_up()

    def ask(q: str):
        out = p.run({"text_embedder": {"text": q}, "bm25": {"query": q}, "ranker": {"query": q}, "reader": {"query": q}})
        best = next((a for a in out["reader"]["answers"] if a.data), None)
        return best.data if best else None

    return ask


def our_runner(tmp: Path, ce_dir: str, qa_dir: str, precision: str):
    import yaml

    from components.app.pipeline_io import load_pipeline
    from components.app.runner import QueryRunner

    spec = yaml.safe_load((ROOT / "pipelines/extractive.yaml").read_text())
    comps = spec["components"]
    comps["ranker"]["init_parameters"].update(model=ce_dir, precision=precision)
    comps["reader"]["init_parameters"].update(model=qa_dir, precision=precision)
    # the embedder stays fp32: int8 query vectors would need an int8 index and change what is retrieved
    # (benchmarks/indexing_speed.py measures that profile and its retrieval agreement)
    path = tmp / f"extractive-{precision}.yaml"
    spec.setdefault("metadata", {}).setdefault("spanqa", {})["allow_paths_outside"] = True
    path.write_text(yaml.safe_dump(spec))
    pipeline, _ = load_pipeline(path, data=str(SQUAD), cache_dir=str(tmp / "cache"))
    runner = QueryRunner(pipeline)  # no answer cache: every question is asked once per pass anyway
    runner.warm_up()
    return runner


def int8_noise(ce_dir: str, questions: list[str], texts: list[str]) -> tuple[float, float]:
    """(median gap between neighbouring fp32 cross-encoder scores, median |int8 - fp32| score change): whether
    int8 can reorder what the stand-in ranks at all."""
    import random

    import numpy as np

    from components.core.backends.models import load_cross_encoder

    fp32, int8 = load_cross_encoder(ce_dir, "cpu"), load_cross_encoder(ce_dir, "cpu", None, "int8")
    rng, gaps, moves = random.Random(0), [], []
    for q in questions:
        pairs = [(q, t) for t in rng.sample(texts, min(20, len(texts)))]
        a = np.asarray(fp32.predict(pairs, batch_size=8, show_progress_bar=False))
        b = np.asarray(int8.predict(pairs, batch_size=8, show_progress_bar=False))
        gaps.append(float(np.median(-np.diff(np.sort(a)[::-1]))))
        moves.append(float(np.median(np.abs(a - b))))
    return statistics.median(gaps), statistics.median(moves)


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--questions", type=int, default=40)
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--qa-model", default=None, help="QA model id or directory for both pipelines (default: the "
                    "random roberta-base-shaped stand-in; 'spanqa/reader-minilm-l6-squad2' is our trained reader)")
    args = ap.parse_args()
    import torch

    from components.core.retrieval.loaders import iter_squad
    from tests.standins import build_cross_encoder, build_full_size_qa_model, minilm_dir

    data = json.loads(SQUAD.read_text())
    questions = [qa["question"] for a in data["data"] for p in a["paragraphs"] for qa in p["qas"]][: args.questions]
    paragraphs = [(doc_id, context) for doc_id, _, context, _ in iter_squad(SQUAD)]
    tmp = Path(tempfile.mkdtemp(prefix="spanqa-e2e-"))
    if args.qa_model:
        from components.core.backends.models import resolve_model

        qa_dir = resolve_model(args.qa_model).path
    else:
        qa_dir = build_full_size_qa_model(tmp / "qa")
    ce_dir = build_cross_encoder(tmp / "ce", hidden=384, layers=6, heads=12, intermediate=1536)
    print(f"QA model {args.qa_model or 'roberta-base-shaped stand-in'}; cross-encoder: MiniLM-L6-shaped stand-in")
    print(f"{len(questions)} questions, {len(paragraphs)} paragraphs; torch threads {torch.get_num_threads()}; "
          f"load average {os.getloadavg()[0]:.2f}", flush=True)

    stock = stock_pipeline(paragraphs, str(minilm_dir()), str(ce_dir), str(qa_dir))
    ours = {p: our_runner(tmp, str(ce_dir), str(qa_dir), p) for p in ("fp32", "int8")}
    times = {"stock": [], "fp32": [], "int8": []}
    answers = {"fp32": {}, "int8": {}}
    top5 = {"fp32": {}, "int8": {}}
    tokens = []
    for n in range(args.passes):
        for i, q in enumerate(questions):
            order = ["stock", "fp32", "int8"] if (i + n) % 2 == 0 else ["int8", "fp32", "stock"]
            for who in order:
                start = time.perf_counter()
                if who == "stock":
                    stock(q)
                else:
                    r = ours[who].ask(q)
                    answers[who][q] = (r["answer"], r["verdict"], json.dumps(r["spans"][:1]))
                    top5[who][q] = r.get("_stages", {}).get("reranked", [])[:5]
                    if who == "fp32" and n == 0:
                        tokens.append((r.get("_reader_tokens", 0), r.get("_full_document_tokens", 0)))
                times[who].append(time.perf_counter() - start)
        print(f"pass {n + 1} done; load average {os.getloadavg()[0]:.2f}", flush=True)
    p50 = {k: statistics.median(v) for k, v in times.items()}
    p95 = {k: pct(v, 0.95) for k, v in times.items()}
    same = sum(answers["fp32"][q] == answers["int8"][q] for q in questions) / len(questions)
    same_top = sum(top5["fp32"][q] == top5["int8"][q] for q in questions) / len(questions)
    same_set = sum(set(top5["fp32"][q]) == set(top5["int8"][q]) for q in questions) / len(questions)
    for k in times:
        print(f"{k:6} p50 {p50[k]:.3f} s  p95 {p95[k]:.3f} s")
    print(f"ratio ours/stock p50: fp32 {p50['fp32'] / p50['stock']:.2f} (target ≤ 0.5), int8 {p50['int8'] / p50['stock']:.2f} "
          f"(target ≤ 0.25); p95: fp32 {p95['fp32'] / p95['stock']:.2f}, int8 {p95['int8'] / p95['stock']:.2f}")
    print(f"int8 vs fp32: {same:.1%} identical (answer, verdict, span) (target ≥ 98 %); re-ranked top 5: same "
          f"documents {same_set:.1%}, same order {same_top:.1%}")
    gap, move = int8_noise(ce_dir, questions[:10], [text for _, text in paragraphs])
    print(f"stand-in cross-encoder, 20 paragraphs a question: median gap between neighbouring fp32 scores {gap:.5f}, "
          f"median |int8 - fp32| {move:.5f} (int8 moves a score {move / gap:.1f}x the gap that orders it)")
    sent, full = sum(t for t, _ in tokens), sum(f for _, f in tokens)
    print(f"reader tokens per question: span path {sent / len(tokens):.0f}, full-document path {full / len(tokens):.0f} "
          f"(ratio {sent / full:.2f})")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
