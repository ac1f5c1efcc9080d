"""Questions asked of their own block (``components.evaluation.blocks``), through the shipped extractive pipeline on
a real index: a question sees only its block, so a row another block holds is no answer, and each row carries what
the confidence fit needs (``supported``, ``signals``, ``answer_correct``)."""

from __future__ import annotations

from pathlib import Path

from components.evaluation.blocks import ask_blocks, block_items, write_corpus
from components.core.verification.confidence import SIGNALS

ROOT = Path(__file__).resolve().parents[2]

TABLE_A = "| Code | Meaning |\n|---|---|\n| E100 | Disk quota exceeded |\n| E101 | Network cable unplugged |"
TABLE_B = "| Code | Meaning |\n|---|---|\n| E200 | Printer out of paper |\n| E201 | Toner cartridge empty |"
DATA = {"version": "v2.0", "data": [{"title": "structured-acme-errors", "paragraphs": [
    {"context": TABLE_A, "qas": [
        {"id": "a-right", "question": "What does E101 mean?", "is_impossible": False,
         "answers": [{"text": "Network cable unplugged", "answer_start": TABLE_A.index("Network")}]},
        {"id": "a-none", "question": "What does E200 mean?", "is_impossible": True, "answers": []}]},
    {"context": TABLE_B, "qas": [
        {"id": "b-right", "question": "What does E200 mean?", "is_impossible": False,
         "answers": [{"text": "Printer out of paper", "answer_start": TABLE_B.index("Printer")}]}]}]}]}


def test_items_are_one_titled_document_per_block():
    items = block_items(DATA)
    assert [(i.name, i.source, i.qa["id"]) for i in items] == [
        ("acme-errors-0000.md", "acme-errors", "a-right"), ("acme-errors-0000.md", "acme-errors", "a-none"),
        ("acme-errors-0001.md", "acme-errors", "b-right")]
    assert items[0].text == f"---\ntitle: acme-errors\n---\n{TABLE_A}\n"


def test_each_question_is_read_on_its_own_block_only(tmp_path):
    from components.app.pipeline_io import load_pipeline
    from components.app.runner import QueryRunner

    items = block_items(DATA)
    write_corpus(items, tmp_path / "corpus")
    assert sorted(p.name for p in (tmp_path / "corpus").iterdir()) == ["acme-errors-0000.md", "acme-errors-0001.md"]
    pipeline, _ = load_pipeline(ROOT / "pipelines/extractive.yaml", data=str(tmp_path / "corpus"),
                                cache_dir=str(tmp_path / "cache"))
    runner = QueryRunner(pipeline)
    runner.warm_up()
    rows = {r["id"]: r for r in ask_blocks(runner, items)}
    right = rows["a-right"]
    assert right["supported"] and right["answer_correct"] and set(right["signals"]) == set(SIGNALS)
    assert "Network cable unplugged" == (right["answer"] or right["rejected_answer"])
    # E200's row is in the other block: asked of block A, nothing there answers it
    none = rows["a-none"]
    assert none["answer"] is None and not none["answerable"] and none["verdict"] == "NOT_FOUND"
    assert "Printer" not in str(none["rejected_answer"])
    b = rows["b-right"]
    assert b["doc"] == "acme-errors-0001.md" and "Printer out of paper" == (b["answer"] or b["rejected_answer"])
