"""``run.py --eval``: retrieval metrics per stage on BEIR folders; reading, abstention and the failure
taxonomy on SQuAD files. The pure metrics live in ``components.core.metrics`` / ``taxonomy`` /
``calibration``; this module only runs the pipeline over a dataset and gathers what they need."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path
from typing import Any

from components.core.errors import SpanQAError
from components.core.loaders import iter_squad
from components.core.metrics import recall_curve, retrieval_summary, squad_summary, exact_match, f1
from components.core.taxonomy import QuestionOutcome, classify, span_contains, taxonomy_totals

EVAL_DEPTH = 300  # chunks per retrieval list during evaluation, so that Recall@100 counts 100 documents


def dataset_kind(path: str | Path) -> str:
    p = Path(path)
    if p.is_dir() and (p / "corpus.jsonl").is_file():
        if not (p / "queries.jsonl").is_file() or not (p / "qrels" / "test.tsv").is_file():
            raise SpanQAError(f"BEIR folder '{path}' needs queries.jsonl and qrels/test.tsv next to corpus.jsonl.")
        return "beir"
    if p.is_file() and p.suffix == ".json":
        return "squad"
    raise SpanQAError(
        f"--eval '{path}': not a dataset spanqa can evaluate. Give a BEIR folder (corpus.jsonl, queries.jsonl, "
        f"qrels/test.tsv) or a SQuAD 1.1/2.0 .json file."
    )


def load_beir_queries(folder: Path) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    queries = {}
    with (folder / "queries.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                rec = json.loads(line)
                queries[str(rec["_id"])] = rec["text"]
    qrels: dict[str, dict[str, int]] = {}
    with (folder / "qrels" / "test.tsv").open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            qrels.setdefault(str(row["query-id"]), {})[str(row["corpus-id"])] = int(float(row["score"]))
    return {q: t for q, t in queries.items() if q in qrels}, qrels


def load_squad_questions(path: Path) -> list[dict[str, Any]]:
    questions = []
    for doc_id, _, context, para in iter_squad(path):
        for qa in para.get("qas", []):
            impossible = bool(qa.get("is_impossible", False))
            answers = [] if impossible else qa.get("answers", [])
            questions.append({
                "id": qa["id"], "question": qa["question"], "doc_id": doc_id, "answerable": not impossible,
                "golds": [a["text"] for a in answers],
                "gold_spans": [(doc_id, a["answer_start"], a["answer_start"] + len(a["text"])) for a in answers],
            })
    return questions


def _progress(items, desc: str, enabled: bool):
    if not enabled:
        return items
    from tqdm.auto import tqdm

    return tqdm(items, desc=desc, unit="q")


def stage_metrics(rows: list[dict], qrels: dict[str, dict[str, int]]) -> tuple[dict, dict]:
    stages = sorted({s for r in rows for s in r["_stages"]}, key=["bm25", "dense", "fused", "reranked"].index)
    metrics, curves = {}, {}
    for s in stages:
        runs = {r["id"]: r["_stages"].get(s, []) for r in rows}
        metrics[s] = retrieval_summary(runs, qrels)
        curves[s] = recall_curve(runs, qrels)
    return metrics, curves


def evaluate_beir(runner, folder: Path, progress: bool = True, limit: int | None = None) -> tuple[dict, list[dict]]:
    queries, qrels = load_beir_queries(folder)
    rows = []
    for qid in _progress(list(queries)[:limit], "evaluating", progress):
        result = runner.ask(queries[qid], retrieval_depth=EVAL_DEPTH)
        rows.append({"id": qid, "question": queries[qid], "_stages": result["_stages"],
                     "top10": result["_stages"].get("reranked", result["_stages"].get("fused", []))[:10]})
    metrics, curves = stage_metrics(rows, qrels)
    return {"retrieval": metrics, "recall_curves": curves}, rows


def _answer_in_span(q: dict, result: dict) -> bool:
    spans = [(s.get("doc_id"), s.get("char_start"), s.get("char_end")) for s in result.get("spans") or []]
    return any(span_contains(s, g) for s in spans for g in q["gold_spans"])


def evaluate_squad(runner, path: Path, progress: bool = True, limit: int | None = None) -> tuple[dict, list[dict]]:
    questions = load_squad_questions(path)[:limit]
    qrels = {q["id"]: {q["doc_id"]: 1} for q in questions if q["answerable"]}
    rows, records, diagnoses = [], [], []
    for q in _progress(questions, "evaluating", progress):
        result = runner.ask(q["question"], retrieval_depth=EVAL_DEPTH)
        answer = result.get("answer")
        read = [(w["doc_id"], w["char_start"], w["char_end"]) for w in result.get("_read", [])]
        span = next(((s["doc_id"], s["char_start"], s["char_end"]) for s in result.get("spans") or []), None)
        in_span = _answer_in_span(q, result) if q["answerable"] else False
        correct = (answer is None) if not q["answerable"] else (answer is not None and (exact_match(answer, q["golds"]) == 1.0 or in_span))
        retrieved = sorted({d for ids in result["_stages"].values() for d in ids})
        diagnosis = classify(QuestionOutcome(
            answerable=q["answerable"], gold_spans=q["gold_spans"], gold_texts=q["golds"], retrieved_doc_ids=retrieved,
            read_spans=read, answer=answer, answer_span=span, is_correct=correct, corpus_supported=True if answer else None,
        ))
        diagnoses.append(diagnosis)
        records.append({"answerable": q["answerable"], "prediction": answer, "golds": q["golds"]})
        rows.append({
            "id": q["id"], "question": q["question"], "answerable": q["answerable"], "golds": q["golds"],
            "answer": answer, "verdict": result.get("verdict"), "reason": result.get("reason"),
            "route": result.get("route"), "spans": result.get("spans"), "answer_in_span": in_span,
            "em": exact_match(answer, q["golds"]), "f1": f1(answer, q["golds"]),
            "label": diagnosis.label, "diagnosis": diagnosis.reason, "top_score": result.get("_top_score"),
            "reader_tokens": result.get("_reader_tokens", 0), "_stages": result["_stages"],
        })
    reading = squad_summary(records)
    answerable = [r for r in rows if r["answerable"]]
    reading["answer_in_span_rate"] = sum(r["answer_in_span"] for r in answerable) / len(answerable) if answerable else None
    unanswerable = [r for r in rows if not r["answerable"]]
    reading["not_found_rate_unanswerable"] = (
        sum(r["answer"] is None for r in unanswerable) / len(unanswerable) if unanswerable else None)
    reading["mean_reader_tokens"] = sum(r["reader_tokens"] for r in rows) / len(rows) if rows else None
    reading["verdicts"] = dict(Counter(r["verdict"] for r in rows))
    metrics, curves = stage_metrics(rows, qrels)
    scores = {"answerable": [r["top_score"] for r in answerable if r["top_score"] is not None],
              "unanswerable": [r["top_score"] for r in unanswerable if r["top_score"] is not None],
              "threshold": runner.abstain_threshold()}
    summary = {"retrieval": metrics, "recall_curves": curves, "reading": reading,
               "taxonomy": taxonomy_totals(diagnoses), "scores": scores}
    return summary, rows
