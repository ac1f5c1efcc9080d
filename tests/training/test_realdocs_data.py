"""training/realdocs_data.py: documents cut into blocks at blank lines, questions attached to the block holding
their answer (or sharing most words, for an unanswerable one), documents split whole."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "training"))

import realdocs_data  # noqa: E402

TEXT = "Intro line.\n\nPort section: the default port is 6432.\n\nTimeouts: the idle timeout is 60 s.\n\nEnd."


def test_blocks_are_cut_at_blank_lines_and_grown_to_the_size():
    small = realdocs_data.blocks_of(TEXT, 20)
    assert [b for _, b in small] == ["Intro line.", "Port section: the default port is 6432.",
                                     "Timeouts: the idle timeout is 60 s.", "End."]
    assert all(TEXT[start:start + len(b)] == b for start, b in small)  # offsets into the document
    grown = realdocs_data.blocks_of(TEXT, 60)
    assert [b for _, b in grown] == ["Intro line.\n\nPort section: the default port is 6432.",
                                     "Timeouts: the idle timeout is 60 s.\n\nEnd."]


def test_a_question_goes_to_the_block_of_its_answer_and_its_evidence():
    blocks = realdocs_data.blocks_of("The port is 60.\n\nThe idle timeout is 60 s.", 10)
    q = {"answerable": True, "answers": ["60"], "evidence": "The idle timeout is 60 s.", "question": "Idle timeout?"}
    assert realdocs_data.attach(q, blocks) == (1, 20, "60")  # "60" is in both blocks: the evidence decides
    missing = dict(q, answers=["6432"])
    assert realdocs_data.attach(missing, blocks) == (-1, None, None)
    unanswerable = {"answerable": False, "answers": [], "question": "What is the idle timeout of a replica?"}
    assert realdocs_data.attach(unanswerable, blocks) == (1, None, None)


def test_the_split_is_by_document_and_covers_every_question(tmp_path):
    folder = tmp_path / "set"
    names = [f"doc{i}.md" for i in range(12)]
    for kind in ("pdf", "html", "text"):
        (folder / kind).mkdir(parents=True)
        (folder / kind / "SOURCES.md").write_text("sources")
        (folder / kind / "questions.jsonl").write_text("")
    questions = []
    for i, name in enumerate(names):
        (folder / "text" / name).write_text(TEXT)
        questions.append({"id": f"q{i}", "question": "Which port?", "answers": ["6432"], "doc_id": name,
                          "answerable": True, "kind": "text", "multi_passage": False, "evidence": ""})
    (folder / "text" / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
    train, train_counts = realdocs_data.build("train", folder=folder)
    held, held_counts = realdocs_data.build("heldout", folder=folder)
    assert train_counts["documents"] + held_counts["documents"] == 12 and held_counts["documents"] > 0
    assert train_counts["questions"] + held_counts["questions"] == 12
    titles = {a["title"] for a in train["data"]} | {a["title"] for a in held["data"]}
    assert len(titles) == 12 and all(t.startswith("structured-realdocs-") for t in titles)
    qa = train["data"][0]["paragraphs"][0]["qas"][0]
    context = train["data"][0]["paragraphs"][0]["context"]
    assert context[qa["answers"][0]["answer_start"]:][:4] == "6432"
