"""Mutations of the shipped pipeline YAMLs, for the loader fuzz test (tests) and benchmark (benchmarks).

Each mutation replaces, deletes or retypes one node of a pipeline tree, or corrupts its text; the loader must
either build the pipeline or raise spanqa's own one-paragraph error — never another exception, never a hang.
"""

from __future__ import annotations

import copy
import random
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "pipelines").glob("*.yaml"))
ODD_VALUES = [None, -1, 0, -5, 1e309, "five", "", [], {}, [1, 2], {"type": None}, {"type": "this.Zen"}, True,
              "os.system", "components.core", {"init_parameters": []}, 10**12, "../../etc", {"a": {"b": {"c": 1}}}]


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, (*prefix, i))


def _set(tree, path, value, delete=False):
    node = tree
    for key in path[:-1]:
        node = node[key]
    if delete:
        del node[path[-1]]
    else:
        node[path[-1]] = value


def mutate(rng: random.Random) -> str:
    """One mutated pipeline YAML text."""
    source = rng.choice(SHIPPED)
    text = source.read_text(encoding="utf-8")
    kind = rng.random()
    if kind < 0.12:  # text-level damage
        pos = rng.randrange(len(text))
        return rng.choice([text[:pos], text[:pos] + rng.choice(["\t", ":", "&a", "*a", "- ", "{", "]", "!!python/object:os.system"]) + text[pos:],
                           text.replace("type:", "type: this.Zen #", 1)])
    tree = yaml.safe_load(text)
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        paths = [p for p in _paths(tree) if p]
        path = rng.choice(paths)
        try:
            if rng.random() < 0.2:
                _set(tree, path, None, delete=True)
            else:
                _set(tree, path, copy.deepcopy(rng.choice(ODD_VALUES)))
        except (KeyError, IndexError, TypeError):
            continue
    return yaml.safe_dump(tree, sort_keys=False)
