"""Evaluation metrics of spanqa: ranked retrieval (trec_eval conventions) and SQuAD 2.0 reading.

Pure functions over lists and dicts; no Haystack, no numpy. All values are fractions in ``[0, 1]``
(the official SQuAD script prints percentages; multiply by 100 to compare with published numbers).

Retrieval (``recall_at_k``, ``precision_at_k``, ``mrr_at_k``, ``ndcg_at_k``, ``retrieval_summary``)
follows trec_eval / pytrec_eval (``recall_k``, ``P_k``, ``recip_rank`` cut at k, ``ndcg_cut_k``):

- ``relevant`` maps doc id -> grade; a document is relevant when its grade is > 0.
- nDCG gain is the grade itself (linear, not ``2**g - 1``), the discount is ``log2(rank + 1)`` with
  1-based ranks, and the ideal DCG is computed from all positive grades of the query sorted descending
  (relevant documents that were never retrieved still count in the ideal).
- A ranked list may name a document more than once (several chunks of one document); only its first
  (best) occurrence counts, i.e. documents are ranked by their best chunk, and ``k`` counts distinct
  documents.

``retrieval_summary`` averages over the queries that appear in ``qrels``. A query with qrels but no run
counts as an empty run (all metrics 0, reported as ``missing_runs``; trec_eval ``-c``); a query with a run
but no qrels is ignored and reported as ``skipped_queries``. A query whose qrels hold only grade-0
judgments is kept and scores 0, as in pytrec_eval.

Reading (``normalize_answer``, ``exact_match``, ``f1``, ``squad_summary``) reproduces the official
SQuAD v2.0 evaluation script: normalisation, token F1, gold answers that normalise to nothing are
dropped, and a question without gold answers has the single gold answer ``""`` -- so the only correct
prediction for it is an empty one (``None`` or a string that normalises to nothing).
"""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = frozenset(string.punctuation)


# ---------------------------------------------------------------------------------------------------
# retrieval


def _distinct(ranked_ids: Iterable[str]) -> list[str]:
    """``ranked_ids`` with repeats removed, keeping each id at its first (best) rank."""
    return list(dict.fromkeys(ranked_ids))


def _top(ranked_ids: Iterable[str], k: int) -> list[str]:
    """The first ``k`` distinct ids of a ranking."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    return _distinct(ranked_ids)[:k]


def _positives(relevant: Mapping[str, float]) -> set[str]:
    return {doc_id for doc_id, grade in relevant.items() if grade > 0}


def recall_at_k(ranked_ids: Sequence[str], relevant: Mapping[str, float], k: int) -> float:
    """Fraction of the relevant documents (grade > 0) found among the first ``k`` distinct ids.

    0.0 when the query has no relevant document.
    """
    positives = _positives(relevant)
    if not positives:
        return 0.0
    return len(positives.intersection(_top(ranked_ids, k))) / len(positives)


def precision_at_k(ranked_ids: Sequence[str], relevant: Mapping[str, float], k: int) -> float:
    """Relevant documents among the first ``k`` distinct ids, divided by ``k`` (even if fewer returned)."""
    positives = _positives(relevant)
    return sum(1 for doc_id in _top(ranked_ids, k) if doc_id in positives) / k


def mrr_at_k(ranked_ids: Sequence[str], relevant: Mapping[str, float], k: int) -> float:
    """Reciprocal rank of the first relevant document within the first ``k`` distinct ids, else 0."""
    positives = _positives(relevant)
    for rank, doc_id in enumerate(_top(ranked_ids, k), start=1):
        if doc_id in positives:
            return 1.0 / rank
    return 0.0


def dcg(gains: Iterable[float]) -> float:
    """Discounted cumulative gain of gains listed by rank: ``sum(g / log2(rank + 1))``, g <= 0 ignored."""
    return sum(g / math.log2(rank + 1) for rank, g in enumerate(gains, start=1) if g > 0)


def ndcg_at_k(ranked_ids: Sequence[str], relevant: Mapping[str, float], k: int) -> float:
    """nDCG@k with graded relevance (trec_eval ``ndcg_cut``): DCG of the top k over the ideal DCG@k."""
    ideal = dcg(sorted((g for g in relevant.values() if g > 0), reverse=True)[:k])
    if ideal == 0:
        return 0.0
    return dcg(relevant.get(doc_id, 0) for doc_id in _top(ranked_ids, k)) / ideal


def retrieval_summary(
    runs: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, float]],
    ks: Sequence[int] = (1, 5, 10, 100),
    ndcg_k: int = 10,
    mrr_k: int = 10,
) -> dict:
    """Mean retrieval metrics over the queries of ``qrels``.

    Args:
        runs: query id -> ranked doc ids (best first; repeats allowed, see module docstring).
        qrels: query id -> {doc id: grade}.
        ks: cut-offs for ``recall@k``.

    Returns:
        ``{"ndcg@10", "recall@1", "recall@5", "recall@10", "recall@100", "mrr@10", "queries",
        "skipped_queries", "missing_runs"}`` (key names follow ``ks``, ``ndcg_k`` and ``mrr_k``);
        the metrics are 0.0 when no query can be evaluated.
    """
    keys = [f"ndcg@{ndcg_k}", *(f"recall@{k}" for k in ks), f"mrr@{mrr_k}"]
    totals = dict.fromkeys(keys, 0.0)
    for qid, relevant in qrels.items():
        ranked = runs.get(qid, ())
        totals[f"ndcg@{ndcg_k}"] += ndcg_at_k(ranked, relevant, ndcg_k)
        for k in ks:
            totals[f"recall@{k}"] += recall_at_k(ranked, relevant, k)
        totals[f"mrr@{mrr_k}"] += mrr_at_k(ranked, relevant, mrr_k)
    n = len(qrels)
    summary = {key: (value / n if n else 0.0) for key, value in totals.items()}
    summary["queries"] = n
    summary["skipped_queries"] = sum(1 for qid in runs if qid not in qrels)
    summary["missing_runs"] = sum(1 for qid in qrels if qid not in runs)
    return summary


def recall_curve(
    runs: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, float]], max_k: int = 100
) -> list[float]:
    """Mean recall@k for k = 1..max_k (element ``i`` is recall@``i+1``), same averaging as the summary."""
    if not qrels:
        return [0.0] * max_k
    curve = [0.0] * max_k
    for qid, relevant in qrels.items():
        positives = _positives(relevant)
        if not positives:
            continue
        found = 0
        top = _top(runs.get(qid, ()), max_k)
        for i in range(max_k):
            if i < len(top) and top[i] in positives:
                found += 1
            curve[i] += found / len(positives)
    return [value / len(qrels) for value in curve]


# ---------------------------------------------------------------------------------------------------
# reading (SQuAD 2.0)


def normalize_answer(text: str | None) -> str:
    """Official SQuAD normalisation: lower case, drop punctuation, drop articles, collapse white space."""
    text = (text or "").lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _tokens(text: str | None) -> list[str]:
    return normalize_answer(text).split()


def _gold_answers(golds: Sequence[str]) -> list[str]:
    """Gold answers as the official script uses them: empty ones dropped, ``[""]`` if none is left."""
    kept = [g for g in golds if normalize_answer(g)]
    return kept or [""]


def _exact_one(gold: str, prediction: str | None) -> float:
    return float(normalize_answer(gold) == normalize_answer(prediction))


def _f1_one(gold: str, prediction: str | None) -> float:
    gold_toks, pred_toks = _tokens(gold), _tokens(prediction)
    if not gold_toks or not pred_toks:
        return float(gold_toks == pred_toks)
    same = sum((Counter(gold_toks) & Counter(pred_toks)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_toks), same / len(gold_toks)
    return 2 * precision * recall / (precision + recall)


def exact_match(prediction: str | None, golds: Sequence[str]) -> float:
    """1.0 if the normalised prediction equals a normalised gold answer (``golds == []``: unanswerable)."""
    return max(_exact_one(g, prediction) for g in _gold_answers(golds))


def f1(prediction: str | None, golds: Sequence[str]) -> float:
    """Best token F1 of the prediction against the gold answers (``golds == []``: unanswerable)."""
    return max(_f1_one(g, prediction) for g in _gold_answers(golds))


def _ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def squad_summary(records: Iterable[Mapping]) -> dict:
    """SQuAD 2.0 scores of a list of ``{"answerable": bool, "prediction": str | None, "golds": [str]}``.

    A prediction of ``None`` is an abstention. Returns ``exact, f1, total`` over all records and the same
    over answerable (``HasAns_*``) and unanswerable (``NoAns_*``) ones, plus ``abstention_precision``
    (abstentions that were on unanswerable questions) and ``abstention_recall`` (unanswerable questions
    the system abstained on) and ``abstentions``. Means over an empty group are ``None``.

    Raises:
        ValueError: a record marked answerable has no non-empty gold answer.
    """
    scores: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    abstained = abstained_noans = 0
    for record in records:
        answerable, prediction, golds = bool(record["answerable"]), record["prediction"], record["golds"]
        if answerable and not any(normalize_answer(g) for g in golds):
            raise ValueError(f"record marked answerable has no non-empty gold answer: {dict(record)!r}")
        scores[answerable].append((exact_match(prediction, golds), f1(prediction, golds)))
        if prediction is None:
            abstained += 1
            abstained_noans += not answerable
    both = scores[True] + scores[False]
    summary = {
        "exact": _mean([e for e, _ in both]),
        "f1": _mean([f for _, f in both]),
        "total": len(both),
    }
    for name, group in (("HasAns", scores[True]), ("NoAns", scores[False])):
        summary[f"{name}_exact"] = _mean([e for e, _ in group])
        summary[f"{name}_f1"] = _mean([f for _, f in group])
        summary[f"{name}_total"] = len(group)
    summary["abstentions"] = abstained
    summary["abstention_precision"] = _ratio(abstained_noans, abstained)
    summary["abstention_recall"] = _ratio(abstained_noans, len(scores[False]))
    return summary


def _words(text: str) -> list[str]:
    """Words for containment: lower case, every punctuation or symbol character a word boundary (``4.2 %`` →
    ``4 2``, ``mailto:a@b.io`` → ``mailto a b io``), articles dropped."""
    text = "".join(" " if unicodedata.category(ch)[0] in "PS" else ch for ch in (text or "").lower())
    return _ARTICLES.sub(" ", text).split()


def contains_answer(prediction: str, gold: str) -> bool:
    """Whether ``gold``'s words stand, whole and in order, among ``prediction``'s: ``15000`` does not contain
    ``5``, ``HTML Tidy`` does not contain ``-m``; ``mailto:security@etcd.io`` contains ``security@etcd.io``."""
    inner, outer = _words(gold), _words(prediction)
    return bool(inner) and any(outer[i:i + len(inner)] == inner for i in range(len(outer) - len(inner) + 1))


def answer_correct(prediction: str | None, golds: Sequence[str], answerable: bool = True) -> bool:
    """Whether an answer we *said* is right: the question has an answer and the prediction contains a gold
    answer word for word (``contains_answer``) or overlaps one with token F1 ≥ 0.5 (official SQuAD
    normalisation). Any answer to an unanswerable question is wrong. This is the label confidence is calibrated
    to, the verifier is trained on and precision is counted with."""
    if not answerable or prediction is None:
        return False
    return any(contains_answer(prediction, g) for g in golds) or f1(prediction, golds) >= 0.5


def verified_correct(result: dict, golds: Sequence[str], answerable: bool) -> bool:
    """``answer_correct`` of the answer the verifier SUPPORTED in a pipeline ``result`` — shown, or held back by the
    confidence bar (``rejected_answer`` with ``_supported``): the label the confidence combiner is fitted on."""
    supported = result.get("rejected_answer") if result.get("_supported") else None
    return answer_correct(result.get("answer") or supported, golds, answerable)
