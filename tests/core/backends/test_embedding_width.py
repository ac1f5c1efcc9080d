"""The vectors' width read from a sentence-transformers folder's configs, without loading the model."""

import json

from components.core.backends.models import load_sentence_transformer, resolve_model, sentence_embedding_dimension


def folder(tmp_path, modules, configs):
    (tmp_path / "modules.json").write_text(json.dumps(
        [{"idx": i, "name": str(i), "path": path, "type": f"sentence_transformers.models.{kind}"}
         for i, (kind, path) in enumerate(modules)]))
    for path, config in configs.items():
        (tmp_path / path).mkdir()
        (tmp_path / path / "config.json").write_text(json.dumps(config))
    return str(tmp_path)


def test_the_shipped_embedder_width_is_the_loaded_models():
    path = resolve_model("sentence-transformers/all-MiniLM-L6-v2").path
    model = load_sentence_transformer(path)
    get = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    assert sentence_embedding_dimension(path) == int(get()) == 384


def test_pooling_modes_multiply_and_a_dense_layer_sets_the_width(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    two_modes = folder(tmp_path / "a",
                       [("Transformer", ""), ("Pooling", "1_Pooling")],
                       {"1_Pooling": {"embedding_dimension": 256, "pooling_mode": ["mean", "max"]}})
    assert sentence_embedding_dimension(two_modes) == 512
    legacy = folder(tmp_path / "b",
                    [("Transformer", ""), ("Pooling", "1_Pooling"), ("Dense", "2_Dense"), ("Normalize", "3_N")],
                    {"1_Pooling": {"word_embedding_dimension": 384, "pooling_mode_cls_token": True,
                                   "pooling_mode_mean_tokens": False},
                     "2_Dense": {"in_features": 384, "out_features": 128}})
    assert sentence_embedding_dimension(legacy) == 128


def test_an_unknown_module_or_no_configs_mean_ask_the_model(tmp_path):
    (tmp_path / "a").mkdir()
    unknown = folder(tmp_path / "a", [("Transformer", ""), ("Pooling", "1_P"), ("LSTM", "2_L")],
                     {"1_P": {"embedding_dimension": 8, "pooling_mode": "mean"}, "2_L": {"hidden_dim": 4}})
    assert sentence_embedding_dimension(unknown) is None
    assert sentence_embedding_dimension(str(tmp_path / "nothing-here")) is None
