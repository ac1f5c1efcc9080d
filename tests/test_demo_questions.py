"""The demo questions of data/questions.jsonl, end to end, offline, through pipelines/extractive.yaml.

Answerable: the answer's span lies in the gold document and contains a gold answer string.
Unanswerable: the pipeline answers NOT_FOUND. Each question is its own test case, so a failure names it.
"""

import json
from pathlib import Path

import pytest

from components.app.pipeline_io import load_pipeline
from components.app.runner import QueryRunner

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = [json.loads(line) for line in (ROOT / "data/questions.jsonl").read_text(encoding="utf-8").splitlines() if line]


# Known limits of the OFFLINE stack (sentence fallback reader + lexical verifier), kept visible: strict xfail,
# so a fix that makes one pass turns the test red until its entry is removed. The QA model does not need them.
OFFLINE_LIMITS = {
    "q16": "the port is only in a code block URL; other documents' ports (the cloud's 443, a removed 8080) win",
    "q23": "'battery' vs 'coin cell': the lexical verifier cannot tell they are the same, so it abstains (MiniLM "
           "word cosines do not either: battery/cell 0.40, battery/switch 0.36)",
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
        assert rejected is None or any(
            rejected in p.read_text(encoding="utf-8") for p in (ROOT / "data/kb").iterdir() if p.is_file())
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
    source = (ROOT / "data/kb" / span["doc_id"]).read_text(encoding="utf-8")
    assert span["text"] == source[span["char_start"] : span["char_end"]]
    assert span["doc_id"] == q["doc_id"]
    assert any(g in span["text"] for g in q["answers"]), span["text"]
