"""ExtractiveReader against transformers-haystack's TransformersExtractiveReader on the same seeded stand-in.

The stand-in (tests/standins.py) is a 2-layer RoBERTa QA model with random but seeded weights and the
MiniLM WordPiece tokenizer. Its span head is scaled and biased so that best-span probabilities straddle
0.5 (the peer's no-answer decisions at top_k=1 go both ways) and its [CLS] embedding is shifted so the
SQuAD 2.0 null logit also lands among the best-span logits (our "cls" decisions go both ways too).
"""

import logging
import math
import random

import numpy as np
import pytest
from haystack import Document, Pipeline
from haystack_integrations.components.readers.transformers import TransformersExtractiveReader

from components.core.backends.models import ModelUnavailableError
from components.readers import ExtractiveReader
from tests.standins import build_qa_model, minilm_tokenizer

MISSING = "spanqa-test/no-such-qa-model"



@pytest.fixture(scope="module")
def qa_dir(tmp_path_factory):
    return build_qa_model(tmp_path_factory.mktemp("tiny-qa"), seed=0, head_std=0.5, head_bias=-5.4, cls_shift=0.075)


def random_prose(seed: int, sentences: int) -> str:
    """Varied sentences of whole words from the tokenizer's vocabulary (no repeated patterns → no ties)."""
    rng = random.Random(seed)
    words = sorted(w for w in minilm_tokenizer().get_vocab() if w.isalpha() and w.islower() and len(w) > 2)
    out = []
    for _ in range(sentences):
        s = " ".join(rng.choice(words) for _ in range(rng.randint(6, 14)))
        out.append(s[0].upper() + s[1:] + ".")
    return " ".join(out)


EIFFEL = "The Eiffel Tower is in Paris. It was finished in 1889 by Gustave Eiffel's company. It is 330 metres tall."
EIFFEL_SENTENCES = [(0, 29), (30, 82), (83, 105)]
TEXTS = {
    "eiffel": EIFFEL,
    "printer": "Error ERR-4012 means the SKU-LX-200 printer is out of paper. Reload the tray and press Resume.",
    "tea": "Green tea is made from unoxidised leaves of Camellia sinensis, a shrub native to East Asia.",
    "banana": "Bananas are rich in potassium.",
    "long": random_prose(1, 45),  # ~490 tokens: several windows at 64/16 and at the default 384/128
}
CASES = [
    ("When was the Eiffel Tower finished?", ["eiffel", "printer", "tea"]),
    ("What does ERR-4012 mean?", ["printer"]),
    ("What are bananas rich in?", ["banana", "tea"]),
    ("Where is Camellia sinensis native to?", ["tea", "long"]),
    ("Which tray holds paper?", ["long"]),
    ("Who built it?", ["eiffel", "banana"]),
    ("How tall is it?", ["banana"]),
    ("What is green tea made from?", ["tea"]),
]


def window(key: str, base: int = 1000) -> Document:
    """A window of source document ``key`` that starts at ``base`` in the original text."""
    text = TEXTS[key]
    meta = {"doc_id": key, "char_start": base, "char_end": base + len(text), "level": "window"}
    return Document(content=text, meta=meta)


def docs_of(keys):
    return [window(k, base=100 * (i + 1)) for i, k in enumerate(keys)]


def spans(answers):
    """What must be identical: text, document and offsets of each answer, and where the no-answer ranks."""
    return [
        (a.data, a.document.id if a.document else None, (a.document_offset.start, a.document_offset.end) if a.data else None)
        for a in answers
    ]


def make_pair(qa_dir, *, top_k, max_seq_length=64, stride=16, **ours):
    peer = TransformersExtractiveReader(model=qa_dir, top_k=top_k, max_seq_length=max_seq_length, stride=stride)
    peer.warm_up()
    reader = ExtractiveReader(
        model=qa_dir, device="cpu", top_k=top_k, max_seq_length=max_seq_length, stride=stride, batch_size=4, **ours
    )
    reader.warm_up()
    return reader, peer


# ---------------------------------------------------------------------------- equivalence with the peer


@pytest.mark.parametrize(("top_k", "max_seq_length", "stride"), [(1, 64, 16), (20, 64, 16), (1, 384, 128), (5, 384, 128)])
def test_same_spans_scores_and_no_answer_as_peer(qa_dir, top_k, max_seq_length, stride):
    reader, peer = make_pair(
        qa_dir, top_k=top_k, max_seq_length=max_seq_length, stride=stride,
        max_answer_length=None, no_answer_score="complement",
    )
    abstained = []
    for question, keys in CASES:
        docs = docs_of(keys)
        theirs = peer.run(query=question, documents=docs)["answers"]
        ours = reader.run(query=question, documents=docs)["answers"]
        scores = [a.score for a in theirs]
        assert all(a - b > 1e-6 for a, b in zip(scores, scores[1:])), "stand-in produced a near-tie"
        assert spans(ours) == spans(theirs), question  # texts, offsets, and the rank of the no-answer
        assert [a.score for a in ours] == pytest.approx(scores, abs=1e-5)
        assert len(ours) == min(top_k, len(theirs) - 1) + 1
        abstained.append(ours[0].data is None)
    if top_k == 1:  # the no-answer decision (best span below 0.5) goes both ways on these inputs
        assert set(abstained) == {True, False}


def test_long_context_is_read_through_several_windows(qa_dir):
    question = "Which tray holds paper?"
    tok = minilm_tokenizer()
    enc = tok(question, TEXTS["long"], truncation="only_second", max_length=64, stride=16,
              return_overflowing_tokens=True, return_offsets_mapping=True)
    assert len(enc["input_ids"]) > 10
    first_window_end = max(e for (s, e), sid in zip(enc["offset_mapping"][0], enc.sequence_ids(0)) if sid == 1)
    reader, peer = make_pair(qa_dir, top_k=5, max_answer_length=None, no_answer_score="complement")
    ours = reader.run(query=question, documents=docs_of(["long"]))["answers"]
    assert spans(ours) == spans(peer.run(query=question, documents=docs_of(["long"]))["answers"])
    assert any(a.data and a.document_offset.start >= first_window_end for a in ours)  # found past window 1


def test_batch_size_does_not_change_answers(qa_dir):
    one = ExtractiveReader(model=qa_dir, device="cpu", max_seq_length=64, stride=16, batch_size=1)
    many = ExtractiveReader(model=qa_dir, device="cpu", max_seq_length=64, stride=16, batch_size=64)
    for question, keys in CASES[:4]:
        a = one.run(query=question, documents=docs_of(keys))["answers"]
        b = many.run(query=question, documents=docs_of(keys))["answers"]
        assert spans(a) == spans(b)
        assert [x.score for x in a] == pytest.approx([x.score for x in b], abs=1e-5)


def test_a_widening_reads_only_the_contexts_that_changed(qa_dir):
    """The per-(question, context) memo: a second read of windows it has seen runs the model only on the new
    text, and gives exactly what a reader that never saw them gives (the slow oracle)."""
    def counting(reader):
        calls = []
        model = reader._qa_model
        original = model.forward
        model.forward = lambda *a, **k: (calls.append(k["input_ids"].shape[0]), original(*a, **k))[1]
        return calls

    question = "When was the Eiffel Tower finished?"
    kept = docs_of(["printer", "tea", "long"])
    reader = ExtractiveReader(model=qa_dir, device="cpu", max_seq_length=64, stride=16, batch_size=4)
    reader.warm_up()
    reader.run(query=question, documents=kept)
    calls = counting(reader)
    widened = [window("eiffel", base=100), *kept]  # one new window; the three others are read already
    got = reader.run(query=question, documents=widened)["answers"]
    tokens = minilm_tokenizer()(question, EIFFEL, truncation="only_second", max_length=64, stride=16,
                                return_overflowing_tokens=True)
    assert sum(calls) == len(tokens["input_ids"])  # only the Eiffel window's sequences went through the model

    fresh = ExtractiveReader(model=qa_dir, device="cpu", max_seq_length=64, stride=16, batch_size=4)
    fresh.warm_up()
    want = fresh.run(query=question, documents=widened)["answers"]
    assert spans(got) == spans(want)
    assert [a.score for a in got] == [a.score for a in want]  # exactly: contexts are run apart


def test_one_reader_from_many_threads_answers_as_serially(qa_dir):
    """The shared per-context memo and the serialised tokenizer: eight threads asking at once (each question
    three times, the memo cold at first) get exactly the serial answers and scores."""
    from concurrent.futures import ThreadPoolExecutor

    def read(reader, case):
        question, keys = case
        answers = reader.run(query=question, documents=docs_of(keys))["answers"]
        return list(zip(spans(answers), [a.score for a in answers], strict=True))

    serial = ExtractiveReader(model=qa_dir, device="cpu", max_seq_length=64, stride=16, batch_size=4)
    serial.warm_up()
    want = {i: read(serial, case) for i, case in enumerate(CASES)}
    shared = ExtractiveReader(model=qa_dir, device="cpu", max_seq_length=64, stride=16, batch_size=4)
    shared.warm_up()
    jobs = [i for i in range(len(CASES)) for _ in range(3)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        got = list(pool.map(lambda i: (i, read(shared, CASES[i])), jobs))
    assert all(answers == want[i] for i, answers in got)


# ---------------------------------------------------------------------------- deliberate differences


@pytest.fixture(scope="module")
def hf_qa(qa_dir):
    """The stand-in loaded with transformers directly, independently of both readers."""
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    return AutoTokenizer.from_pretrained(qa_dir), AutoModelForQuestionAnswering.from_pretrained(qa_dir).eval()


def window_logits(hf_qa, question, texts, max_seq_length=64, stride=16):
    """Raw start/end logits of every window of ``texts``."""
    import torch

    tok, model = hf_qa
    enc = tok([question] * len(texts), texts, truncation="only_second", max_length=max_seq_length, stride=stride,
              return_overflowing_tokens=True, padding=True, return_tensors="pt")
    with torch.no_grad():
        out = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"])
    return enc, out.start_logits.numpy(), out.end_logits.numpy()


def test_cls_no_answer_is_squad2_null_span_and_decisions_go_both_ways(qa_dir, hf_qa):
    reader, peer = make_pair(qa_dir, top_k=5, max_answer_length=None, no_answer_score="cls")
    decisions = []
    for question, keys in CASES:
        docs = docs_of(keys)
        ours = reader.run(query=question, documents=docs)["answers"]
        theirs = peer.run(query=question, documents=docs)["answers"]
        # the span answers are the peer's; only the no-answer score differs
        assert spans([a for a in ours if a.data]) == spans([a for a in theirs if a.data])
        _, start, end = window_logits(hf_qa, question, [d.content for d in docs])
        null = float(np.min(start[:, 0] + end[:, 0]))
        [abstain] = [a for a in ours if a.meta.get("no_answer")]
        assert abstain.score == pytest.approx(1 / (1 + math.exp(-0.1 * null)), abs=1e-6)
        best_logit = 10 * math.log(theirs[0].score / (1 - theirs[0].score)) if theirs[0].data else None
        if best_logit is None:
            best_logit = 10 * math.log(theirs[1].score / (1 - theirs[1].score))
        assert (ours[0].data is None) == (null > best_logit)
        decisions.append(ours[0].data is None)
    assert set(decisions) == {True, False}


def test_max_answer_length_keeps_the_best_spans_of_at_most_that_many_tokens(qa_dir):
    question, text, limit = "When was the Eiffel Tower finished?", EIFFEL, 3
    tok = minilm_tokenizer()
    enc = tok(question, text, return_offsets_mapping=True)
    context = [off for off, sid in zip(enc["offset_mapping"], enc.sequence_ids()) if sid == 1]
    n = len(enc["input_ids"])

    def tokens(a):
        return sum(1 for s, e in context if s >= a.document_offset.start and e <= a.document_offset.end)

    peer = TransformersExtractiveReader(model=qa_dir, top_k=n * n, answers_per_seq=n * n, overlap_threshold=None,
                                        no_answer=False)
    peer.warm_up()
    every_span = peer.run(query=question, documents=[window("eiffel")])["answers"]
    assert max(tokens(a) for a in every_span[:5]) > limit  # the limit bites for this input
    expected = [a for a in every_span if tokens(a) <= limit][:5]
    reader = ExtractiveReader(model=qa_dir, device="cpu", top_k=5, max_answer_length=limit, overlap_threshold=None,
                              no_answer=False)
    ours = reader.run(query=question, documents=[window("eiffel")])["answers"]
    assert spans(ours) == spans(expected)
    assert [a.score for a in ours] == pytest.approx([a.score for a in expected], abs=1e-5)


def test_bert_models_get_their_segment_ids(tmp_path):
    """The peer never passes token_type_ids; a BERT QA model was trained with them, so we do."""
    import torch
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    path = build_qa_model(tmp_path / "bert", arch="bert", seed=3, head_std=0.5)
    question, text = "When was the Eiffel Tower finished?", EIFFEL
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForQuestionAnswering.from_pretrained(path).eval()
    enc = tok(question, text, return_tensors="pt", return_offsets_mapping=True)
    offsets = enc.pop("offset_mapping")[0].tolist()
    assert enc["token_type_ids"].max() == 1
    with torch.no_grad():
        out = model(**enc)
    s, e = out.start_logits[0].numpy(), out.end_logits[0].numpy()
    ctx = [i for i, sid in enumerate(enc.sequence_ids()) if sid == 1]
    best = max(((s[i] + e[j], i, j) for i in ctx for j in ctx if j >= i), key=lambda t: t[0])
    reader = ExtractiveReader(model=path, device="cpu", max_answer_length=None)
    top = reader.run(query=question, documents=[window("eiffel")])["answers"]
    top = [a for a in top if a.data][0]
    assert (top.document_offset.start, top.document_offset.end) == (offsets[best[1]][0], offsets[best[2]][1])
    assert top.score == pytest.approx(1 / (1 + math.exp(-0.1 * float(best[0]))), abs=1e-5)
    peer = TransformersExtractiveReader(model=path)
    peer.warm_up()
    peer_top = [a for a in peer.run(query=question, documents=[window("eiffel")])["answers"] if a.data][0]
    assert abs(peer_top.score - top.score) > 1e-4


# ---------------------------------------------------------------------------- span conventions


def test_answer_meta_is_in_original_document_offsets_with_sentence_evidence(qa_dir):
    reader = ExtractiveReader(model=qa_dir, device="cpu", top_k=10, max_answer_length=None, overlap_threshold=None)
    doc = window("eiffel", base=5000)
    answers = reader.run(query="When was the Eiffel Tower finished?", documents=[doc])["answers"]
    spans_ = [a for a in answers if a.data]
    assert len(spans_) == 10
    assert any(len([1 for s, e in EIFFEL_SENTENCES if s < a.document_offset.end and a.document_offset.start < e]) > 1
               for a in spans_)  # some answer crosses a sentence boundary
    for a in spans_:
        s, e = a.document_offset.start, a.document_offset.end
        assert a.data == EIFFEL[s:e] and a.document is doc
        assert (a.meta["doc_id"], a.meta["char_start"], a.meta["char_end"]) == ("eiffel", 5000 + s, 5000 + e)
        expected = [{"doc_id": "eiffel", "char_start": 5000 + us, "char_end": 5000 + ue}
                    for us, ue in EIFFEL_SENTENCES if us < e and s < ue]
        assert a.meta["evidence"] == expected
    [abstain] = [a for a in answers if a.data is None]
    assert abstain.meta["no_answer"] is True and abstain.document is None
    assert [a.score for a in answers] == sorted((a.score for a in answers), reverse=True)


def test_no_documents_abstains_and_textless_documents_are_ignored(qa_dir):
    reader = ExtractiveReader(model=qa_dir, device="cpu")
    [only] = reader.run(query="Anything?", documents=[])["answers"]
    assert only.data is None and only.meta["no_answer"] and only.score == 1.0
    with_empty = reader.run(query="What are bananas rich in?", documents=[Document(content=None), window("banana")])
    assert all(a.document is None or a.meta["doc_id"] == "banana" for a in with_empty["answers"])
    assert ExtractiveReader(model=qa_dir, device="cpu", no_answer=False).run(query="x", documents=[])["answers"] == []


def test_score_threshold_and_run_top_k(qa_dir):
    reader = ExtractiveReader(model=qa_dir, device="cpu", top_k=10, score_threshold=0.5)
    answers = reader.run(query="Where is Camellia sinensis native to?", documents=docs_of(["tea", "long"]), top_k=3)
    assert answers["answers"] and all(a.score >= 0.5 for a in answers["answers"])
    assert len([a for a in answers["answers"] if a.data]) <= 3


# ---------------------------------------------------------------------------- loading, fallback, serialisation


def test_missing_model_without_fallback_raises_naming_the_model():
    reader = ExtractiveReader(model=MISSING)
    with pytest.raises(ModelUnavailableError, match=MISSING):
        reader.warm_up()


def test_sentence_fallback_answers_verbatim_with_offsets(caplog):
    reader = ExtractiveReader(model=MISSING, fallback="sentence", top_k=3)
    with caplog.at_level(logging.WARNING):
        reader.warm_up()
    assert reader.served_by == f"fallback:sentence ({MISSING} unavailable)"
    assert any(MISSING in r.getMessage() for r in caplog.records)
    docs = docs_of(["banana", "printer", "eiffel"])
    answers = reader.run(query="What does ERR-4012 mean?", documents=docs)["answers"]
    best = answers[0]
    assert best.data == "Error ERR-4012 means the SKU-LX-200 printer is out of paper."
    assert (best.meta["doc_id"], best.meta["char_start"], best.meta["char_end"]) == ("printer", 200, 200 + len(best.data))
    assert best.meta["evidence"] == [{"doc_id": "printer", "char_start": 200, "char_end": 200 + len(best.data)}]
    [abstain] = [a for a in answers if a.data is None]
    assert abstain.meta["no_answer"] and abstain.score == pytest.approx(1 - best.score)
    assert all(0.0 <= a.score <= 1.0 for a in answers)
    assert len(answers) == 4  # three windows, one answer each, plus the abstention


def test_to_dict_from_dict_round_trip():
    reader = ExtractiveReader(model="some/qa", top_k=3, max_answer_length=12, no_answer_score="complement",
                              fallback="sentence", fallback_embedding_model="some/embedder", score_threshold=0.2)
    data = reader.to_dict()
    assert data["type"] == "components.readers.extractive_reader.ExtractiveReader"
    assert data["init_parameters"]["fallback"] == "sentence"
    assert data["init_parameters"]["max_answer_length"] == 12
    again = ExtractiveReader.from_dict(data)
    assert again.to_dict() == data
    assert (again.model, again.top_k, again.fallback_embedding_model) == ("some/qa", 3, "some/embedder")


def test_yaml_pipeline_round_trip_and_run(qa_dir):
    pipe = Pipeline()
    pipe.add_component("reader", ExtractiveReader(model=qa_dir, device="cpu", top_k=2))
    loaded = Pipeline.loads(pipe.dumps(), allowed_modules=["components.readers.extractive_reader"])
    out = loaded.run({"reader": {"query": "What are bananas rich in?", "documents": docs_of(["banana"])}})
    answers = out["reader"]["answers"]
    assert len(answers) == 3 and sum(a.data is None for a in answers) == 1


@pytest.mark.parametrize(
    "kwargs", [{"fallback": "bm25"}, {"no_answer_score": "softmax"}, {"stride": 384}, {"top_k": 0}, {"max_answer_length": 0}]
)
def test_invalid_parameters_are_rejected(kwargs):
    with pytest.raises(ValueError):
        ExtractiveReader(**kwargs)


def test_a_question_longer_than_the_sequence_is_cut_not_a_crash(qa_dir):
    """A question of ~600 tokens left the tokenizer no room for the stride: it panicked (a Rust panic, not an
    Exception). Such a question is cut to half a sequence; a question that fits is never touched."""
    question = "Which tray holds paper? " + " ".join(random_prose(3, 40).split()[:500])
    reader, _ = make_pair(qa_dir, top_k=3, max_seq_length=192, stride=64)
    out = reader.run(query=question, documents=docs_of(["long"]))
    assert "answers" in out
    fitted = reader._decoder.fit_question(question)
    n = len(minilm_tokenizer()(fitted, add_special_tokens=False)["input_ids"])
    assert question.startswith(fitted) and n == (192 - 3) // 2
    assert reader._decoder.fit_question("Which tray holds paper?") == "Which tray holds paper?"
