"""Safe loading: types checked, allowlist before import, limits, complete messages; a fuzz run of mutated YAMLs
gives a pipeline or our error, never another exception."""

import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from components.app.pipeline_io import load_pipeline
from components.core.errors import SpanQAError
from tests.app.fuzz_yaml import mutate

ROOT = Path(__file__).resolve().parents[2]


def _spec():
    return yaml.safe_load((ROOT / "pipelines/retrieval.yaml").read_text())


def _load(tmp_path, spec=None, text=None):
    path = tmp_path / "p.yaml"
    path.write_text(text if text is not None else yaml.safe_dump(spec))
    return load_pipeline(path, cache_dir=str(tmp_path / "cache"))


def _error(tmp_path, mutate_spec=None, text=None):
    spec = _spec()
    if mutate_spec:
        mutate_spec(spec)
    with pytest.raises(SpanQAError) as info:
        _load(tmp_path, spec, text)
    return " ".join(str(info.value).split())


def test_type_outside_the_allowlist_is_refused_before_import():
    code = ("import sys, yaml; from components.app.pipeline_io import load_pipeline; "
            "spec = yaml.safe_load(open('pipelines/retrieval.yaml')); spec['components']['joiner']['type'] = 'this.Zen'; "
            "open('/tmp/_zen.yaml', 'w').write(yaml.safe_dump(spec)); "
            "exec('try:\\n load_pipeline(\"/tmp/_zen.yaml\")\\nexcept Exception as e:\\n print(type(e).__name__, e)'); "
            "print('this' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120).stdout
    assert "SpanQAError" in out and "outside the allowed packages" in out and "Nothing was imported" in out
    assert out.strip().endswith("False")  # the module 'this' was never imported (its import prints the Zen)
    assert "Beautiful is better" not in out


@pytest.mark.parametrize("change, needles", [
    (lambda s: s["components"]["retriever"].update(init_parameters=[1, 2]),
     ["component 'retriever' (HybridRetriever)", "'init_parameters' must be a mapping"]),
    (lambda s: s["components"]["retriever"].update(init_parameters=-1), ["'init_parameters' must be a mapping"]),
    (lambda s: s["components"]["retriever"].update(type=None), ["needs 'type' to be a class path"]),
    (lambda s: s["components"]["retriever"]["init_parameters"].update(top_k="five"),
     ["parameter 'top_k' is 'five' (str), but it must be a whole number (its default is 50)"]),
    (lambda s: s["components"]["retriever"]["init_parameters"].update(top_k=-5),
     ["HybridRetriever: parameter 'top_k' is -5, but it must be a whole number ≥ 1"]),
    (lambda s: s["components"]["retriever"]["init_parameters"].update(filters={"field": "meta.x", "operator": "~", "value": 1}),
     ["unknown operator '~'"]),
    (lambda s: s["components"]["retriever"]["init_parameters"]["document_store"]["init_parameters"].update(chunk_overlap=0.7),
     ["SpanStore: parameter 'chunk_overlap' is 0.7"]),
    (lambda s: s.update(connections=[{"sender": "retriever.bm25_documents", "receiver": "nobody.bm25"}]),
     ["receiver 'nobody.bm25' names no component"]),
    (lambda s: s.update(extra_key=1), ["unknown top-level key(s) ['extra_key']"]),
    (lambda s: s.setdefault("metadata", {}).setdefault("spanqa", {}).update(audit_log="/etc/spanqa-audit.jsonl"),
     ["metadata.spanqa.audit_log is '/etc/spanqa-audit.jsonl', outside the working directory", "--no-audit"]),
])
def test_bad_values_are_one_complete_paragraph(tmp_path, change, needles):
    message = _error(tmp_path, change)
    assert message.startswith("Pipeline file '") or message.startswith("HybridRetriever") or "Pipeline file" in message
    for n in needles:
        assert n in message, message
    assert not message.endswith(":")  # never cut before its reason or fix


def test_alias_bomb_and_size_limit(tmp_path):
    bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"a{i}: &a{i} [" + ", ".join([f"*a{i-1}"] * 9) + "]\n" for i in range(1, 9))
    start = time.perf_counter()
    assert "more than 32 YAML aliases" in _error(tmp_path, text=bomb)
    assert time.perf_counter() - start < 5
    assert "over the 1,000,000-byte limit" in _error(tmp_path, text="# " + "x" * 1_000_001)


def test_cli_validate_and_bad_values_exit_2(tmp_path):
    spec = _spec()
    spec["components"]["retriever"]["init_parameters"]["top_k"] = "five"
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(spec))
    run = lambda *a: subprocess.run([sys.executable, "run.py", *a], cwd=ROOT, capture_output=True, text=True, timeout=300)
    ok = run("pipelines/extractive.yaml", "--validate", "--json")
    assert ok.returncode == 0 and '"valid": true' in ok.stdout and "fallback:trained" in ok.stdout
    assert "spanqa/reader-minilm-l6-squad2 (project:models/spanqa-reader-minilm-l6)" in ok.stdout
    for args, needle in [((str(bad), "--validate"), "parameter 'top_k' is 'five'"),
                         (("pipelines/retrieval.yaml", "--top-k", "0", "-q", "x"), "'--top-k' is 0"),
                         (("pipelines/retrieval.yaml", "--filters", "{bad", "-q", "x"), "--filters is not valid JSON"),
                         (("pipelines/retrieval.yaml", "--filters", '{"field": "meta.a", "operator": "like", "value": 1}',
                           "-q", "x"), "unknown operator 'like'")]:
        proc = run(*args)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert needle in " ".join(proc.stderr.split())


def test_fuzzed_pipelines_load_or_give_our_error(tmp_path):
    rng = random.Random(1234)
    outcomes = {"loaded": 0, "error": 0}
    for i in range(300):
        text = mutate(rng)
        path = tmp_path / f"m{i}.yaml"
        path.write_text(text)
        start = time.perf_counter()
        try:
            load_pipeline(path, cache_dir=str(tmp_path / "cache"))
            outcomes["loaded"] += 1
        except SpanQAError as exc:
            assert str(exc).strip() and not str(exc).rstrip().endswith(":"), text
            outcomes["error"] += 1
        assert time.perf_counter() - start < 5, text
    assert outcomes["loaded"] > 10 and outcomes["error"] > 100, outcomes
