"""The index cache: unchanged corpus is loaded, a changed file re-embeds only its own chunks."""

import numpy as np

from components.core.retrieval.index import IndexSettings, build_index, corpus_key
from components.core.retrieval.index_files import EmbeddingCache, load_index, save_index
from components.core.retrieval.loaders import SourceDocument


class CountingEmbedder:
    def __init__(self):
        self.seen: list[str] = []

    def __call__(self, texts):
        self.seen.extend(texts)
        return np.array([[len(t), t.count("e") + 1.0, 1.0] for t in texts], dtype=np.float32)


def docs(b_text="Second document. It has two sentences."):
    return [
        SourceDocument("a.md", "---\ntitle: A\n---\nFirst document here. Another sentence follows.", {"title": "A"}, 17),
        SourceDocument("b.txt", b_text, {"title": "B"}),
    ]


def test_offsets_slice_original_text_and_skip_front_matter():
    index, stats = build_index(docs(), IndexSettings(), CountingEmbedder())
    for i in range(index.n_chunks):
        d = index.documents[index.chunk_doc[i]]
        assert index.chunk_text(i) == d.text[index.chunk_start[i] : index.chunk_end[i]]
    first = index.documents[0]
    assert index.chunk_start[0] == 17 and first.text[17:].startswith("First document")
    assert [tuple(u) for u in index.units[1]] == [(0, 16), (17, 38)]
    assert stats == {"documents": 2, "chunks": 2, "embedded": 2}


def test_save_load_round_trip(tmp_path):
    index, _ = build_index(docs(), IndexSettings(), CountingEmbedder())
    index.key = corpus_key(docs(), IndexSettings())
    save_index(index, tmp_path / "ix")
    loaded = load_index(tmp_path / "ix")
    assert loaded.key == index.key and loaded.bm25.vocab == index.bm25.vocab
    np.testing.assert_array_equal(loaded.embeddings, index.embeddings)
    assert [tuple(u) for u in loaded.units[1]] == [tuple(u) for u in index.units[1]]
    assert not list((tmp_path / "ix").glob("*.tmp"))  # atomic writes leave no temporary files


def test_changed_file_re_embeds_only_its_chunks(tmp_path):
    settings = IndexSettings()
    cache = EmbeddingCache(tmp_path / "emb.npz")
    first = CountingEmbedder()
    build_index(docs(), settings, first, cache)
    cache.save()
    assert len(first.seen) == 2
    again = CountingEmbedder()
    cache = EmbeddingCache(tmp_path / "emb.npz")
    _, stats = build_index(docs(), settings, again, cache)
    assert again.seen == [] and stats["embedded"] == 0
    changed = CountingEmbedder()
    _, stats = build_index(docs("Second document, edited. Now different."), settings, changed, cache)
    assert stats["embedded"] == 1 and changed.seen == ["B\nSecond document, edited. Now different."]
    assert corpus_key(docs(), settings) != corpus_key(docs("x"), settings)
    assert corpus_key(docs(), settings) != corpus_key(docs(), IndexSettings(max_chunk_chars=400))


class GroupRecorder(CountingEmbedder):
    def __init__(self):
        super().__init__()
        self.calls: list[int] = []

    def __call__(self, texts):
        self.calls.append(len(texts))
        return super().__call__(texts)


def many_docs(n=40):
    return [SourceDocument(f"d{i}.txt", f"Document {i} opens here. It says {'e' * (i % 7)} things.", {"title": f"T{i}"})
            for i in range(n)]


def test_embedding_groups_equal_one_group():
    # a group is what the splitter has ready (at least first_group, at most embed_batch texts): the sizes depend
    # on timing, the index must not — it equals the one a single whole-corpus group builds (the slow oracle)
    grouped_embedder, whole_embedder = GroupRecorder(), GroupRecorder()
    grouped, _ = build_index(many_docs(), IndexSettings(), grouped_embedder, embed_batch=16, first_group=4)
    whole, _ = build_index(many_docs(), IndexSettings(), whole_embedder, embed_batch=10_000, first_group=10_000)
    assert whole_embedder.calls == [40] and sum(grouped_embedder.calls) == 40
    assert max(grouped_embedder.calls) <= 16 and all(n >= 4 for n in grouped_embedder.calls[:-1])
    assert grouped_embedder.seen == whole_embedder.seen
    np.testing.assert_array_equal(grouped.embeddings, whole.embeddings)
    np.testing.assert_array_equal(grouped.chunk_start, whole.chunk_start)
    assert grouped.bm25.vocab == whole.bm25.vocab


def test_a_document_with_more_chunks_than_a_group_is_embedded_in_slices():
    long_doc = SourceDocument("long.txt", " ".join(f"Sentence number {i} is here." for i in range(400)), {})
    embedder = GroupRecorder()
    index, stats = build_index([long_doc], IndexSettings(max_chunk_chars=120), embedder, embed_batch=8, first_group=2)
    assert stats["chunks"] > 16 and sum(embedder.calls) == stats["chunks"] and max(embedder.calls) == 8
    assert embedder.seen == [index.chunk_text(i) for i in range(index.n_chunks)]  # each once, in order


def test_a_failed_build_stops_its_splitter_thread():
    import threading
    import time

    import pytest

    def failing(texts):
        raise RuntimeError("encoder broke")

    # the splitter may run 2 x embed_batch = 4 documents ahead: with 40 it fills the queue and waits on it
    with pytest.raises(RuntimeError, match="encoder broke"):
        build_index(many_docs(), IndexSettings(), failing, embed_batch=2, first_group=2)
    deadline = time.monotonic() + 5
    while any(t.name == "spanqa-index-prepare" for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(t.name == "spanqa-index-prepare" for t in threading.enumerate())
