"""Conflicting current sources are reported, not resolved silently: hand-made pairs of current documents giving
different values — the answer says both, each with its span, the reason starts with "conflict:" and the
confidence falls; a superseded document never makes a conflict (its metadata decides)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from components.app.pipeline_io import load_pipeline
from components.app.runner import QueryRunner

ROOT = Path(__file__).resolve().parent.parent
PAIRS = [  # (question, file, text, its value, the value already in data/kb)
    ("How long is the refund window for annual plans?", "billing-update.md",
     "---\ntitle: Billing update\nstatus: current\n---\n# Billing update\n\nUpdate: the refund window for annual "
     "plans is now 48 hours after purchase.\n", "48 hours", "30 days"),
    ("How many devices can the Hub Mini control?", "hub-mini-notes.md",
     "---\ntitle: Hub Mini field notes\nstatus: current\n---\n# Hub Mini field notes\n\nIn our tests the Hub Mini "
     "can control up to 64 devices.\n", "64", "48"),
]


@pytest.fixture(scope="module")
def runner(tmp_path_factory):
    data = tmp_path_factory.mktemp("kb")
    shutil.copytree(ROOT / "data/kb", data, dirs_exist_ok=True)
    for _, name, text, _, _ in PAIRS:
        (data / name).write_text(text, encoding="utf-8")
    pipeline, _ = load_pipeline(ROOT / "pipelines/extractive.yaml", data=str(data),
                                cache_dir=str(tmp_path_factory.mktemp("cache")))
    r = QueryRunner(pipeline)
    pipeline.get_component(r.verifier).min_confidence = 0.0
    r.warm_up()
    return r


@pytest.mark.parametrize("question, name, text, planted, genuine", PAIRS)
def test_conflicting_current_sources_are_both_reported(runner, question, name, text, planted, genuine):
    result = runner.ask(question)
    assert result["verdict"] == "SUPPORTED" and result["reason"].startswith("conflict:"), result["reason"]
    values = [result["answer"], *(c["answer"] for c in result["conflicts"])]
    assert any(planted in v for v in values) and any(genuine in v for v in values), values
    for conflict in result["conflicts"]:  # each value with its own span, slicing its own document
        span = conflict["spans"][0]
        source = runner.store().source(span["doc_id"])[0].text
        assert source[span["char_start"]:span["char_end"]] == span["text"] and span["location"]["cite"]
    assert result["confidence"] is not None and result["confidence"] < 0.75  # two rated sources: it falls


def test_a_single_source_has_no_conflict(runner):
    result = runner.ask("What does ERR-4012 mean?")
    assert result["conflicts"] == [] and not result["reason"].startswith("conflict:")


def test_a_number_inside_a_name_is_not_a_value():
    """The 100 of GLN-HUB-MINI-100 or the 4012 of ERR-4012 is part of a name: never a conflicting value."""
    from types import SimpleNamespace

    from components.core.verification.answers import inside_identifier, values
    from components.core.verification.checks import Visible

    text = "The GLN-HUB-MINI-100 controls up to 48 devices; ERR-4012 means a timeout (v2 or 3.5 GHz)."
    v = Visible("a.md", 0, len(text), text, "", ())
    def at(word: str):
        return SimpleNamespace(visible=v, answer=(text.index(word), text.index(word) + len(word)))

    assert inside_identifier(at("100"))
    assert inside_identifier(at("4012"))
    assert not inside_identifier(at("48"))
    assert not inside_identifier(at("3.5"))
    assert values("up to 48 devices") == {"48"} and values("€14.99 a month") == {"14.99"} and not values("a timeout")
