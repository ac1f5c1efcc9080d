"""Never read the same text twice: a widening that adds nothing goes on (and says so), repeated reads and
query embeddings come from memory, exact repeats of a question hit the answer cache — same results each time."""

from pathlib import Path

import pytest
from haystack import Document

from components.app.pipeline_io import load_pipeline
from components.app.runner import QueryRunner
from components.expanders.sentence_window_expander import SentenceWindowExpander
from components.stores.span_store import SpanStore

ROOT = Path(__file__).resolve().parent.parent
TEXT = "Only one paragraph here. It has two sentences.\n"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    data = tmp_path_factory.mktemp("kb")
    (data / "one.txt").write_text(TEXT)
    s = SpanStore(data_dir=str(data), cache_dir=str(tmp_path_factory.mktemp("cache")), progress=False)
    s.open()
    return s


def test_a_paragraph_that_adds_nothing_goes_straight_to_the_passage(store):
    widener = SentenceWindowExpander(document_store=store, mode="widen")
    end = len(TEXT.rstrip())
    doc = Document(content=TEXT[:end], meta={"doc_id": "one.txt", "char_start": 0, "char_end": end, "level": "window",
                                             "widen_to": "paragraph", "route": ["read", "verify:PARTIAL", "widen:paragraph"]})
    (out,) = widener.run(documents=[doc])["documents"]
    assert out.meta["level"] == "passage"
    assert out.meta["route"][-2:] == ["widen:paragraph (unchanged)", "widen:passage"]
    again = Document(content=out.content, meta={**out.meta, "widen_to": "passage", "route": [*out.meta["route"]]})
    (last,) = widener.run(documents=[again])["documents"]
    assert last.meta["route"][-1] == "widen:passage (unchanged)"


def test_query_embeddings_are_memoised(store):
    first = store.embed_query("how many sentences")
    hits = store.query_cache_hits
    assert (store.embed_query("how many sentences") == first).all() and store.query_cache_hits == hits + 1


def test_answer_cache_hits_give_the_same_answer(tmp_path):
    pipeline, _ = load_pipeline(ROOT / "pipelines/extractive.yaml", data=str(ROOT / "data/kb"), cache_dir=str(tmp_path))
    runner = QueryRunner(pipeline, answer_cache_ttl_s=60)
    q = "How many devices can the Hub Mini control?"
    fresh = runner.ask(q)
    cached = runner.ask(q)
    assert cached["route"] == ["cache:answer", *fresh["route"]] and set(cached["timings_ms"]) == {"answer_cache"}
    assert {k: cached[k] for k in ("answer", "verdict", "spans", "confidence")} == {
        k: fresh[k] for k in ("answer", "verdict", "spans", "confidence")}
    assert runner.ask(q, top_k=3)["route"][0] != "cache:answer"  # other options: another key


def test_document_words_count_the_whole_source_once(store):
    assert store.document_words("one.txt") == 8 == len(TEXT.split())
    assert store._word_counts[1] == {"one.txt": 8}


def test_memo_entries_belong_to_their_asker():
    from components.core.memo import MISSING, Memo, asker

    memo = Memo()
    with asker("alice"):
        memo.put("q", 1)
        assert memo.get("q") == 1
    with asker("bob"):
        assert memo.get("q") is MISSING
    assert memo.get("q") is MISSING  # a local user is an asker of its own too


def test_another_askers_repeat_reads_afresh(tmp_path):
    """The reader's memo is per asker: bob's repeat of alice's question is read again (no timing oracle), alice's own
    repeat is read from memory; both get the same answer."""
    pipeline, _ = load_pipeline(ROOT / "pipelines/extractive.yaml", data=str(ROOT / "data/kb"), cache_dir=str(tmp_path))
    runner = QueryRunner(pipeline, answer_cache_ttl_s=0)
    reader = pipeline.get_component("reader")
    q = "How many devices can the Hub Mini control?"
    first = runner.ask(q, groups=[], principal="alice")
    hits = reader._reads.hits
    again = runner.ask(q, groups=[], principal="alice")
    assert reader._reads.hits > hits
    hits = reader._reads.hits
    other = runner.ask(q, groups=[], principal="bob")
    assert reader._reads.hits == hits
    assert first["answer"] == again["answer"] == other["answer"]
