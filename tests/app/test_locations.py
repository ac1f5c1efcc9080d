"""Answer spans get their location; a PDF span its character boxes only from the very file that was indexed."""

from __future__ import annotations

from benchmarks.make_documents import write_demo
from components.app.locations import add_locations
from components.stores.span_store import SpanStore


def test_spans_get_locations_and_pdf_boxes_only_from_the_indexed_file(tmp_path):
    write_demo(tmp_path / "docs")
    store = SpanStore(data_dir=str(tmp_path / "docs"), cache_dir=str(tmp_path / "cache"), progress=False)
    text = store.source("security-whitepaper.pdf")[0].text
    s = text.index("Ed25519 key")
    spans = [{"doc_id": "security-whitepaper.pdf", "char_start": s, "char_end": s + 11},
             {"doc_id": "gone.md", "char_start": 0, "char_end": 3}, {"doc_id": None}]
    add_locations(spans, store.source, store.data_dir)
    where = spans[0]["location"]
    assert (where["page"], where["heading_path"]) == (2, ["Firmware signing"])
    assert len(where["boxes"]) == 1 and all(len(b) == 4 for b in where["boxes"])
    assert "location" not in spans[1] and "location" not in spans[2]  # an unknown document: no location, no error
    (tmp_path / "docs" / "security-whitepaper.pdf").write_bytes(b"%PDF-1.4 replaced")
    again = [{"doc_id": "security-whitepaper.pdf", "char_start": s, "char_end": s + 11}]
    add_locations(again, store.source, store.data_dir)
    assert again[0]["location"]["boxes"] is None and again[0]["location"]["page"] == 2  # changed file: no boxes
