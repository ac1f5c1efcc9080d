"""context_notes: generator — a real (tiny, seeded) causal LM writes one note per chunk; notes are cached by content
hash, indexed before the chunk and never part of a span; a bad configuration is one paragraph."""

from __future__ import annotations

import json

import pytest

from components.core.errors import SpanQAError
from components.core.retrieval.index import index_text, split_document
from components.stores.base import Selection
from components.stores.span_store import SpanStore
from tests.standins import build_tiny_causal_lm

MANUAL = ("# Hub manual\n\n## Power\n\nThe hub runs for 4 hours on its battery.\n\n"
          "## Radios\n\nThe hub speaks Zigbee and Thread.\n")


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    return build_tiny_causal_lm(tmp_path_factory.mktemp("tiny-llama"))


def store(data, cache, notes_file, model):
    return SpanStore(data_dir=str(data), cache_dir=str(cache), progress=False, context_notes="generator",
                     context_generator={"backend": "local", "model": model, "device": "cpu", "max_new_tokens": 6,
                                        "cache_file": str(notes_file)})


def test_one_note_per_chunk_cached_by_content_and_indexed_before_the_chunk(tmp_path, tiny_lm):
    data = tmp_path / "kb"
    data.mkdir()
    (data / "manual.md").write_text(MANUAL)
    (data / "faq.txt").write_text("Plans renew every year. Refunds take five days.")
    notes_file = tmp_path / "notes.json"
    first = store(data, tmp_path / "c1", notes_file, tiny_lm)
    index = first.open()
    assert first.notes_written == index.n_chunks == 4  # three sections of the manual, one chunk of the FAQ
    cached = json.loads(notes_file.read_text())
    assert len(cached) == 4 and all(cached.values())  # the seeded model writes (nonsense, but) text
    for doc in index.documents:
        blocks, _, chunks = split_document(doc, first.settings)
        for c in chunks:
            note = doc.layout["notes"][f"{c.start}-{c.end}"]
            assert note in cached.values()
            text = index_text(doc, blocks, c, first.settings)
            assert text.endswith(doc.text[c.start:c.end]) and note in text.split(doc.text[c.start:c.end])[0]
    hit = first.bm25_search(first.analyzer("battery hours"), 1, Selection())[0][0]
    assert hit.content == "## Power\n\nThe hub runs for 4 hours on its battery."  # the note is never in a span
    # another store (another index cache) over the same files: every note from the cache, no generator call
    again = store(data, tmp_path / "c2", notes_file, tiny_lm)
    again.open()
    assert again.notes_written == 0
    # one section edited: only its chunk gets a new note
    (data / "manual.md").write_text(MANUAL.replace("Zigbee and Thread", "Zigbee, Thread and Matter"))
    edited = store(data, tmp_path / "c3", notes_file, tiny_lm)
    edited.open()
    assert edited.notes_written == 1 and len(json.loads(notes_file.read_text())) == 5
    assert edited.settings.key() != SpanStore(data_dir=str(data), cache_dir=str(tmp_path / "c4"),
                                              progress=False).settings.key()


def test_generator_notes_need_a_model(tmp_path):
    with pytest.raises(SpanQAError, match=r"context_notes: generator needs `context_generator:` with at least a "
                                          r"model"):
        SpanStore(data_dir=str(tmp_path), context_notes="generator")
    with pytest.raises(SpanQAError, match=r"unknown key\(s\) \['temperature'\] in `context_generator:`"):
        SpanStore(data_dir=str(tmp_path), context_notes="generator",
                  context_generator={"model": "m", "temperature": 0.7})
