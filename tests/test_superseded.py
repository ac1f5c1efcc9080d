"""Superseded sources never answer: a question only they answer is NOT_FOUND with reason only_superseded_sources
naming them; the YAML switch (superseded: include) lets them answer again."""

from pathlib import Path

import pytest

from components.app.pipeline_io import load_pipeline
from components.app.runner import QueryRunner

ROOT = Path(__file__).resolve().parent.parent
CURRENT = """---
title: Refund policy
status: current
---
Refunds for annual plans are issued within 30 days of purchase. Requests are made in the app under Billing.
"""
OLD = """---
title: Refund policy (2019)
status: superseded
---
Refund requests are faxed to the billing office in Leeds. The office answers every fax within 12 working days.
"""
RETIRED = """---
title: Loyalty scheme
superseded_by: loyalty-2024.md
---
Loyalty points expire after 18 months of inactivity.
"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    data = tmp_path_factory.mktemp("kb")
    (data / "refund-policy.md").write_text(CURRENT)
    (data / "refund-policy-2019.md").write_text(OLD)
    (data / "loyalty.md").write_text(RETIRED)
    return data, tmp_path_factory.mktemp("cache")


def _runner(corpus, **retriever):
    pipeline, _ = load_pipeline(ROOT / "pipelines/extractive.yaml", data=str(corpus[0]), cache_dir=str(corpus[1]))
    for k, v in retriever.items():
        setattr(pipeline.get_component("retriever"), k, v)
    return QueryRunner(pipeline)


FAXED = "In which city is the billing office that receives refund faxes?"


def test_a_question_only_a_superseded_source_answers_is_not_found_and_names_it(corpus):
    result = _runner(corpus).ask(FAXED)
    assert result["verdict"] == "NOT_FOUND" and result["answer"] is None
    assert result["reason"].startswith("only_superseded_sources: only refund-policy-2019.md")
    assert result["superseded_sources"] == ["refund-policy-2019.md"]
    assert "Leeds" in result["rejected_answer"]
    assert all(d["doc_id"] != "refund-policy-2019.md" for d in result["documents"])


def test_superseded_by_marks_a_document_too(corpus):
    runner = _runner(corpus)
    assert sorted(runner.pipeline.get_component("retriever").superseded_documents()) == ["loyalty.md", "refund-policy-2019.md"]


def test_the_current_source_answers_and_the_switch_turns_filtering_off(corpus):
    current = _runner(corpus).ask("How long do I have to get a refund for an annual plan?")
    assert current["verdict"] == "SUPPORTED" and current["spans"][0]["doc_id"] == "refund-policy.md"
    assert "30 days" in current["answer"]
    included = _runner(corpus, superseded="include").ask(FAXED)
    # the switch lets the superseded document be retrieved and read like any other
    assert "refund-policy-2019.md" in [d["doc_id"] for d in included["documents"]]
    assert not included["reason"].startswith("only_superseded_sources")
    assert "Leeds" in (included["answer"] or included["rejected_answer"] or "")


@pytest.mark.xfail(strict=True, reason="the shipped offline reader (the mean of stages 4 and 5) reads 'the app under "
                   "Billing' in the current policy at confidence 0.996 (the four-stage one at 0.74, under the bar), "
                   "so it is shown")
def test_a_question_about_what_only_the_superseded_source_says_is_not_answered_from_the_current_one(corpus):
    # SQuAD 2.0's adversarial kind of unanswerable question for the current policy, which never mentions faxes: the
    # reader reads 'the app under Billing' there ("Requests are made in the app under Billing"). With the four-stage
    # reader the confidence bar held it back (0.74 against the 0.759 bar), so the superseded check ran and named the
    # only source that answers; the three-stage reader (0.98), stage 5 (0.995) and the shipped mean of stages 4 and 5
    # (0.996) are sure of it
    result = _runner(corpus).ask("Where are refund requests faxed?")
    assert result["answer"] is None and result["reason"].startswith("only_superseded_sources")
    assert result["superseded_sources"] == ["refund-policy-2019.md"] and "Leeds" in result["rejected_answer"]
    assert result["route"][:6] == ["retrieve", "rerank", "expand", "read", "verify:SUPPORTED", "confidence:low"]
