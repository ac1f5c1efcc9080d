"""Questions asked of the block of text they were written on (tables of codes, configuration files).

A SQuAD-shaped file whose paragraphs are blocks (``training/structured_data.py``) is written as a corpus, one
Markdown file per block titled by its source, and each question is asked through a pipeline with a filter that
keeps its own block (``meta.doc_id``): many blocks repeat rows of one source, so a question about a row its block
lacks would be answerable from another block of the corpus. What is measured is the reading and the judgement of a
document the user points at.

The rows have the fields of ``evaluate.evaluate_squad``'s that confidence needs (``supported``, ``signals``,
``confidence``, ``answer_correct``), so the same rows feed ``benchmarks/structured_reading.py`` and the
confidence fit (``training/calibrate.py``).

Usage::

    items = block_items(json.loads(Path("structured-calibrate.json").read_text()))
    write_corpus(items, Path("corpus"))
    pipeline, _ = load_pipeline(Path("pipelines/extractive.yaml"), data="corpus", cache_dir="cache")
    runner = QueryRunner(pipeline); runner.warm_up()
    rows = ask_blocks(runner, items)
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from components.evaluation.metrics import answer_correct, verified_correct


@dataclass(frozen=True)
class BlockQuestion:
    name: str  # the block's file name in the corpus: also its doc_id
    source: str  # the source the block was cut from (the article's title without ``structured-``)
    text: str  # the file's text: front matter with the title, then the block
    qa: dict  # the SQuAD question: id, question, answers, is_impossible


def block_items(data: dict) -> list[BlockQuestion]:
    """One ``BlockQuestion`` per question of the SQuAD-shaped ``data``, each with its block as a document."""
    out = []
    for article in data["data"]:
        source = article["title"].removeprefix("structured-")
        for k, paragraph in enumerate(article["paragraphs"]):
            name = f"{source}-{k:04d}.md"
            text = f"---\ntitle: {source}\n---\n{paragraph['context']}\n"
            out += [BlockQuestion(name, source, text, qa) for qa in paragraph["qas"]]
    return out


def write_corpus(items: list[BlockQuestion], folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for item in items:
        (folder / item.name).write_text(item.text, encoding="utf-8")


def ask_blocks(runner, items: list[BlockQuestion], echo: bool = False) -> list[dict]:
    """Each question asked of its own block; one row per question (``echo``: a line per question on stderr)."""
    rows = []
    for item in items:
        qa = item.qa
        golds = [a["text"] for a in qa["answers"]]
        answerable = not qa["is_impossible"]
        result = runner.ask(qa["question"], filters={"field": "meta.doc_id", "operator": "==", "value": item.name})
        answer, supported = result["answer"], bool(result.get("_supported"))
        rows.append({
            "id": qa["id"], "source": item.source, "doc": item.name, "question": qa["question"],
            "answerable": answerable, "golds": golds, "answer": answer, "verdict": result.get("verdict"),
            "verdict_reason": result.get("reason"), "rejected_answer": result.get("rejected_answer"),
            "supported": supported, "confidence": result.get("confidence"), "signals": result.get("_signals"),
            "answer_correct": verified_correct(result, golds, answerable),
        })
        if echo:
            right = answer is not None and answerable and answer_correct(answer, golds)
            print(f"{qa['id']:28s} {'right' if right else ('WRONG' if answer is not None else '-'):5s} "
                  f"{str(answer)[:50]!r}", file=sys.stderr)
    return rows
