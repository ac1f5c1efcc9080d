"""YAML limits: aliases, expanded size and file size are bounded, ordinary anchors still work."""

import time

import pytest

from components.core.safe_yaml import YamlLimitError, count_nodes, load


def test_ordinary_anchor_loads_like_safe_load():
    assert load("a: &x {k: 1}\nb: *x\n") == {"a": {"k": 1}, "b": {"k": 1}}


def test_billion_laughs_is_refused_fast():
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        levels.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i-1}"] * 9) + "]")
    start = time.perf_counter()
    with pytest.raises(YamlLimitError, match="aliases"):
        load("\n".join(levels))
    assert time.perf_counter() - start < 2


def test_few_aliases_but_huge_expansion_is_refused():
    # 2 aliases per level, 12 levels = 24 aliases (under the alias limit) but 2**12 leaves
    levels = ["l0: &l0 [x, x]"] + [f"l{i}: &l{i} [*l{i-1}, *l{i-1}]" for i in range(1, 13)]
    with pytest.raises(YamlLimitError, match="values"):
        load("\n".join(levels), max_nodes=1000)


def test_size_limit_and_node_count():
    with pytest.raises(YamlLimitError, match="larger than 10 bytes"):
        load("key: a long value", max_bytes=10)
    assert count_nodes({"a": [1, 2]}, 100) == 5  # dict, key, list, 1, 2
