"""Load a pipeline YAML into a Haystack Pipeline, with one-paragraph errors instead of tracebacks."""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path
from typing import Any

import yaml

from components.app.validate import validate_spec
from components.core import safe_yaml
from components.core.errors import SpanQAError
from components.core.logs import quiet_logger

ALLOWED_MODULES = ["components"]
MAX_PIPELINE_BYTES = 1_000_000  # a pipeline is a page of YAML; anything larger is a mistake or an attack


def read_spec(path: str | Path) -> dict[str, Any]:
    """The YAML of ``path`` as a dict, or a SpanQAError naming the file and the problem."""
    p = Path(path)
    if not p.is_file():
        raise SpanQAError(f"Pipeline file '{path}' does not exist. Pass one of pipelines/*.yaml or your own copy.")
    if p.stat().st_size > MAX_PIPELINE_BYTES:
        raise SpanQAError(f"Pipeline file '{path}' is {p.stat().st_size:,} bytes, over the {MAX_PIPELINE_BYTES:,}-byte "
                          f"limit for a pipeline YAML; is it the right file?")
    try:
        spec = safe_yaml.load(p.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise SpanQAError(f"Pipeline file '{path}' is not UTF-8 text (byte {exc.start}); save it as UTF-8.") from None
    except safe_yaml.YamlLimitError as exc:
        raise SpanQAError(f"Pipeline file '{path}' was refused: {exc}. A pipeline needs only a few anchors "
                          f"(&store / *store).") from None
    except yaml.YAMLError as exc:
        raise SpanQAError(f"Pipeline file '{path}' is not valid YAML: {' '.join(str(exc).split())}.") from None
    validate_spec(path, spec)
    return spec


def _inside(path: str, base: Path) -> bool:
    try:
        return Path(os.path.abspath(path)).is_relative_to(base)
    except (OSError, ValueError):
        return False


def check_write_paths(path: str | Path, spec: dict[str, Any], base: str | Path | None = None) -> None:
    """Paths a YAML makes spanqa write to (``metadata.spanqa.audit_log``, a store's ``cache_dir``, ``embedded_dir``
    or ``context_generator.cache_file``) must stay
    inside the working directory, unless ``metadata.spanqa.allow_paths_outside: true``: a shared YAML must not
    make spanqa write anywhere on disk. The command line (``--cache-dir``) may point anywhere."""
    meta = (spec.get("metadata") or {}).get("spanqa") or {}
    if meta.get("allow_paths_outside") is True:
        return
    root = Path(os.path.abspath(base or os.getcwd()))
    targets = [("metadata.spanqa.audit_log", meta.get("audit_log"))]
    targets += [(f"store {key}", p.get(key)) for p in _nested_stores(spec) for key in ("cache_dir", "embedded_dir")]
    targets += [("store context_generator.cache_file", p["context_generator"].get("cache_file"))
                for p in _nested_stores(spec) if isinstance(p.get("context_generator"), dict)]
    for what, target in targets:
        if target is None:
            continue
        if not isinstance(target, str) or not _inside(target, root):
            raise SpanQAError(
                f"Pipeline file '{path}': {what} is {target!r}, outside the working directory {root}. A pipeline "
                f"YAML may write only below the folder it is run from; use a relative path, pass the location on "
                f"the command line (--cache-dir, --no-audit), or set metadata.spanqa.allow_paths_outside: true.")


def _nested_stores(spec: dict[str, Any]):
    for comp in spec["components"].values():
        for value in (comp.get("init_parameters") or {}).values():
            if isinstance(value, dict) and str(value.get("type", "")).endswith("SpanStore"):
                if not isinstance(value.get("init_parameters"), dict):
                    value["init_parameters"] = {}
                yield value["init_parameters"]


def _fill_parameters(node: dict) -> None:
    """``init_parameters`` left out or null means "all defaults" (Haystack itself needs the key)."""
    if not isinstance(node.get("init_parameters"), dict):
        node["init_parameters"] = {}
    for value in node["init_parameters"].values():
        if isinstance(value, dict) and "type" in value:
            _fill_parameters(value)


def prepare_spec(spec: dict[str, Any], data: str | None = None, cache_dir: str | None = None) -> dict[str, Any]:
    """A copy of ``spec`` with the data location (and cache) of every SpanStore replaced when given."""
    spec = copy.deepcopy(spec)
    for key in ("connections", "metadata"):
        if spec.get(key) is None:
            spec[key] = [] if key == "connections" else {}
    for comp in spec["components"].values():
        _fill_parameters(comp)
    for params in _nested_stores(spec):
        if data is not None:
            params["data_dir"] = str(data)
        if cache_dir is not None and "dsn" not in params and "embedded_dir" not in params:
            params["cache_dir"] = str(cache_dir)  # the in-memory store's cache (PostgreSQL has none)
    return spec


def load_pipeline(path: str | Path, data: str | None = None, cache_dir: str | None = None):
    """``(pipeline, spec)`` from a YAML file; ``data`` replaces the corpus location of every SpanStore."""
    from haystack import Pipeline
    from haystack.core.errors import DeserializationError, PipelineError

    raw = read_spec(path)
    check_write_paths(path, prepare_spec(raw, data, None))  # a --cache-dir given by the user may point anywhere
    spec = prepare_spec(raw, data, cache_dir)
    try:
        with quiet_logger("haystack.utils.type_serialization"):  # it logs a traceback before raising: we explain instead
            pipeline = Pipeline.from_dict(spec, allowed_modules=ALLOWED_MODULES)
    except SpanQAError as exc:
        raise SpanQAError(f"Pipeline file '{path}': {exc}") from None
    except (DeserializationError, PipelineError, TypeError, ValueError, KeyError, AttributeError) as exc:
        raise SpanQAError(f"Pipeline file '{path}' could not be built: {explain(exc)}") from None
    return pipeline, spec


_DESERIALIZE = re.compile(r"Couldn't deserialize component '([^']+)' of class '([^']+)'")


def explain(exc: BaseException) -> str:
    """What went wrong, in one line with nothing cut off: Haystack's "Couldn't deserialize component 'x' …
    with the following data: {…}" names no reason by itself, so the component is named and the root cause
    (the last exception of the chain) is what is shown."""
    where, root, seen = "", exc, set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        m = _DESERIALIZE.search(str(exc))
        if m and not where:
            where = f"component '{m.group(1)}' ({m.group(2)}): "
        root = exc
        exc = exc.__cause__ or exc.__context__
    text = " ".join(str(root).split()) or type(root).__name__
    if isinstance(root, KeyError):
        text = f"missing key {text}"
    text = _DESERIALIZE.split(text)[0] if _DESERIALIZE.search(text) else text
    message = where + text
    return message if message.endswith(".") else message + "."
