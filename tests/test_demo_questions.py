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


# Known limits of the OFFLINE stack (spanqa's trained MiniLM reader and trained verifier), kept visible: strict
# xfail, so a fix that makes one pass turns the test red until its entry is removed. In every case below nothing
# wrong is shown: the reader's wrong span is held back by the confidence bar, or the verifier answers NOT_FOUND.
_WRONG_HELD = "the reader picks a wrong span (the confidence bar holds it back): "
_VERIFIER = "the trained verifier refuses the reader's span (P(right) under 0.5): "
_ABSTAINS = "the reader's own no-answer outscores its best span: "
OFFLINE_LIMITS = {
    "q01": _VERIFIER + "0.02, on a wrong span ('monthly')",
    "q07": _WRONG_HELD + "'4 hours' (the Hub Pro's battery, hub-pro-datasheet.html) for the GLN-HUB-200's '72 hours', "
                         "supported, then held back at 0.26 by the conflict with hub-200.md",
    "q10": _VERIFIER + "0.04, on a wrong span ('three', the number of plans)",
    "q11": _WRONG_HELD + "'€14.99 per month' (the EU monthly price) for the annual '$149.90' at 0.73",
    "q12": _VERIFIER + "0.24, on a wrong span ('how long')",
    "q13": _VERIFIER + "0.12, on a wrong span ('0 to 254', the API's brightness scale)",
    "q15": _VERIFIER + "0.19, on a wrong span (a topic path for the topic prefix)",
    "q17": _VERIFIER + "0.06 for a value in a JSON block",
    "q19": _WRONG_HELD + "'cloud sync rejected' (the error's name, not its cause) at 0.68",
    "q23": _ABSTAINS + "no-answer 0.67",
    "q27": _VERIFIER + "0.44, on a wrong span ('overnight' for '02:00 to 05:00')",
    "q31": _VERIFIER + "0.07, on a wrong span ('hub')",
    "q41": _VERIFIER + "0.35 on the right span ('2,500 euros': the question's 'maximum payout' against the text's "
                       "'pays up to')",
}
# shown although wrong: the bar is chosen for precision 0.9 on held-out questions, so about one shown answer in ten
# may be wrong; each one is named here, and any other wrong answer shown fails the corpus test below (none now)
WRONG_SHOWN: set[str] = set()
# wrong, and held back (or shown) by less than float rounding can move between CPUs: the corpus test accepts such a
# question either way rather than depend on the fourth decimal (none with the shipped models)
NEAR_THE_BAR: set[str] = set()


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
    """What passes the verifier and the confidence bar is right, but for the named WRONG_SHOWN: no unanswerable
    question is answered, every other shown answer of the 43 demo questions is correct and in its gold document,
    and each named one is still shown and wrong (8 shown with the shipped reader, verifier and bar 0.831, 8 right; the lexical
    verifier showed 16, 15 right)."""
    shown, wrong = 0, set()
    for q in QUESTIONS:
        result = runner.ask(q["question"])
        if result["answer"] is None:
            continue
        shown += 1
        assert q["answerable"], (q["id"], result["answer"])
        span = result["spans"][0]
        if not (span["doc_id"] == q["doc_id"] and answer_correct(result["answer"], q["answers"])):
            wrong.add(q["id"])
    assert WRONG_SHOWN <= wrong <= WRONG_SHOWN | NEAR_THE_BAR, wrong
    assert shown >= 8


def test_the_result_keeps_what_the_reader_read_and_proposed_last(runner):
    # q01: the verifier doubts the reader's 'monthly' and widens to the paragraph, then to the whole passage, where it
    # is read again and refuted (0.02)
    q = next(q for q in QUESTIONS if q["id"] == "q01")
    result = runner.ask(q["question"])
    assert "widen:passage" in result["route"]
    first, last = result["_read"], result["_read_last"]
    assert last != first and sum(len(d["text"]) for d in last) > sum(len(d["text"]) for d in first)
    for d in first + last:  # both are pieces of their documents, at their offsets
        assert TEXTS[d["doc_id"]][d["char_start"]:d["char_end"]] == d["text"]
    candidates = result["_candidates"]
    assert candidates and result["rejected_answer"] == candidates[0]["answer"]
    assert [c["score"] for c in candidates] == sorted((c["score"] for c in candidates), reverse=True)
    assert all(c["answer"] in TEXTS[c["doc_id"]] for c in candidates)
