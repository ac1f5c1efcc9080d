"""One truth across processes: a server process keeps answering while another process re-indexes a changed
document in the same PostgreSQL tables; the next answer (an exact repeat too, past the answer cache) quotes the
new text, in its span and in the source passage, and no answer mixes the two versions."""

import os
import subprocess
import sys
from pathlib import Path

import yaml

from components.app.pipeline_io import load_pipeline
from components.app.runner import QueryRunner, public
from components.serving.passage import source_passage

ROOT = Path(__file__).resolve().parents[3]
QUESTION = "What is the serial code of item 42?"
REINDEX = ("import sys; from components.stores.pgvector.store import PgSpanStore; "
           "s = PgSpanStore(data_dir=sys.argv[1], table_prefix=sys.argv[2], progress=False); s.open(); "
           "print(s.stats['changed'])")


def _write(doc: Path, code: str) -> None:
    doc.write_text(f"---\ntitle: Item 42\n---\nItem 42 has the serial code {code}. It ships in a grey box.\n\n"
                   f"Item 43 is a lamp without a serial code.\n")


def corpus(tmp_path: Path) -> Path:
    """Item 42 with its first serial code, and another document."""
    data = tmp_path / "kb"
    data.mkdir()
    _write(data / "item-42.md", "SN-00042-Q")
    (data / "other.md").write_text("The warehouse opens at nine. Deliveries arrive on Mondays.\n")
    return data


def test_a_reindex_by_another_process_is_seen_by_every_component_at_once(pg_dsn, tmp_path, prefix):
    data = corpus(tmp_path)
    spec = yaml.safe_load((ROOT / "pipelines/extractive-postgres.yaml").read_text())
    store = spec["components"]["retriever"]["init_parameters"]["document_store"]["init_parameters"]
    store["table_prefix"] = prefix  # the anchor: retriever, expander and widener read these same settings
    assert spec["components"]["expander"]["init_parameters"]["document_store"]["init_parameters"] is store
    spec["metadata"]["spanqa"]["audit_log"] = None
    path = tmp_path / "pg.yaml"
    path.write_text(yaml.safe_dump(spec))
    pipeline, _ = load_pipeline(path, data=str(data))
    runner = QueryRunner(pipeline, answer_cache_ttl_s=300)
    pipeline.get_component(runner.verifier).min_confidence = 0.0
    runner.warm_up()

    before = public(runner.ask(QUESTION))
    assert "SN-00042-Q" in before["answer"], before
    assert all("SN-00042-Q" in s["text"] for s in before["spans"] if "serial" in s["text"])

    _write(data / "item-42.md", "SN-99999-Z")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "SPANQA_PG_DSN": pg_dsn}
    out = subprocess.run([sys.executable, "-c", REINDEX, str(data), prefix], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.split()[-1] == "1", out.stdout + out.stderr

    after = public(runner.ask(QUESTION))  # an exact repeat: the answer cache must not serve the old answer
    assert "cache:answer" not in after["route"]
    assert "SN-99999-Z" in after["answer"] and "SN-00042-Q" not in after["answer"], after
    for span in after["spans"]:
        assert "SN-00042-Q" not in span["text"], span
    span = after["spans"][0]
    passage = source_passage(runner.store(), span["doc_id"], span["char_start"], span["char_end"])
    assert "SN-99999-Z" in str(passage) and "SN-00042-Q" not in str(passage)
    # the next repeat comes from the cache, under the new version
    again = public(runner.ask(QUESTION))
    assert again["route"][0] == "cache:answer" and again["answer"] == after["answer"]
