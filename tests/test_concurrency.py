"""One warmed pipeline, many threads: every result (answer, verdict, spans, route) equals the serial run,
and each result's timings are its own run's."""

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from components.app.pipeline_io import load_pipeline
from components.app.runner import QueryRunner
from components.core.text.splitting import sentence_spans

ROOT = Path(__file__).resolve().parent
QUESTIONS = [json.loads(line)["question"] for line in (ROOT.parent / "data/questions.jsonl").read_text().splitlines() if line]


def _key(result):
    return (result["answer"], result["verdict"], result["reason"], json.dumps(result["spans"], sort_keys=True),
            tuple(result["route"]), tuple(d["chunk_id"] for d in result["documents"]))


def test_sentence_splitting_is_thread_safe():
    texts = [" ".join(f"Sentence {i}.{j} is here, Dr. Smith said." for j in range(30)) for i in range(32)]
    serial = [sentence_spans(t) for t in texts]
    with ThreadPoolExecutor(16) as pool:
        for _ in range(3):
            assert list(pool.map(sentence_spans, texts)) == serial


@pytest.fixture(scope="module")
def runner(tmp_path_factory):
    pipeline, _ = load_pipeline(ROOT.parent / "pipelines/extractive.yaml", data=str(ROOT.parent / "data/kb"),
                                cache_dir=str(tmp_path_factory.mktemp("cache")))
    r = QueryRunner(pipeline)
    r.warm_up()
    return r


def test_sixteen_threads_give_the_serial_results(runner):
    serial = {q: _key(runner.ask(q)) for q in QUESTIONS}
    work = QUESTIONS * 2
    barrier = threading.Barrier(16)

    def ask(i):
        if i < 16:
            barrier.wait()  # all 16 threads start together
        return work[i], runner.ask(work[i])

    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(ask, range(len(work))))
    mismatches = [q for q, r in results if _key(r) != serial[q]]
    assert not mismatches, mismatches
    for _, r in results:  # timings belong to the run: every stage of its own route, nothing from others
        assert set(r["timings_ms"]) >= {"retriever", "joiner", "ranker"}
        assert r["timings_ms"].get("reader", 0) > 0 or r["verdict"] == "NOT_FOUND"
