"""The demo questions of data/questions.jsonl, end to end, offline, through pipelines/extractive.yaml.

Answerable: the answer's span lies in the gold document and contains a gold answer string.
Unanswerable: the pipeline answers NOT_FOUND. Each question is its own test case, so a failure names it.
"""

import json
from pathlib import Path

import pytest

from components.app.pipeline_io import load_pipeline
from components.app.runner import QueryRunner
from components.core.retrieval.loaders import load_folder
from components.evaluation.metrics import answer_correct

ROOT = Path(__file__).resolve().parent.parent
TEXTS = {d.doc_id: d.text for d in load_folder(ROOT / "data/kb").documents}  # a PDF/HTML/DOCX: its converted text
QUESTIONS = [json.loads(line) for line in (ROOT / "data/questions.jsonl").read_text(encoding="utf-8").splitlines() if line]


# Known limits of the OFFLINE stack (spanqa's trained MiniLM reader + the lexical verifier), kept visible: strict
# xfail, so a fix that makes one pass turns the test red until its entry is removed. In every case below nothing
# wrong is shown: the reader's wrong span is held back by the confidence bar, or the verifier answers NOT_FOUND.
_WRONG_HELD = "the reader picks a wrong span (the confidence bar holds it back): "
_VERIFIER = "the lexical verifier refuses the reader's span: "
OFFLINE_LIMITS = {
    "q01": _WRONG_HELD + "'Switching from a monthly to an annual plan…' (billing-faq.md) at 0.17",
    "q10": _VERIFIER + "'three', 'Glow' only elsewhere in the read documents",
    "q11": _WRONG_HELD + "'€14.99' for '$149.90' at 0.62",
    "q12": _VERIFIER + "'30 days', 'Spark' only elsewhere in the read documents",
    "q13": _VERIFIER + "'0 to 254', the bulb's name only elsewhere in the read documents",
    "q15": _WRONG_HELD + "'localhost:1883' at 0.73",
    "q16": _WRONG_HELD + "'8080' (a removed port; the answer is only in a code block URL) at 0.71",
    "q17": _WRONG_HELD + "'five' at 0.60",
    "q18": _WRONG_HELD + "'the hub listened for a new device' at 0.49",
    "q20": _VERIFIER + "'too low', 'err-3318' only elsewhere in the read documents",
    "q22": _VERIFIER + "'cloud sync rejected', 'err-5501' only elsewhere in the read documents",
    "q23": _VERIFIER + "'SKU': 'battery' vs 'coin cell', 1 of 3 question terms near the answer",
    "q25": _VERIFIER + "'Hubs' (the answer '4.1.0' is the heading of the section that lists Matter 1.3), 'Matter' "
                       "only elsewhere in the read documents",
    "q31": _WRONG_HELD + "'orange dot' at 0.63",
}


def _case(q):
    marks = [pytest.mark.xfail(reason=OFFLINE_LIMITS[q["id"]], strict=True)] if q["id"] in OFFLINE_LIMITS else []
    return pytest.param(q, id=q["id"], marks=marks)


@pytest.fixture(scope="module")
def runner(tmp_path_factory):
    pipeline, _ = load_pipeline(ROOT / "pipelines/extractive.yaml", data=str(ROOT / "data/kb"),
                                cache_dir=str(tmp_path_factory.mktemp("cache")))
    r = QueryRunner(pipeline)
    r.warm_up()
    return r


@pytest.mark.parametrize("q", [_case(q) for q in QUESTIONS])
def test_demo_question(runner, q):
    result = runner.ask(q["question"])
    if not q["answerable"]:
        assert result["answer"] is None and result["verdict"] == "NOT_FOUND", result["answer"]
        # what the verifier refused is kept for diagnosis: verbatim text of a source, never the answer
        rejected = result["rejected_answer"]
        assert rejected is None or any(rejected in text for text in TEXTS.values())
        return
    # SUPPORTED, or supported by the verifier and then held back by the confidence bar (README, "Confidence"):
    # either way the verified span must be the right one, and the bar never hides why
    refused = result["verdict"] == "NOT_FOUND" and result["reason"].startswith("low_confidence")
    assert result["verdict"] == "SUPPORTED" or refused, (result["reason"], result["route"])
    assert 0 <= result["confidence"] <= 1
    if refused:
        assert result["answer"] is None and result["rejected_answer"] and result["route"][-1] == "confidence:low"
    else:
        assert result["rejected_answer"] is None and result["confidence"] >= runner.confidence_bar()
    span = result["spans"][0]
    assert span["text"] == TEXTS[span["doc_id"]][span["char_start"] : span["char_end"]]
    assert span["doc_id"] == q["doc_id"]
    # right by the label confidence is calibrated to: it contains a gold answer or overlaps one with F1 >= 0.5
    # (the trained reader answers with the minimal span, "48" for "48 devices")
    assert answer_correct(span["text"], q["answers"]), span["text"]


def test_no_wrong_answer_is_shown_on_the_demo_corpus(runner):
    """Whatever the reader gets wrong, what passes the verifier and the confidence bar is right: every shown answer
    of the 40 demo questions is correct and in its gold document (13 shown with the trained reader)."""
    shown = 0
    for q in QUESTIONS:
        result = runner.ask(q["question"])
        if result["answer"] is None:
            continue
        shown += 1
        assert q["answerable"], (q["id"], result["answer"])
        span = result["spans"][0]
        assert span["doc_id"] == q["doc_id"] and answer_correct(result["answer"], q["answers"]), (q["id"], result["answer"])
    assert shown >= 13
