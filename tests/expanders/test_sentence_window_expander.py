"""SentenceWindowExpander on a small corpus: exact offsets, merging, widening to paragraph and passage."""

import pytest
from haystack import Document

from components.core.errors import SpanQAError
from components.expanders.sentence_window_expander import SentenceWindowExpander
from components.stores.span_store import SpanStore

TEXT = (
    "---\ntitle: Hub\n---\n"
    "# Hub\n\n"
    "S1 one. S2 two. S3 three. S4 four.\n\n"
    "P2 first. P2 second.\n\n"
    "P3 only.\n"
)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("kb")
    (root / "hub.md").write_text(TEXT)
    s = SpanStore(data_dir=str(root), cache_dir=str(root / ".cache"), progress=False, max_chunk_chars=12,
                  chunk_overlap=0.0)
    s.open()
    return s


def hit(text, score, route=("retrieve", "rerank")):
    start = TEXT.index(text)
    return Document(id=f"hub.md:{start}", content=text, score=score,
                    meta={"doc_id": "hub.md", "char_start": start, "char_end": start + len(text), "route": list(route),
                          "chunk_id": f"hub.md:{start}"})


def test_window_of_one_sentence_each_side_keeps_exact_offsets(store):
    out = SentenceWindowExpander(store, window=1).run(documents=[hit("S3 three.", 0.9)])["documents"]
    (w,) = out
    assert w.content == "S2 two. S3 three. S4 four."
    assert TEXT[w.meta["char_start"] : w.meta["char_end"]] == w.content
    assert w.meta["level"] == "window" and w.meta["route"] == ["retrieve", "rerank", "expand"]
    assert w.score == 0.9


def test_overlapping_windows_of_one_document_merge_and_keep_the_best_score(store):
    docs = [hit("S1 one.", 0.2), hit("S3 three.", 0.7), hit("P3 only.", 0.5)]
    out = SentenceWindowExpander(store, window=1).run(documents=docs)["documents"]
    assert [w.content for w in out] == ["# Hub\n\nS1 one. S2 two. S3 three. S4 four.", "P2 second.\n\nP3 only."]
    assert [w.score for w in out] == [0.7, 0.5]  # best member's score, best window first
    assert out[0].meta["hits"] == sorted([f"hub.md:{TEXT.index('S1 one.')}", f"hub.md:{TEXT.index('S3 three.')}"])


def test_widen_to_paragraph_and_to_passage(store):
    widener = SentenceWindowExpander(store, mode="widen", widen_paragraphs=0)
    window = hit("S2 two. S3 three.", 0.5)
    para = widener.run(documents=[Document(content=window.content, meta={**window.meta, "widen_to": "paragraph"})])
    (p,) = para["documents"]
    assert p.content == "S1 one. S2 two. S3 three. S4 four." and p.meta["level"] == "paragraph"
    assert "widen_to" not in p.meta and p.meta["route"] == ["retrieve", "rerank"]  # the verifier records the route
    (whole,) = widener.run(documents=[Document(content=window.content, meta={**window.meta, "widen_to": "passage"})])[
        "documents"]
    assert whole.content == TEXT[TEXT.index("# Hub") :].rstrip() and whole.meta["level"] == "passage"
    wider = SentenceWindowExpander(store, mode="widen", widen_paragraphs=1)
    (p,) = wider.run(documents=[Document(content=window.content, meta={**window.meta, "widen_to": "paragraph"})])[
        "documents"]
    assert p.content == "# Hub\n\nS1 one. S2 two. S3 three. S4 four.\n\nP2 first. P2 second."


def test_bad_widen_target_and_mode_are_clear_errors(store):
    with pytest.raises(SpanQAError, match="SentenceWindowExpander: parameter 'mode' is 'page', but it must be one "
                                          "of 'window', 'widen'"):
        SentenceWindowExpander(store, mode="page")
    with pytest.raises(SpanQAError, match="parameter 'window' is -1, but it must be a whole number ≥ 0"):
        SentenceWindowExpander(store, window=-1)
    doc = hit("S1 one.", 0.1)
    with pytest.raises(SpanQAError, match="widen_to"):
        SentenceWindowExpander(store, mode="widen").run(documents=[doc])


def test_a_window_that_begins_inside_a_table_carries_the_tables_header_row(tmp_path):
    rows = "".join(f"| S{i} | {i * 10} | {i * 7} |\n" for i in range(1, 9))
    text = "# Stock\n\nStock by site.\n\n| Site | Bolts | Nuts |\n|---|---|---|\n" + rows
    (tmp_path / "stock.md").write_text(text)
    s = SpanStore(data_dir=str(tmp_path), cache_dir=str(tmp_path / ".cache"), progress=False)
    s.open()
    start = text.index("| S6 |")
    row = Document(id="r", content="| S6 | 60 | 42 |", score=1.0,
                   meta={"doc_id": "stock.md", "char_start": start, "char_end": start + 16})
    (w,) = SentenceWindowExpander(s, window=1).run(documents=[row])["documents"]
    assert w.content == "| S5 | 50 | 35 |\n| S6 | 60 | 42 |\n| S7 | 70 | 49 |"
    assert w.meta["table_header"] == "| Site | Bolts | Nuts |"
    first = text.index("| S1 |")
    (top,) = SentenceWindowExpander(s, window=1).run(documents=[Document(
        id="t", content="| S1 | 10 | 7 |", score=1.0,
        meta={"doc_id": "stock.md", "char_start": first, "char_end": first + 15})])["documents"]
    assert top.content.startswith("| Site | Bolts | Nuts |") or top.content.startswith("Stock")
    assert "table_header" not in top.meta  # the window holds its header row
