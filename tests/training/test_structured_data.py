"""Structured-text examples from real public tables and config files: every answer is the cell's or the value's
exact span on the line of its code or key (never a comment that mentions the key), an unanswerable question asks
about a record its block does not hold, held-out sources never reach the training file, and the reader's example
stream reads a block whole, as a kind its teacher does not teach."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "training"))

import reader_data  # noqa: E402
import structured_data  # noqa: E402


def test_answers_are_exact_spans_and_sources_are_split_whole():
    sources = json.loads((ROOT / "training" / "structured" / "sources.json").read_text())["sources"]
    files = {split: {s["file"] for s in sources if s["split"] == split} for split in structured_data.SPLITS}
    assert all(files.values()) and not (files["train"] & files["calibrate"] or files["train"] & files["heldout"]
                                        or files["calibrate"] & files["heldout"])
    for split in structured_data.SPLITS:
        data = structured_data.build(split, seed=5, per_record=1 if split != "calibrate" else 2)
        titles = {a["title"] for a in data["data"]}
        assert titles == {f"structured-{Path(s['file']).stem}" for s in sources if s["split"] == split}
        n = 0
        for article in data["data"]:
            for para in article["paragraphs"]:
                for qa in para["qas"]:
                    n += 1
                    for a in qa["answers"]:
                        assert para["context"][a["answer_start"]:].startswith(a["text"])
        assert n > 100


def test_the_value_is_taken_from_the_setting_line_not_a_comment():
    block = ("# If allow_zero_length_clientid is true, clients get an id.\n"
             "#allow_zero_length_clientid false\n")
    at = structured_data.answer_start(block, "false", "allow_zero_length_clientid")
    assert block[at:at + 5] == "false" and at > block.index("\n")
    row = "| Code | Meaning |\n|---|---|\n| E2 | see E1 first |\n| E1 | Disk full |"
    at = structured_data.answer_start(row, "Disk full", "E1")
    assert row[at:at + 9] == "Disk full"
    assert structured_data.answer_start(row, "Disk full", "E3") == -1


def test_records_of_each_source():
    assert structured_data.Record("ENOENT", "No such file or directory") in structured_data.records("musl-strerror.h")
    sshd = {r.key: r.value for r in structured_data.records("sshd_config")}
    assert sshd["Port"] == "22" and sshd["MaxAuthTries"] == "6"
    curl = {r.key: (r.number, r.value) for r in structured_data.records("curl-errors.md")}
    assert curl["CURLE_URL_MALFORMAT"] == ("3", "The URL was not properly formatted.")
    sqlite = {r.key: (r.number, r.value) for r in structured_data.records("sqlite-result-codes.h")}
    assert len(sqlite) == 31 and sqlite["SQLITE_BUSY"] == ("5", "The database file is locked")
    assert sqlite["SQLITE_INTERRUPT"] == ("9", "Operation terminated by sqlite3_interrupt()")
    system = {r.key: r.value for r in structured_data.records("system.conf")}
    # a value the build fills in ({{DEFAULT_TIMEOUT_SEC}}s) and an empty one are no defaults
    assert system["DefaultRestartSec"] == "100ms" and system["DefaultLimitMEMLOCK"] == "8M"
    assert "DefaultTimeoutStartSec" not in system and "CPUAffinity" not in system and "StatusUnitFormat" not in system
    logind = {r.key: r.value for r in structured_data.records("logind.conf")}
    assert logind["HandleLidSwitchDocked"] == "ignore" and "KillUserProcesses" not in logind


def test_blocks_are_read_whole_and_untaught(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(structured_data.build("train", seed=5, per_record=1)))
    questions = [q for qs in reader_data.load_articles(path, structured=True).values() for q in qs]
    for ex in itertools.islice(reader_data.examples(questions, seed=1), 200):
        assert ex.kind in ("structured", "structured-none") and ex.kind in reader_data.UNTAUGHT_KINDS
        q = next(q for q in questions if q.qid == ex.qid)
        assert ex.context == q.context
        if ex.kind == "structured":
            assert ex.context[ex.answer_start:ex.answer_end] == q.answers[0][1]


def test_the_verifier_reads_blocks_whole():
    import random

    import verifier_data
    from questions import Question

    q = Question("s-1", "What does E1 mean?", "| Code | Meaning |\n|---|---|\n| E1 | Disk full |",
                 ((29, "Disk full"),), (), "structured-x", 0, False, True)
    assert verifier_data.reading_contexts(q, None, random.Random(0), hard=1.0) == [(q.context, "structured")]


def test_wide_table_questions_ask_one_cell_under_its_column():
    import random

    from components.core.reading.keyed_lookup import row_cells

    paragraphs = structured_data.wide_paragraphs("sp500-financials.csv", random.Random(3), 1 / 3)
    assert len(paragraphs) > 200
    kinds = {"answerable": 0, "unanswerable": 0}
    for para in paragraphs:
        ctx, (qa,) = para["context"], para["qas"]
        header = next(line for line in ctx.splitlines() if line.startswith("| Symbol |"))
        columns = [header[s:e] for s, e in row_cells(header, 0, len(header))]
        if qa["is_impossible"]:
            kinds["unanswerable"] += 1
            continue
        kinds["answerable"] += 1
        (answer,) = qa["answers"]
        start = answer["answer_start"]
        line_start = ctx.rfind("\n", 0, start) + 1
        line_end = ctx.index("\n", start) if "\n" in ctx[start:] else len(ctx)
        cells = row_cells(ctx, line_start, line_end)
        column = next(i for i, (s, e) in enumerate(cells) if s == start)
        assert ctx[start:cells[column][1]] == answer["text"]  # the whole cell, exactly
        asked = columns[column].lower()
        assert asked in qa["question"].lower() or (asked == "sector" and "sector" in qa["question"])
    assert kinds["unanswerable"] > 40 and kinds["answerable"] > 120


def test_a_cell_is_shown_as_a_report_prints_it():
    assert structured_data.shown_value("92293693440", commas=True) == "92,293,693,440"
    assert structured_data.shown_value("92293693440", commas=False) == "92293693440"
    assert structured_data.shown_value("0.0175", commas=False) == "0.02"
    assert structured_data.shown_value("1234.5", commas=True) == "1,234.50"
    assert structured_data.shown_value("Health Care", commas=True) == "Health Care"


def test_definition_lists_ask_which_term_a_description_belongs_to():
    import random

    import definition_lists

    # a config key is described by the first sentence of the comment paragraph right above its line
    desc = {r.key: r.value for r in definition_lists.described_records("redis.conf")}
    assert desc["timeout"] == "Close the connection after a client is idle for N seconds (0 to disable)"
    # a comment that only lists values describes nothing; the key is left out
    assert "client_tls_sslmode" not in {r.key for r in definition_lists.described_records("pgbouncer.ini")}
    rows = [structured_data.Record("EDOM", "Domain error"), structured_data.Record("ERANGE", "Result not representable")]
    block = definition_lists.definition_block("musl-strerror.h", rows, random.Random(3))
    assert block.rstrip().endswith("Result not representable") and "## Error numbers\n\n" in block
    at = definition_lists.definition_start(block, "ERANGE", "ERANGE")
    assert block[at:at + 6] == "ERANGE" and (block[at - 1] == "\n" or block[at - 2:at] in ("- ", "**"))
    at = definition_lists.definition_start(block, "Domain error", "EDOM")
    assert block[at:at + 12] == "Domain error"
    assert definition_lists.definition_start(block, "EPERM", "EPERM") == -1
    data = structured_data.build("heldout", seed=5, families=(("definitions", definition_lists.definition_paragraphs),))
    defs = [a for a in data["data"] if a["title"].endswith("-definitions")]
    assert {a["title"] for a in defs} == {"structured-libuv-errors-definitions", "structured-sshd_config-definitions",
                                          "structured-mosquitto-definitions"}
    n_which = 0
    for para in (p for a in defs for p in a["paragraphs"]):
        for qa in para["qas"]:
            for a in qa["answers"]:
                assert para["context"][a["answer_start"]:].startswith(a["text"])
                n_which += qa["question"].startswith(("Which", "What is the", "What setting", "What option"))
            if qa["is_impossible"]:  # asked about a record the block does not hold
                assert not any(q in para["context"] for q in [qa["question"].split(": ", 1)[-1].rstrip("?")]
                               if len(q.split()) > 3)
    assert n_which > 20
    # without the flag the held-out benchmark's blocks are what they were
    assert not [a for a in structured_data.build("heldout", seed=5)["data"] if a["title"].endswith("-definitions")]
