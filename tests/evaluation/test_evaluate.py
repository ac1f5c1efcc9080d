"""run.py --eval end to end on tiny BEIR / SQuAD 2.0 data, plus evaluate.py's calibration and labelling logic.

The metric values of the end-to-end runs are recomputed here, independently of components.evaluation.metrics,
from the per-query rankings the run wrote to per_query.jsonl.
"""

import json
import math
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from components.evaluation import evaluate
from components.evaluation import calibration
from components.core.errors import SpanQAError
from components.evaluation.taxonomy import LABELS

ROOT = Path(__file__).resolve().parents[2]

# --------------------------------------------------------------------------------------------- tiny data

BEIR_DOCS = [
    ("d1", "Zebra migration", "Zebras migrate across the Serengeti every year in search of fresh grass."),
    ("d2", "Markets", "The stock market closed higher on Friday after strong earnings reports."),
    ("d3", "Mara river", "Wildebeest and zebras cross the Mara river during the great migration."),
    ("d4", "Sourdough", "Sourdough bread is leavened with a culture of wild yeast and lactic acid bacteria."),
    ("d5", "Home baking", "Baking bread at home requires flour, water, salt and yeast."),
]
BEIR_QUERIES = {"q1": "zebra migration serengeti", "q2": "sourdough wild yeast bread", "q9": "a query without qrels"}
BEIR_QRELS = {"q1": {"d1": 1, "d3": 2, "d2": 0}, "q2": {"d4": 2, "d5": 1}}  # q1: the better document ranks 2nd

PHOTO = ("Photosynthesis is the process by which green plants use sunlight to make sugar from carbon dioxide and "
         "water. It takes place in the chloroplasts of leaf cells. Oxygen is released as a by-product.")
EIFFEL = ("The Eiffel Tower is a wrought-iron lattice tower in Paris, France. It was designed by the engineering "
          "company of Gustave Eiffel and completed in 1889. The tower is 330 metres tall.")


def _qa(qid, question, context, answer=None):
    if answer is None:
        return {"id": qid, "question": question, "is_impossible": True, "answers": [], "plausible_answers": []}
    return {"id": qid, "question": question, "is_impossible": False,
            "answers": [{"text": answer, "answer_start": context.index(answer)}]}


SQUAD = {"version": "v2.0", "data": [
    {"title": "Photosynthesis", "paragraphs": [{"context": PHOTO, "qas": [
        _qa("s1", "Where does photosynthesis take place?", PHOTO, "in the chloroplasts of leaf cells"),
        _qa("s4", "What is the boiling point of mercury?", PHOTO)]}]},
    {"title": "Eiffel_Tower", "paragraphs": [{"context": EIFFEL, "qas": [
        _qa("s2", "When was the Eiffel Tower completed?", EIFFEL, "1889"),
        _qa("s3", "Who painted the Eiffel Tower in 1950?", EIFFEL)]}]},
]}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("evaldata")
    beir = root / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text("".join(json.dumps({"_id": i, "title": t, "text": x}) + "\n" for i, t, x in BEIR_DOCS))
    (beir / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in BEIR_QUERIES.items()))
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{g}\n" for q, rel in BEIR_QRELS.items() for d, g in rel.items()))
    squad = root / "squad.json"
    squad.write_text(json.dumps(SQUAD))
    return SimpleNamespace(root=root, beir=beir, squad=squad, cache=root / "cache")


def run_eval(pipeline, dataset, cache, *extra):
    proc = subprocess.run([sys.executable, str(ROOT / "run.py"), pipeline, "--eval", str(dataset), "--cache-dir",
                           str(cache), *extra], capture_output=True, text=True, cwd=ROOT, timeout=300)
    return proc.returncode, proc.stdout, proc.stderr


def read_rows(report_dir):
    return [json.loads(line) for line in (report_dir / "per_query.jsonl").read_text().splitlines()]


def assert_report_files(report_dir, headings, absent=(), pngs=()):
    md = (report_dir / "report.md").read_text()
    html = (report_dir / "report.html").read_text()
    for h in headings:
        assert f"\n## {h}\n" in md, md
        assert f"<h2>{h}</h2>" in html
    for h in absent:
        assert f"## {h}" not in md and f"<h2>{h}</h2>" not in html
    for name in pngs:
        png = (report_dir / f"{name}.png").read_bytes()
        assert png.startswith(b"\x89PNG") and len(png) > 1000
        assert f"({name}.png)" in md and f'src="{name}.png"' in html
    return md


# independent re-implementations (trec_eval conventions: linear gain, distinct documents)

def _ndcg10(ranked, rel):
    dcg = sum(rel.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]) if rel.get(d, 0) > 0)
    ideal_gains = sorted((g for g in rel.values() if g > 0), reverse=True)[:10]
    return dcg / sum(g / math.log2(i + 2) for i, g in enumerate(ideal_gains))


def _recall(ranked, rel, k):
    pos = {d for d, g in rel.items() if g > 0}
    return len(pos & set(ranked[:k])) / len(pos)


def _mrr10(ranked, rel):
    return next((1 / (i + 1) for i, d in enumerate(ranked[:10]) if rel.get(d, 0) > 0), 0.0)


def _expected_metrics(rows, qrels, stage):
    per_query = []
    for qid, rel in qrels.items():
        ranked = next(r for r in rows if r["id"] == qid)["rankings"].get(stage, [])
        assert len(ranked) == len(set(ranked))
        per_query.append({"ndcg@10": _ndcg10(ranked, rel), "mrr@10": _mrr10(ranked, rel),
                          **{f"recall@{k}": _recall(ranked, rel, k) for k in (1, 5, 10, 100)}})
    return {m: sum(q[m] for q in per_query) / len(per_query) for m in per_query[0]}


# --------------------------------------------------------------------------------------------- BEIR end to end


def test_beir_retrieval_eval_json_metrics_and_report(data):
    report = data.root / "beir-report"
    code, out, err = run_eval("pipelines/retrieval.yaml", data.beir, data.cache, "--json", "--report", str(report))
    assert code == 0, err
    summary = json.loads(out)
    assert set(summary["retrieval"]) == {"bm25", "dense", "fused"}  # no ranker in retrieval.yaml
    assert set(summary["recall_curves"]) == {"bm25", "dense", "fused"}
    assert "reading" not in summary and "calibration" not in summary
    assert summary["dataset"] == str(data.beir) and summary["pipeline"] == "pipelines/retrieval.yaml"

    rows = read_rows(report)
    assert [r["id"] for r in rows] == ["q1", "q2"]  # q9 has no qrels: not evaluated
    assert all(not k.startswith("_") for r in rows for k in r)
    by_id = {r["id"]: r for r in rows}
    # by hand: BM25 only finds documents sharing a query term, and ranks first the one holding all of them
    assert by_id["q1"]["rankings"]["bm25"] == ["d1", "d3"]
    assert by_id["q2"]["rankings"]["bm25"] == ["d4", "d5"]
    # q1: gains 1, 2 against the ideal 2, 1; q2 ideal -> nDCG@10 = (0.8597 + 1) / 2; recall@1 = (1/2 + 1/2) / 2
    ndcg_q1 = (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3))
    assert summary["retrieval"]["bm25"]["ndcg@10"] == pytest.approx((ndcg_q1 + 1) / 2)
    assert ndcg_q1 == pytest.approx(0.8597, abs=1e-4)
    assert summary["retrieval"]["bm25"]["recall@1"] == pytest.approx(0.5)
    assert summary["retrieval"]["bm25"]["mrr@10"] == pytest.approx(1.0)
    for stage, metrics in summary["retrieval"].items():
        assert metrics["queries"] == 2 and metrics["missing_runs"] == 0 and metrics["skipped_queries"] == 0
        expected = _expected_metrics(rows, BEIR_QRELS, stage)
        for name, value in expected.items():
            assert metrics[name] == pytest.approx(value), (stage, name)
        curve = summary["recall_curves"][stage]
        assert len(curve) == 100
        for k in (1, 5, 10, 100):
            assert curve[k - 1] == pytest.approx(expected[f"recall@{k}"])

    for r in rows:  # document-level taxonomy on the final (fused) ranking
        positives = {d for d, g in BEIR_QRELS[r["id"]].items() if g > 0}
        if positives & set(r["rankings"]["fused"][:10]):
            expected = "correct"
        elif any(positives & set(ranked) for ranked in r["rankings"].values()):
            expected = "rank_failure"
        else:
            expected = "retrieval_miss"
        assert r["label"] == expected and r["reason"]
    assert sum(summary["taxonomy"].values()) == 2
    assert summary["taxonomy"]["correct"] == sum(r["label"] == "correct" for r in rows)

    md = assert_report_files(report, ["Retrieval by stage", "Failure taxonomy"], absent=["Reading", "Calibration"],
                             pngs=["recall_curves", "taxonomy"])
    assert "| fused |" in md and "spanqa evaluation:" in md


# --------------------------------------------------------------------------------------------- SQuAD end to end


def test_squad_extractive_eval_with_calibration_and_report(data):
    report = data.root / "squad-report"
    shipped = (ROOT / "pipelines/calibration/offline.json").read_bytes()
    code, out, err = run_eval("pipelines/extractive.yaml", data.squad, data.cache, "--json", "--report", str(report),
                              "--calibrate", "--calibration-out", str(data.root / "cal.json"))
    assert code == 0, err
    assert (ROOT / "pipelines/calibration/offline.json").read_bytes() == shipped  # never the shipped file
    summary = json.loads(out)
    for key in ("retrieval", "recall_curves", "reading", "taxonomy", "scores", "calibration", "models", "selective"):
        assert key in summary, key
    # four questions are too few to fit a combiner: said, and nothing written
    assert "could not fit the confidence combiner" in " ".join(err.split())
    assert summary["confidence_calibration"]["saved_to"] is None and not (data.root / "cal.json").exists()
    assert {"fused", "reranked"} <= set(summary["retrieval"])
    assert summary["retrieval"]["fused"]["queries"] == 2  # the answerable questions have a gold paragraph
    reading = summary["reading"]
    assert (reading["total"], reading["HasAns_total"], reading["NoAns_total"]) == (4, 2, 2)
    assert sum(summary["taxonomy"].values()) == 4

    rows = read_rows(report)
    assert sorted(r["id"] for r in rows) == ["s1", "s2", "s3", "s4"]
    threshold = summary["scores"]["threshold"]
    for r in rows:
        assert r["label"] in LABELS and isinstance(r["reason"], str) and r["reason"]
        assert "verdict_reason" in r and "rankings" in r
        if not r["answerable"] and r["answer"] is None:
            assert (r["label"], r["reason"]) == ("correct", "unanswerable question, system abstained")
        if r["verdict_reason"] == "low_confidence":  # the ranker abstained: its own best score, below threshold
            assert r["top_score"] is not None and r["top_score"] < threshold
            assert "reranked" not in r["rankings"]
        elif "reranked" in r["rankings"]:
            assert r["top_score"] >= threshold
    assert summary["reading"]["abstentions"] == sum(r["answer"] is None for r in rows)

    cal = summary["calibration"]
    param = "fallback_score_threshold" if summary["models"]["ranker"].startswith("fallback:") else "score_threshold"
    assert set(cal["values"]) == {"ranker"} and set(cal["values"]["ranker"]) == {param}
    value = cal["values"]["ranker"][param]
    assert cal["calibration_size"] + cal["held_out_size"] == 4 and cal["held_out_size"] >= 1
    assert cal["calibration"]["ranker"][param]["n"] == cal["calibration_size"]
    assert cal["held_out"]["ranker"][param]["n"] == cal["held_out_size"]
    cal_ids, held_ids = calibration.split_ids([r["id"] for r in rows])
    assert {r["id"]: r["calibration_split"] for r in rows} == {
        **dict.fromkeys(cal_ids, "calibration"), **dict.fromkeys(held_ids, "held_out")}
    chosen_on = [r for r in rows if r["calibration_split"] == "calibration"]
    assert value == calibration.choose_threshold([r["top_score"] for r in chosen_on], [r["answerable"] for r in chosen_on])
    assert yaml.safe_load(cal["yaml"]) == {"components": {"ranker": {"init_parameters": {param: value}}}}
    assert cal["yaml"].startswith("# chosen by --calibrate")
    assert cal["in_force"]["ranker"][param]["value"] == threshold

    md = assert_report_files(report, ["Retrieval by stage", "Reading", "Failure taxonomy", "Calibration"],
                             pngs=["recall_curves", "score_distributions", "taxonomy"])
    assert "```yaml\n# chosen by --calibrate" in md and f"{param}: {value}" in md
    failures = [r for r in rows if r["label"] != "correct"]
    assert ("## Failure examples" in md) == bool(failures)
    for r in failures:
        assert f"| {r['id']} |" in md


def test_squad_through_retrieval_pipeline_measures_the_gold_paragraph(data):
    report = data.root / "squad-retrieval-report"
    code, out, err = run_eval("pipelines/retrieval.yaml", data.squad, data.cache, "--json", "--report", str(report))
    assert code == 0, err
    summary = json.loads(out)
    assert "reading" not in summary and "scores" not in summary
    assert summary["questions"] == {"evaluated": 2, "unanswerable_skipped": 2}
    rows = read_rows(report)
    assert {r["id"]: r["gold_doc_id"] for r in rows} == {"s1": "Photosynthesis#0", "s2": "Eiffel_Tower#0"}
    qrels = {r["id"]: {r["gold_doc_id"]: 1} for r in rows}
    assert set(summary["retrieval"]) == {"bm25", "dense", "fused"}
    for stage, metrics in summary["retrieval"].items():
        assert metrics["queries"] == 2
        for name, value in _expected_metrics(rows, qrels, stage).items():
            assert metrics[name] == pytest.approx(value), (stage, name)
    assert_report_files(report, ["Retrieval by stage", "Failure taxonomy"], absent=["Reading"], pngs=["recall_curves"])


def test_calibrate_needs_a_reading_pipeline(data):
    code, _, err = run_eval("pipelines/retrieval.yaml", data.squad, data.cache, "--calibrate")
    assert code == 2 and "Traceback" not in err
    assert "--calibrate" in " ".join(err.split()) and "pipelines/extractive.yaml" in " ".join(err.split())


# --------------------------------------------------------------------------------------------- calibration unit


def fake_runner(served_by="fallback:bi_encoder (cross-encoder/ms-marco-MiniLM-L-6-v2 unavailable)", ranker="ranker"):
    component = SimpleNamespace(served_by=served_by, score_threshold=-5.0, fallback_score_threshold=0.25)
    return SimpleNamespace(ranker=ranker, pipeline=SimpleNamespace(get_component=lambda name: component))


class SpyRow(dict):
    """A row that logs every read of its ``top_score``."""

    def __init__(self, log, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._log = log

    def _note(self, key):
        if key == "top_score":
            self._log.append(("read", dict.__getitem__(self, "id")))

    def __getitem__(self, key):
        self._note(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self._note(key)
        return super().get(key, default)


def test_calibrate_chooses_on_calibration_split_only(monkeypatch):
    log = []
    ids = [f"q{i}" for i in range(12)]
    cal_ids, held_ids = calibration.split_ids(ids)
    rows = []
    for n, qid in enumerate(ids):
        answerable = n % 2 == 0
        if qid in cal_ids:
            score = 0.6 + n / 100 if answerable else 0.1 + n / 100
        else:  # poison: choosing on these too would move the threshold down to 0.30
            score = 0.30 if answerable else 0.25
        rows.append(SpyRow(log, id=qid, answerable=answerable, top_score=score))
    # the poison is effective: choosing on everything gives another value
    cal_rows = [r for r in rows if r["id"] in cal_ids]
    on_cal = calibration.choose_threshold([dict.__getitem__(r, "top_score") for r in cal_rows], [r["answerable"] for r in cal_rows])
    on_all = calibration.choose_threshold([dict.__getitem__(r, "top_score") for r in rows], [r["answerable"] for r in rows])
    assert (on_cal, on_all) == (0.62, 0.30)
    log.clear()

    real_choose = calibration.choose_threshold
    seen_scores = []

    def spy_choose(scores, labels, objective="balanced_accuracy"):
        seen_scores.extend(scores)
        value = real_choose(scores, labels, objective)
        log.append(("chosen", value))
        return value

    monkeypatch.setattr(calibration, "choose_threshold", spy_choose)
    result = evaluate.calibrate(rows, fake_runner())

    assert result["values"] == {"ranker": {"fallback_score_threshold": on_cal}}
    assert sorted(seen_scores) == sorted(dict.__getitem__(r, "top_score") for r in cal_rows)
    last_choice = max(i for i, entry in enumerate(log) if entry[0] == "chosen")
    held_reads = [i for i, entry in enumerate(log) if entry[0] == "read" and entry[1] in held_ids]
    assert held_reads and min(held_reads) > last_choice  # held-out scores are read only to measure
    # measured on the held-out split, where every score lies below the value chosen on the other split
    held = result["held_out"]["ranker"]["fallback_score_threshold"]
    assert (held["n"], held["answer_recall"], held["abstention_recall"]) == (len(held_ids), 0.0, 1.0)
    assert result["calibration"]["ranker"]["fallback_score_threshold"]["objective"] == 1.0
    assert result["in_force"]["ranker"]["fallback_score_threshold"]["value"] == 0.25
    assert {r["id"]: r["calibration_split"] for r in rows} == {
        **dict.fromkeys(cal_ids, "calibration"), **dict.fromkeys(held_ids, "held_out")}
    assert yaml.safe_load(result["yaml"]) == {"components": {"ranker": {"init_parameters": {"fallback_score_threshold": on_cal}}}}
    assert result["warnings"] == []


def test_calibrate_names_the_parameter_of_the_scorer_that_served():
    rows = [{"id": f"q{i}", "answerable": i % 2 == 0, "top_score": float(i)} for i in range(8)]
    served_model = fake_runner(served_by="cross-encoder/ms-marco-MiniLM-L-6-v2 (hf-cache)", ranker="rerank")
    result = evaluate.calibrate(rows, served_model)
    assert list(result["values"]) == ["rerank"] and list(result["values"]["rerank"]) == ["score_threshold"]
    assert result["in_force"]["rerank"]["score_threshold"]["value"] == -5.0
    assert "score_threshold:" in result["yaml"] and "fallback_score_threshold" not in result["yaml"].split("components:")[1]


def test_calibrate_errors_and_warnings():
    rows = [{"id": f"q{i}", "answerable": True, "top_score": float(i)} for i in range(4)]
    with pytest.raises(SpanQAError, match="no CrossEncoderRanker"):
        evaluate.calibrate(rows, fake_runner(ranker=None))
    result = evaluate.calibrate(rows, fake_runner())  # SQuAD 1.1: nothing to tell apart
    assert result["warnings"] and "no unanswerable question" in result["warnings"][0]
    assert "# warning:" in result["yaml"]
    with pytest.raises(SpanQAError, match="could not choose a threshold"):
        evaluate.calibrate([{"id": "a", "answerable": True, "top_score": None},
                            {"id": "b", "answerable": False, "top_score": None}], fake_runner())


# --------------------------------------------------------------------------------------------- row helpers


def test_rerank_score_uses_the_rankers_best_score_when_it_abstained():
    # the runner reports the first fused (RRF) score as _top_score when the ranker abstained
    abstained = {"_stages": {"fused": ["a"]}, "_top_score": 1 / 61, "reason": "low_confidence", "score": 0.04}
    assert evaluate.rerank_score(abstained) == 0.04
    assert evaluate.rerank_score({"_stages": {"fused": []}, "_top_score": None, "reason": "no_candidates", "score": 0.0}) is None
    assert evaluate.rerank_score({"_stages": {"fused": ["a"], "reranked": ["a"]}, "_top_score": 0.7,
                                  "reason": "supported", "score": 0.3}) == 0.7


def test_retrieval_diagnosis_by_hand():
    stages = {"bm25": ["x", "y"], "fused": [f"n{i}" for i in range(10)] + ["g"], "reranked": ["n0", "g"]}
    assert evaluate.retrieval_diagnosis(stages, {"g": 1}, "reranked").label == "correct"
    d = evaluate.retrieval_diagnosis(stages, {"g": 1}, "fused")
    assert d.label == "rank_failure" and "fused rank 11" in d.reason and "top 10 of the fused" in d.reason
    assert evaluate.retrieval_diagnosis(stages, {"z": 2, "y": 0}, "fused").label == "retrieval_miss"
    assert evaluate.retrieval_diagnosis(stages, {"y": 0}, "fused") is None
    # the ranker abstained (no reranked list): a gold document fused at rank 1 was not returned
    assert evaluate.retrieval_diagnosis({"fused": ["g"]}, {"g": 1}, "reranked").label == "rank_failure"


def test_beir_limit_averages_over_the_queries_run(tmp_path):
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "text": "x"}\n')
    (tmp_path / "queries.jsonl").write_text('{"_id": "a", "text": "first"}\n{"_id": "b", "text": "second"}\n')
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\na\td1\t1\nb\td1\t1\n")
    runner = SimpleNamespace(ranker=None, joiner="joiner",
                             ask=lambda q, retrieval_depth=None: {"_stages": {"bm25": ["d1"], "fused": ["d1"]}})
    runner.retrieval_only = lambda: runner
    summary, rows = evaluate.evaluate_beir(runner, tmp_path, progress=False, limit=1)
    assert [r["id"] for r in rows] == ["a"]
    assert summary["retrieval"]["fused"]["queries"] == 1 and summary["retrieval"]["fused"]["recall@1"] == 1.0
    assert summary["taxonomy"]["correct"] == 1 and rows[0]["rankings"] == {"bm25": ["d1"], "fused": ["d1"]}
