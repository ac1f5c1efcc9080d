"""Ingestion loses nothing: every entry found is indexed or skipped with its reason (found = indexed + skipped)."""

import os

import pytest

from components.core.retrieval.loaders import LoadLimits, load_folder


def _reasons(report):
    return dict(report.skipped)


def test_special_entries_are_skipped_with_reasons(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("secret outside the data folder")
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "good.md").write_text("A good document.\n")
    (kb / "link-out.txt").symlink_to(outside)
    (kb / "link-in.txt").symlink_to(kb / "good.md")
    (kb / "dangling.txt").symlink_to(kb / "missing.txt")
    (kb / "loop").symlink_to(kb)
    os.mkfifo(kb / "pipe.txt")
    (kb / "folder.txt").mkdir()
    (kb / "folder.txt" / "inner.md").write_text("Inside a folder named like a file.\n")
    (kb / os.fsdecode(b"bad-\xff.txt")).write_text("name is not UTF-8\n")
    (kb / "nul.txt").write_bytes(b"a" * 9000 + b"\x00tail")
    report = load_folder(kb)
    reasons = _reasons(report)
    assert sorted(d.doc_id for d in report.documents) == ["folder.txt/inner.md", "good.md", "link-in.txt"]
    assert "outside the data folder" in reasons["link-out.txt"] and "follow_links_outside" in reasons["link-out.txt"]
    assert "broken or loops" in reasons["dangling.txt"]
    assert "already visited" in reasons["loop"]
    assert "FIFO" in reasons["pipe.txt"]
    assert "not valid UTF-8" in reasons["bad-\\xff.txt"]
    assert reasons["nul.txt"] == "contains a NUL byte at byte 9000 (binary data inside text)"
    assert report.found == len(report.documents) + len(report.skipped) == 9  # folders are walked, not counted


def test_links_outside_are_followed_only_when_allowed(tmp_path):
    (tmp_path / "outside.txt").write_text("outside text")
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "link.txt").symlink_to(tmp_path / "outside.txt")
    report = load_folder(kb, LoadLimits(follow_links_outside=True))
    assert [d.text for d in report.documents] == ["outside text"] and not report.skipped


def test_size_and_front_matter_limits_are_reported(tmp_path):
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "big.txt").write_text("x" * 2000)
    bomb = "---\n" + "a: &a [x, x, x, x]\n" + "".join(f"b{i}: &b{i} [*a, *a, *a]\n" for i in range(5)) + "---\nbody\n"
    (kb / "bomb.md").write_text(bomb)
    (kb / "ok.md").write_text("---\ntitle: Fine\n---\nShort body.\n")
    report = load_folder(kb, LoadLimits(max_document_bytes=1000))
    reasons = _reasons(report)
    assert "larger than max_document_bytes (1,000 bytes)" in reasons["big.txt"]
    assert reasons["bomb.md"].startswith("front matter over the limit: more than 8 YAML aliases")
    assert [d.doc_id for d in report.documents] == ["ok.md"]


def test_duplicate_document_ids_are_one_clear_error():
    from components.core.errors import SpanQAError
    from components.core.retrieval.loaders import SourceDocument, check_unique_ids

    check_unique_ids([SourceDocument("a", "x"), SourceDocument("b", "y")], "kb")
    with pytest.raises(SpanQAError, match=r"Data 'corpus.jsonl' has duplicate document ids \['a'\]"):
        check_unique_ids([SourceDocument("a", "x"), SourceDocument("b", "y"), SourceDocument("a", "z")], "corpus.jsonl")


def test_hidden_files_and_folders_are_listed_as_skipped_not_dropped(tmp_path):
    from components.core.retrieval.loaders import load_corpus

    (tmp_path / "a.md").write_text("Visible text.")
    (tmp_path / ".hidden-secret.md").write_text("Hidden text.")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/main")
    report = load_corpus(tmp_path)
    assert [d.doc_id for d in report.documents] == ["a.md"]
    assert dict(report.skipped) == {".git": "hidden folder (names starting with '.' are not indexed)",
                                    ".hidden-secret.md": "hidden file (names starting with '.' are not indexed)"}
    assert report.found == 3  # found = indexed + skipped


def test_a_beir_corpus_linked_from_outside_the_data_folder_follows_the_link_rule(tmp_path):
    import json as _json

    from components.core.errors import SpanQAError
    from components.core.retrieval.loaders import LoadLimits, load_corpus

    outside = tmp_path / "outside.jsonl"
    outside.write_text(_json.dumps({"_id": "d1", "title": "", "text": "Some text."}) + "\n")
    beir = tmp_path / "beir"
    beir.mkdir()
    (beir / "corpus.jsonl").symlink_to(outside)
    with pytest.raises(SpanQAError) as info:
        load_corpus(beir)
    assert "outside the data folder" in str(info.value) and "follow_links_outside: true" in str(info.value)
    assert [d.doc_id for d in load_corpus(beir, limits=LoadLimits(follow_links_outside=True)).documents] == ["d1"]
