"""The one filter model of spanqa: Haystack's filter syntax, validated before any query, with ONE meaning that both
stores compile from (``matches`` for the memory store's mask, ``components.stores.pgvector.filters`` for SQL). A filter
either means the same in both stores or is refused with one clear sentence — at YAML load, on the command line or as
a 4xx — never a traceback at query time.

Syntax (https://docs.haystack.deepset.ai/docs/metadata-filtering)::

    {"field": "meta.status", "operator": "==", "value": "current"}
    {"operator": "AND", "conditions": [{...}, {...}]}          # also OR; NOT = not (all of the conditions)

The model:

- **fields** are document metadata, ``meta.<name>`` (front matter, PDF/HTML/DOCX fields, ``meta.doc_id``); a name
  is letters, digits, ``_`` and ``-`` (at most 64). Nested names (``meta.a.b``), fields outside ``meta`` (``content``,
  ``id``) and a chunk's own fields (``char_start``, ``page``, …: they differ per chunk, not per document) are refused;
- **values** are a string (no NUL, ≤ 10,000 characters), a finite number (|x| ≤ 2⁵³), a boolean or null; ``in`` /
  ``not in`` take a list (≤ 1,000) of such values of one type (null may join any);
- ``==`` is JSON equality: same type (a boolean never equals a number, a number equals the same number written as
  an integer or a float), a list or object field equals no scalar; ``== null`` matches a missing field or null.
  ``!=`` is its negation (so a missing field is ``!= "x"``). ``in`` is ``==`` to any member; ``not in`` its negation;
- ``>``, ``>=``, ``<``, ``<=`` take a number (the field must be a number) or an ISO date ``YYYY-MM-DD[THH:MM[:SS]]``
  (the field must be a string in the same form; compared character by character, as ISO dates sort); a field of
  another type never matches;
- nesting at most ``MAX_DEPTH`` levels and ``MAX_CONDITIONS`` comparisons.

Usage::

    from components.core.retrieval.filters import check_filters, matches

    check_filters({"field": "meta.status", "operator": "==", "value": "current"})   # fine
    check_filters({"field": "meta.status", "operator": "~=", "value": "x"})         # SpanQAError naming '~='
    matches({"field": "meta.version", "operator": ">=", "value": 2}, {"version": 3})  # True
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from components.core.errors import SpanQAError

COMPARISONS = ("==", "!=", ">", ">=", "<", "<=", "in", "not in")
ORDERED = (">", ">=", "<", "<=")
LOGICAL = ("AND", "OR", "NOT")
EXAMPLE = '{"field": "meta.status", "operator": "==", "value": "current"}'
MAX_DEPTH = 16
MAX_CONDITIONS = 256
MAX_LIST = 1_000
MAX_STRING = 10_000
MAX_NUMBER = 2 ** 53
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?")
# a chunk's own fields: they differ between the chunks of one document, so a document-level filter cannot use them
CHUNK_FIELDS = frozenset({"chunk_id", "char_start", "char_end", "kind", "level", "page", "heading_path"})


def _bad(where: str, path: str, what: str) -> None:
    raise SpanQAError(f"Invalid metadata filter ({where}) at {path}: {what}. Use Haystack filter syntax, e.g. "
                      f"{EXAMPLE}, or {{\"operator\": \"AND\", \"conditions\": [ ... ]}}; operators: "
                      f"{', '.join(COMPARISONS)}; logical: {', '.join(LOGICAL)}.")


def _kind(value: Any) -> str | None:
    """``str`` / ``number`` / ``bool`` / ``null`` of an allowed scalar, else None."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "str"
    return None


def _check_scalar(where: str, path: str, value: Any) -> str:
    kind = _kind(value)
    if kind is None:
        _bad(where, path, f"a value must be a string, number, boolean or null, got {type(value).__name__}")
    if kind == "number" and (not math.isfinite(value) or abs(value) > MAX_NUMBER):
        _bad(where, path, f"the number {value!r} is not finite or larger than 2^53")
    if kind == "str":
        if "\x00" in value:
            _bad(where, path, "a string value contains a NUL character")
        if len(value) > MAX_STRING:
            _bad(where, path, f"a string value is longer than {MAX_STRING:,} characters")
    return kind


def field_name(field: Any, where: str = "filters", path: str = "filters") -> str:
    """``meta.status`` → ``status``; anything else is refused with the reason."""
    if not isinstance(field, str) or not field:
        _bad(where, path, "a comparison needs a 'field' such as \"meta.status\"")
    if not field.startswith("meta."):
        _bad(where, path, f"field {field[:80]!r} is not document metadata; filters apply to metadata fields "
                          f"written meta.<name> (e.g. meta.status, meta.doc_id)")
    name = field[5:]
    if not NAME.fullmatch(name):
        _bad(where, path, f"field {field[:80]!r}: a metadata name is letters, digits, '_' and '-' (at most 64; "
                          f"nested names such as meta.a.b are not supported)")
    if name in CHUNK_FIELDS:
        _bad(where, path, f"field {field!r} belongs to each chunk, not to the document; filter on document fields")
    return name


def check_filters(filters: Any, where: str = "filters", path: str = "filters", depth: int = 0,
                  _count: list | None = None) -> None:
    """Raise ``SpanQAError`` unless ``filters`` is ``None`` or a filter of the model above."""
    if filters is None and depth == 0:
        return
    count = _count if _count is not None else [0]
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
            check_filters(c, where, f"{path}.conditions[{i}]", depth + 1, count)
        return
    if op not in COMPARISONS:
        _bad(where, path, f"unknown operator {op[:40]!r}")
    count[0] += 1
    if count[0] > MAX_CONDITIONS:
        _bad(where, path, f"more than {MAX_CONDITIONS} comparisons")
    field_name(filters.get("field"), where, path)
    if "value" not in filters:
        _bad(where, path, "a comparison needs a 'value'")
    extra = set(filters) - {"operator", "field", "value"}
    if extra:
        _bad(where, path, f"unexpected key(s) {sorted(extra)}")
    value = filters["value"]
    if op in ("in", "not in"):
        if not isinstance(value, list):
            _bad(where, path, f"'{op}' needs a list value, got {type(value).__name__}")
        if len(value) > MAX_LIST:
            _bad(where, path, f"'{op}' lists at most {MAX_LIST:,} values")
        kinds = {_check_scalar(where, f"{path}.value[{i}]", v) for i, v in enumerate(value)} - {"null"}
        if len(kinds) > 1:
            _bad(where, path, f"'{op}' needs values of one type, got {' and '.join(sorted(kinds))}")
        return
    kind = _check_scalar(where, f"{path}.value", value)
    if op in ORDERED and not (kind == "number" or (kind == "str" and ISO_DATE.fullmatch(value))):
        _bad(where, path, f"'{op}' needs a number or an ISO date (YYYY-MM-DD), got {value!r:.80}")


# -- the meaning, evaluated on one document's metadata (the memory store's mask) -----------------------------
def _equal(have: Any, want: Any) -> bool:
    if want is None:
        return have is None
    if isinstance(have, bool) or isinstance(want, bool):
        return isinstance(have, bool) and isinstance(want, bool) and have == want
    if isinstance(want, (int, float)):
        return isinstance(have, (int, float)) and have == want
    return isinstance(have, str) and have == want


def _ordered(op: str, have: Any, want: Any) -> bool:
    if isinstance(want, str):  # an ISO date: the field must be one too
        if not (isinstance(have, str) and ISO_DATE.fullmatch(have)):
            return False
    elif isinstance(have, bool) or not isinstance(have, (int, float)) or (isinstance(have, float)
                                                                          and not math.isfinite(have)):
        return False
    return {">": have > want, ">=": have >= want, "<": have < want, "<=": have <= want}[op]


def matches(filters: dict | None, meta: dict) -> bool:
    """Whether a document with metadata ``meta`` passes ``filters`` (already checked)."""
    if not filters:
        return True
    op = filters["operator"]
    if op == "AND":
        return all(matches(c, meta) for c in filters["conditions"])
    if op == "OR":
        return any(matches(c, meta) for c in filters["conditions"])
    if op == "NOT":
        return not all(matches(c, meta) for c in filters["conditions"])
    have = meta.get(filters["field"][5:])
    value = filters["value"]
    if op == "==":
        return _equal(have, value)
    if op == "!=":
        return not _equal(have, value)
    if op == "in":
        return any(_equal(have, v) for v in value)
    if op == "not in":
        return not any(_equal(have, v) for v in value)
    return _ordered(op, have, value)


def parse_filters(text: str, where: str = "--filters") -> dict | None:
    """A filter given as JSON text (the command line), checked; a clear error for JSON that does not parse."""
    try:
        filters = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpanQAError(f"{where} is not valid JSON ({exc.msg} at character {exc.pos}); pass e.g. '{EXAMPLE}'.") from None
    except RecursionError:
        raise SpanQAError(f"{where} is nested too deeply to read (at most {MAX_DEPTH} levels are allowed); pass "
                          f"e.g. '{EXAMPLE}'.") from None
    check_filters(filters, where)
    return filters
