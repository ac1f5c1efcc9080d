"""HybridRetriever and SpanStore on a small on-disk corpus with the real (packaged) MiniLM embedder."""

import pytest

from components.core.errors import SpanQAError
from components.joiners.rrf_joiner import RRFJoiner
from components.retrievers.hybrid_retriever import HybridRetriever
from components.stores.span_store import SpanStore

POLICY = "---\ntitle: Refund policy\nstatus: {status}\n---\nAnnual plans can be refunded within {days} days of purchase.\n"


def make_corpus(folder, note_repeats=lambda i: 1):
    """A current and a superseded refund policy, an error article and six notes (shared with the store tests)."""
    folder.mkdir()
    (folder / "refund-policy.md").write_text(POLICY.format(status="current", days=30))
    (folder / "refund-policy-2023.md").write_text(POLICY.format(status="superseded", days=14))
    (folder / "errors.md").write_text("# Errors\n\nERR-4012 means the pairing timed out. Move the bulb closer to the hub.\n")
    for i in range(6):
        text = f"Note {i}. Lights can be grouped into rooms and scenes number {i}."
        (folder / f"note-{i}.txt").write_text(" ".join([text] * note_repeats(i)))
    return folder


@pytest.fixture()
def corpus(tmp_path):
    return make_corpus(tmp_path / "kb")


@pytest.fixture()
def store(corpus, tmp_path):
    return SpanStore(data_dir=str(corpus), cache_dir=str(tmp_path / "cache"), progress=False)


def test_bm25_finds_identifier_and_offsets_slice_source(store):
    retriever = HybridRetriever(store, top_k=3)
    out = retriever.run(query="ERR-4012")
    top = out["bm25_documents"][0]
    assert top.meta["doc_id"] == "errors.md"
    source = store.source("errors.md")[0].text
    assert top.content == source[top.meta["char_start"] : top.meta["char_end"]]
    assert top.meta["ranks"] == {"bm25": 1} and top.meta["route"] == ["retrieve"]
    assert len(out["dense_documents"]) == 3  # dense always ranks every chunk; BM25 only those sharing a term


def test_filters_apply_before_the_cut(store):
    retriever = HybridRetriever(store, top_k=4, superseded="include")  # a filter may ask for superseded documents
    f = {"field": "meta.status", "operator": "==", "value": "superseded"}
    out = retriever.run(query="refund window annual plans", filters=f)
    assert [d.meta["doc_id"] for d in out["dense_documents"]] == ["refund-policy-2023.md"]
    assert [d.meta["doc_id"] for d in out["bm25_documents"]] == ["refund-policy-2023.md"]
    notes = {"field": "meta.title", "operator": "in", "value": [f"note {i}" for i in range(6)]}
    # 6 chunks match the filter; the query ranks the refund docs first, yet top_k=4 notes come back
    assert len(retriever.run(query="refund window annual plans", filters=notes)["dense_documents"]) == 4


def test_invalid_filter_is_a_clear_error(store):
    with pytest.raises(SpanQAError, match="Invalid metadata filter"):
        HybridRetriever(store).run(query="x", filters={"field": "meta.status", "operator": "~~", "value": 1})


def test_index_is_cached_then_rebuilt_for_one_changed_file(corpus, tmp_path):
    cache = str(tmp_path / "cache2")
    first = SpanStore(data_dir=str(corpus), cache_dir=cache, progress=False)
    first.open()
    assert first.stats["built"] and first.stats["embedded"] == first.stats["chunks"] == 9
    again = SpanStore(data_dir=str(corpus), cache_dir=cache, progress=False)
    again.open(refresh=True)
    assert again.stats["built"] is False
    (corpus / "errors.md").write_text("# Errors\n\nERR-4012 means the pairing timed out twice.\n")
    changed = SpanStore(data_dir=str(corpus), cache_dir=cache, progress=False)
    changed.open(refresh=True)
    assert changed.stats["built"] and changed.stats["embedded"] == 1


def test_rrf_joiner_records_rank_in_every_list(store):
    out = HybridRetriever(store, top_k=5).run(query="refund annual plans")
    fused = RRFJoiner(top_k=3).run(bm25=out["bm25_documents"], dense=out["dense_documents"])["documents"]
    best = fused[0]
    assert set(best.meta["ranks"]) == {"bm25", "dense"}
    expected = 1 / (60 + best.meta["ranks"]["bm25"]) + 1 / (60 + best.meta["ranks"]["dense"])
    assert best.score == pytest.approx(expected) == pytest.approx(best.meta["scores"]["rrf"])
    assert {"bm25", "dense", "rrf"} <= set(best.meta["scores"])


def test_document_store_protocol(store):
    assert store.count_documents() == 9
    current = store.filter_documents({"field": "meta.status", "operator": "==", "value": "current"})
    assert [d.meta["doc_id"] for d in current] == ["refund-policy.md"]
    from haystack import Document

    assert store.write_documents([Document(id="extra.txt", content="An added document about ERR-9999.")]) == 1
    assert store.count_documents() == 10
    assert HybridRetriever(store).run(query="ERR-9999")["bm25_documents"][0].meta["doc_id"] == "extra.txt"
    store.delete_documents(["extra.txt"])
    assert store.count_documents() == 9
