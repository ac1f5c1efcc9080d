"""How often the planted-instruction detector (components/core/text/injection.py) flags real prose: every sentence
of the demo corpus (data/kb, converted as the index converts it) and of the CISI abstracts (1,460 real abstracts
of information science), cut by the pipeline's own splitter. A flagged sentence is never an answer nor evidence,
so each one here is a false positive unless the corpus plants it on purpose (data/kb holds planted ones: listed).

    python benchmarks/directive_false_positives.py [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from _common import CISI, ROOT, finish  # noqa: F401  (puts the repository on sys.path)


def flagged(texts: list[tuple[str, str]]) -> tuple[int, list[dict]]:
    from components.core.text.injection import directive_reason
    from components.core.text.splitting import sentence_spans

    total, hits = 0, []
    for doc_id, text in texts:
        for s in sentence_spans(text):
            sentence = text[s.start : s.end]
            total += 1
            why = directive_reason(sentence)
            if why:
                hits.append({"doc_id": doc_id, "reason": why, "sentence": " ".join(sentence.split())[:200]})
    return total, hits


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from components.core.retrieval.loaders import load_folder

    report: dict = {"load_average_before": os.getloadavg()}
    demo = [(d.doc_id, d.text[d.body_start:]) for d in load_folder(ROOT / "data" / "kb").documents]
    cisi = []
    if (CISI / "corpus.jsonl").exists():
        with open(CISI / "corpus.jsonl", encoding="utf-8") as fh:
            cisi = [(r["_id"], r.get("text") or "") for r in map(json.loads, fh)]
    for name, texts in (("demo corpus (data/kb)", demo), ("CISI abstracts", cisi)):
        total, hits = flagged(texts)
        report[name] = {"sentences": total, "flagged": len(hits), "rate": round(len(hits) / max(total, 1), 5),
                        "flagged_sentences": hits}
        print(f"{name}: {len(hits)} of {total:,} sentences flagged ({100 * len(hits) / max(total, 1):.2f} %)")
        for h in hits:
            print(f"  {h['doc_id']}: [{h['reason']}] {h['sentence']}")
    return finish(report, args.json)


if __name__ == "__main__":
    sys.exit(main())
