"""Contextual retrieval: R@5 and nDCG@10 of pipelines/retrieval.yaml with and without a situating note indexed
before each chunk, on three corpora, side by side:

- ``chunk``: the chunk alone (``embed_title: false, context_notes: none``);
- ``title``: the document title before it (``context_notes: none``; spanqa's indexing before notes existed);
- ``notes``: title › heading path (``context_notes: headings``, the default) — the model-free note.

Corpora: CISI (BEIR, 76 judged queries; titles, no headings), the SQuAD 2.0 development article (answerable
questions, the gold paragraph relevant; one title, no headings), the structured demo corpus ``data/kb`` (Markdown
headings, a PDF outline, HTML and Word headings; ``data/questions.jsonl``'s answerable questions, the gold document
relevant), and ``books``: 24 SQuAD 1.1 training articles (seeded) bound four to a Markdown file titled
"Encyclopedia volume N", each article a ``# Title`` section — a manual whose chapters situate their paragraphs;
400 seeded questions, the chunk(s) holding the answer relevant (chunk level: a long section's later chunks no longer
contain its heading line, which is what a note restores).

    python benchmarks/context_notes.py [--corpora kb,books,squad,cisi] [--json]
    python benchmarks/context_notes.py --corpora kb --generator HuggingFaceTB/SmolLM2-135M-Instruct   # + model notes

``--generator MODEL`` adds ``model``: the ``notes`` configuration plus a note written by that local generator per
chunk (``context_notes: generator``; one call per chunk, ~1.5 s each for SmolLM2-135M on this CPU).
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import CISI, ROOT  # noqa: E402

SQUAD_DEV = ROOT.parent / "shared" / "data" / "squad2" / "dev-computational-complexity.json"
CONFIGS = {
    "chunk": {"embed_title": False, "context_notes": "none"},
    "title": {"embed_title": True, "context_notes": "none"},
    "notes": {"embed_title": True, "context_notes": "headings"},
}


def runner_for(config: dict, data: str, cache_dir: str):
    import yaml

    from components.app.pipeline_io import load_pipeline
    from components.app.runner import QueryRunner

    spec = yaml.safe_load((ROOT / "pipelines/retrieval.yaml").read_text())
    spec = copy.deepcopy(spec)
    store = spec["components"]["retriever"]["init_parameters"]["document_store"]["init_parameters"]
    store.update(config, progress=False)
    spec.setdefault("metadata", {}).setdefault("spanqa", {})["allow_paths_outside"] = True  # the notes' temp cache
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", dir=ROOT / "pipelines", delete=False) as fh:
        yaml.safe_dump(spec, fh)
        path = Path(fh.name)
    try:
        pipeline, _ = load_pipeline(path, data=data, cache_dir=cache_dir)
    finally:
        path.unlink()
    runner = QueryRunner(pipeline)
    runner.warm_up()
    return runner


def kb_metrics(runner) -> dict:
    from components.evaluation.metrics import ndcg_at_k, recall_at_k

    questions = [json.loads(line) for line in (ROOT / "data/questions.jsonl").read_text().splitlines() if line]
    questions = [q for q in questions if q["answerable"]]
    r5 = n10 = 0.0
    for q in questions:
        ranked = runner.ask(q["question"], retrieval_depth=100)["_stages"]["fused"]
        r5 += recall_at_k(ranked, {q["doc_id"]: 1}, 5)
        n10 += ndcg_at_k(ranked, {q["doc_id"]: 1}, 10)
    return {"queries": len(questions), "recall@5": r5 / len(questions), "ndcg@10": n10 / len(questions)}


SQUAD_TRAIN = ROOT.parent / "shared" / "data" / "squad-train" / "train-v1.1.json"


def build_books(folder: Path, articles: int = 24, per_book: int = 4, questions: int = 400, seed: int = 7) -> list:
    """The ``books`` corpus; returns ``[(question, doc_id, answer offset)]``."""
    import random

    rng = random.Random(seed)
    data = json.loads(SQUAD_TRAIN.read_text(encoding="utf-8"))["data"]
    chosen = rng.sample(data, articles)
    asked = []
    folder.mkdir(parents=True, exist_ok=True)
    for b in range(articles // per_book):
        doc_id = f"volume-{b + 1:02d}.md"
        text = f"---\ntitle: Encyclopedia volume {b + 1}\n---\n"
        for art in chosen[b * per_book:(b + 1) * per_book]:
            text += f"# {art['title'].replace('_', ' ')}\n\n"
            for para in art["paragraphs"]:
                base = len(text)
                text += para["context"].strip() + "\n\n"
                for qa in para["qas"]:
                    if qa.get("answers"):
                        asked.append((qa["question"], doc_id, base + qa["answers"][0]["answer_start"]))
        (folder / doc_id).write_text(text, encoding="utf-8")
    return rng.sample(asked, min(questions, len(asked)))


def books_metrics(runner, asked: list) -> dict:
    from components.evaluation.metrics import ndcg_at_k, recall_at_k

    r5 = n10 = 0.0
    for question, doc_id, at in asked:
        docs = runner.ask(question, retrieval_depth=100)["documents"]
        ranked = [d["chunk_id"] for d in docs]
        relevant = {d["chunk_id"]: 1 for d in docs if d["doc_id"] == doc_id and d["char_start"] <= at < d["char_end"]}
        r5 += recall_at_k(ranked, relevant, 5) if relevant else 0.0
        n10 += ndcg_at_k(ranked, relevant, 10) if relevant else 0.0
    return {"queries": len(asked), "recall@5": r5 / len(asked), "ndcg@10": n10 / len(asked)}


def measure(corpus: str, runner, asked=None) -> dict:
    from components.evaluation.evaluate import evaluate_beir, evaluate_squad_retrieval

    if corpus == "kb":
        return kb_metrics(runner)
    if corpus == "books":
        return books_metrics(runner, asked)
    if corpus == "squad":
        summary, _ = evaluate_squad_retrieval(runner, SQUAD_DEV, progress=False)
    else:
        summary, _ = evaluate_beir(runner, CISI, progress=False)
    fused = summary["retrieval"]["fused"]
    return {"queries": fused.get("queries"), "recall@5": fused["recall@5"], "ndcg@10": fused["ndcg@10"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", default="kb,books,squad,cisi")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--generator", help="also measure notes written by this local generator model")
    args = ap.parse_args()
    configs = dict(CONFIGS)
    if args.generator:
        configs["model"] = {"embed_title": True, "context_notes": "generator",
                            "context_generator": {"backend": "local", "model": args.generator, "max_new_tokens": 32}}
    data = {"kb": str(ROOT / "data/kb"), "squad": str(SQUAD_DEV), "cisi": str(CISI)}
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as cache:
        asked = build_books(Path(cache) / "books") if "books" in args.corpora else None
        data["books"] = str(Path(cache) / "books")
        for corpus in args.corpora.split(","):
            results[corpus] = {}
            for name, config in configs.items():
                if "context_generator" in config:  # the notes' cache beside the index cache
                    config = {**config, "context_generator": {**config["context_generator"],
                                                              "cache_file": str(Path(cache) / "notes.json")}}
                results[corpus][name] = measure(corpus, runner_for(config, data[corpus], cache), asked)
                if not args.json:
                    m = results[corpus][name]
                    print(f"{corpus:6s} {name:6s} R@5 {m['recall@5']:.3f}  nDCG@10 {m['ndcg@10']:.3f}", flush=True)
    if args.json:
        print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
