import json
import re

import numpy as np

from components.evaluation.report import fmt, write_report
from components.evaluation.report_plots import score_distributions_figure

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def full_summary():
    curve = [min(1.0, 0.3 + 0.01 * k) for k in range(1, 101)]
    return {
        "dataset": "squad-mini <dev>",
        "pipeline": "pipelines/squad.yaml",
        "models": {"reader": "deepset/roberta-base-squad2 (hf-cache)"},
        "retrieval": {
            "reranked": {"ndcg@10": 0.71, "recall@1": 0.5, "recall@10": 0.9, "queries": 20},
            "bm25": {"ndcg@10": 0.52, "recall@1": 0.3, "recall@10": 0.8, "queries": 20},
            "dense": {"ndcg@10": 0.61, "recall@1": 0.4, "recall@10": 0.85, "queries": 20},
        },
        "recall_curves": {"bm25": curve, "dense": [c * 0.9 for c in curve]},
        "reading": {
            "exact": 0.55,
            "f1": 0.625,
            "HasAns_exact": 0.5,
            "HasAns_f1": 0.6,
            "NoAns_exact": 0.6,
            "NoAns_f1": 0.6,
            "total": 20,
            "HasAns_total": 10,
            "NoAns_total": 10,
            "abstention_precision": 0.75,
            "abstention_recall": 0.6,
            "answer_in_span_rate": 0.8,
            "mean_reader_tokens": 812.5,
            "verdicts": {"supported": 12, "unsupported": 8},
        },
        "taxonomy": {
            "correct": 11,
            "retrieval_miss": 2,
            "rank_failure": 3,
            "synthesis_error": 2,
            "hallucination": 1,
            "false_abstention": 1,
        },
        "scores": {"answerable": [0.9, 0.8, 0.7, 0.4], "unanswerable": [0.1, 0.2, 0.5], "threshold": 0.45},
        "calibration": {
            "objective": "balanced_accuracy",
            "seed": 0,
            "fraction": 0.5,
            "calibration_size": 10,
            "held_out_size": 10,
            "values": {"reader": {"threshold": 0.45}},
            "calibration": {"reader": {"threshold": {"objective": 0.9}}},
            "held_out": {
                "reader": {
                    "threshold": {
                        "n": 10,
                        "objective": 0.8,
                        "answer_recall": 0.7,
                        "abstention_precision": 0.6,
                        "abstention_recall": 0.9,
                    }
                }
            },
            "yaml": "components:\n  reader:\n    init_parameters:\n      threshold: 0.45\n",
        },
    }


PER_QUERY = [
    {"qid": "q1", "question": "Who?", "label": "correct", "reason": "ok", "span": ("d1", 3, 9)},
    {
        "qid": "q2",
        "question": "Où est | la gare?",
        "label": "rank_failure",
        "reason": "gold d2[5:9] not read",
        "score": np.float32(0.25),
    },
]


def _sections(markdown: str) -> list[str]:
    return re.findall(r"^## (.+)$", markdown, flags=re.MULTILINE)


def test_full_report_files_sections_and_plots(tmp_path):
    written = write_report(tmp_path / "out", full_summary(), PER_QUERY)
    for key in ("markdown", "html", "per_query", "recall_curves", "score_distributions", "taxonomy"):
        assert written[key].is_file() and written[key].stat().st_size > 0, key
    for key in ("recall_curves", "score_distributions", "taxonomy"):
        assert written[key].read_bytes()[:8] == PNG_MAGIC
    md = written["markdown"].read_text(encoding="utf-8")
    assert _sections(md) == ["Retrieval by stage", "Reading", "Failure taxonomy", "Calibration", "Failure examples"]
    html = written["html"].read_text(encoding="utf-8")
    for heading in ("Retrieval by stage", "Reading", "Failure taxonomy", "Calibration"):
        assert f"<h2>{heading}</h2>" in html


def test_html_is_self_contained(tmp_path):
    written = write_report(tmp_path, full_summary(), PER_QUERY)
    html = written["html"].read_text(encoding="utf-8")
    assert "http://" not in html and "https://" not in html
    assert "<script" not in html and "<link" not in html
    sources = re.findall(r'<img src="([^"]+)"', html)
    assert sorted(sources) == ["recall_curves.png", "score_distributions.png", "taxonomy.png"]
    for src in sources:
        assert (tmp_path / src).read_bytes()[:8] == PNG_MAGIC
    # user text is escaped
    assert "squad-mini &lt;dev&gt;" in html and "<dev>" not in html


def test_retrieval_table_orders_stages_and_formats_values(tmp_path):
    md = write_report(tmp_path, full_summary())["markdown"].read_text(encoding="utf-8")
    rows = [line for line in md.splitlines() if line.startswith(("| bm25", "| dense", "| reranked"))]
    assert [r.split("|")[1].strip() for r in rows] == ["bm25", "dense", "reranked"]
    assert rows[0] == "| bm25 | 0.520 | 0.300 | 0.800 | 20 |"
    header = next(line for line in md.splitlines() if line.startswith("| stage"))
    assert header == "| stage | ndcg@10 | recall@1 | recall@10 | queries |"


def test_reading_and_calibration_content(tmp_path):
    md = write_report(tmp_path, full_summary(), PER_QUERY)["markdown"].read_text(encoding="utf-8")
    assert "| F1 answerable | 0.600 |" in md
    assert "| mean reader tokens / question | 812.500 |" in md
    assert "| supported | 12 | 0.600 |" in md
    assert "| rank_failure | 3 | 0.150 |" in md
    assert "| reader | threshold | 0.450 | 0.900 | 10 | 0.800 |" in md
    assert "```yaml\ncomponents:" in md
    # failure examples list only non-correct rows, with "|" escaped inside cells
    assert "| q2 | Où est \\| la gare? | rank_failure | gold d2[5:9] not read |" in md
    assert "| q1 |" not in md


def test_missing_parts_are_omitted(tmp_path):
    beir = {"dataset": "scifact", "retrieval": {"bm25": {"ndcg@10": 0.66}}, "recall_curves": {"bm25": [0.5, 0.7]}}
    written = write_report(tmp_path, beir)
    md = written["markdown"].read_text(encoding="utf-8")
    assert _sections(md) == ["Retrieval by stage"]
    assert "score_distributions" not in written and "taxonomy" not in written and "per_query" not in written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["recall_curves.png", "report.html", "report.md"]
    assert "<h2>Reading</h2>" not in written["html"].read_text(encoding="utf-8")


def test_per_query_jsonl_round_trip(tmp_path):
    path = write_report(tmp_path, {"dataset": "x"}, PER_QUERY)["per_query"]
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2
    rows = [json.loads(line) for line in lines]
    assert rows[0]["span"] == ["d1", 3, 9]
    assert rows[1]["question"] == "Où est | la gare?"
    assert rows[1]["score"] == 0.25


def test_extra_plots_are_copied_next_to_the_report(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    source = elsewhere / "latency.png"
    source.write_bytes(PNG_MAGIC + b"rest")
    written = write_report(tmp_path / "out", {"dataset": "x"}, plots={"Latency": source})
    assert written["extra:Latency"] == tmp_path / "out" / "latency.png"
    assert written["extra:Latency"].read_bytes() == source.read_bytes()
    assert '<img src="latency.png" alt="Latency">' in written["html"].read_text(encoding="utf-8")


def test_score_plot_marks_the_threshold():
    figure = score_distributions_figure({"answerable": [0.9, 0.7], "unanswerable": [0.1], "threshold": 0.45})
    ax = figure.axes[0]
    vertical = [line for line in ax.get_lines() if len(set(line.get_xdata())) == 1]
    assert len(vertical) == 1 and vertical[0].get_xdata()[0] == 0.45
    no_threshold = score_distributions_figure({"answerable": [0.9], "unanswerable": [0.1]})
    assert no_threshold.axes[0].get_lines() == []


def test_fmt():
    assert fmt(None) == "–" and fmt(3) == "3" and fmt(np.int64(4)) == "4"
    assert fmt(0.12345) == "0.123" and fmt(np.float32(0.5)) == "0.500" and fmt(True) == "True"


def test_the_resplit_spread_is_a_table_beside_the_risk_coverage_numbers(tmp_path):
    from components.evaluation.selective import summary as selective_summary

    s = dict(full_summary(), selective={"all": selective_summary([0.9, 0.8, 0.3], [True, True, False], 4)})
    s["confidence_calibration"] = {"resplits": {
        "splits": 2, "target_precision": 0.9, "at_target": 0.5,
        "precision_answered": {"mean": 0.875, "min": 0.85, "max": 0.9, "n": 2},
        "coverage_answered": {"mean": 0.3, "min": 0.25, "max": 0.35, "n": 2}}}
    md = write_report(tmp_path, s)["markdown"].read_text(encoding="utf-8")
    assert "| refit on each of 2 other splits, report half at its bar | mean | min | max |" in md
    assert "| precision_answered | 0.875 | 0.850 | 0.900 |" in md
    assert "| coverage_answered | 0.300 | 0.250 | 0.350 |" in md
    assert "| splits with precision ≥ 0.9 | 0.500 |  |  |" in md
