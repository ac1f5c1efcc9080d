"""Converted documents: span fidelity (every chunk and sentence span slices the stored text; every PDF sentence's
boxes lie on its stated page and hold its words) and conversion throughput against Haystack's own converters
(PyPDFToDocument, HTMLToDocument, DOCXToDocument) on the same files, side by side.

The test corpus is built here from CISI: ``--files`` PDFs of ``--pages`` pages (one CISI abstract per section, its
title an outline entry), and as many HTML pages and Word files of the same sections.

    pip install -e '.[bench]'      # pypdf, which Haystack's PyPDFToDocument (the peer) reads PDFs with
    python benchmarks/conversion.py [--files 12] [--pages 8] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import CISI, require_cisi  # noqa: E402


def build_corpus(folder: Path, files: int, pages: int) -> dict[str, list[Path]]:
    from benchmarks.make_documents import write_docx, write_html, write_pdf

    records = []
    with open(CISI / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            if len(rec.get("text", "")) > 400 and rec.get("title"):
                records.append((rec["title"].strip()[:90], [rec["text"].strip()]))
            if len(records) >= files * pages:
                break
    out: dict[str, list[Path]] = {"pdf": [], "html": [], "docx": []}
    for f in range(files):
        sections = records[f * pages:(f + 1) * pages]
        out["pdf"].append(write_pdf(folder / f"doc{f:03d}.pdf", f"CISI volume {f}", sections))
        out["html"].append(write_html(folder / f"doc{f:03d}.html", f"CISI volume {f}", sections))
        out["docx"].append(write_docx(folder / f"doc{f:03d}.docx", f"CISI volume {f}", sections))
    return out


def fidelity(folder: Path) -> dict:
    """Two checks that could fail: (1) the stored text is what the file gives when converted again (so offsets
    saved in an index or an audit log still point at the same characters), and the spans the index serves slice
    it; (2) independently of our text, every PDF sentence's boxes lie on the page ``page_of`` states, and PDFium's
    own text inside those boxes holds the sentence's words."""
    import pypdfium2 as pdfium

    from components.core.documents.convert import convert_file
    from components.core.documents.layout import page_of
    from components.core.documents.pdf import span_boxes
    from components.core.retrieval.index import IndexSettings, split_document
    from components.core.retrieval.loaders import LoadLimits, load_folder

    report = load_folder(folder)
    settings = IndexSettings()
    spans = exact = boxes_checked = boxes_ok = 0
    failures: list[str] = []
    for doc in report.documents:
        again = convert_file(folder / doc.doc_id, doc.doc_id, LoadLimits())
        _, units, chunks = split_document(doc, settings)
        for span in [*units, *chunks]:
            spans += 1
            exact += again.text[span.start:span.end] == doc.text[span.start:span.end] and span.end <= len(again.text)
        if doc.layout.get("format") != "pdf":
            continue
        pdf = pdfium.PdfDocument(str(folder / doc.doc_id))
        for u in units:
            page = page_of(doc.layout, u.start)
            found = span_boxes(folder / doc.doc_id, doc.layout, u.start, u.end)
            boxes_checked += 1
            on_page = set(found) == {page} and bool(found[page])
            textpage = pdf[page - 1].get_textpage()
            inside = " ".join(textpage.get_text_bounded(*b) for b in found.get(page, []))
            ok = on_page and all(w in inside for w in doc.text[u.start:u.end].split())
            boxes_ok += ok
            if not ok and len(failures) < 5:
                failures.append(f"{doc.doc_id} [{u.start}:{u.end}] page {page}: {doc.text[u.start:u.end][:60]!r}")
        pdf.close()
    return {"documents": len(report.documents), "skipped": len(report.skipped), "spans": spans,
            "spans_exact": exact, "pdf_sentences": boxes_checked, "pdf_boxes_on_page_with_the_words": boxes_ok,
            "failures": failures}


def throughput(files: dict[str, list[Path]], pages: int) -> dict:
    """Seconds to convert the same files, spanqa vs Haystack's converter components (best of 2)."""
    from haystack.components.converters import DOCXToDocument, HTMLToDocument, PyPDFToDocument

    from components.core.documents.convert import convert_file
    from components.core.retrieval.loaders import LoadLimits

    limits = LoadLimits()
    peers = {"pdf": PyPDFToDocument(), "html": HTMLToDocument(), "docx": DOCXToDocument()}
    out = {}
    for kind, paths in files.items():
        def ours():
            for p in paths:
                convert_file(p, p.name, limits)

        def theirs():
            peers[kind].run(sources=paths)

        t_ours = min(_time(ours) for _ in range(2))
        t_peer = min(_time(theirs) for _ in range(2))
        unit = sum(_pages(p) for p in paths) if kind == "pdf" else len(paths)
        name = "pages" if kind == "pdf" else "files"
        out[kind] = {"files": len(paths), name: unit, f"spanqa_{name}_per_s": round(unit / t_ours, 1),
                     f"haystack_{name}_per_s": round(unit / t_peer, 1), "speed_ratio": round(t_peer / t_ours, 2),
                     "peer": type(peers[kind]).__name__}
    return out


def _pages(path: Path) -> int:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(path))
    try:
        return len(pdf)
    finally:
        pdf.close()


def _time(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=12)
    ap.add_argument("--pages", type=int, default=8)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    require_cisi()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        files = build_corpus(folder, args.files, args.pages)
        result = {"fidelity": fidelity(folder), "throughput": throughput(files, args.pages)}
    if args.json:
        print(json.dumps(result))
        return 0
    f = result["fidelity"]
    print(f"span fidelity: {f['spans_exact']}/{f['spans']} sentence and chunk spans equal in the stored and a "
          f"re-converted text; "
          f"{f['pdf_boxes_on_page_with_the_words']}/{f['pdf_sentences']} PDF sentences have boxes on their stated "
          f"page holding their words ({f['documents']} documents, {f['skipped']} skipped)")
    for line in f["failures"]:
        print(f"  not matched: {line}")
    for kind, t in result["throughput"].items():
        name = "pages" if kind == "pdf" else "files"
        print(f"{kind:5s} spanqa {t[f'spanqa_{name}_per_s']:8.1f} {name}/s   {t['peer']} "
              f"{t[f'haystack_{name}_per_s']:8.1f} {name}/s   ratio {t['speed_ratio']:.2f}× (>1: spanqa faster)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
