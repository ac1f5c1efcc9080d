"""``embedding_precision: int8`` on a store: the real packaged MiniLM quantised, its vectors close to fp32's, an
index of its own (never mixed with fp32 vectors), announced in served_by; fp32 keeps the key it always had."""

import hashlib
import json
from dataclasses import asdict

import numpy as np
import pytest
import torch

from components.core.backends.int8 import int8_linear_class
from components.core.errors import SpanQAError
from components.core.retrieval.index import IndexSettings
from components.core.text.splitting import SPLITTER_VERSION
from components.stores.span_store import SpanStore

DOCS = {
    "refunds.md": "# Refunds\n\nAnnual plans can be refunded within 30 days of purchase. Monthly plans are not refunded.\n",
    "backup.md": "# Backups\n\nBackups run nightly between 02:00 and 05:00. They are kept for 14 days.\n",
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    data = tmp_path_factory.mktemp("kb")
    for name, text in DOCS.items():
        (data / name).write_text(text)
    return data


def test_fp32_key_is_the_key_indexes_had_before_the_setting_existed():
    s = IndexSettings(embedding_model="m")
    old = asdict(s)
    del old["embedding_precision"], old["context_model"]  # defaults that name nothing are left out of the key
    # indexes cut by the splitter before SPLITTER_VERSION 2 (every line break a sentence end) are rebuilt
    assert s.key() != hashlib.sha256(json.dumps(old, sort_keys=True).encode()).hexdigest()[:16]
    old["splitter"] = SPLITTER_VERSION
    assert s.key() == hashlib.sha256(json.dumps(old, sort_keys=True).encode()).hexdigest()[:16]
    int8 = IndexSettings(embedding_model="m", embedding_precision="int8")
    assert int8.key() != s.key()
    before = asdict(int8)  # an int8 index of torch's dynamic quantisation (no scheme named) is not this scheme's
    del before["context_model"]
    before["splitter"] = SPLITTER_VERSION
    assert int8.key() != hashlib.sha256(json.dumps(before, sort_keys=True).encode()).hexdigest()[:16]
    before["int8_scheme"] = "per-token"  # nor one of the scheme that quantised every layer, narrowing ones too
    assert int8.key() != hashlib.sha256(json.dumps(before, sort_keys=True).encode()).hexdigest()[:16]
    assert {**int8.identity(), "int8_scheme": "per-token"} == before  # (that was that scheme's key, exactly)
    assert IndexSettings(embedding_model="m", context_notes="none").key() != s.key()
    assert IndexSettings(embedding_model="m", context_notes="generator", context_model="local:x:48").key() != s.key()


def test_int8_store_quantises_the_embedder_and_keeps_its_own_index(corpus, tmp_path):
    cache = tmp_path / "cache"
    fp32 = SpanStore(data_dir=str(corpus), cache_dir=str(cache), progress=False)
    int8 = SpanStore(data_dir=str(corpus), cache_dir=str(cache), embedding_precision="int8", progress=False)
    fp32.open(), int8.open()
    assert any(isinstance(m, int8_linear_class()) for m in int8.embedder.modules())
    assert not any(isinstance(m, int8_linear_class()) for m in fp32.embedder.modules())
    assert int8.served_by.endswith(", int8)") and not fp32.served_by.endswith(", int8)")
    assert len(list(cache.glob("embeddings-*.npz"))) == 2  # two indexes: int8 vectors never answer fp32 queries
    assert int8.to_dict()["init_parameters"]["embedding_precision"] == "int8"
    q = "How long do we keep backups?"
    a, b = fp32.embed_query(q), int8.embed_query(q)
    assert float(np.dot(a, b)) > 0.95  # measured 0.963; benchmarks/ report retrieval agreement
    top = lambda store: [d.meta["doc_id"] for d, _ in store.dense_search(q, 2, _everything())]  # noqa: E731
    assert top(fp32) == top(int8) == ["backup.md", "refunds.md"]


def test_unknown_precision_is_a_clear_error(corpus):
    with pytest.raises((SpanQAError, ValueError), match="embedding_precision.*'fp32', 'int8'"):
        SpanStore(data_dir=str(corpus), embedding_precision="int4")


def _everything():
    from components.stores.base import Selection

    return Selection()
