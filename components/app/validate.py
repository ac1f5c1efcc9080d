"""Check a pipeline YAML tree before anything is imported or built: shape, allowed types, parameter types.

Every problem is one paragraph (``SpanQAError``): the file, the component, the parameter, what was found,
what was expected and how to fix it. Order matters for safety: a ``type:`` is checked against the allowed
module prefixes *before* its module is imported, so a YAML cannot run an arbitrary module's import-time code.

Usage::

    from components.app.validate import validate_spec

    validate_spec("pipelines/extractive.yaml", spec)     # returns the imported classes by component name
"""

from __future__ import annotations

import collections.abc
import dataclasses
import importlib
import inspect
import types
import typing
from pathlib import Path
from typing import Any

from components.core.errors import SpanQAError
from components.stores.base import MOVED_TYPES

# a component's type must live in one of these packages (checked before importing anything)
ALLOWED_TYPE_PREFIXES = ("components.", "haystack.")
TOP_LEVEL_KEYS = {"components", "connections", "metadata", "max_runs_per_component", "connection_type_validation",
                  "inputs", "outputs"}
_NO_VALUE = object()
# metadata.spanqa: what run.py (and the server) read from a pipeline file
SPANQA_METADATA = {
    "audit_log": (str | None, lambda v: v is None or bool(v.strip()), "a file path or null"),
    "answer_cache_ttl_s": (float | None, lambda v: v is None or v >= 0, "a number of seconds ≥ 0 or null"),
    "allow_paths_outside": (bool, lambda v: True, "true or false"),
    "max_question_chars": (int, lambda v: v >= 1, "a whole number of characters ≥ 1"),
    # the share of questions without an answer in the sources that --calibrate fits the confidence for
    "unanswerable_share": (float | None, lambda v: v is None or 0 < v < 1,
                           "a number strictly between 0 and 1, or null"),
    # the server's cross-origin allow-list (empty: no page on another origin may call it) and the extra host
    # names it answers to besides IP literals and localhost (components/serving/origin_guard.py)
    "cors_origins": (list, lambda v: all(isinstance(o, str) and o.startswith(("http://", "https://")) for o in v),
                     "a list of origins such as 'https://intranet.example.org'"),
    "allowed_hosts": (list, lambda v: all(isinstance(h, str) and h.strip() and "/" not in h for h in v),
                      "a list of host names (optionally name:port)"),
}


def _where(path: str | Path, name: str | None = None, cls: str | None = None) -> str:
    where = f"Pipeline file '{path}'"
    if name:
        where += f", component '{name}'" + (f" ({cls})" if cls else "")
    return where


def _type_name(hint: Any) -> str:
    if hint is type(None):
        return "null"
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(hint))
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(hint))
    if origin in (list, tuple, set):
        args = typing.get_args(hint)
        return f"a list of {_type_name(args[0])}" if args else "a list"
    if origin is dict:
        return "a mapping"
    return {int: "a whole number", float: "a number", str: "a string", bool: "true or false"}.get(
        hint, getattr(hint, "__name__", str(hint)))


def matches(value: Any, hint: Any) -> bool:
    """Whether a YAML value fits a type annotation (serialised objects, i.e. mappings, fit class types)."""
    if hint is Any or hint is inspect.Parameter.empty:
        return True
    if hint is type(None) or hint is None:
        return value is None
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(matches(value, a) for a in typing.get_args(hint))
    if origin is typing.Literal:
        return value in typing.get_args(hint)
    if origin in (list, tuple, set, collections.abc.Sequence):
        args = typing.get_args(hint)
        return isinstance(value, list) and (not args or args[0] is Ellipsis or all(matches(v, args[0]) for v in value))
    if origin is dict:
        args = typing.get_args(hint)
        return isinstance(value, dict) and (len(args) < 2 or all(matches(v, args[1]) for v in value.values()))
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if hint in (list, dict):
        return isinstance(value, hint)
    if isinstance(hint, type):  # a component, a store, a Secret, an enum: serialised as a mapping or a name
        return isinstance(value, (dict, str)) or isinstance(value, hint)
    return True  # a hint we do not model: Haystack's own deserialisation decides


def _import_type(path: str | Path, name: str, type_name: Any):
    if not isinstance(type_name, str) or not type_name.strip():
        raise SpanQAError(f"{_where(path, name)} needs 'type' to be a class path such as "
                          f"components.retrievers.hybrid_retriever.HybridRetriever (got {type_name!r}).")
    if not type_name.startswith(ALLOWED_TYPE_PREFIXES) or ".." in type_name:
        raise SpanQAError(
            f"{_where(path, name)} has type '{type_name}', which is outside the allowed packages "
            f"({', '.join(p.rstrip('.') for p in ALLOWED_TYPE_PREFIXES)}). Nothing was imported. Use a class from "
            f"the 'components' package or from Haystack; a pipeline YAML can name only those.")
    if type_name in MOVED_TYPES:
        raise SpanQAError(f"{_where(path, name)} has type '{type_name}', which has moved to "
                          f"'{MOVED_TYPES[type_name]}'. Write `type: {MOVED_TYPES[type_name]}` there.")
    module_name, _, cls_name = type_name.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module_name), cls_name)
    except (ImportError, AttributeError, ValueError, TypeError):
        raise SpanQAError(
            f"{_where(path, name)} has unknown type '{type_name}'. Use a class from the 'components' package "
            f"(e.g. components.retrievers.hybrid_retriever.HybridRetriever) or from Haystack, and check the spelling."
        ) from None
    if not inspect.isclass(cls):
        raise SpanQAError(f"{_where(path, name)}: '{type_name}' is not a class; name a component class.")
    return cls


def _hints(cls) -> dict[str, Any]:
    try:
        hints = typing.get_type_hints(cls.__init__)
        settings = getattr(cls, "settings_class", None)  # a store's shared settings (a dataclass)
        return {**typing.get_type_hints(settings), **hints} if settings is not None else hints
    except Exception:  # noqa: BLE001 - unresolvable annotations: check names only
        return {}


def _parameters(cls) -> tuple[list[str], dict[str, Any], bool]:
    """The parameter names a class takes, their defaults, and whether it takes any name: a class whose
    ``**settings`` are a dataclass (``settings_class``, the stores) takes exactly that dataclass's fields."""
    sig = inspect.signature(cls.__init__)
    known = [p for p, v in sig.parameters.items() if p != "self" and v.kind not in (v.VAR_POSITIONAL, v.VAR_KEYWORD)]
    defaults = {p: sig.parameters[p].default for p in known}
    accepts_any = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    settings = getattr(cls, "settings_class", None)
    if settings is not None and dataclasses.is_dataclass(settings):
        for f in dataclasses.fields(settings):
            if f.name not in defaults:
                known.append(f.name)
                defaults[f.name] = f.default if f.default is not dataclasses.MISSING else inspect.Parameter.empty
        accepts_any = False
    return known, defaults, accepts_any


def _check_secret(path: str | Path, name: str, data: dict) -> None:
    """``{type: env_var, env_vars: [NAME, ...], strict: bool}`` — the only way a YAML names a secret."""
    names = data.get("env_vars")
    if set(data) - {"type", "env_vars", "strict"} or not isinstance(names, list) or not names or \
            not all(isinstance(n, str) and n for n in names) or not isinstance(data.get("strict", True), bool):
        raise SpanQAError(f"{_where(path, name)} is a secret: write it as {{type: env_var, env_vars: [SPANQA_PG_DSN], "
                          f"strict: false}} (the names of environment variables, never the secret itself).")


def check_component(path: str | Path, name: str, data: Any):
    """Check one component (or nested object) mapping; returns its class."""
    if not isinstance(data, dict) or "type" not in data:
        got = "a mapping without 'type'" if isinstance(data, dict) else f"{type(data).__name__} {data!r:.40}"
        raise SpanQAError(f"{_where(path, name)} must be a mapping with 'type' and 'init_parameters' "
                          f"(got {got}); see pipelines/retrieval.yaml for the format.")
    unknown_keys = set(data) - {"type", "init_parameters"}
    if unknown_keys:
        raise SpanQAError(f"{_where(path, name)} has unknown key(s) {sorted(map(str, unknown_keys))}; "
                          f"a component has only 'type' and 'init_parameters'.")
    cls = _import_type(path, name, data["type"])
    params = data.get("init_parameters", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise SpanQAError(f"{_where(path, name, cls.__name__)}: 'init_parameters' must be a mapping of parameter "
                          f"names to values (got {type(params).__name__} {params!r:.60}).")
    known, defaults, accepts_any = _parameters(cls)
    unknown = sorted(str(k) for k in set(params) - set(known))
    if unknown and not accepts_any:
        raise SpanQAError(f"{_where(path, name, cls.__name__)} has unknown parameter(s) {unknown}. "
                          f"Valid parameters: {', '.join(known)}.")
    required = [p for p in known if defaults[p] is inspect.Parameter.empty]
    absent = [p for p in required if p not in params]
    if absent:
        raise SpanQAError(f"{_where(path, name, cls.__name__)} needs parameter(s) {absent} in 'init_parameters' "
                          f"(they have no default); see pipelines/extractive.yaml for an example.")
    hints = _hints(cls)
    for key, value in params.items():
        if isinstance(value, dict) and value.get("type") == "env_var":  # a Haystack Secret read from the env
            _check_secret(path, f"{name}.{key}", value)
            continue
        if isinstance(value, dict) and "type" in value:  # a nested object, e.g. a document_store
            check_component(path, f"{name}.{key}", value)
            continue
        hint = hints.get(key)
        if hint is not None and not matches(value, hint):
            default = defaults.get(key, _NO_VALUE)
            example = "" if default in (_NO_VALUE, inspect.Parameter.empty) else f" (its default is {default!r})"
            raise SpanQAError(
                f"{_where(path, name, cls.__name__)}: parameter '{key}' is {value!r:.80} "
                f"({type(value).__name__}), but it must be {_type_name(hint)}{example}. Fix that value in the YAML.")
    return cls


def _check_connections(path: str | Path, connections: Any, names: set[str]) -> None:
    if connections is None:
        return
    if not isinstance(connections, list):
        raise SpanQAError(f"{_where(path)}: 'connections' must be a list of {{sender, receiver}} mappings.")
    for i, c in enumerate(connections):
        if not isinstance(c, dict) or not isinstance(c.get("sender"), str) or not isinstance(c.get("receiver"), str):
            raise SpanQAError(f"{_where(path)}: connection #{i + 1} must be a mapping with string 'sender' and "
                              f"'receiver' (e.g. sender: retriever.bm25_documents, receiver: joiner.bm25); got {c!r:.80}.")
        for end in ("sender", "receiver"):
            comp = c[end].split(".", 1)[0]
            if comp not in names:
                raise SpanQAError(f"{_where(path)}: connection #{i + 1} {end} '{c[end]}' names no component; "
                                  f"components are: {', '.join(sorted(names))}.")


def validate_spec(path: str | Path, spec: Any) -> dict[str, type]:
    """Raise ``SpanQAError`` unless ``spec`` (the parsed YAML) is a well-formed, allowed pipeline."""
    if not isinstance(spec, dict) or not isinstance(spec.get("components"), dict) or not spec["components"]:
        raise SpanQAError(f"{_where(path)} has no 'components' mapping; see pipelines/retrieval.yaml for the format.")
    unknown = sorted(str(k) for k in set(spec) - TOP_LEVEL_KEYS)
    if unknown:
        raise SpanQAError(f"{_where(path)} has unknown top-level key(s) {unknown}; allowed: {', '.join(sorted(TOP_LEVEL_KEYS))}.")
    mrpc = spec.get("max_runs_per_component", 100)
    if not isinstance(mrpc, int) or isinstance(mrpc, bool) or mrpc < 1:
        raise SpanQAError(f"{_where(path)}: max_runs_per_component is {mrpc!r}, but it must be a whole number ≥ 1.")
    metadata = spec.get("metadata") or {}
    if not isinstance(metadata, dict) or not isinstance(metadata.get("spanqa") or {}, dict):
        raise SpanQAError(f"{_where(path)}: 'metadata' (and metadata.spanqa) must be mappings.")
    for key, value in (metadata.get("spanqa") or {}).items():
        expected = SPANQA_METADATA.get(key)
        if expected is None:
            raise SpanQAError(f"{_where(path)}: metadata.spanqa has unknown key '{key}'; known: "
                              f"{', '.join(sorted(SPANQA_METADATA))}.")
        hint, check, what = expected
        if not (matches(value, hint) and check(value)):
            raise SpanQAError(f"{_where(path)}: metadata.spanqa.{key} is {value!r:.60}, but it must be {what}.")
    classes = {}
    for name, comp in spec["components"].items():
        if not isinstance(name, str) or not name or "." in name:
            raise SpanQAError(f"{_where(path)}: component name {name!r} must be a non-empty string without dots.")
        classes[name] = check_component(path, name, comp)
    _check_connections(path, spec.get("connections"), set(spec["components"]))
    _check_io(path, spec, set(spec["components"]))
    return classes


def _check_io(path: str | Path, spec: dict, names: set[str]) -> None:
    """Hayhooks' ``inputs`` / ``outputs`` (deploy-yaml): ``name: component.socket`` (inputs also a list of them)."""
    for section in ("inputs", "outputs"):
        mapping = spec.get(section)
        if mapping is None:
            continue
        if not isinstance(mapping, dict):
            raise SpanQAError(f"{_where(path)}: '{section}' must map names to component.socket, e.g. "
                              f"{section}: {{query: [retriever.query, reader.query]}}.")
        for key, target in mapping.items():
            targets = target if isinstance(target, list) and section == "inputs" else [target]
            for t in targets:
                comp = t.split(".", 1)[0] if isinstance(t, str) and "." in t else None
                if comp not in names:
                    raise SpanQAError(f"{_where(path)}: {section}.{key} is {t!r:.80}, but it must be component.socket "
                                      f"naming one of the components: {', '.join(sorted(names))}.")


def resolve_models(pipeline) -> dict[str, str]:
    """Resolve (never load) every model a built pipeline names: ``{component: what would serve it}``.

    A model that cannot be found is an error unless the component names an offline fallback, which is then
    reported as ``fallback:<name>``, exactly as a run would announce it."""
    from components.core.backends.models import ModelUnavailableError, resolve_model

    served: dict[str, str] = {}
    for name, comp in pipeline.walk():
        store = getattr(comp, "document_store", None)
        if getattr(store, "embedding_model", None):
            precision = getattr(getattr(store, "config", None), "embedding_precision", "fp32")
            served[f"{name}.document_store"] = resolve_model(store.embedding_model,
                                                             component=f"{name}.document_store").describe(precision)
        backend = getattr(comp, "backend", None)
        model = getattr(comp, "model", None)
        if not isinstance(model, str) or backend in ("lexical", "openai", "llm"):
            continue
        try:
            precision = getattr(comp, "precision", "fp32")
            served[name] = resolve_model(model, getattr(comp, "local_path", None), name).describe(precision)
        except ModelUnavailableError:
            fallback = getattr(comp, "fallback", None)
            if not fallback:
                raise
            served[name] = f"fallback:{fallback} (model {model} not found)"
            substitute = getattr(comp, "fallback_model", None) if fallback == "trained" else None
            if substitute:  # a fallback that is itself a model: it must resolve too
                served[name] += ": " + resolve_model(substitute, component=f"{name} fallback").describe(precision)
    return served
