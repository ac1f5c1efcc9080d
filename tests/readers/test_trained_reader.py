"""spanqa's shipped reader (models/spanqa-reader-minilm-l6): it resolves offline through the same resolver as hub
ids, serves as the YAML's named fallback (announced), gives exact spans and offsets on hand-made windows, and its
null score turns a window that does not hold the answer into NOT_FOUND through the verifier."""

from __future__ import annotations

import pytest
from haystack import Document

from components.core.backends.models import resolve_model
from components.readers.extractive_reader import TRAINED_READER, ExtractiveReader

TEXT = ("The Eiffel Tower is in Paris. It was finished in 1889 for the World's Fair. "
        "Gustave Eiffel's company designed and built it.")
BASE = 120  # the window starts at character 120 of its source document


@pytest.fixture(scope="module")
def reader():
    r = ExtractiveReader(model="deepset/roberta-base-squad2", fallback="trained", top_k=2)
    r.warm_up()
    return r


def _window(level="window"):
    return Document(content=TEXT, meta={"doc_id": "eiffel.md", "char_start": BASE, "char_end": BASE + len(TEXT),
                                        "level": level})


def test_the_shipped_weights_resolve_like_a_hub_id_and_are_announced(reader):
    resolved = resolve_model(TRAINED_READER)
    assert resolved.source == "project:models/spanqa-reader-minilm-l6" and resolved.path.endswith("spanqa-reader-minilm-l6")
    assert reader.served_by == ("fallback:trained (deepset/roberta-base-squad2 unavailable): "
                                "spanqa/reader-minilm-l6-squad2 (project:models/spanqa-reader-minilm-l6)")
    assert str(reader._qa_model.dtype) == "torch.float32"  # fp16 on disk, fp32 in memory


@pytest.mark.parametrize("question, answer", [
    ("When was the Eiffel Tower finished?", "1889"),
    ("In which city is the Eiffel Tower?", "Paris"),
    ("Whose company built the Eiffel Tower?", "Gustave Eiffel"),
])
def test_exact_spans_and_offsets_in_the_source(reader, question, answer):
    best = reader.run(query=question, documents=[_window()])["answers"][0]
    assert not best.meta.get("no_answer") and best.data == answer
    start = BASE + TEXT.index(answer)
    assert (best.meta["doc_id"], best.meta["char_start"], best.meta["char_end"]) == ("eiffel.md", start, start + len(answer))
    assert TEXT[best.document_offset.start : best.document_offset.end] == answer


@pytest.mark.parametrize("question", ["What is the boiling point of mercury?", "How many moons does Jupiter have?"])
def test_the_null_score_turns_an_unanswerable_window_into_not_found(reader, question):
    from components.routers.verifier_router import VerifierRouter

    answers = reader.run(query=question, documents=[_window("passage")])["answers"]
    assert answers[0].meta.get("no_answer")  # the null span at [CLS] beats every span
    verifier = VerifierRouter(backend="nli", model="cross-encoder/nli-deberta-v3-small", fallback="lexical")
    verifier.warm_up()
    out = verifier.run(query=question, answers=answers, documents=[_window("passage")])
    assert "answers" not in out and out["not_found"][0].meta["verdict"] == "NOT_FOUND"
    assert out["not_found"][0].meta["reason"].startswith("reader_abstained")


def test_each_span_carries_its_own_windows_null_score(reader):
    """``meta["null_score"]``: the no-answer probability of the window a span was read from. The reader's
    no-answer answer takes the most confident window's (the smallest null), so it is never above a span's own;
    a window that holds the answer has a lower null than one that does not."""
    other = "Mercury is a chemical element. Its symbol is Hg and it is liquid at room temperature."
    docs = [_window(), Document(content=other, meta={"doc_id": "mercury.md", "char_start": 0,
                                                     "char_end": len(other), "level": "window"})]
    answers = reader.run(query="When was the Eiffel Tower finished?", documents=docs, top_k=5)["answers"]
    spans = [a for a in answers if not a.meta.get("no_answer")]
    (abstain,) = [a for a in answers if a.meta.get("no_answer")]
    nulls = {a.meta["doc_id"]: a.meta["null_score"] for a in spans}
    assert spans[0].data == "1889" and set(nulls) == {"eiffel.md", "mercury.md"}
    assert all(0.0 < a.meta["null_score"] < 1.0 and abstain.score <= a.meta["null_score"] + 1e-12 for a in spans)
    assert abstain.score == pytest.approx(nulls["eiffel.md"]) and nulls["eiffel.md"] < nulls["mercury.md"]


def test_no_span_runs_across_cells_rows_or_code_lines(reader):
    """Every span the reader returns on a table and a config block lies inside one cell or one line."""
    from components.readers.answer_spans import crosses_structure

    text = ("## Error codes\n\n| code | meaning | fix |\n| --- | --- | --- |\n| E-101 | sensor offline | reseat the cable |\n"
            "| E-102 | battery low | replace the CR2032 cell |\n\n```yaml\nport: 8443\ntimeout_s: 30\nretries: 5\n```\n")
    doc = Document(content=text, meta={"doc_id": "codes.md", "char_start": 0, "char_end": len(text), "level": "passage"})
    for q in ("What does error E-102 mean?", "What is the default port?", "How many retries are made?",
              "How do I fix E-101?"):
        spans = [a for a in reader.run(query=q, documents=[doc], top_k=5)["answers"] if not a.meta.get("no_answer")]
        for a in spans:
            start, end = a.meta["char_start"], a.meta["char_end"]
            assert text[start:end] == a.data and not crosses_structure(text, start, end), (q, a.data)
            assert "\n" not in a.data and "|" not in a.data.strip(" |"), (q, a.data)


def test_crosses_structure_on_hand_cases():
    from components.readers.answer_spans import crosses_structure

    text = "Intro line.\n\n| a | b |\n| --- | --- |\n| x1 | y1 |\n| x2 | y2 |\n\n```\nk: 1\nv: 2\n```\n"
    cell = text.index("y1")
    assert not crosses_structure(text, cell, cell + 2)
    assert crosses_structure(text, text.index("x1"), cell + 2)  # two cells
    assert crosses_structure(text, cell, text.index("y2") + 2)  # two rows
    assert not crosses_structure(text, text.index("k: 1"), text.index("k: 1") + 4)
    assert crosses_structure(text, text.index("k: 1"), text.index("v: 2") + 4)  # two code lines
    assert not crosses_structure(text, 0, len("Intro line."))  # prose is not structure
