"""Training data for the reader: SQuAD articles split by article, and (question, window) examples shaped like
the windows the pipeline reads.

The pipeline reads sentence windows (a hit's sentence ± a few sentences), then whole paragraphs, then passages
(``pipelines/extractive.yaml``). So each answerable question is trained on one context drawn from those
shapes around its answer, and — so that the reader learns to say "not in this window" with its null score at
``[CLS]`` — on negatives: windows of its paragraph that do not hold the answer, paragraphs of the same article
that do not, and SQuAD 2.0's unanswerable questions on the window around their plausible answer (the hard
negative: text that looks like an answer and is not). Because that subset holds only a few hundred unanswerable
questions, ``training/unanswerable.py`` makes more of the kinds SQuAD 2.0's writers made most (a word of the
question swapped for another of the same article, negated, or replaced by an antonym: "How many awards did
*Radar* Princess receive?"): read on the window that holds the original answer, labelled no-answer. Sentences
come from the one splitter the pipeline uses (``components.core.text.splitting.sentence_spans``), so training
windows and served windows are cut alike.

Articles, never questions, are held out: ``split_articles`` keeps whole SQuAD 2.0 articles for calibration
and model selection, and drops their SQuAD 1.1 copies from training (the SQuAD 2.0 training set contains the
SQuAD 1.1 articles). The development article in ``../shared/data/squad2/`` is never read here.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from questions import Question  # noqa: F401  (re-exported: reader_data.Question)
from unanswerable import WORD, antonym_question, negated_question, swapped_question


@dataclass(frozen=True)
class Example:
    """One training pair: the model should point at ``context[answer_start:answer_end]``, or at ``[CLS]``
    when ``answer_start`` is None."""

    qid: str
    question: str
    context: str
    answer_start: int | None
    answer_end: int | None
    kind: str  # window | paragraph | neg-window | neg-paragraph | hard-paragraph | hard-window | unanswerable | swap
    #            | negation | antonym | negated-window | adversarial | structured | structured-none


# the no-answer examples made by changing an answerable question: a reader trained before them answers them, so a
# teacher's reading of them is not one to learn (train_reader --distil skips them)
CONSTRUCTED_KINDS = frozenset({"swap", "negation", "antonym"})
# the kinds a teacher is not trusted on: the constructed ones, and SQuAD 2.0's adversarial unanswerable questions
# of the development articles (``--more``), which a reader trained before them answers at high confidence
# and the structured-text blocks (tables, config files: ``structured_data``), where a reader trained on prose picks
# headers and comments
UNTAUGHT_KINDS = CONSTRUCTED_KINDS | {"adversarial", "structured", "structured-none"}


def load_articles(path: str | Path, adversarial: bool = False, structured: bool = False) -> dict[str, list[Question]]:
    """``{title: [Question, ...]}`` of a SQuAD 1.1 or 2.0 JSON file, questions in file order; ``adversarial``
    marks its questions as those of a ``--more`` file (SQuAD 2.0 development articles), ``structured`` as those of
    a ``--structured`` file (table and config blocks, read whole)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))["data"]
    out: dict[str, list[Question]] = {}
    for article in data:
        qs = out.setdefault(article["title"], [])
        for p_index, para in enumerate(article["paragraphs"]):
            ctx = para["context"]
            for qa in para["qas"]:
                answers = tuple((a["answer_start"], a["text"]) for a in qa.get("answers", []))
                plausible = tuple((a["answer_start"], a["text"]) for a in qa.get("plausible_answers", []))
                if qa.get("is_impossible"):
                    answers = ()
                qs.append(Question(qa["id"], qa["question"], ctx, answers, plausible, article["title"], p_index,
                                   adversarial, structured))
    return out


def split_articles(v1: dict[str, list[Question]], v2: dict[str, list[Question]], heldout: int, seed: int):
    """``(train, heldout)`` question lists: ``heldout`` SQuAD 2.0 articles (chosen with ``seed``) are held out
    whole; the other SQuAD 2.0 articles train in their 2.0 form (with unanswerable questions), and every
    SQuAD 1.1 article that is not also a 2.0 article trains as it is."""
    titles = sorted(v2)
    rng = random.Random(seed)
    # only some 2.0 articles have unanswerable questions: hold out one of them (calibration must see abstentions)
    # and train on the rest of them (the reader must see real unanswerable questions)
    with_noans = [t for t in titles if any(not q.answers for q in v2[t])]
    others = [t for t in titles if t not in with_noans]
    held = set(rng.sample(with_noans, 1) if len(with_noans) > 1 and heldout else [])
    held |= set(rng.sample(others, min(max(0, heldout - len(held)), len(others))))
    train = [q for t in titles if t not in held for q in v2[t]]
    train += [q for t, qs in v1.items() if t not in v2 for q in qs]
    held_qs = [q for t in titles if t in held for q in v2[t]]
    return train, held_qs, sorted(held)


def split_more(more: dict[str, list[Question]], heldout: int, seed: int):
    """``(train, heldout, titles)`` of the ``--more`` articles: ``heldout`` whole articles drawn with ``seed`` are
    kept for model selection and calibration, the rest train."""
    titles = sorted(more)
    held = set(random.Random(seed).sample(titles, min(heldout, len(titles))))
    return ([q for t in titles if t not in held for q in more[t]], [q for t in titles if t in held for q in more[t]],
            sorted(held))


@lru_cache(maxsize=20000)
def sentences(paragraph: str) -> tuple[tuple[int, int], ...]:
    """``(start, end)`` of each sentence of a paragraph, cut by the pipeline's own splitter."""
    from components.core.text.splitting import sentence_spans

    spans = tuple((s.start, s.end) for s in sentence_spans(paragraph))
    return spans or ((0, len(paragraph)),)


def _window(paragraph: str, first: int, last: int) -> tuple[str, int]:
    """The text of sentences ``first..last`` and its offset in the paragraph."""
    spans = sentences(paragraph)
    start, end = spans[first][0], spans[last][1]
    return paragraph[start:end], start


def _sentence_of(spans, char: int) -> int:
    for i, (s, e) in enumerate(spans):
        if char < e:
            return i
    return len(spans) - 1


def _answer_window(q: Question, answer: tuple[int, str], rng: random.Random) -> tuple[str, int]:
    """A window of sentences around ``answer`` (± 0–3 sentences on each side), or the whole paragraph."""
    spans = sentences(q.context)
    a_start, text = answer
    first, last = _sentence_of(spans, a_start), _sentence_of(spans, a_start + len(text) - 1)
    if rng.random() < 0.4 or len(spans) == 1:
        return q.context, 0
    first = max(0, first - rng.randint(0, 3))
    last = min(len(spans) - 1, last + rng.randint(0, 3))
    return _window(q.context, first, last)


def _negative_window(q: Question, rng: random.Random) -> tuple[str, int] | None:
    """A window of ``q``'s paragraph that holds none of its answers, or None when every window does."""
    spans = sentences(q.context)
    covered = set()
    for a_start, text in q.answers:
        covered.update(range(_sentence_of(spans, a_start), _sentence_of(spans, a_start + len(text) - 1) + 1))
    free = [i for i in range(len(spans)) if i not in covered]
    if not free:
        return None
    i = rng.choice(free)
    j = i
    while j + 1 < len(spans) and j + 1 not in covered and j - i < rng.randint(0, 3):
        j += 1
    return _window(q.context, i, j)


class ArticleSearch:
    """BM25 over the paragraphs of each article, with the pipeline's own analyzer and scorer — to find the
    paragraphs of an article a question's retrieval would bring up that do not hold its answer."""

    def __init__(self, by_article: dict[str, list[str]]):
        from components.core.text.analysis import Analyzer

        self._analyzer, self._paragraphs, self._bm25 = Analyzer(), by_article, {}

    def terms(self, text: str) -> list[str]:
        return self._analyzer(text)

    def _index(self, article: str):
        """The article's BM25 scorer, built on first use."""
        from components.core.retrieval.bm25 import BM25Okapi, InvertedIndex

        if article not in self._bm25:
            self._bm25[article] = BM25Okapi(InvertedIndex.build([self.terms(p) for p in self._paragraphs[article]]))
        return self._bm25[article]

    def closest_without(self, q: Question, k: int = 3) -> list[str]:
        """Up to ``k`` other paragraphs of ``q``'s article, best BM25 match to its question first, that contain
        none of its answers' texts (an unlabelled copy of the answer would be a wrong no-answer label)."""
        paras = self._paragraphs[q.article]
        scores = self._index(q.article).scores(self.terms(q.question))
        answers = [text.lower() for _, text in q.answers]
        out = []
        for i in sorted(range(len(paras)), key=lambda i: (-scores[i], i)):
            if paras[i] != q.context and not any(a in paras[i].lower() for a in answers):
                out.append(paras[i])
                if len(out) == k:
                    break
        return out


def hard_negative(q: Question, search: ArticleSearch, rng: random.Random) -> tuple[str, str] | None:
    """``(text, kind)``: one of the three paragraphs of ``q``'s article that BM25 ranks closest to its question
    and that hold no answer — whole (``hard-paragraph``), or half the time the window of its sentence sharing most
    of the question's terms ± 0–2 sentences (``hard-window``), as the pipeline's expander would read it."""
    candidates = search.closest_without(q)
    if not candidates:
        return None
    para = rng.choice(candidates)
    if rng.random() < 0.5:
        return para, "hard-paragraph"
    return question_window(q.question, para, search, rng), "hard-window"


def question_window(question: str, para: str, search: ArticleSearch, rng: random.Random) -> str:
    """The window of ``para`` around its sentence sharing most of ``question``'s terms ± 0–2 sentences, as the
    pipeline's expander would hand it to the reader."""
    wanted = set(search.terms(question))
    spans = sentences(para)
    best = max(range(len(spans)), key=lambda i: (len(wanted & set(search.terms(para[slice(*spans[i])]))), -i))
    first, last = max(0, best - rng.randint(0, 2)), min(len(spans) - 1, best + rng.randint(0, 2))
    return _window(para, first, last)[0]


def examples(questions: list[Question], seed: int, negatives: float = 0.3, swaps: float = 0.0,
             unanswerable_repeat: int = 1, hard_negatives: bool = False, negations: float = 0.0,
             antonyms: float = 0.0, negated_repeat: int = 1) -> Iterator[Example]:
    """An endless, seeded stream of examples: the questions shuffled each pass; each answerable question gives
    one answer window and, with probability ``negatives``, one negative (a window of its paragraph without
    the answer, or another paragraph of its article — with ``hard_negatives``, one that BM25 ranks near the
    question: ``hard_negative``) and, with probability ``swaps``, its ``swapped_question`` on the same window,
    labelled no-answer, and likewise with probability ``negations`` its ``negated_question`` and with probability
    ``antonyms`` its ``antonym_question``; an answerable question that is itself negated ("Which ... did *not*
    ...?") gives ``negated_repeat`` answer windows, so that a negation alone never means no answer; each
    unanswerable one gives ``unanswerable_repeat`` windows around a plausible answer (or its paragraph) labelled
    no-answer. A rate of 0 (a repeat of 1) draws nothing from the seeded generator, so a stream without a kind is
    the stream of earlier runs."""
    from components.core.text.analysis import is_negated

    rng = random.Random(seed)
    by_article: dict[str, list[str]] = {}
    for q in questions:
        paras = by_article.setdefault(q.article, [])
        if not paras or paras[-1] != q.context:
            paras.append(q.context)
    search = ArticleSearch(by_article) if hard_negatives else None
    vocabulary = {w.lower() for paras in by_article.values() for p in paras for w in WORD.findall(p)} \
        if antonyms else set()
    order = list(range(len(questions)))
    while True:
        rng.shuffle(order)
        for i in order:
            q = questions[i]
            if q.structured:  # a table or config block, read whole: windows of sentences would cut its rows
                if q.answers:
                    start, answer = q.answers[0]
                    yield Example(q.qid, q.question, q.context, start, start + len(answer), "structured")
                else:
                    yield Example(q.qid, q.question, q.context, None, None, "structured-none")
                continue
            if not q.answers:
                anchor = q.plausible[0] if q.plausible else None
                for _ in range(unanswerable_repeat):
                    if q.adversarial:  # no plausible answer on record: the paragraph, or its window a search finds
                        search = search or ArticleSearch(by_article)
                        text = q.context if rng.random() < 0.5 else question_window(q.question, q.context, search, rng)
                        yield Example(q.qid, q.question, text, None, None, "adversarial")
                        continue
                    text, _ = _answer_window(q, anchor, rng) if anchor else (q.context, 0)
                    yield Example(q.qid, q.question, text, None, None, "unanswerable")
                continue
            answer = rng.choice(q.answers)
            text, offset = _answer_window(q, answer, rng)
            start = answer[0] - offset
            if text[start : start + len(answer[1])] != answer[1]:  # an offset SQuAD got wrong: skip, never guess
                continue
            yield Example(q.qid, q.question, text, start, start + len(answer[1]),
                          "paragraph" if offset == 0 and text == q.context else "window")
            if negated_repeat > 1 and is_negated(q.question):
                for _ in range(negated_repeat - 1):
                    more, at = _answer_window(q, answer, rng)
                    yield Example(q.qid, q.question, more, answer[0] - at, answer[0] - at + len(answer[1]),
                                  "negated-window")
            if rng.random() < negatives:
                neg = _negative_window(q, rng) if rng.random() < 0.5 else None
                if neg is not None:
                    yield Example(q.qid, q.question, neg[0], None, None, "neg-window")
                elif hard_negatives:
                    hard = hard_negative(q, search, rng)
                    if hard is not None:
                        yield Example(q.qid, q.question, hard[0], None, None, hard[1])
                else:
                    others = [p for p in by_article[q.article] if p != q.context]
                    if others:
                        yield Example(q.qid, q.question, rng.choice(others), None, None, "neg-paragraph")
            if swaps and rng.random() < swaps:
                swapped = swapped_question(q, by_article[q.article], rng)
                if swapped is not None:
                    yield Example(q.qid, swapped, text, None, None, "swap")
            if negations and rng.random() < negations:
                negated = negated_question(q)
                if negated is not None:
                    yield Example(q.qid, negated, text, None, None, "negation")
            if antonyms and rng.random() < antonyms:
                opposite = antonym_question(q, vocabulary, rng)
                if opposite is not None:
                    yield Example(q.qid, opposite, text, None, None, "antonym")


def to_squad(questions: list[Question]) -> dict:
    """Questions back in the official SQuAD 2.0 JSON layout (articles → paragraphs → qas), order kept."""
    articles: dict[str, dict[int, dict]] = {}
    for q in questions:
        para = articles.setdefault(q.article, {}).setdefault(q.paragraph, {"context": q.context, "qas": []})
        qa = {"id": q.qid, "question": q.question, "is_impossible": not q.answers,
              "answers": [{"text": t, "answer_start": s} for s, t in q.answers]}
        if q.plausible:
            qa["plausible_answers"] = [{"text": t, "answer_start": s} for s, t in q.plausible]
        para["qas"].append(qa)
    return {"version": "v2.0", "data": [{"title": t, "paragraphs": [p for _, p in sorted(ps.items())]}
                                        for t, ps in articles.items()]}


def stratified_sample(questions: list[Question], n: int, seed: int) -> list[Question]:
    """``n`` questions drawn with ``seed`` so that each (article, answerable) group keeps its share; file order kept."""
    rng = random.Random(seed)
    groups: dict[tuple[str, bool], list[int]] = {}
    for i, q in enumerate(questions):
        groups.setdefault((q.article, bool(q.answers)), []).append(i)
    keep: list[int] = []
    for members in groups.values():
        keep += rng.sample(members, round(n * len(members) / len(questions)))
    return [questions[i] for i in sorted(keep)]
