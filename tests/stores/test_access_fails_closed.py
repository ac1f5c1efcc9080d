"""Access metadata fails closed, the same in every format and both stores: front matter in .txt as in .md (after a
byte-order mark too, keys in any case, never indexed as text), an access field left empty opens a document to nobody
(Markdown, HTML <meta>, PDF keywords), a status given as a list is understood, and --validate --keys lists each."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from components.core.retrieval.loaders import _front_matter, load_folder
from components.retrievers.hybrid_retriever import HybridRetriever
from components.stores.base import AccessRule, SupersededRule
from tests.stores.conftest import either_store

ROOT = Path(__file__).resolve().parents[2]
SECRET = "vault code QX-7781"


def _pdf(path: Path, keywords: str, text: str) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.set_keywords(keywords)
    pdf.multi_cell(0, 8, text)
    pdf.output(str(path))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("closed")
    (d / "open.md").write_text("# Vault\n\nThe vault opens at nine.\n")
    (d / "plain.txt").write_text(f"---\naccess: [finance]\n---\nThe finance {SECRET} is in the plain text file.\n")
    (d / "bom.md").write_bytes(("\ufeff---\naccess: [finance]\n---\n# Bom\n\nThe bom " + SECRET + " note.\n").encode())
    (d / "caps.md").write_text(f"---\nAccess: [finance]\n---\n# Caps\n\nThe caps {SECRET} note.\n")
    (d / "empty.md").write_text(f"---\naccess:\n---\n# Empty\n\nThe empty {SECRET} note.\n")
    (d / "empty.html").write_text(f'<html><head><title>Empty meta</title><meta name="access" content=""></head>'
                                  f'<body><p>The html {SECRET} page.</p></body></html>')
    _pdf(d / "empty.pdf", "access: ; product: vault", f"The pdf {SECRET} file.")
    return d


@pytest.fixture(scope="module", params=["memory", "postgres"])
def store(request, corpus, tmp_path_factory):
    return either_store(request, corpus, tmp_path_factory, "closed")


def test_a_key_without_the_group_reads_none_of_them(store):
    r = HybridRetriever(store, top_k=20)
    out = r.run(query=f"{SECRET} vault code", groups=["staff"])
    docs = out["bm25_documents"] + out["dense_documents"]
    assert {d.meta["doc_id"] for d in docs} == {"open.md"}
    finance = r.run(query=f"{SECRET} vault code", groups=["finance"])
    got = {d.meta["doc_id"] for d in finance["bm25_documents"] + finance["dense_documents"]}
    # finance reads its three documents; the empty ones are nobody's
    assert got == {"open.md", "plain.txt", "bom.md", "caps.md"}
    assert not any("access:" in d.content for d in docs + finance["bm25_documents"])  # front matter never text


def test_front_matter_rules_on_hand_cases():
    text = "\ufeff---\nAccess: [a]\n---\nbody"
    assert _front_matter(text) == ({"access": ["a"]}, 21) and text[21:] == "body"
    assert _front_matter("---\nTitle: X\n---\nbody")[0] == {"title": "X"}
    with pytest.raises(ValueError, match="differ only in case"):
        _front_matter("---\naccess: [a]\nACCESS: [b]\n---\nbody")
    rule = AccessRule(field="Access")
    assert rule.field == "access"
    for closed in ({"access": None}, {"access": ""}, {"access": []}, {"access": 3}, {"access": {"a": 1}}):
        assert rule.allowed(closed) == frozenset() and rule.unreadable_reason(closed), closed
    assert rule.unreadable_reason({"access": ["finance"]}) is None and rule.unreadable_reason({}) is None
    sup = SupersededRule()
    assert sup.matches({"status": ["superseded"]}) and sup.matches({"status": "Retired "})
    assert not sup.matches({"status": ["current"]}) and not sup.matches({})


def test_loaded_text_and_body_start_of_a_txt_with_front_matter(corpus):
    doc = next(d for d in load_folder(corpus).documents if d.doc_id == "plain.txt")
    assert doc.meta["access"] == ["finance"] and doc.text[doc.body_start:].startswith("The finance")


def test_validate_lists_every_document_whose_access_could_not_be_read(corpus, tmp_path):
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"sk-alice-0123456789abcdef": {"principal": "alice", "groups": ["staff"]}}))
    done = subprocess.run([sys.executable, str(ROOT / "run.py"), "pipelines/retrieval.yaml", "--validate", "--json",
                           "--data", str(corpus), "--keys", str(keys)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-1500:]
    access = json.loads(done.stdout)["access"]
    assert set(access["unreadable"]) == {"empty.md", "empty.html", "empty.pdf"}
    assert "nobody may read it" in access["unreadable"]["empty.md"]
    assert access["groups_no_key_holds"] == ["finance"] and access["restricted"] == 6
