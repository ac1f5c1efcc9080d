"""Load a pipeline YAML into a Haystack Pipeline, with one-paragraph errors instead of tracebacks."""

from __future__ import annotations

import copy
import importlib
import inspect
from pathlib import Path
from typing import Any

import yaml

from components.core.errors import SpanQAError

ALLOWED_MODULES = ["components"]


def read_spec(path: str | Path) -> dict[str, Any]:
    """The YAML of ``path`` as a dict, or a SpanQAError naming the file and the problem."""
    p = Path(path)
    if not p.is_file():
        raise SpanQAError(f"Pipeline file '{path}' does not exist. Pass one of pipelines/*.yaml or your own copy.")
    try:
        spec = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise SpanQAError(f"Pipeline file '{path}' is not valid YAML: {str(exc).replace(chr(10), ' ')}.") from None
    if not isinstance(spec, dict) or not isinstance(spec.get("components"), dict):
        raise SpanQAError(f"Pipeline file '{path}' has no 'components' mapping; see pipelines/retrieval.yaml for the format.")
    return spec


def _check_component(path: str | Path, name: str, data: Any) -> None:
    """Fail early, naming the component, when its type cannot be imported or a parameter is unknown."""
    if not isinstance(data, dict) or "type" not in data:
        raise SpanQAError(f"Pipeline file '{path}': component '{name}' needs a 'type' and 'init_parameters'.")
    type_name = data["type"]
    module_name, _, cls_name = type_name.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module_name), cls_name)
    except (ImportError, AttributeError, ValueError):
        raise SpanQAError(
            f"Pipeline file '{path}': component '{name}' has unknown type '{type_name}'. Use a class from the "
            f"'components' package (e.g. components.retrievers.hybrid_retriever.HybridRetriever) or from Haystack, "
            f"and check the spelling."
        ) from None
    params = data.get("init_parameters") or {}
    sig = inspect.signature(cls.__init__)
    accepts_any = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    known = [p for p in sig.parameters if p != "self"]
    unknown = sorted(set(params) - set(known))
    if unknown and not accepts_any:
        raise SpanQAError(
            f"Pipeline file '{path}': component '{name}' ({cls_name}) has unknown parameter(s) {unknown}. "
            f"Valid parameters: {', '.join(known)}."
        )
    for key, value in params.items():  # nested objects, e.g. a document_store
        if isinstance(value, dict) and "type" in value and "init_parameters" in value:
            _check_component(path, f"{name}.{key}", value)


def _nested_stores(spec: dict[str, Any]):
    for comp in spec["components"].values():
        for value in (comp.get("init_parameters") or {}).values():
            if isinstance(value, dict) and str(value.get("type", "")).endswith("SpanStore"):
                yield value.setdefault("init_parameters", {})


def prepare_spec(spec: dict[str, Any], data: str | None = None, cache_dir: str | None = None) -> dict[str, Any]:
    """A copy of ``spec`` with the data location (and cache) of every SpanStore replaced when given."""
    spec = copy.deepcopy(spec)
    for params in _nested_stores(spec):
        if data is not None:
            params["data_dir"] = str(data)
        if cache_dir is not None:
            params["cache_dir"] = str(cache_dir)
    return spec


def load_pipeline(path: str | Path, data: str | None = None, cache_dir: str | None = None):
    """``(pipeline, spec)`` from a YAML file; ``data`` replaces the corpus location of every SpanStore."""
    from haystack import Pipeline
    from haystack.core.errors import DeserializationError, PipelineError

    spec = prepare_spec(read_spec(path), data, cache_dir)
    for name, comp in spec["components"].items():
        _check_component(path, name, comp)
    try:
        pipeline = Pipeline.from_dict(spec, allowed_modules=ALLOWED_MODULES)
    except SpanQAError as exc:
        raise SpanQAError(f"Pipeline file '{path}': {exc}") from None
    except (DeserializationError, PipelineError, TypeError, ValueError) as exc:
        raise SpanQAError(f"Pipeline file '{path}' could not be built: {str(exc).splitlines()[0]}") from None
    return pipeline, spec
