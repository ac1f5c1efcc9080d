"""The verifier's view of reader answers: abstentions, the best answer, and where an answer stands."""

import pytest
from haystack import Document
from haystack.dataclasses import ExtractedAnswer, GeneratedAnswer

from components.core.text.analysis import Analyzer
from components.core.verification import answers
from components.core.verification.checks import visible_texts

SOURCE = "Intro line here. Acme Pro is billed monthly. Refunds take 30 days."


def window(start, end, doc_id="billing"):
    return Document(content=SOURCE[start:end], meta={"doc_id": doc_id, "char_start": start, "char_end": end})


def test_abstentions_scores_and_best_answer():
    none = ExtractedAnswer(query="q", score=0.7, data=None)
    blank = ExtractedAnswer(query="q", score=0.9, data="  ")
    marked = ExtractedAnswer(query="q", score=0.2, data="x", meta={"no_answer": True})
    a, b = ExtractedAnswer(query="q", score=0.5, data="a"), ExtractedAnswer(query="q", score=0.5, data="b")
    gen = GeneratedAnswer(data="g", query="q", documents=[], meta={"score": 0.6})
    assert [answers.is_abstention(x) for x in (none, blank, marked, a)] == [True, True, True, False]
    assert answers.answer_score(gen) == 0.6 and answers.answer_score(GeneratedAnswer(data="g", query="q", documents=[])) == 0.0
    assert answers.best_answer([none, a, b]) is a  # the first on ties
    assert [x.data for x in answers.ranked_answers([a, gen, blank, b])] == ["g", "a", "b"]
    assert answers.reader_prefers_no_answer([none, a], a) and not answers.reader_prefers_no_answer([marked, a], a)
    assert answers.best_answer([none, blank]) is None


def test_document_piece_defaults():
    p = answers.document_piece(Document(id="d7", content="text"), 3)
    assert (p.doc_id, p.start, p.text) == ("d7", 0, "text")
    assert answers.document_piece(window(17, 44), 0).start == 17


def test_locate_answer_from_document_offset_maps_to_source_offsets():
    # no meta offsets: the answer's document and document_offset (window-relative) give the source span
    doc = window(17, len(SOURCE))
    visibles = visible_texts([answers.document_piece(doc, 0)])
    rel = doc.content.index("30 days")
    answer = ExtractedAnswer(query="q", score=0.9, data="30 days", document=doc,
                document_offset=ExtractedAnswer.Span(rel, rel + len("30 days")))
    evidence = answers.locate_answer(answer, visibles, Analyzer(), lead_in_units=1)
    start = SOURCE.index("30 days")
    assert evidence.answer == (start, start + 7) and evidence.doc_id == "billing"
    assert evidence.evidence_text == "Refunds take 30 days."
    # an extractive answer that is not in the read text is not located by term coverage
    missing = ExtractedAnswer(query="q", score=0.9, data="45 days", meta={"doc_id": "billing"})
    assert answers.locate_answer(missing, visibles, Analyzer(), lead_in_units=1) is None


def test_locate_generated_answer_inside_its_cited_span():
    doc = window(0, len(SOURCE))
    visibles = visible_texts([answers.document_piece(doc, 0)])
    answer = GeneratedAnswer(data="refunds take thirty days", query="q", documents=[],
                             meta={"evidence": [{"doc_id": "billing", "char_start": 45, "char_end": len(SOURCE)}]})
    evidence = answers.locate_answer(answer, visibles, Analyzer(), lead_in_units=1)
    assert evidence is not None and evidence.answer is None
    assert evidence.evidence_text == "Refunds take 30 days."


def test_the_best_rival_is_the_first_other_supported_value_and_the_margin_counts_only_it():
    """A runner-up the verifier rules out is no rival; one that says the same thing in fewer words is none either;
    the search stops at the first supported one (the best, as candidates come best first), and the signal is the
    best score minus the rival's (else the score itself)."""
    from types import SimpleNamespace

    from components.core.verification.confidence import answer_signals

    best = ExtractedAnswer(query="q", score=0.76, data="30 days of purchase")
    shorter = ExtractedAnswer(query="q", score=0.75, data="30 days")  # inside the best: the same answer
    ruled_out = ExtractedAnswer(query="q", score=0.74, data="150")  # its evidence lacks a key term
    rival = ExtractedAnswer(query="q", score=0.50, data="14 days")
    later = ExtractedAnswer(query="q", score=0.40, data="60 days")
    abstain = ExtractedAnswer(query="q", score=0.90, data=None)
    calls = []

    def judge(a):
        calls.append(a.data)
        return SimpleNamespace(verdict="SUPPORTED" if a.data != "150" else "UNSUPPORTED"), None

    assert answers.best_rival(best, [later, abstain, shorter, best, ruled_out, rival], judge) is rival
    assert calls == ["150", "14 days"]  # never "60 days": a lower score cannot be the best rival
    assert answers.best_rival(best, [best, shorter, ruled_out], judge) is None

    def signals(rival):
        return answer_signals(answer_score=0.76, other_scores=[0.75, 0.74, 0.5], no_answer=0.9,
                              window=Document(content="x"), windows=[], term_coverage=1.0, asks_type=False,
                              typed=False, level="window", answer_text="30 days of purchase", evidence_coverage=1.0,
                              rival_score=rival)

    assert signals(0.50)["supported_margin"] == pytest.approx(0.26)
    assert signals(0.50)["reader_margin"] == pytest.approx(0.01)
    assert signals(None)["supported_margin"] == pytest.approx(0.76)


def test_window_no_answer_is_the_answers_own_windows_null_else_the_readers():
    from components.core.verification.confidence import answer_signals

    def signals(**kw):
        return answer_signals(answer_score=0.7, other_scores=[], no_answer=0.4, window=Document(content="x"),
                              windows=[], term_coverage=1.0, asks_type=False, typed=False, level="window",
                              answer_text="x", evidence_coverage=1.0, **kw)

    assert signals(window_no_answer=0.65)["window_no_answer"] == pytest.approx(0.65)
    assert signals()["window_no_answer"] == pytest.approx(0.4)  # a reader that gives none: its own no-answer
