"""The filter model of ``components.core.retrieval.filters`` compiled to SQL over a chunk table's ``meta`` jsonb.

Every comparison is a boolean that is never NULL (a missing field compares false, so ``NOT`` and ``!=`` mean the
same as in memory), casts are guarded by ``jsonb_typeof`` inside ``CASE`` (a text field never reaches a numeric
cast), field names and values are parameters (never spliced into the statement), and ISO dates compare with
``COLLATE "C"`` (byte order: what Python's string comparison does for these characters).

Usage::

    where, params = where_clause(filters, "c0")   # sql.Composed "WHERE ...", tuple of parameters
"""

from __future__ import annotations

import json
from typing import Any

from psycopg import sql

from components.core.retrieval.filters import check_filters

_ORDERED_SQL = {">": ">", ">=": ">=", "<": "<", "<=": "<="}


def _leaf(f: dict, col: sql.Composable) -> tuple[sql.Composable, list[Any]]:
    name = f["field"][5:]
    op, value = f["operator"], f["value"]
    field = sql.SQL("({} -> %s)").format(col)

    def equal(v: Any) -> tuple[sql.Composable, list[Any]]:
        if v is None:
            return sql.SQL("({f} IS NULL OR {f} = 'null'::jsonb)").format(f=field), [name, name]
        return sql.SQL("coalesce({f} = %s::jsonb, false)").format(f=field), [name, json.dumps(v, ensure_ascii=False)]

    if op in ("==", "!="):
        cond, args = equal(value)
        return (cond if op == "==" else sql.SQL("NOT ") + cond), args
    if op in ("in", "not in"):
        parts = [equal(v) for v in value]
        if not parts:
            return sql.SQL("false" if op == "in" else "true"), []
        cond = sql.SQL("(") + sql.SQL(" OR ").join(p[0] for p in parts) + sql.SQL(")")
        args = [a for p in parts for a in p[1]]
        return (cond if op == "in" else sql.SQL("NOT ") + cond), args
    cmp = sql.SQL(_ORDERED_SQL[op])
    text = sql.SQL("({} ->> %s)").format(col)
    if isinstance(value, str):  # an ISO date against a string field in the same form
        cond = sql.SQL("(CASE WHEN jsonb_typeof({f}) = 'string' AND {t} ~ %s THEN {t} COLLATE \"C\" {cmp} %s "
                       "COLLATE \"C\" ELSE false END)").format(f=field, t=text, cmp=cmp)
        from components.core.retrieval.filters import ISO_DATE

        return cond, [name, name, "^(" + ISO_DATE.pattern + ")$", name, value]
    cond = sql.SQL("(CASE WHEN jsonb_typeof({f}) = 'number' THEN ({t})::numeric {cmp} %s::numeric "
                   "ELSE false END)").format(f=field, t=text, cmp=cmp)
    return cond, [name, name, repr(value) if isinstance(value, float) else str(value)]


def _node(f: dict, col: sql.Composable) -> tuple[sql.Composable, list[Any]]:
    op = f["operator"]
    if op in ("AND", "OR", "NOT"):
        parts = [_node(c, col) for c in f["conditions"]]
        joined = sql.SQL("(") + sql.SQL(" OR " if op == "OR" else " AND ").join(p[0] for p in parts) + sql.SQL(")")
        return (sql.SQL("NOT ") + joined if op == "NOT" else joined), [a for p in parts for a in p[1]]
    return _leaf(f, col)


def where_clause(filters: dict | None, alias: str) -> tuple[sql.Composable | None, tuple]:
    """``(WHERE …, parameters)`` of ``filters`` (checked first) on ``<alias>.meta``; ``(None, ())`` for no filter."""
    if not filters:
        return None, ()
    check_filters(filters)
    cond, args = _node(filters, sql.SQL("{}.meta").format(sql.Identifier(alias)))
    return sql.SQL(" WHERE ") + cond, tuple(args)


def selection_clause(selection, alias: str, id_table=None) -> tuple[sql.Composable | None, tuple]:
    """``(WHERE …, parameters)`` of a ``Selection``: its user filter (the filter model, checked) AND the documents
    it leaves out or keeps (superseded, not readable by the asker) — any number of them, never spliced into the
    statement and never through the user filter's limits. ``id_table(ids)``: a table (of ``doc_id``)
    holding a set of ids, so a large set costs nothing per query (``PgSpanStore`` keeps one per connection);
    without it the ids are an array parameter."""
    where, params = where_clause(selection.filters, alias)
    doc_id = sql.SQL("({}.meta ->> 'doc_id')").format(sql.Identifier(alias))
    extra: list[sql.Composable] = []
    args: list = list(params)
    for ids, negate in ((selection.exclude, True), (selection.only, False)):
        if ids is None or (negate and not ids):
            continue
        if id_table is not None:  # an indexed anti-/semi-join: constant per-query cost however many ids
            member = sql.SQL("EXISTS (SELECT 1 FROM {} AS x WHERE x.doc_id = {})").format(id_table(ids), doc_id)
        else:  # a hashed subplan, built once per statement
            member = sql.SQL("{} IN (SELECT unnest(%s::text[]))").format(doc_id)
            args.append(sorted(ids))
        extra.append(sql.SQL("NOT ") + member if negate else member)
    if not extra:
        return where, params
    joined = sql.SQL(" AND ").join(extra)
    clause = (where + sql.SQL(" AND ") + joined) if where is not None else (sql.SQL(" WHERE ") + joined)
    return clause, tuple(args)
