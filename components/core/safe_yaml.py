"""YAML with limits: the one way spanqa parses YAML it did not write (pipeline files, front matter).

``yaml.safe_load`` builds no Python objects, but it still expands aliases: a few hundred bytes of nested
``&a [*b, *b, …]`` ("billion laughs") take minutes and gigabytes. ``load`` refuses a text over ``max_bytes``,
more than ``max_aliases`` alias uses, and a result with more than ``max_nodes`` values counted as expanded
(the walk stops at the limit, so a bomb costs at most ``max_nodes`` steps).

Usage::

    from components.core.safe_yaml import YamlLimitError, load

    data = load("a: &x [1, 2]\\nb: *x\\n", max_aliases=4)   # {'a': [1, 2], 'b': [1, 2]}
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_ALIASES = 32
MAX_NODES = 100_000


class YamlLimitError(ValueError):
    """The text is over one of the limits (the message says which, and by how much)."""


def _loader(max_aliases: int):
    class Loader(yaml.SafeLoader):
        def compose_node(self, parent, index):
            if self.check_event(yaml.AliasEvent):
                self.aliases_used = getattr(self, "aliases_used", 0) + 1
                if self.aliases_used > max_aliases:
                    raise YamlLimitError(f"more than {max_aliases} YAML aliases (*name); write the values out instead")
            return super().compose_node(parent, index)

    return Loader


def count_nodes(value: Any, limit: int) -> int:
    """How many values ``value`` holds, each alias counted as often as it is used; stops past ``limit``."""
    seen, stack = 0, [value]
    while stack:
        v = stack.pop()
        seen += 1
        if seen > limit:
            break
        if isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
    return seen


def load(text: str, max_bytes: int | None = None, max_aliases: int = MAX_ALIASES, max_nodes: int = MAX_NODES) -> Any:
    """Parse ``text`` like ``yaml.safe_load`` within the limits; ``YamlLimitError`` or ``yaml.YAMLError`` else."""
    if max_bytes is not None and len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        raise YamlLimitError(f"larger than {max_bytes:,} bytes")
    data = yaml.load(text, Loader=_loader(max_aliases))  # noqa: S506 - a SafeLoader subclass
    if count_nodes(data, max_nodes) > max_nodes:
        raise YamlLimitError(f"more than {max_nodes:,} values once aliases are expanded")
    return data
