"""The real-document question sets: the development set (``benchmarks/realdocs/``) reports, the calibration set
(``training/realdocs/``) may be fitted and trained on — they must share no document and no source project, and every
answer must be verbatim in its document as spanqa extracts it. And ``docset_row``'s labels on hand-made results."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from components.evaluation.docsets import KINDS, docset_row, document_text, load_docset

ROOT = Path(__file__).resolve().parents[2]
DEVELOPMENT = ROOT / "benchmarks" / "realdocs"
CALIBRATION = ROOT / "training" / "realdocs"


def repositories(folder: Path) -> set[str]:
    """The ``owner/name`` of every row of each kind's SOURCES.md table (the second column)."""
    out = set()
    for kind in KINDS:
        for line in (folder / kind / "SOURCES.md").read_text(encoding="utf-8").splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) >= 3 and re.fullmatch(r"[\w.-]+/[\w.-]+( \(.*\))?", cells[1]):
                out.add(cells[1].split(" ")[0].lower())
    return out


def test_the_two_sets_share_no_document_and_no_source_repository():
    _, dev_files = load_docset(DEVELOPMENT)
    _, cal_files = load_docset(CALIBRATION)
    assert len(dev_files) == 15 and len(cal_files) == 117
    digest = lambda p: hashlib.sha256(p.read_bytes()).hexdigest()  # noqa: E731
    assert not {p.name for p in dev_files} & {p.name for p in cal_files}
    assert not {digest(p) for p in dev_files} & {digest(p) for p in cal_files}
    dev_repos, cal_repos = repositories(DEVELOPMENT), repositories(CALIBRATION)
    assert len(cal_repos) >= 20, cal_repos  # the table was read, not skipped
    assert not dev_repos & cal_repos


def test_the_calibration_set_s_answers_are_verbatim_in_their_documents():
    questions, files = load_docset(CALIBRATION)
    texts = {p.name: document_text(p) for p in files}
    assert len(questions) == 1611 and sum(q["answerable"] for q in questions) == 1092
    assert len({q["id"] for q in questions}) == len(questions)
    for q in questions:
        assert q["doc_id"] in texts, q["id"]
        assert bool(q["answers"]) == q["answerable"], q["id"]
        for answer in q["answers"]:
            assert answer in texts[q["doc_id"]], (q["id"], answer)


def test_a_missing_kind_folder_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nothing[/\\]pdf[/\\]questions.jsonl does not exist"):
        load_docset(Path("nothing"), ["pdf"])
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "realdocs.py"), "--set", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "realdocs: " in done.stderr and "questions.jsonl does not exist" in done.stderr


Q = {"id": "q1", "kind": "text", "question": "What port?", "answers": ["6432"], "doc_id": "a.md", "answerable": True}


def result(answer=None, doc="a.md", supported=True, refused=None, held_doc=None):
    return {"answer": answer, "verdict": "SUPPORTED" if answer else "NOT_FOUND", "reason": "",
            "spans": [{"doc_id": doc}] if answer else [], "rejected_answer": refused, "_supported": supported,
            "held_back": {"answer": refused, "doc_id": held_doc} if held_doc else None, "_signals": {"p": 1.0}}


def test_a_shown_answer_is_right_only_in_its_gold_document():
    row = docset_row(Q, result("port 6432"))
    assert (row["right"], row["answer_correct"], row["held_right"]) == (True, True, False)
    row = docset_row(Q, result("port 6432", doc="b.md"))  # the same words from another document
    assert (row["right"], row["answer_correct"]) == (False, False)
    row = docset_row(Q, result("5432"))
    assert (row["right"], row["answer_correct"]) == (False, False)


def test_an_answer_held_back_by_the_bar_is_labelled_for_the_fit():
    row = docset_row(Q, result(None, refused="6432", held_doc="a.md"))
    assert (row["right"], row["held_right"], row["answer_correct"], row["supported"]) == (False, True, True, True)
    row = docset_row(Q, result(None, refused="6432", held_doc="b.md"))  # held back, but from another document
    assert (row["held_right"], row["answer_correct"]) == (True, False)


def test_a_refused_candidate_is_not_a_label_and_an_unanswerable_question_has_no_right_answer():
    row = docset_row(Q, result(None, supported=False, refused="6432"))  # the verifier refused it: not fitted on
    assert (row["held_right"], row["answer_correct"], row["supported"]) == (True, False, False)
    row = docset_row(dict(Q, answerable=False, answers=[]), result("6432"))
    assert (row["right"], row["answer_correct"]) == (False, False)


def test_the_tally_tells_right_answers_held_by_the_bar_from_those_the_verifier_refused():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _common import AnswerTally

    tally = AnswerTally()
    for q, res in ((Q, result("port 6432")),                                      # shown, right
                   (Q, result(None, refused="6432", held_doc="a.md")),            # held by the bar
                   (Q, result(None, supported=False, refused="6432")),            # refused by the verifier
                   (dict(Q, answerable=False, answers=[]), result("6432"))):      # an unanswerable one answered
        row = docset_row(q, res)
        tally.add("text", row["answerable"], row["answer"] is not None, row["right"], row["held_right"],
                  row["supported"])
    t = tally.report()["all"]
    assert (t["shown"], t["right"], t["wrong"], t["unanswerable_answered"]) == (2, 1, 1, 1)
    assert (t["right_held_back"], t["right_held_by_bar"]) == (2, 1)
    assert (t["precision"], t["answerable_right_share"], t["coverage"]) == (0.5, round(1 / 3, 3), 0.5)


def test_where_a_right_answer_was_lost_is_told_from_the_result():
    from components.evaluation.docsets import lost_at

    def lost(res, q=Q):
        return lost_at(q, res, docset_row(q, res))

    read = [{"doc_id": "a.md", "text": "PgBouncer listens on\n listen_port = 6432 by default."}]
    assert lost(result("port 6432")) is None                                     # shown right
    assert lost(result("5432")) == "shown_wrong"
    assert lost(result(None, refused="6432", held_doc="a.md")) == "held_by_bar"
    assert lost(result(None, supported=False, refused="6432")) == "refused_by_verifier"
    refused_wrong = dict(result(None, supported=False, refused="5432"), _read_last=read)
    assert lost(dict(refused_wrong, _candidates=[{"answer": "5432", "score": 0.6, "doc_id": "a.md"},
                                                 {"answer": "6432", "score": 0.3, "doc_id": "a.md"}])) \
        == "lower_in_reader_list"
    # the same words proposed from another document are not the right answer
    assert lost(dict(refused_wrong, _candidates=[{"answer": "6432", "score": 0.3, "doc_id": "b.md"}])) \
        == "reader_missed"
    assert lost(dict(refused_wrong, _read_last=[{"doc_id": "b.md", "text": "6432"}])) == "not_read"
    assert lost(result("6432"), q=dict(Q, answerable=False, answers=[])) is None   # nothing to find


def test_the_split_keeps_each_document_on_one_side_and_the_first_documents_where_they_were():
    from components.evaluation.docsets import split_of

    held_q, held_files = load_docset(CALIBRATION, split="heldout")
    train_q, train_files = load_docset(CALIBRATION, split="train")
    all_q, all_files = load_docset(CALIBRATION)
    assert sorted(held_files + train_files) == sorted(all_files) and len(held_q) + len(train_q) == len(all_q)
    assert not {p.name for p in held_files} & {q["doc_id"] for q in train_q}
    assert (len(held_files), len(held_q)) == (39, 544)
    # the first 34 documents' sides, which every earlier judge used: these 11 held out, the other 23 trained on
    first_held = {"boost_getting_started_unix.html", "cargo-profiles.md", "eia_lcoe_lace_methodology_2013.pdf",
                  "etcd-security-release-process.md", "flac_faq.html", "imagemagick_resources.html", "libxslt_FAQ.html",
                  "noaa_opennspect_data_acquisition.pdf", "pep-0602.txt", "restic-tuning-parameters.txt",
                  "shakecast_16wcee_paper.pdf"}
    assert first_held <= {p.name for p in held_files}
    assert {split_of(n) for n in ("prometheus-storage.md", "femp_2024_discount_rates_memo.pdf")} == {"train"}
    assert split_of("x", heldout_share=0.0) == "train" and split_of("x", heldout_share=1.0001) == "heldout"
    with pytest.raises(ValueError, match="split must be train or heldout"):
        load_docset(CALIBRATION, split="dev")


def _row(confidence, answer, right, supported=True, answer_correct=None):
    return {"confidence": confidence, "answer": answer, "right": right, "supported": supported,
            "answer_correct": right if answer_correct is None else answer_correct}


def test_answers_are_ranked_by_confidence_shown_or_held_back_and_counted_at_n():
    from components.evaluation.docsets import at_count, ranked_answers

    rows = [_row(0.95, "a", True), _row(0.70, None, False, answer_correct=True),  # held back by the bar, right
            _row(0.90, "b", False), _row(0.99, None, False, supported=False),  # refused: no bar shows it
            _row(0.60, None, False), _row(None, None, False)]
    assert ranked_answers(rows) == [(0.95, True), (0.90, False), (0.70, True), (0.60, False)]
    assert at_count(rows, 2) == {"shown": 2, "right": 1, "wrong": 1, "precision": 0.5}
    assert at_count(rows, 3) == {"shown": 3, "right": 2, "wrong": 1, "precision": 0.667}
    assert at_count(rows, 9) == {"shown": 4, "right": 2, "wrong": 2, "precision": 0.5}
    assert at_count([], 5) == {"shown": 0, "right": 0, "wrong": 0, "precision": None}
    with pytest.raises(ValueError, match="0 or more, not -1"):
        at_count(rows, -1)  # never a slice from the end
    tied = [_row(0.9, "a", True), _row(0.8, "b", False), _row(0.8, "c", True)]
    assert at_count(tied, 2) == {"shown": 1, "right": 1, "wrong": 0, "precision": 1.0}  # no bar splits the 0.8s
    assert at_count(tied, 3)["right"] == 2


def test_the_ranking_benchmark_compares_pipelines_at_each_ones_count_shown(tmp_path):
    import json

    def write(name, rows):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
        return str(tmp_path / name)

    # a: shows 2 (one wrong), holds back a right one; b: shows 1, its second most confident answer is wrong
    a = write("a.jsonl", [_row(0.9, "x", True), _row(0.8, "y", False), _row(0.7, None, False, answer_correct=True)])
    b1 = write("b1.jsonl", [_row(0.95, "x", True)])
    b2 = write("b2.jsonl", [_row(0.5, None, False), _row(0.4, None, False, answer_correct=True)])
    script = [sys.executable, str(ROOT / "benchmarks" / "realdocs_ranking.py")]
    done = subprocess.run([*script, f"a={a}", f"b={b1},{b2}", "--json"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["shown"] == {"a": 2, "b": 1}
    assert report["at"]["1"] == {"a": {"shown": 1, "right": 1, "wrong": 0, "precision": 1.0},
                                 "b": {"shown": 1, "right": 1, "wrong": 0, "precision": 1.0}}
    assert report["at"]["2"]["a"]["wrong"] == 1 and report["at"]["2"]["b"]["wrong"] == 1
    bad = subprocess.run([*script, "a=" + str(tmp_path / "none.jsonl")], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "none.jsonl (of 'a') cannot be read as JSON Lines" in bad.stderr
    unnamed = subprocess.run([*script, a], capture_output=True, text=True, timeout=60)
    assert unnamed.returncode == 2 and "is not NAME=ROWS.jsonl" in unnamed.stderr
    zero = subprocess.run([*script, f"a={a}", "--at", "0"], capture_output=True, text=True, timeout=60)
    assert zero.returncode == 2 and "--at takes numbers of answers of 1 or more, not 0" in zero.stderr
