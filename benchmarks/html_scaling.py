"""HTML conversion time against page size, for the shapes real pages take (paragraphs with headings, nested
``<div>``s with a page ``<style>`` rule, a long table, a long list, ``<br>``-separated lines), and a page of one
paragraph repeated: is the time linear, and is every repeat kept. A benchmark, not a test.

    python benchmarks/html_scaling.py [--mb 1 2 4 8] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import ROOT  # noqa: E402

CISI = ROOT.parent / "shared" / "data" / "cisi" / "corpus.jsonl"


def page(kind: str, mb: float, paras: list[str]) -> str:
    out, n, i = [], 0, 0
    while n < mb * 1e6:
        p = f"{paras[i % len(paras)][:300]} ({i})"
        s = {"p": f"<p>{p}</p>" + (f"<h2>Section {i}</h2>" if i % 50 == 0 else ""),
             "div": f"<div class='c'><span>{p}</span></div>", "table": f"<tr><td>E{i}</td><td>{p}</td></tr>",
             "li": f"<li>{p}</li>", "br": f"{p}<br>"}[kind]
        out.append(s)
        n, i = n + len(s), i + 1
    body = "\n".join(out)
    body = {"table": f"<table>{body}</table>", "li": f"<ul>{body}</ul>"}.get(kind, body)
    return f"<html><head><style>.c {{ color: black }}</style></head><body>{body}</body></html>"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from components.core.documents.html import read_html

    paras = [json.loads(line)["text"] for line in CISI.read_text(encoding="utf-8").splitlines()]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "page.html"
        for kind in ("p", "div", "table", "li", "br"):
            for mb in args.mb:
                path.write_text(page(kind, mb, paras), encoding="utf-8")
                start = time.perf_counter()
                text, _, _ = read_html(path, 10**10)
                rows.append({"shape": kind, "mb": mb, "seconds": round(time.perf_counter() - start, 2),
                             "chars": len(text)})
                if not args.json:
                    print(f"{kind:6s} {mb:5.1f} MB  {rows[-1]['seconds']:6.2f} s  {len(text):,} chars", flush=True)
        repeated = "The same paragraph is repeated here again."
        path.write_text("<html><body>" + f"<p>{repeated}</p>" * 5000 + "</body></html>", encoding="utf-8")
        text, _, _ = read_html(path, 10**10)
    report = {"rows": rows, "repeated_kept": text.count(repeated), "repeated_sent": 5000,
              "load_average": os.getloadavg()}
    print(json.dumps(report if args.json else {k: report[k] for k in ("repeated_kept", "repeated_sent", "load_average")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
