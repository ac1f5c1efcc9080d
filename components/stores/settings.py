"""The settings both span stores take from YAML — declared once, here.

``SpanStore`` and ``PgSpanStore`` take these as keyword arguments beside their own (a cache folder; a
database), check them once through ``StoreSettings.from_params`` and serialise them back with
``to_params``: a YAML switches stores by changing the ``type:`` line and the store's own keys only.

```python
from components.stores.settings import StoreSettings

settings = StoreSettings.from_params("SpanStore", {"data_dir": "data/kb", "max_chunk_chars": 600})
settings.limits.max_pages      # 2000: PDF pages a file may have (``conversion: {max_pages: ...}``)
settings.to_params()["max_chunk_chars"]  # 600
```
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass, fields
from typing import Any

from components.core.backends.models import PRECISIONS
from components.core.params import ParameterError, check_choice, check_fraction, check_positive_int
from components.core.retrieval.loaders import LoadLimits

CONTEXT_NOTES = ("headings", "none", "generator")  # what is indexed before each chunk (docs/documents.md)
# the `conversion:` settings: PDF pages, DOCX archive size, and the smallest text size a reader sees (points)
CONVERSION_KEYS = ("max_pages", "max_unpacked_bytes", "min_visible_pt")


@dataclass(frozen=True)
class StoreSettings:
    """What both stores index and how: the corpus, the splitter, the analyzer, the embedder, the load limits."""

    data_dir: str = "data/kb"
    embedding_model: str = "sentence-transformers/all-MiniLM-L6-v2"
    query_prefix: str = ""
    passage_prefix: str = ""
    max_chunk_chars: int = 800
    chunk_overlap: float = 0.15
    language: str | None = "english"
    stopwords: str | list[str] | None = "english"
    embed_title: bool = True
    batch_size: int = 64
    device: str | None = None
    embedding_precision: str = "fp32"
    progress: bool = True
    max_document_bytes: int = LoadLimits.max_document_bytes
    max_front_matter_bytes: int = LoadLimits.max_front_matter_bytes
    follow_links_outside: bool = False
    context_notes: str = "headings"
    conversion: dict[str, int] | None = None  # {max_pages, max_unpacked_bytes}; missing keys take LoadLimits'
    context_generator: dict | None = None

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @classmethod
    def check_names(cls, component: str, names: set[str]) -> None:
        unknown = sorted(names - set(cls.names()))
        if unknown:
            hints = [m for key in unknown for m in difflib.get_close_matches(key, cls.names(), n=1)]
            raise ParameterError(
                f"{component}: unknown parameter(s) {unknown}"
                + (f" (did you mean {hints}?)" if hints else "")
                + f". A span store takes its own keys and these settings: {', '.join(cls.names())}. "
                  "Fix the store's section of the pipeline YAML.")

    @classmethod
    def from_params(cls, component: str, params: dict[str, Any]) -> StoreSettings:
        """Checked settings from a store's keyword arguments; an unknown key or a bad value is one paragraph
        naming the component, the key and what to write instead."""
        cls.check_names(component, set(params))
        settings = cls(**params)
        settings.check(component)
        if settings.context_notes == "generator":
            from components.core.documents.notes import check_generator_config

            checked = check_generator_config(component, settings.context_generator)
            object.__setattr__(settings, "context_generator", checked)
        object.__setattr__(settings, "conversion", settings._conversion(component))
        object.__setattr__(settings, "follow_links_outside", bool(settings.follow_links_outside))
        return settings

    def check(self, component: str) -> None:
        check_fraction(component, "chunk_overlap", self.chunk_overlap, high=0.5, high_open=True)
        check_choice(component, "embedding_precision", self.embedding_precision, PRECISIONS)
        check_choice(component, "context_notes", self.context_notes, CONTEXT_NOTES)
        for key in ("max_chunk_chars", "batch_size", "max_document_bytes", "max_front_matter_bytes"):
            check_positive_int(component, key, getattr(self, key))

    def _conversion(self, component: str) -> dict[str, int]:
        conversion = self.conversion
        if conversion is not None and not isinstance(conversion, dict):
            raise ParameterError(f"{component}: parameter 'conversion' is {conversion!r}, but it must be a mapping "
                                 f"such as {{max_pages: 2000}}. Fix the store's section of the pipeline YAML.")
        conversion = dict(conversion or {})
        unknown = sorted(set(conversion) - set(CONVERSION_KEYS))
        if unknown:
            raise ParameterError(f"{component}: unknown key(s) {unknown} in `conversion:` (allowed: "
                                 f"{', '.join(CONVERSION_KEYS)}); fix the store's section of the pipeline YAML.")
        for key in CONVERSION_KEYS:
            conversion.setdefault(key, getattr(LoadLimits, key))
            if key == "min_visible_pt":
                value = conversion[key]
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 72:
                    raise ParameterError(f"{component}: conversion.min_visible_pt is {value!r}, but it must be a "
                                         f"number of points from 0 to 72 (text smaller than it is left out as "
                                         f"unreadable; 0 keeps every size); fix the store's section of the YAML.")
            else:
                check_positive_int(component, f"conversion.{key}", conversion[key])
        return conversion

    @property
    def limits(self) -> LoadLimits:
        conversion = self.conversion or {}
        return LoadLimits(self.max_document_bytes, self.max_front_matter_bytes, bool(self.follow_links_outside),
                          **{k: conversion.get(k, getattr(LoadLimits, k)) for k in CONVERSION_KEYS})

    def to_params(self) -> dict[str, Any]:
        return asdict(self)
