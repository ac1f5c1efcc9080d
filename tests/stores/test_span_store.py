"""The memory store: store objects of one YAML share one loaded index, and the process lets it go with them."""

import gc

from components.stores import span_store
from components.stores.span_store import SpanStore


def test_stores_share_one_index_and_the_registry_does_not_keep_it(tmp_path):
    corpus = tmp_path / "kb"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n\nThe Hub Mini controls 48 devices.\n")
    retriever_store = SpanStore(data_dir=str(corpus), cache_dir=str(tmp_path / "cache"), progress=False)
    widener_store = SpanStore(data_dir=str(corpus), cache_dir=str(tmp_path / "cache"), progress=False)
    assert retriever_store.open() is widener_store.open()  # one load for the retriever, expander and widener
    assert widener_store.stats["built"] is True  # the second store reused the first one's build
    keys = [k for k in span_store._OPEN if k[0] == str(corpus.resolve())]
    assert len(keys) == 1
    del retriever_store, widener_store
    gc.collect()
    assert not [k for k in span_store._OPEN if k[0] == str(corpus.resolve())]  # no index held forever
