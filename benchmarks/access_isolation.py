"""Per-document access, printed: isolation and the cost of filtering by access.

Isolation: a corpus built from CISI abstracts where half the documents are restricted (a quarter to `finance`, a
quarter to `legal`), ``--questions`` CISI queries asked through pipelines/extractive.yaml by three principals in
turn (anonymous, finance, legal); every field of every response (documents, spans, answer, rejected answer, reason,
route) is searched for the ids and for a distinctive sentence of every document that principal may not read.
Then 16 threads ask the same mix and must return exactly each principal's serial results.

Cost: p50 of the retriever alone with and without an access scope (half the documents forbidden), side by side.

    python benchmarks/access_isolation.py [--questions 500] [--docs 400] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import CISI, ROOT, require_cisi  # noqa: E402

PRINCIPALS = {"anonymous": [], "alice": ["finance"], "lee": ["legal"]}


def build(folder: Path, n_docs: int) -> dict[str, str]:
    """``{doc_id: access group or ''}``; the documents are CISI abstracts with front matter."""
    access = {}
    with open(CISI / "corpus.jsonl", encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if i >= n_docs:
                break
            rec = json.loads(line)
            group = ("finance", "legal", "", "")[i % 4]
            front = f"---\ntitle: {json.dumps(rec.get('title') or '')}\naccess: [{group}]\n---\n" if group else ""
            doc_id = f"cisi-{rec['_id']}.md"
            (folder / doc_id).write_text(front + rec["text"].strip() + "\n", encoding="utf-8")
            access[doc_id] = group
    return access


def leaks(result: dict, forbidden: set[str], texts: dict[str, str]) -> list[str]:
    blob = json.dumps({k: v for k, v in result.items() if k != "timings_ms"}, ensure_ascii=False)
    found = [d for d in forbidden if d in blob]
    found += [d for d in forbidden if texts[d] and texts[d] in blob]
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=500)
    ap.add_argument("--docs", type=int, default=400)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    require_cisi()
    from components.app.pipeline_io import load_pipeline
    from components.app.runner import QueryRunner, public

    queries = [json.loads(line)["text"] for line in open(CISI / "queries.jsonl", encoding="utf-8")]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "docs"
        folder.mkdir()
        access = build(folder, args.docs)
        # a distinctive sentence of each restricted document: a quote of it anywhere is a leak
        texts = {d: (folder / d).read_text().split("---\n")[-1].strip()[:60] for d, g in access.items() if g}
        pipeline, _ = load_pipeline(ROOT / "pipelines/extractive.yaml", data=str(folder), cache_dir=str(Path(tmp) / "c"))
        runner = QueryRunner(pipeline)
        pipeline.get_component(runner.verifier).min_confidence = 0.0  # every supported answer is shown: more to leak
        runner.warm_up()
        asks = [(name, queries[i % len(queries)]) for i, name in zip(range(args.questions), list(PRINCIPALS) * args.questions)]
        forbidden = {name: {d for d, g in access.items() if g and g not in groups} for name, groups in PRINCIPALS.items()}

        def ask(item):
            name, q = item
            return public(runner.ask(q, groups=PRINCIPALS[name], principal=name))

        serial = [ask(a) for a in asks]
        leaked = [(a, leaks(r, forbidden[a[0]], texts)) for a, r in zip(asks, serial)]
        leaked = [x for x in leaked if x[1]]
        answered = sum(r.get("answer") is not None for r in serial)
        runner.answer_cache = None  # the threads must compute, not read the serial answers back
        with ThreadPoolExecutor(16) as pool:
            threaded = list(pool.map(ask, asks))
        drop = ("timings_ms",)
        same = sum({k: v for k, v in a.items() if k not in drop} == {k: v for k, v in b.items() if k not in drop}
                   for a, b in zip(serial, threaded))

        retriever = pipeline.get_component(runner.retriever)
        def p50(groups):
            times = []
            for q in queries[:60]:
                t = time.perf_counter()
                retriever.run(query=q, groups=groups)
                times.append(time.perf_counter() - t)
            return statistics.median(times)
        p50(None)
        free, scoped = p50(None), p50(["finance"])
    result = {"questions": len(asks), "principals": len(PRINCIPALS), "restricted_documents": len(texts),
              "documents": len(access), "answered": answered, "responses_with_a_leak": len(leaked),
              "threaded_equal_to_serial": f"{same}/{len(asks)}", "retriever_p50_ms_unrestricted": round(free * 1000, 2),
              "retriever_p50_ms_half_forbidden": round(scoped * 1000, 2), "ratio": round(scoped / free, 3)}
    if args.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"{k:34s} {v}")
        for (name, q), found in leaked[:5]:
            print(f"  LEAK to {name}: {q[:60]!r} → {found[:3]}")
    return 0 if not leaked and same == len(asks) else 1


if __name__ == "__main__":
    sys.exit(main())
