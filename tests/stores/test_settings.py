"""The store settings are declared once (StoreSettings) and both stores implement one Protocol."""

import inspect

import pytest

from components.core.params import ParameterError
from components.stores.base import SpanIndexStore, StoreBase
from components.stores.pgvector.store import PgSpanStore
from components.stores.settings import StoreSettings
from components.stores.span_store import SpanStore


def test_both_stores_take_and_serialise_the_same_settings():
    mem = SpanStore(data_dir="data/kb", max_chunk_chars=600, conversion={"max_pages": 7}, progress=False)
    pg = PgSpanStore(data_dir="data/kb", max_chunk_chars=600, conversion={"max_pages": 7}, progress=False)
    assert mem.config == pg.config
    assert mem.config.limits.max_pages == 7 and mem.config.limits.max_unpacked_bytes == 200_000_000
    mem_params, pg_params = mem.to_dict()["init_parameters"], pg.to_dict()["init_parameters"]
    shared = set(StoreSettings.names())
    assert shared <= set(mem_params) and shared <= set(pg_params)
    assert {k: mem_params[k] for k in shared} == {k: pg_params[k] for k in shared}
    assert set(mem_params) - shared == {"cache_dir"}
    assert SpanStore.from_dict(mem.to_dict()).config == mem.config
    assert PgSpanStore.from_dict(pg.to_dict()).config == pg.config


def test_settings_are_not_spelled_out_in_the_stores():
    for cls in (SpanStore, PgSpanStore):
        params = inspect.signature(cls.__init__).parameters
        assert not set(params) & (set(StoreSettings.names()) - {"data_dir"}), cls


def test_an_unknown_setting_names_the_close_one_and_the_store():
    with pytest.raises(ParameterError) as err:
        PgSpanStore(data_dir="data/kb", max_chunk_char=600)
    message = str(err.value)
    assert message.startswith("PgSpanStore: unknown parameter(s) ['max_chunk_char'] (did you mean ['max_chunk_chars']?)")
    assert "Fix the store's section of the pipeline YAML." in message


@pytest.mark.parametrize("bad, needle", [
    ({"conversion": 3}, "parameter 'conversion' is 3, but it must be a mapping"),
    ({"conversion": {"max_page": 3}}, "unknown key(s) ['max_page'] in `conversion:`"),
    ({"chunk_overlap": 0.5}, "'chunk_overlap'"),
    ({"batch_size": 0}, "'batch_size'"),
    ({"embedding_precision": "int4"}, "'embedding_precision'"),
    ({"context_notes": "summaries"}, "'context_notes'"),
])
def test_bad_settings_are_the_same_error_in_both_stores(bad, needle):
    messages = []
    for cls in (SpanStore, PgSpanStore):
        with pytest.raises(ParameterError) as err:
            cls(data_dir="data/kb", **bad)
        assert needle in str(err.value)
        messages.append(str(err.value).replace(cls.__name__, "<store>"))
    assert messages[0] == messages[1]


def test_both_stores_implement_the_protocol_without_loading_a_model():
    for store in (SpanStore(data_dir="data/kb"), PgSpanStore(data_dir="data/kb")):
        assert isinstance(store, SpanIndexStore) and isinstance(store, StoreBase)
        assert "_embedder_model" not in store.__dict__  # the check reads no property that loads weights
    assert not isinstance(object(), SpanIndexStore)


def test_from_dict_refuses_an_unknown_key_before_deserialising_it():
    # without the check Haystack would try to import the class named inside the unknown key first
    for store in (SpanStore(data_dir="data/kb"), PgSpanStore(data_dir="data/kb")):
        data = store.to_dict()
        data["init_parameters"]["hook"] = {"type": "nowhere.at_all.Hook", "init_parameters": {}}
        with pytest.raises(ParameterError, match=rf"{type(store).__name__}: unknown parameter\(s\) \['hook'\]"):
            type(store).from_dict(data)
