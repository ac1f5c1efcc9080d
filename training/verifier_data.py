"""The trained verifier's examples: the shipped reader's own candidates on training articles, labelled right or
wrong from gold (Hu et al. 2019, "Read + Verify": the verifier learns *this* reader's mistakes).

Each question is read as the pipeline would hand it to the reader: its paragraph, or a window of it (around the
answer for an answerable question; around the sentence that shares most of the question's terms — what a search
finds — for an unanswerable one), and with chance ``hard`` also one of the article's paragraphs that BM25 ranks
closest to the question and that does not hold its answer. The reader's best ``per_context`` spans become
candidates; a candidate is right when ``components.evaluation.metrics.answer_correct`` says so (any answer to an
unanswerable question is wrong). Its text for the model is ``verifier_input.verifier_pair`` of the evidence the
pipeline's verifier would locate — the same function the pipeline calls.

``constructed`` adds unanswerable questions made from answerable ones (``unanswerable``: a word swapped for another
of the article, the question negated, a word replaced by an antonym): SQuAD 2.0's adversarial kinds, as many as the
answerable training questions allow, where the written ones are a few thousand.
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, Iterator

import reader_data
from questions import Question
from unanswerable import WORD, antonym_question, negated_question, swapped_question

CONSTRUCTED = ("swap", "negation", "antonym")


@dataclass
class Candidate:
    qid: str
    article: str
    question: str
    answer: str
    text_a: str
    text_b: str
    label: int  # 1: the answer is right
    reader_score: float
    rank: int  # 0: the reader's best span on this context
    context: str  # paragraph | window | hard (another paragraph of the article) | structured
    answerable: bool
    adversarial: bool
    golds: list[str]
    # what the lexical rules need to judge the same candidate (held-out comparison): the read text and the span
    read_text: str = ""
    char_start: int = 0
    char_end: int = 0


def reading_contexts(q: Question, search: reader_data.ArticleSearch, rng: random.Random,
                     hard: float) -> list[tuple[str, str]]:
    """``(text, kind)`` the pipeline could hand the reader for ``q`` (module docstring); a table or config block
    (``structured_data``) whole."""
    if q.structured:
        return [(q.context, "structured")]
    if rng.random() < 0.5 or len(reader_data.sentences(q.context)) == 1:
        out = [(q.context, "paragraph")]
    elif q.answers:
        out = [(reader_data._answer_window(q, q.answers[0], rng)[0], "window")]
    else:
        out = [(reader_data.question_window(q.question, q.context, search, rng), "window")]
    if rng.random() < hard:
        others = search.closest_without(q, k=2)
        if others:
            out.append((rng.choice(others), "hard"))
    return out


def title_of(article: str) -> str:
    return article.replace("_", " ")


def candidates_of(q: Question, reader, contexts: list[tuple[str, str]], per_context: int,
                  min_ratio: float) -> Iterator[Candidate]:
    """The reader's best spans on each context of ``q`` as labelled candidates."""
    from haystack import Document

    from components.core.verification.checks import Piece, locate_extractive, visible_texts
    from components.core.verification.verifier_input import verifier_pair
    from components.evaluation.metrics import answer_correct

    golds = [text for _, text in q.answers]
    for c_index, (text, kind) in enumerate(contexts):
        doc_id = f"{q.qid}#{c_index}"
        doc = Document(content=text, meta={"doc_id": doc_id, "char_start": 0, "char_end": len(text),
                                           "level": "paragraph", "title": title_of(q.article)})
        spans = [a for a in reader.run(query=q.question, documents=[doc])["answers"] if not a.meta.get("no_answer")]
        if not spans:
            continue
        best = spans[0].score
        visibles = visible_texts([Piece(doc_id, 0, text, title_of(q.article))])
        for rank, a in enumerate(spans[:per_context]):
            if rank and a.score < min_ratio * best:
                break
            start, end = int(a.meta["char_start"]), int(a.meta["char_end"])
            evidence = locate_extractive(visibles, str(a.data), doc_id=doc_id, start=start, end=end)
            if evidence is None:
                continue
            text_a, text_b = verifier_pair(q.question, str(a.data), evidence)
            yield Candidate(q.qid, q.article, q.question, str(a.data), text_a, text_b,
                            int(answer_correct(str(a.data), golds, bool(q.answers))), float(a.score), rank, kind,
                            bool(q.answers), q.adversarial, golds, text, start, end)


def constructed(questions: list[Question], n: int, seed: int) -> list[Question]:
    """Up to ``n`` unanswerable questions made from a seeded sample of the answerable ``questions``: each one kind
    of ``CONSTRUCTED`` in turn (the next kind when one cannot be made), asked of the same paragraph, no answer,
    ``adversarial`` (written against its paragraph). Their ids end in ``~swap`` / ``~negation`` / ``~antonym``."""
    by_article: dict[str, list[str]] = {}
    for q in questions:
        paras = by_article.setdefault(q.article, [])
        if q.context not in paras:
            paras.append(q.context)
    vocabulary = {w.lower() for paras in by_article.values() for p in paras for w in WORD.findall(p)}
    rng = random.Random(seed)
    pool = [q for q in questions if q.answers and not q.structured]
    out = []
    for i, q in enumerate(rng.sample(pool, len(pool))):
        if len(out) >= n:
            break
        for kind in CONSTRUCTED[i % 3:] + CONSTRUCTED[: i % 3]:
            text = (swapped_question(q, by_article[q.article], rng) if kind == "swap" else
                    negated_question(q) if kind == "negation" else antonym_question(q, vocabulary, rng))
            if text is not None:
                out.append(Question(f"{q.qid}~{kind}", text, q.context, (), (), q.article, q.paragraph,
                                    adversarial=True))
                break
    return out


def build(questions: list[Question], reader, *, seed: int, hard: float = 0.3, per_context: int = 2,
          min_ratio: float = 0.1, progress: bool = True) -> Iterator[Candidate]:
    """Candidates of every question, in question order (seeded: the same call gives the same contexts)."""
    from tqdm import tqdm

    by_article: dict[str, list[str]] = {}
    for q in questions:
        paras = by_article.setdefault(q.article, [])
        if q.context not in paras:
            paras.append(q.context)
    search = reader_data.ArticleSearch(by_article)
    rng = random.Random(seed)
    for q in tqdm(questions, desc="reader candidates", unit="q", disable=not progress):
        yield from candidates_of(q, reader, reading_contexts(q, search, rng, hard), per_context, min_ratio)


def write_jsonl(path: Path, rows: Iterable[Candidate]) -> dict:
    """Write candidates one per line; ``{"candidates", "right"}``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    n = right = 0
    with path.open("w", encoding="utf-8") as f:
        for c in rows:
            f.write(json.dumps(asdict(c)) + "\n")
            n, right = n + 1, right + c.label
    return {"candidates": n, "right": right}


def read_jsonl(path: Path) -> list[Candidate]:
    return [Candidate(**json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
