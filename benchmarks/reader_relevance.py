"""Can our trained reader re-rank? (issue 19: a relevance score for the re-ranker — a second head on the reader's
body, or a second model, chosen by measurement.)

The reader already carries a relevance signal on the same body: how far its best span's score rises above its
own no-answer score on a passage. This measures that signal as a re-ranker of the fused top ``--depth``
(``pipelines/extractive.yaml``'s retriever and RRF joiner) against the fused order itself, on the SQuAD development
article (the gold paragraph is the relevant document; answerable questions) and on CISI (BEIR qrels):

- ``fused``: the RRF order (what the offline ranker serves today);
- ``reader``: the fused passages ordered by the reader's margin (best span − no-answer);
- ``fused+reader``: RRF of the fused rank and the reader rank (never far from fusion when the reader is unsure) —
  what ``CrossEncoderRanker(fallback="reader")`` serves;
- ``fused+answers``: RRF of the fused list and the reader's list of only the passages it finds an answer in
  (margin > 0) — the reader votes for answers, and a query it finds no answer for keeps the fused order.

Prints nDCG@10 and R@5 of each with the load average. The reader is the shipped one
(``spanqa/reader-minilm-l6-squad2``, fp32, CPU) unless ``--model`` names another (a candidate's directory).

    python benchmarks/reader_relevance.py [--depth 20] [--limit N] [--model DIR] [--json]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import CISI, ROOT, finish  # noqa: E402

SQUAD = ROOT.parent / "shared" / "data" / "squad2" / "dev-computational-complexity.json"


def evaluate(name: str, data: str, questions: list[tuple[str, dict]], depth: int,
             model: str = "deepset/roberta-base-squad2") -> dict:
    from components.core.retrieval.fusion import reciprocal_rank_fusion
    from components.evaluation.metrics import ndcg_at_k, recall_at_k
    from components.joiners.rrf_joiner import RRFJoiner
    from components.rankers.cross_encoder_ranker import reader_margin
    from components.readers.extractive_reader import ExtractiveReader
    from components.retrievers.hybrid_retriever import HybridRetriever
    from components.stores.span_store import SpanStore

    store = SpanStore(data_dir=data, cache_dir=str(ROOT / ".spanqa/cache"), progress=True)
    retriever = HybridRetriever(document_store=store, top_k=50)
    retriever.warm_up()
    joiner = RRFJoiner(top_k=depth)
    reader = ExtractiveReader(model=model, fallback="trained", top_k=5)
    reader.warm_up()
    orders: dict[str, list[list[str]]] = {"fused": [], "reader": [], "fused+reader": [], "fused+answers": []}
    start = time.perf_counter()
    for i, (query, _) in enumerate(questions):
        out = retriever.run(query=query)
        fused = joiner.run(bm25=out["bm25_documents"], dense=out["dense_documents"])["documents"]
        scores = [reader_margin(reader, query, d) for d in fused]
        by_reader = [d for _, d in sorted(zip(scores, fused), key=lambda x: -x[0])]
        combined = reciprocal_rank_fusion({"fused": [d.id for d in fused], "reader": [d.id for d in by_reader]})
        by_id = {d.id: d for d in fused}
        orders["fused"].append([d.meta["doc_id"] for d in fused])
        orders["reader"].append([d.meta["doc_id"] for d in by_reader])
        orders["fused+reader"].append([by_id[cid].meta["doc_id"] for cid, _, _ in combined])
        answering = [d.id for s_, d in sorted(zip(scores, fused), key=lambda x: -x[0]) if s_ > 0]
        voted = reciprocal_rank_fusion({"fused": [d.id for d in fused], "reader": answering})
        orders["fused+answers"].append([by_id[cid].meta["doc_id"] for cid, _, _ in voted])
        if (i + 1) % 25 == 0:
            print(f"  {name}: {i + 1}/{len(questions)} questions ({time.perf_counter() - start:.0f} s)", flush=True)
    row = {"questions": len(questions), "seconds": round(time.perf_counter() - start, 1)}
    for label, ranked in orders.items():
        row[label] = {
            "ndcg@10": round(sum(ndcg_at_k(r, rel, 10) for r, (_, rel) in zip(ranked, questions)) / len(questions), 3),
            "recall@5": round(sum(recall_at_k(r, rel, 5) for r, (_, rel) in zip(ranked, questions)) / len(questions), 3),
        }
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--depth", type=int, default=20)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--model", default="deepset/roberta-base-squad2",
                    help="the reader: a QA model id or directory (offline: the YAML's fallback, spanqa's trained reader)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from components.evaluation.evaluate import load_beir_queries, load_squad_questions

    report: dict = {"depth": args.depth, "reader": args.model, "load_average_before": os.getloadavg()}
    squad = [(q["question"], {q["doc_id"]: 1}) for q in load_squad_questions(SQUAD) if q["answerable"]][: args.limit]
    report["squad_article"] = evaluate("squad article", str(SQUAD), squad, args.depth, args.model)
    queries, qrels = load_beir_queries(CISI)
    cisi = [(queries[qid], qrels[qid]) for qid in list(queries)[: args.limit]]
    report["cisi"] = evaluate("cisi", str(CISI), cisi, args.depth, args.model)
    for data in ("squad_article", "cisi"):
        row = report[data]
        print(f"{data} ({row['questions']} questions, {row['seconds']} s): " + "; ".join(
            f"{label} nDCG@10 {row[label]['ndcg@10']:.3f} R@5 {row[label]['recall@5']:.3f}"
            for label in ("fused", "reader", "fused+reader", "fused+answers")))
    return finish(report, args.json)


if __name__ == "__main__":
    sys.exit(main())
