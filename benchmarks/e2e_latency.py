"""End-to-end extractive latency: pipelines/extractive.yaml against a stock Haystack 3 extractive QA pipeline
with the SAME models, side by side in one process, alternating question by question.

Stock: InMemoryBM25Retriever + SentenceTransformersTextEmbedder → InMemoryEmbeddingRetriever (top 20 each) →
DocumentJoiner (reciprocal rank fusion) → SentenceTransformersSimilarityRanker (top 5 of the fused) →
TransformersExtractiveReader. Ours: pipelines/extractive.yaml (hybrid retrieval, RRF, ranker, sentence windows,
reader, verifier loop) with its ranker and reader pointed at the same stand-ins. The models are full-size
stand-ins built here with random seeded weights (no download): a roberta-base-shaped QA model (``RobertaConfig()``)
and a MiniLM-L6-shaped cross-encoder, plus the real packaged all-MiniLM-L6-v2 embedder for both. The corpus is
the SQuAD article in ../shared/data/squad2 (each paragraph a document); questions are its first N.

``--ranker offline`` measures what runs offline instead, with no random weights left: ours keeps the shipped ranker
section (the cross-encoder cannot be found with ``HF_HUB_OFFLINE=1``, so its named fallback serves — the fused order,
the cosine bar), stock Haystack reads the fused top 5 (DocumentJoiner ``top_k=5``, no ranker); give ``--qa-model
spanqa/reader-minilm-l6-squad2`` and both read with the trained reader, so int8 agreement measures int8 itself.

Prints p50/p95 seconds of each, the ratio ours/stock (< 1: ours faster), for fp32 and for ``precision: int8``
(ours), ours with the verifier's lexical fallback instead of the trained one (the ratio of the two), the share of
identical answers and of identical re-ranked top 5 int8 vs fp32, what each answers and how much
of it is right (``answer_correct``, the label precision is counted with; the article's unanswerable questions
count against any answer), the tokens the reader was sent, and the load average.

    python benchmarks/e2e_latency.py [--questions 40] [--passes 2] [--qa-model spanqa/reader-minilm-l6-squad2]
                                     [--ranker stand-in|offline]
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


def stock_pipeline(paragraphs, embedder_dir: str, ce_dir: str | None, qa_dir: str):
    """Stock Haystack 3's extractive QA; with ``ce_dir`` None there is no ranker and the reader reads the fused
    top 5 (what a stock pipeline without a cross-encoder does)."""
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
    p.add_component("joiner", DocumentJoiner(join_mode="reciprocal_rank_fusion", top_k=None if ce_dir else 5))
    p.add_component("reader", TransformersExtractiveReader(model=qa_dir, top_k=5))
    p.connect("text_embedder.embedding", "dense.query_embedding")
    p.connect("bm25", "joiner")
    p.connect("dense", "joiner")
    if ce_dir:
        p.add_component("ranker", SentenceTransformersSimilarityRanker(model=ce_dir, top_k=5))
        p.connect("joiner", "ranker")
        p.connect("ranker", "reader")
    else:
        p.connect("joiner", "reader")
    p.warm_up()

    def ask(q: str):
        inputs = {"text_embedder": {"text": q}, "bm25": {"query": q}, "reader": {"query": q}}
        if ce_dir:
            inputs["ranker"] = {"query": q}
        out = p.run(inputs)
        ranked = out["reader"]["answers"]  # best first; the reader's no-answer (data None) is one of them
        return ranked[0].data if ranked else None

    return ask


def our_runner(tmp: Path, ce_dir: str | None, qa_dir: str, precision: str, verifier_fallback: str | None = None):
    import yaml

    from components.app.pipeline_io import load_pipeline
    from components.app.runner import QueryRunner

    spec = yaml.safe_load((ROOT / "pipelines/extractive.yaml").read_text())
    comps = spec["components"]
    # ce_dir None: the shipped ranker section as it is (offline its named fallback serves, announced)
    comps["ranker"]["init_parameters"].update(precision=precision, **({"model": ce_dir} if ce_dir else {}))
    comps["reader"]["init_parameters"].update(model=qa_dir, precision=precision)
    if verifier_fallback:  # the verifier's other offline fallback, side by side (the lexical rules: no model)
        comps["verifier"]["init_parameters"]["fallback"] = verifier_fallback
    # the embedder stays fp32: int8 query vectors would need an int8 index and change what is retrieved
    # (benchmarks/indexing_speed.py measures that profile and its retrieval agreement)
    path = tmp / f"extractive-{precision}-{verifier_fallback or 'shipped'}.yaml"
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
    ap.add_argument("--ranker", choices=("stand-in", "offline"), default="stand-in",
                    help="stand-in: both pipelines re-rank with a random MiniLM-shaped cross-encoder (speed); offline: "
                    "ours as shipped offline (the ranker's named fallback), stock without a ranker (fused top 5)")
    args = ap.parse_args()
    if args.ranker == "offline":
        os.environ["HF_HUB_OFFLINE"] = "1"  # the cross-encoder is never fetched: what a machine without the hub runs
    import torch

    from components.core.retrieval.loaders import iter_squad
    from tests.standins import build_cross_encoder, build_full_size_qa_model, minilm_dir

    data = json.loads(SQUAD.read_text())
    qas = [qa for a in data["data"] for p in a["paragraphs"] for qa in p["qas"]][: args.questions]
    questions = [qa["question"] for qa in qas]
    golds = {qa["question"]: ([a["text"] for a in qa["answers"]], not qa.get("is_impossible", False)) for qa in qas}
    paragraphs = [(doc_id, context) for doc_id, _, context, _ in iter_squad(SQUAD)]
    tmp = Path(tempfile.mkdtemp(prefix="spanqa-e2e-"))
    if args.qa_model:
        from components.core.backends.models import resolve_model

        qa_dir = resolve_model(args.qa_model).path
    else:
        qa_dir = build_full_size_qa_model(tmp / "qa")
    if args.ranker == "offline":
        ce_dir = None
        ranker_said = "none (ours: the shipped offline fallback; stock: the fused top 5)"
    else:
        ce_dir = str(build_cross_encoder(tmp / "ce", hidden=384, layers=6, heads=12, intermediate=1536))
        ranker_said = "MiniLM-L6-shaped stand-in"
    print(f"QA model {args.qa_model or 'roberta-base-shaped stand-in'}; cross-encoder: {ranker_said}")
    print(f"{len(questions)} questions, {len(paragraphs)} paragraphs; torch threads {torch.get_num_threads()}; "
          f"load average {os.getloadavg()[0]:.2f}", flush=True)

    stock = stock_pipeline(paragraphs, str(minilm_dir()), ce_dir, str(qa_dir))
    ours = {p: our_runner(tmp, ce_dir, str(qa_dir), p) for p in ("fp32", "int8")}
    ours["lexical"] = our_runner(tmp, ce_dir, str(qa_dir), "fp32", verifier_fallback="lexical")
    times = {"stock": [], "fp32": [], "int8": [], "lexical": []}
    answers = {"fp32": {}, "int8": {}, "lexical": {}}
    shown = {"stock": {}, "fp32": {}, "int8": {}, "lexical": {}}  # the answer each pipeline gives (None: NOT_FOUND)
    top5 = {"fp32": {}, "int8": {}, "lexical": {}}
    tokens = []
    for n in range(args.passes):
        for i, q in enumerate(questions):
            order = ["stock", "fp32", "int8", "lexical"] if (i + n) % 2 == 0 else ["lexical", "int8", "fp32", "stock"]
            for who in order:
                start = time.perf_counter()
                if who == "stock":
                    shown["stock"][q] = stock(q)
                else:
                    r = ours[who].ask(q)
                    shown[who][q] = r["answer"]
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
    print(f"the trained verifier against the lexical rules (fp32, side by side): p50 ratio "
          f"{p50['fp32'] / p50['lexical']:.2f} (target ≤ 1.3), p95 ratio {p95['fp32'] / p95['lexical']:.2f}")
    print(f"int8 vs fp32: {same:.1%} identical (answer, verdict, span) (target ≥ 98 %); re-ranked top 5: same "
          f"documents {same_set:.1%}, same order {same_top:.1%}")
    from components.evaluation.metrics import answer_correct

    for who, given in shown.items():
        said = [q for q in questions if given[q] is not None]
        right = sum(answer_correct(given[q], *golds[q]) for q in said)
        print(f"{who:6} answers {len(said)} of {len(questions)} (coverage {len(said) / len(questions):.2f}), "
              f"{right} right (precision {right / len(said) if said else float('nan'):.2f})")
    if ce_dir:
        gap, move = int8_noise(ce_dir, questions[:10], [text for _, text in paragraphs])
        print(f"stand-in cross-encoder, 20 paragraphs a question: median gap between neighbouring fp32 scores "
              f"{gap:.5f}, median |int8 - fp32| {move:.5f} "
              f"(int8 moves a score {move / gap:.1f}x the gap that orders it)")
    sent, full = sum(t for t, _ in tokens), sum(f for _, f in tokens)
    print(f"reader tokens per question: span path {sent / len(tokens):.0f}, full-document path {full / len(tokens):.0f} "
          f"(ratio {sent / full:.2f})")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
