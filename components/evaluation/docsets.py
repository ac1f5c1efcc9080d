"""Question sets of real documents: a folder per kind of document (``pdf/``, ``html/``, ``text/``), each holding
the documents verbatim, their ``SOURCES.md`` and a ``questions.jsonl`` (``id``, ``question``, ``answers`` — strings
that occur verbatim in the document's text as spanqa extracts it —, ``doc_id``, ``answerable``, ``multi_passage``,
``evidence``). Two such sets exist: the real-document development set (``benchmarks/realdocs/``, which reports) and
the real-document calibration set (``training/realdocs/``, which ``training/calibrate.py --docs`` can fit the
confidence on; the shipped fit does not). They share no document and no source project.

Every document of the chosen kinds is indexed as one corpus, so a question's passage competes with all the others;
each question is asked through the pipeline as a user would. A row says what was shown, whether it was right (its
span in the gold document, holding a gold answer), and the fields the confidence fit reads (``supported``,
``signals``, ``answer_correct`` of the verified candidate, shown or held back by the bar).

Usage::

    questions, files = load_docset(Path("benchmarks/realdocs"), ["pdf", "html", "text"])
    with docset_runner(Path("pipelines/extractive.yaml"), files) as runner:
        rows = ask_docset(runner, questions)
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from components.evaluation.metrics import answer_correct
from components.evaluation.selective import right_at

KINDS = ("pdf", "html", "text")
DOCUMENT_SUFFIXES = (".pdf", ".html", ".htm", ".md", ".txt")


def split_of(name: str, heldout_share: float = 1 / 3) -> str:
    """``heldout`` or ``train`` for a document, from the SHA-256 of its file name — how the calibration set's
    documents are split for training (``training/realdocs_data.py``), never a question at a time."""
    return "heldout" if int(hashlib.sha256(name.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF < heldout_share else "train"


def load_docset(folder: Path, kinds: list[str] | tuple[str, ...] = KINDS,
                split: str | None = None) -> tuple[list[dict], list[Path]]:
    """The questions (each with its ``kind``) and the document files of ``kinds`` under ``folder``; with ``split``
    (``train`` or ``heldout``), only the documents of that side of ``split_of`` and their questions."""
    if split not in (None, "train", "heldout"):
        raise ValueError(f"split must be train or heldout, not {split!r}")
    questions, files = [], []
    for kind in kinds:
        sub = folder / kind
        if not (sub / "questions.jsonl").exists():
            raise FileNotFoundError(f"{sub / 'questions.jsonl'} does not exist: a document set holds one folder per "
                                    f"kind ({', '.join(KINDS)}), each with its questions.jsonl")
        questions += [dict(json.loads(line), kind=kind) for line in
                      (sub / "questions.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
        files += sorted(p for p in sub.iterdir() if p.is_file() and p.suffix.lower() in DOCUMENT_SUFFIXES
                        and p.name != "SOURCES.md" and not p.name.endswith(".extracted.txt"))
    if split:
        files = [p for p in files if split_of(p.name) == split]
        questions = [q for q in questions if split_of(q["doc_id"]) == split]
    return questions, files


def document_text(path: Path) -> str:
    """A document's text as spanqa indexes it: converted (PDF, HTML) or read, then normalised."""
    from components.core.documents.convert import CONVERTED_SUFFIXES, convert_file
    from components.core.documents.source import LoadLimits
    from components.core.text.normalise import normalise_text

    if path.suffix.lower() in CONVERTED_SUFFIXES:
        return convert_file(path, path.name, LoadLimits()).text
    return normalise_text(path.read_text(encoding="utf-8"))[0]


@contextmanager
def docset_runner(pipeline_path: Path, files: list[Path]) -> Iterator:
    """A warmed ``QueryRunner`` of ``pipeline_path`` over one temporary corpus of ``files``."""
    from components.app.pipeline_io import load_pipeline
    from components.app.runner import QueryRunner

    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus"
        corpus.mkdir()
        for f in files:
            shutil.copy(f, corpus / f.name)
        pipeline, _ = load_pipeline(Path(pipeline_path), data=str(corpus), cache_dir=str(Path(tmp) / "cache"))
        runner = QueryRunner(pipeline)
        runner.warm_up()
        yield runner


def docset_row(q: dict, result: dict) -> dict:
    """One question's row from the pipeline's ``result``: ``right`` (shown, in the gold document, holding a gold
    answer), ``held_right`` (not shown, and what the verifier or the bar refused holds a gold answer) and
    ``answer_correct`` (the verified candidate, shown or held back by the bar, lies in the gold document and holds a
    gold answer: what the confidence combiner is fitted on)."""
    shown = result["answer"] is not None
    span = result["spans"][0] if shown and result["spans"] else None
    held = result.get("held_back") or {}
    supported = bool(result.get("_supported"))
    candidate = result["answer"] if shown else (result.get("rejected_answer") if supported else None)
    doc = span["doc_id"] if span else held.get("doc_id")
    correct = bool(candidate is not None and q["answerable"] and doc == q["doc_id"]
                   and answer_correct(candidate, q["answers"]))
    right = bool(shown and span and correct)
    refused = result.get("rejected_answer")
    held_right = bool(not shown and refused and q["answerable"] and answer_correct(refused, q["answers"]))
    return {"id": q["id"], "kind": q["kind"], "answerable": q["answerable"], "answer": result["answer"],
            "right": right, "verdict": result["verdict"], "reason": result.get("reason"),
            "confidence": result.get("confidence"), "held_back": refused,
            "held_right": held_right, "supported": supported, "signals": result.get("_signals"),
            "answer_correct": correct}


LOST = ("held_by_bar", "refused_by_verifier", "lower_in_reader_list", "reader_missed", "not_read", "shown_wrong")


def _holds(text: str, answers: list[str]) -> bool:
    flat = " ".join(text.split()).lower()
    return any(" ".join(a.split()).lower() in flat for a in answers if a.strip())


def lost_at(q: dict, result: dict, row: dict) -> str | None:
    """Where an answerable question's right answer was lost (None: shown right, or nothing to find), one of
    ``LOST``: a wrong answer shown; a right answer the verifier SUPPORTED and the confidence bar held back; the
    reader's best answer right but refused by the verifier (or outscored by the reader's no-answer); a right answer
    only lower in the reader's last list; the text read last holds a gold answer the reader never proposed; no text
    read holds one (retrieval or the window missed it)."""
    if not q["answerable"] or row["right"]:
        return None
    if row["answer"] is not None:
        return "shown_wrong"
    if row["held_right"]:
        return "held_by_bar" if row["supported"] else "refused_by_verifier"
    if any(c["doc_id"] in (None, q["doc_id"]) and answer_correct(c["answer"], q["answers"])
           for c in result.get("_candidates") or []):
        return "lower_in_reader_list"
    read = (result.get("_read_last") or []) + (result.get("_read") or [])  # widened (when it was), then the windows
    if any(d.get("doc_id") == q["doc_id"] and _holds(d.get("text") or "", q["answers"]) for d in read):
        return "reader_missed"
    return "not_read"


def ask_docset(runner, questions: list[dict], echo: bool = False) -> list[dict]:
    """Each question asked of the whole corpus; one ``docset_row`` per question (``echo``: a line each on stderr)."""
    rows = []
    for q in questions:
        result = runner.ask(q["question"])
        row = docset_row(q, result)
        row["lost_at"] = lost_at(q, result, row)
        rows.append(row)
        if echo:
            mark = "right" if row["right"] else ("WRONG" if row["answer"] is not None else "-")
            print(f"{q['id']:10s} {mark:5s} {str(row['answer'])[:60]!r}", file=sys.stderr)
    return rows


def ranked_answers(rows: list[dict]) -> list[tuple[float, bool]]:
    """The answers some confidence bar would show, most confident first, as ``(confidence, right)``: each
    question's verified answer, shown or held back by the bar. An answer the verifier refused is not among them (no
    bar shows it). Right as ``docset_row`` says: the shown span is right, or the held-back answer lies in the gold
    document and holds a gold answer."""
    out = [(r["confidence"], bool(r["right"] if r["answer"] is not None else r["answer_correct"]))
           for r in rows if r.get("supported") and r.get("confidence") is not None]
    return sorted(out, key=lambda a: -a[0])


def at_count(rows: list[dict], n: int) -> dict:
    """Right and wrong among the ``n`` most confident answers of ``rows`` (``ranked_answers``; fewer when a tie of
    confidences straddles ``n``, since no bar splits one — ``selective.right_at``), and their precision: two
    pipelines compared at the same number of answers shown, whatever bar each was fitted to."""
    if n < 0:
        raise ValueError(f"at_count: n is a number of answers, 0 or more, not {n}")
    answers = ranked_answers(rows)
    shown, right = right_at([c for c, _ in answers], [ok for _, ok in answers], n)
    return {"shown": shown, "right": right, "wrong": shown - right,
            "precision": round(right / shown, 3) if shown else None}
