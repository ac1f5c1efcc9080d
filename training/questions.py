"""The one question type of the training scripts: a SQuAD question with its paragraph, answers and article. Its own
module, so that ``reader_data`` (the examples) and ``unanswerable`` (the constructed no-answer questions) both use
it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Question:
    qid: str
    question: str
    context: str  # the paragraph
    answers: tuple[tuple[int, str], ...]  # (char_start, text); empty for unanswerable
    plausible: tuple[tuple[int, str], ...]  # SQuAD 2.0 plausible answers of an unanswerable question
    article: str
    paragraph: int  # index of the paragraph in its article
    adversarial: bool = False  # from a ``--more`` file: an unanswerable one was written against its paragraph
    structured: bool = False  # from ``--structured``: a table or config block (``structured_data``), read whole
