"""The negated and antonym questions the reader trains on as no-answer (``reader_data``), and the WordNet antonym
table they read (``training/antonyms.py``): exact questions made from hand-made ones, and the seeded stream
unchanged when a kind is off."""

from __future__ import annotations

import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "training"))

import antonyms  # noqa: E402
import reader_data  # noqa: E402
import unanswerable  # noqa: E402

CONTEXT = "The largest city of the region is Lyon. The old bridge was opened in 1990 by the mayor."


def _q(question, answer="Lyon", qid="q"):
    return reader_data.Question(qid, question, CONTEXT, ((CONTEXT.index(answer), answer),), (), "A", 0)


def test_negated_question_puts_not_before_the_verb_after_the_auxiliary_or_after_a_lone_copula():
    assert unanswerable.negated_question(_q("When was the old bridge opened?", "1990")) == \
        "When was the old bridge not opened?"
    assert unanswerable.negated_question(_q("What is the largest city of the region?")) == \
        "What is not the largest city of the region?"
    assert unanswerable.negated_question(_q("Who did the mayor meet?")) == "Who did the mayor not meet?"
    # already negated (taking the negation out can make it answerable), or no auxiliary after the first word
    assert unanswerable.negated_question(_q("Which city was never the largest?")) is None
    assert unanswerable.negated_question(_q("Which city isn't the largest?")) is None
    assert unanswerable.negated_question(_q("Who opened the old bridge?", "mayor")) is None


def test_antonym_question_trades_a_word_the_paragraph_uses_for_an_antonym_it_lacks_inflected_alike():
    table = {("large", "a"): ("small",), ("old", "a"): ("new", "young"), ("open", "v"): ("close",),
             ("city", "n"): ("country",)}
    vocabulary = {"smallest", "newer", "closed", "larger"}
    q = _q("What is the largest city of the region?")
    made = {unanswerable.antonym_question(q, vocabulary, random.Random(s), table) for s in range(20)}
    assert made == {"What is the smallest city of the region?"}  # the noun "city" is never traded
    bridge = _q("When was the old bridge opened?", "1990")
    made = {unanswerable.antonym_question(bridge, vocabulary, random.Random(s), table) for s in range(40)}
    assert made == {"When was the new bridge opened?", "When was the young bridge opened?",
                    "When was the old bridge closed?"}
    # the antonym's form must exist in the vocabulary: "closed" gone, only base forms are left
    assert {unanswerable.antonym_question(bridge, set(), random.Random(s), table) for s in range(40)} == {
        "When was the new bridge opened?", "When was the young bridge opened?"}
    # a word of the answer is never traded, nor one the paragraph lacks, nor one whose antonym it already uses
    assert unanswerable.antonym_question(_q("What is the largest city?", "largest city"), vocabulary,
                                        random.Random(0), table) is None
    assert unanswerable.antonym_question(_q("What is a large town?"), vocabulary, random.Random(0), table) is None
    both = reader_data.Question("q", "What is the largest city?", CONTEXT + " The smallest is Vaux.",
                                ((CONTEXT.index("Lyon"), "Lyon"),), (), "A", 0)
    assert unanswerable.antonym_question(both, vocabulary, random.Random(0), table) is None


def test_the_stream_yields_the_new_kinds_as_no_answer_on_the_answer_window_and_is_unchanged_when_they_are_off():
    qs = [_q("When was the old bridge opened?", "1990"), _q("What is the largest city of the region?", "Lyon", "r")]
    plain = reader_data.examples(qs, seed=3, negatives=0.3)
    off = reader_data.examples(qs, seed=3, negatives=0.3, negations=0.0, antonyms=0.0)
    assert [next(plain) for _ in range(30)] == [next(off) for _ in range(30)]
    stream = reader_data.examples(qs, seed=3, negatives=0.0, negations=1.0, antonyms=1.0)
    made = [next(stream) for _ in range(60)]
    kinds = {ex.kind for ex in made}
    assert {"negation", "antonym"} <= kinds
    for ex in made:
        if ex.kind in ("negation", "antonym"):
            assert ex.answer_start is None and ex.question not in (q.question for q in qs)
    assert any(ex.question == "When was the old bridge not opened?" for ex in made)
    # the vocabulary is the stream's own paragraphs: "smallest" is not in them, so "largest" is never traded here
    assert {ex.question for ex in made if ex.kind == "antonym"} <= {
        "When was the new bridge opened?", "When was the young bridge opened?", "When was the old bridge closed?",
        "When was the old bridge shut?"}


def test_antonyms_reads_wordnet_lexical_antonym_pointers_between_single_words(tmp_path):
    # two adjective synsets in WordNet's data-file layout: word 1 of the first ("large") points at word 1 of the
    # second ("small"), and a multi-word lemma ("very_big") is left out
    dict_dir = tmp_path / "dict"
    dict_dir.mkdir()
    adj = ("  1 licence line\n"
           "00001740 00 a 02 large 0 very_big 0 001 ! 00002000 a 0101 | above average\n"
           "00002000 00 a 01 small(p) 0 001 ! 00001740 a 0101 | below average\n")
    (dict_dir / "data.adj").write_text(adj)
    for name in ("data.adv", "data.verb", "data.noun"):
        (dict_dir / name).write_text("  1 licence line\n")
    (tmp_path / "LICENSE").write_text("WordNet licence text\n")
    assert antonyms.antonym_pairs(dict_dir) == [("large", "small", "a"), ("small", "large", "a")]
    out = tmp_path / "pairs.tsv"
    assert antonyms.main([str(tmp_path), "--out", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert "# WordNet licence text" in lines and lines[-2:] == ["large\tsmall\ta", "small\tlarge\ta"]
    table = unanswerable.antonym_table(str(out))
    assert table == {("large", "a"): ("small",), ("small", "a"): ("large",)}


def test_the_shipped_antonym_table_holds_common_pairs_and_its_licence():
    text = unanswerable.ANTONYMS_FILE.read_text(encoding="utf-8")
    assert "Princeton University" in text  # WordNet's notice travels with its data
    table = unanswerable.antonym_table()
    assert "small" in table[("large", "a")] and "lose" in table[("win", "v")] and "late" in table[("early", "a")]


def test_negated_repeat_gives_answerable_negated_questions_more_answer_windows_and_nothing_else():
    negated = _q("Which city is not the smallest of the region?", "Lyon", "n")
    qs = [negated, _q("When was the old bridge opened?", "1990")]
    same = reader_data.examples(qs, seed=5, negatives=0.3, negated_repeat=1)
    plain = reader_data.examples(qs, seed=5, negatives=0.3)
    assert [next(plain) for _ in range(30)] == [next(same) for _ in range(30)]  # off: the stream of earlier runs
    stream = reader_data.examples(qs, seed=5, negatives=0.0, negated_repeat=3)
    made = [next(stream) for _ in range(40)]  # ten passes: the negated question 1 + 2 windows, the other 1
    assert [ex.kind == "negated-window" for ex in made].count(True) == 20
    for n, ex in enumerate(made):
        if ex.qid == "n" and ex.kind != "negated-window":
            assert [e.kind for e in made[n + 1 : n + 3]] == ["negated-window", "negated-window"]
        if ex.kind == "negated-window":  # only the question that is itself negated, answer at its offsets
            assert ex.qid == "n" and ex.context[ex.answer_start : ex.answer_end] == "Lyon"
