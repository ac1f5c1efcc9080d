"""spanqa's shipped verifier (models/spanqa-verifier-minilm-l6): it resolves offline through the one model resolver
as the YAML's named fallback for the NLI model (announced), and its P(right) turns a hand-made wrong candidate
UNSUPPORTED and its right twin SUPPORTED — the checks no model does (located verbatim, planted instructions) still
come first."""

from __future__ import annotations

import pytest
from haystack import Document
from haystack.dataclasses import ExtractedAnswer

from components.routers.verifier_router import VerifierRouter

TEXT = ("Kettles. The Zephyr kettle boils one litre of water in 140 seconds. "
        "The Ember toaster has six browning levels and a defrost setting.")


@pytest.fixture(scope="module")
def verifier():
    v = VerifierRouter(backend="nli", model="cross-encoder/nli-deberta-v3-small", fallback="trained")
    v.warm_up()
    return v


def _ask(verifier, question, answer):
    window = Document(content=TEXT, meta={"doc_id": "kitchen.md", "char_start": 0, "char_end": len(TEXT),
                                          "level": "passage", "route": ["retrieve"]})
    start = TEXT.index(answer)
    a = ExtractedAnswer(query=question, score=0.9, data=answer,
                        meta={"doc_id": "kitchen.md", "char_start": start, "char_end": start + len(answer)})
    out = verifier.run(query=question, answers=[a], documents=[window])
    return out.get("answers", out.get("not_found"))[0]


def test_served_by_the_trained_fallback_and_announced(verifier):
    assert verifier.active_backend == "trained"
    assert verifier.served_by.startswith("fallback:trained (cross-encoder/nli-deberta-v3-small unavailable): "
                                         "spanqa/verifier-minilm-l6")
    assert "models/spanqa-verifier-minilm-l6" in verifier.served_by


def test_a_right_answer_is_supported_and_its_wrong_twin_is_not(verifier):
    q = "How many browning levels does the Ember toaster have?"
    right = _ask(verifier, q, "six")
    assert right.meta["verdict"] == "SUPPORTED" and right.meta["reason"].startswith("supported: verifier P(right)")
    assert right.meta["signals"]["verifier"] >= 0.5
    wrong = _ask(verifier, q, "140")  # a number of the text, from the other sentence
    assert wrong.meta["verdict"] == "NOT_FOUND" and wrong.meta["last_verdict"] == "UNSUPPORTED"
    assert wrong.meta["reason"].startswith("verifier_refuted: verifier P(right) 0.0")
    assert _ask(verifier, "How long does the Zephyr kettle take to boil one litre of water?",
                "140 seconds").meta["verdict"] == "SUPPORTED"


def test_an_answer_not_in_the_read_text_never_reaches_the_model(verifier):
    q = "How long does the Zephyr kettle take to boil one litre of water?"
    window = Document(content=TEXT, meta={"doc_id": "kitchen.md", "char_start": 0, "char_end": len(TEXT),
                                          "level": "passage", "route": []})
    a = ExtractedAnswer(query=q, score=0.9, data="90 seconds", meta={"doc_id": "kitchen.md"})
    out = verifier.run(query=q, answers=[a], documents=[window])["not_found"][0]
    assert out.meta["reason"] == "answer_not_in_documents"


def test_a_generated_reply_most_of_whose_words_no_passage_holds_is_refused_before_the_model(verifier):
    from haystack.dataclasses import GeneratedAnswer

    q = "How long does the Zephyr kettle take to boil one litre of water?"
    window = Document(content=TEXT, meta={"doc_id": "kitchen.md", "char_start": 0, "char_end": len(TEXT),
                                          "level": "passage", "route": []})
    cited = [{"doc_id": "kitchen.md", "char_start": 0, "char_end": len(TEXT)}]
    reply = GeneratedAnswer(data="Roughly two minutes with the lid closed, faster when preheated.", query=q,
                            documents=[window], meta={"evidence": cited})
    out = verifier.run(query=q, answers=[reply], documents=[window])["not_found"][0]
    assert out.meta["reason"].startswith("answer_not_in_documents")
    fine = GeneratedAnswer(data="140 seconds", query=q,
                           documents=[window], meta={"evidence": cited})
    assert verifier.run(query=q, answers=[fine], documents=[window])["answers"][0].meta["verdict"] == "SUPPORTED"
