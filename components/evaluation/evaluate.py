"""``run.py --eval``: retrieval metrics per stage on BEIR folders and SQuAD files; reading, abstention, the
failure taxonomy and (``--calibrate``) threshold calibration on SQuAD files through a reading pipeline.

The pure metrics live in ``components.evaluation.metrics`` / ``taxonomy`` / ``calibration``; this module only runs
the pipeline over a dataset and gathers what they need. Every ``evaluate_*`` function returns
``(summary, rows)``: ``summary`` is the shape ``components.evaluation.report`` renders (and ``--json`` prints),
``rows`` one dict per question for ``per_query.jsonl`` (keys starting with ``_`` are internal and not written).

Per-query rows always carry:

- ``id``, ``question``;
- ``rankings``: ``{stage: [doc_id, ...]}``, the first ``KEEP_RANKS`` distinct documents of each retrieval
  stage (``bm25``, ``dense``, ``fused``, ``reranked``) -- enough to recompute every retrieval metric;
- ``label`` and ``reason``: the failure taxonomy label (``components.evaluation.taxonomy.LABELS``) and its one
  sentence, as the report's "Failure examples" shows them.

Retrieval-only datasets (BEIR, or SQuAD through a pipeline without a reader) are labelled on documents:
``correct`` when a relevant document (grade > 0; for SQuAD the gold paragraph) is among the first
``RANK_CUTOFF`` documents of the final ranking, ``rank_failure`` when one was retrieved by some stage but
not ranked that high, ``retrieval_miss`` when no stage retrieved one; ``label`` is None for a query without
relevant documents (a SQuAD 2.0 question without answer, a BEIR query with only grade-0 judgments).

SQuAD rows through a reader add ``answerable``, ``golds``, ``answer``, ``verdict``, ``verdict_reason`` (the
pipeline's own ``reason``, e.g. ``low_confidence``), ``route``, ``spans``, ``answer_in_span``, ``em``, ``f1``,
``top_score`` (the best rerank score, also when the ranker abstained) and ``reader_tokens``; ``label`` /
``reason`` come from ``taxonomy.classify`` on the character spans.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path
from typing import Any

from components.evaluation import calibration
from components.core.errors import SpanQAError
from components.core.retrieval.loaders import iter_squad
from components.evaluation.confidence_eval import selective_report
from components.evaluation.metrics import (exact_match, f1, recall_curve, retrieval_summary, squad_summary,
                                           verified_correct)
from components.evaluation.taxonomy import (
    CORRECT,
    RANK_FAILURE,
    RETRIEVAL_MISS,
    Diagnosis,
    QuestionOutcome,
    classify,
    span_contains,
    taxonomy_totals,
)

EVAL_DEPTH = 300  # chunks per retrieval list during evaluation, so that Recall@100 counts 100 documents
KEEP_RANKS = 100  # documents per stage kept in per-query rows (the metrics look at most at 100)
RANK_CUTOFF = 10  # retrieval-only labels: a relevant document in the final top 10 counts as "correct"
STAGES = ("bm25", "dense", "fused", "reranked")


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
    stages = [s for s in STAGES if any(s in r["_stages"] for r in rows)]
    metrics, curves = {}, {}
    for s in stages:
        runs = {r["id"]: r["_stages"].get(s, []) for r in rows}
        metrics[s] = retrieval_summary(runs, qrels)
        curves[s] = recall_curve(runs, qrels)
    return metrics, curves


# ---------------------------------------------------------------------------------------------------
# retrieval-only rows (BEIR, SQuAD without a reader)


def final_stage(runner) -> str | None:
    """The stage whose ranking the pipeline returns: the ranker's, else the joiner's, else the retriever's.

    With a ranker this is ``reranked`` even when the ranker abstained on a query (its ranking is then empty).
    """
    if getattr(runner, "ranker", None):
        return "reranked"
    if getattr(runner, "joiner", None):
        return "fused"
    return None  # a bare retriever: whichever single list it produced


def _rankings(stages: dict[str, list[str]]) -> dict[str, list[str]]:
    return {s: list(dict.fromkeys(stages[s]))[:KEEP_RANKS] for s in STAGES if s in stages}


def retrieval_diagnosis(stages: dict[str, list[str]], relevant: dict[str, float], final: str | None) -> Diagnosis | None:
    """Document-level taxonomy label of one query (see the module docstring); None without relevant documents."""
    positives = sorted(d for d, g in relevant.items() if g > 0)
    if not positives:
        return None
    if final is None:
        final = next((s for s in reversed(STAGES) if s in stages), "bm25")
    top = list(dict.fromkeys(stages.get(final, [])))[:RANK_CUTOFF]
    hit = next(((rank, d) for rank, d in enumerate(top, start=1) if d in positives), None)
    if hit:
        return Diagnosis(CORRECT, f"relevant {hit[1]} at rank {hit[0]} of the {final} ranking")
    found = []
    for s in STAGES:
        ranked = list(dict.fromkeys(stages.get(s, [])))
        rank = next((i for i, d in enumerate(ranked, start=1) if d in positives), None)
        if rank is not None:
            found.append(f"{s} rank {rank}")
    shown = ", ".join(positives[:3]) + (f" (+{len(positives) - 3} more)" if len(positives) > 3 else "")
    if found:
        return Diagnosis(RANK_FAILURE, f"relevant {shown} retrieved ({', '.join(found)}) but not in the top "
                                       f"{RANK_CUTOFF} of the {final} ranking")
    retrieved = len({d for ids in stages.values() for d in ids})
    return Diagnosis(RETRIEVAL_MISS, f"relevant {shown} never retrieved ({retrieved} documents retrieved)")


def _retrieval_row(qid: str, question: str, stages: dict[str, list[str]], relevant: dict[str, float], final) -> dict:
    diagnosis = retrieval_diagnosis(stages, relevant, final)
    return {"id": qid, "question": question, "rankings": _rankings(stages),
            "label": diagnosis.label if diagnosis else None, "reason": diagnosis.reason if diagnosis else None,
            "_stages": stages}


def _retrieval_summary(rows: list[dict], qrels: dict) -> dict:
    metrics, curves = stage_metrics(rows, qrels)
    return {"retrieval": metrics, "recall_curves": curves,
            "taxonomy": taxonomy_totals(r["label"] for r in rows if r["label"] is not None)}


def evaluate_beir(runner, folder: Path, progress: bool = True, limit: int | None = None) -> tuple[dict, list[dict]]:
    """Retrieval metrics per stage on a BEIR folder (the first ``limit`` judged queries)."""
    queries, qrels = load_beir_queries(folder)
    ids = list(queries)[:limit]
    qrels = {qid: qrels[qid] for qid in ids}  # the metrics average over the queries that were run
    runner = runner.retrieval_only()  # BEIR has no answers to judge: reading would only cost time
    final = final_stage(runner)
    rows = []
    for qid in _progress(ids, "evaluating", progress):
        result = runner.ask(queries[qid], retrieval_depth=EVAL_DEPTH)
        rows.append(_retrieval_row(qid, queries[qid], result["_stages"], qrels[qid], final))
    return _retrieval_summary(rows, qrels), rows


def evaluate_squad_retrieval(runner, path: Path, progress: bool = True, limit: int | None = None) -> tuple[dict, list[dict]]:
    """Retrieval metrics per stage on a SQuAD file, the gold paragraph being the relevant document.

    For a pipeline without a reader. Of the first ``limit`` questions only the answerable ones are run (an
    unanswerable question has no relevant paragraph); ``summary["questions"]`` counts both.
    """
    questions = load_squad_questions(path)[:limit]
    answerable = [q for q in questions if q["answerable"]]
    if not answerable:
        raise SpanQAError(f"--eval '{path}': no answerable question among the {len(questions)} evaluated, so there "
                          f"is no gold paragraph to measure retrieval against.")
    qrels = {q["id"]: {q["doc_id"]: 1} for q in answerable}
    final = final_stage(runner)
    rows = []
    for q in _progress(answerable, "evaluating", progress):
        result = runner.ask(q["question"], retrieval_depth=EVAL_DEPTH)
        row = _retrieval_row(q["id"], q["question"], result["_stages"], qrels[q["id"]], final)
        row["gold_doc_id"] = q["doc_id"]
        rows.append(row)
    summary = _retrieval_summary(rows, qrels)
    summary["questions"] = {"evaluated": len(answerable), "unanswerable_skipped": len(questions) - len(answerable)}
    return summary, rows


# ---------------------------------------------------------------------------------------------------
# reading (SQuAD through a reader)


def _answer_in_span(q: dict, result: dict) -> bool:
    spans = [(s.get("doc_id"), s.get("char_start"), s.get("char_end")) for s in result.get("spans") or []]
    return any(span_contains(s, g) for s in spans for g in q["gold_spans"])


def rerank_score(result: dict) -> float | None:
    """The best rerank score of one query, also when the ranker abstained (the calibrated quantity).

    When the ranker abstains there is no ``reranked`` stage and ``QueryRunner`` reports the first *fused*
    score (an RRF score) as ``_top_score``; the ranker's own best score is the abstention answer's ``score``
    (``reason`` ``low_confidence``). ``no_candidates`` has no score.
    """
    if "reranked" in result.get("_stages", {}):
        return result.get("_top_score")
    if result.get("reason") == "no_candidates":
        return None
    if result.get("reason") == "low_confidence" and result.get("score") is not None:
        return result["score"]
    return result.get("_top_score")


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
            "answer": answer, "verdict": result.get("verdict"), "verdict_reason": result.get("reason"),
            "rejected_answer": result.get("rejected_answer"),
            "route": result.get("route"), "spans": result.get("spans"), "answer_in_span": in_span,
            "em": exact_match(answer, q["golds"]), "f1": f1(answer, q["golds"]),
            "label": diagnosis.label, "reason": diagnosis.reason, "top_score": rerank_score(result),
            "reader_tokens": result.get("_reader_tokens", 0), "full_document_tokens": result.get("_full_document_tokens", 0),
            "rankings": _rankings(result["_stages"]),
            "supported": bool(result.get("_supported")), "confidence": result.get("confidence"),
            "signals": result.get("_signals"),
            "answer_correct": verified_correct(result, q["golds"], q["answerable"]),
            "_stages": result["_stages"],
        })
    reading = squad_summary(records)
    answerable = [r for r in rows if r["answerable"]]
    reading["answer_in_span_rate"] = sum(r["answer_in_span"] for r in answerable) / len(answerable) if answerable else None
    unanswerable = [r for r in rows if not r["answerable"]]
    reading["not_found_rate_unanswerable"] = (
        sum(r["answer"] is None for r in unanswerable) / len(unanswerable) if unanswerable else None)
    reading["mean_reader_tokens"] = sum(r["reader_tokens"] for r in rows) / len(rows) if rows else None
    full = sum(r["full_document_tokens"] for r in rows)
    reading["mean_full_document_tokens"] = full / len(rows) if rows else None  # the full-document path's cost
    reading["reader_token_ratio"] = sum(r["reader_tokens"] for r in rows) / full if full else None
    reading["verdicts"] = dict(Counter(r["verdict"] for r in rows))
    metrics, curves = stage_metrics(rows, qrels)
    scores = {"answerable": [r["top_score"] for r in answerable if r["top_score"] is not None],
              "unanswerable": [r["top_score"] for r in unanswerable if r["top_score"] is not None],
              "threshold": runner.abstain_threshold()}
    summary = {"retrieval": metrics, "recall_curves": curves, "reading": reading,
               "taxonomy": taxonomy_totals(diagnoses), "scores": scores,
               "selective": selective_report(rows, _confidence_bar(runner))}
    return summary, rows


def _confidence_bar(runner) -> float | None:
    from components.app.runner import reader_kind

    verifier = runner.pipeline.get_component(runner.verifier) if getattr(runner, "verifier", None) else None
    return verifier.confidence_bar(reader_kind(runner)) if hasattr(verifier, "confidence_bar") else None


# ---------------------------------------------------------------------------------------------------
# calibration


def threshold_targets(runner) -> dict[str, dict[str, str]]:
    """``{component: {init_parameter: row key}}``: the thresholds ``--calibrate`` chooses, and on which score.

    The ranker abstains below ``score_threshold`` on cross-encoder logits, or below
    ``fallback_score_threshold`` on cosines when its offline fallback serves; both are calibrated on the
    rows' ``top_score``. (The reader's ``score_threshold`` filters answers rather than deciding to abstain,
    so it is not a threshold of "answerable or not" and is left out.)
    """
    targets: dict[str, dict[str, str]] = {}
    if getattr(runner, "ranker", None):
        ranker = runner.pipeline.get_component(runner.ranker)
        served = getattr(ranker, "served_by", None) or ""
        param = "fallback_score_threshold" if served.startswith("fallback:") else "score_threshold"
        targets[runner.ranker] = {param: "top_score"}
    return targets


def calibrate(rows: list[dict], runner, seed: int = 0, fraction: float = 0.5,
              objective: str = "balanced_accuracy") -> dict:
    """Choose the abstention thresholds on one split of the questions (by id) and measure them on the other.

    Uses ``components.evaluation.calibration.calibrate`` on the rows as they are (the held-out rows' scores are
    read only after every threshold is chosen). The positive class is "answerable". Adds to its output:
    ``in_force`` (the thresholds the pipeline ran with, measured on the same held-out split, for comparison),
    ``warnings`` (a split without one of the classes) and ``yaml``, a snippet to paste into the pipeline
    file. Each row gets ``calibration_split`` (``"calibration"`` or ``"held_out"``) afterwards.
    """
    targets = threshold_targets(runner)
    if not targets:
        raise SpanQAError("--calibrate: the pipeline has no CrossEncoderRanker, so it has no abstention threshold "
                          "to calibrate. Use a reading pipeline with a ranker (pipelines/extractive.yaml).")
    try:
        result = calibration.calibrate(rows, targets, seed=seed, fraction=fraction, objective=objective)
    except ValueError as exc:
        raise SpanQAError(f"--calibrate could not choose a threshold: {exc}. Evaluate more questions "
                          f"(raise or drop --limit) on a SQuAD 2.0 file.") from None
    # Everything below runs after the values are chosen.
    cal_ids, held_ids = calibration.split_ids([r["id"] for r in rows], seed=seed, fraction=fraction)
    split = dict.fromkeys(cal_ids, "calibration") | dict.fromkeys(held_ids, "held_out")
    for row in rows:
        row["calibration_split"] = split[row["id"]]
    held = [r for r in rows if split[r["id"]] == "held_out"]
    in_force: dict[str, dict[str, dict]] = {}
    warnings = []
    for component, fields in targets.items():
        for param, key in fields.items():
            current = getattr(runner.pipeline.get_component(component), param, None)
            pairs = [(float(r[key]), bool(r["answerable"])) for r in held if r.get(key) is not None]
            metrics = (calibration.threshold_metrics([s for s, _ in pairs], [a for _, a in pairs], current, objective)
                       if current is not None else {})
            in_force.setdefault(component, {})[param] = {"value": current, **metrics}
            chosen_on = result["calibration"][component][param]
            if chosen_on["answer_recall"] is None or chosen_on["abstention_recall"] is None:
                missing = "answerable" if chosen_on["answer_recall"] is None else "unanswerable"
                warnings.append(f"{component}.{param}: the calibration split has no {missing} question, so the "
                                f"chosen value only separates one class; evaluate more questions (SQuAD 2.0).")
    result["in_force"] = in_force
    result["warnings"] = warnings
    lines = [f"chosen by --calibrate ({result['objective']}) on {result['calibration_size']} questions "
             f"(seed {seed}); measured on {result['held_out_size']} held-out questions:"]
    for component, fields in result["values"].items():
        for param, value in fields.items():
            h = result["held_out"][component][param]
            lines.append(f"{component}.{param} = {value:.6g} (in force: {in_force[component][param]['value']}); "
                         f"held-out {result['objective']} {_fmt(h.get('objective'))}, answer recall "
                         f"{_fmt(h.get('answer_recall'))}, abstention recall {_fmt(h.get('abstention_recall'))}")
    lines += [f"warning: {w}" for w in warnings]
    result["yaml"] = calibration.yaml_snippet(result["values"], comment="\n".join(lines))
    return result


def _fmt(value) -> str:
    return "n/a" if value is None else f"{value:.3f}"
