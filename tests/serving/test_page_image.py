"""The page renderer refuses what it must not render: a changed file, a file gone, a non-PDF document — with the
status and the reason a person reads. Real files and a real store, no server needed."""

from __future__ import annotations

import pytest

from benchmarks.make_documents import write_demo
from components.serving.limits import Refused
from components.serving.page_image import page_image, parse_ranges
from components.stores.span_store import SpanStore


@pytest.fixture()
def store(tmp_path):
    write_demo(tmp_path / "docs")
    s = SpanStore(data_dir=str(tmp_path / "docs"), cache_dir=str(tmp_path / "cache"), progress=False)
    s.open()
    return s


def _refused(call) -> Refused:
    with pytest.raises(Refused) as info:
        call()
    return info.value


def test_renders_the_indexed_page_and_refuses_a_changed_or_missing_file(store, tmp_path):
    text = store.source("security-whitepaper.pdf")[0].text
    s = text.index("2,500 euros")
    png = page_image(store, "security-whitepaper.pdf", 3, s, s + 11, evidence=f"{s - 60}-{s - 1}")
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000
    pdf = tmp_path / "docs" / "security-whitepaper.pdf"
    pdf.write_bytes(pdf.read_bytes() + b"\n% edited\n")  # same pages, other bytes: not the file that was indexed
    err = _refused(lambda: page_image(store, "security-whitepaper.pdf", 3, s, s + 11))
    assert err.status == 409 and "changed since it was indexed; re-index" in err.reason
    pdf.unlink()
    err = _refused(lambda: page_image(store, "security-whitepaper.pdf", 3, s, s + 11))
    assert err.status == 409 and "is no longer in the data folder" in err.reason


def test_only_pdfs_have_pages(store):
    err = _refused(lambda: page_image(store, "hub-pro-datasheet.html", 1, 0, 5))
    assert err.status == 404 and "is not a PDF" in err.reason


def test_evidence_ranges_are_parsed_strictly():
    assert parse_ranges("12-40,55-80") == [(12, 40), (55, 80)]
    assert parse_ranges("") == []
    for bad in ("12", "a-b", "1-2;3-4", ",".join(["1-2"] * 21)):
        with pytest.raises(Refused):
            parse_ranges(bad)
