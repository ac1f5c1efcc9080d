"""Haystack metadata filters checked before they are used: a malformed filter or an unknown operator is one
clear sentence (``SpanQAError``), not a ``FilterError`` traceback at query time or a filter silently ignored.

Haystack's syntax (https://docs.haystack.deepset.ai/docs/metadata-filtering)::

    {"field": "meta.status", "operator": "==", "value": "current"}
    {"operator": "AND", "conditions": [{...}, {...}]}

Usage::

    from components.core.retrieval.filters import check_filters

    check_filters({"field": "meta.status", "operator": "==", "value": "current"})   # fine
    check_filters({"field": "meta.status", "operator": "~=", "value": "x"})         # SpanQAError naming '~='
"""

from __future__ import annotations

import json
from typing import Any

from components.core.errors import SpanQAError

COMPARISONS = ("==", "!=", ">", ">=", "<", "<=", "in", "not in")
LOGICAL = ("AND", "OR", "NOT")
EXAMPLE = '{"field": "meta.status", "operator": "==", "value": "current"}'
MAX_DEPTH = 32


def _bad(where: str, path: str, what: str) -> None:
    raise SpanQAError(f"Invalid metadata filter ({where}) at {path}: {what}. Use Haystack filter syntax, e.g. "
                      f"{EXAMPLE}, or {{\"operator\": \"AND\", \"conditions\": [ ... ]}}; operators: "
                      f"{', '.join(COMPARISONS)}; logical: {', '.join(LOGICAL)}.")


def check_filters(filters: Any, where: str = "filters", path: str = "filters", depth: int = 0) -> None:
    """Raise ``SpanQAError`` unless ``filters`` is ``None`` or a well-formed Haystack filter."""
    if filters is None and depth == 0:
        return
    if depth > MAX_DEPTH:
        _bad(where, path, f"nested deeper than {MAX_DEPTH} levels")
    if not isinstance(filters, dict):
        _bad(where, path, f"expected an object, got {type(filters).__name__}")
    op = filters.get("operator")
    if not isinstance(op, str):
        _bad(where, path, "missing 'operator'")
    if op in LOGICAL:
        conditions = filters.get("conditions")
        if not isinstance(conditions, list) or not conditions:
            _bad(where, path, f"'{op}' needs a non-empty 'conditions' list")
        extra = set(filters) - {"operator", "conditions"}
        if extra:
            _bad(where, path, f"unexpected key(s) {sorted(extra)} next to '{op}'")
        for i, c in enumerate(conditions):
            check_filters(c, where, f"{path}.conditions[{i}]", depth + 1)
        return
    if op not in COMPARISONS:
        _bad(where, path, f"unknown operator {op!r}")
    field = filters.get("field")
    if not isinstance(field, str) or not field:
        _bad(where, path, "a comparison needs a 'field' such as \"meta.status\"")
    if "value" not in filters:
        _bad(where, path, "a comparison needs a 'value'")
    extra = set(filters) - {"operator", "field", "value"}
    if extra:
        _bad(where, path, f"unexpected key(s) {sorted(extra)}")
    value = filters["value"]
    if op in ("in", "not in") and not isinstance(value, list):
        _bad(where, path, f"'{op}' needs a list value, got {type(value).__name__}")
    if op in (">", ">=", "<", "<=") and not isinstance(value, (int, float, str)) or isinstance(value, bool) and op in (
            ">", ">=", "<", "<="):
        _bad(where, path, f"'{op}' needs a number or an ISO date, got {value!r}")


def parse_filters(text: str, where: str = "--filters") -> dict | None:
    """A filter given as JSON text (the command line), checked; a clear error for JSON that does not parse."""
    try:
        filters = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpanQAError(f"{where} is not valid JSON ({exc.msg} at character {exc.pos}); pass e.g. '{EXAMPLE}'.") from None
    check_filters(filters, where)
    return filters
