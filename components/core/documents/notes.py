"""Situating notes written by a generator (``context_notes: generator``): one short sentence per chunk that places it
in its document ("From the 2025 enterprise terms, section 9, on refunds for annual contracts"), indexed before the
chunk with the model-free note — never part of a span.

One generator call per chunk, cached by the hash of (model, prompt version, title, heading path, chunk text) in a
JSON file, so re-indexing, another store over the same files or a changed neighbour costs nothing: only chunks never
seen are written. The notes are attached to the documents (``layout["notes"]``, keyed ``"start-end"``) before
indexing, so both stores keep them and a document's fingerprint changes when its notes do.

Usage::

    writer = NoteWriter({"backend": "local", "model": "HuggingFaceTB/SmolLM2-135M-Instruct"}, ".spanqa/notes.json")
    written = writer.annotate(documents, settings, progress=True)   # notes now in doc.layout["notes"]
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from components.core.errors import SpanQAError

PROMPT_VERSION = 1
PROMPT = ("Document: {title}\nSection: {path}\n\nPassage:\n{chunk}\n\n"
          "Write one short sentence that situates this passage within the document, to help find it in a search. "
          "Name the document and the section. Answer with that sentence only.")
GENERATOR_KEYS = ("backend", "model", "local_path", "device", "base_url", "api_key_env", "timeout",
                  "max_new_tokens", "cache_file")
MAX_NOTE_CHARS = 300


def note_key(notes_model: str, title: str, path: list[str], chunk: str) -> str:
    payload = json.dumps([notes_model, PROMPT_VERSION, title, path, chunk], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def clean_note(text: str) -> str:
    """The first line of what the model wrote, without quotes, at most ``MAX_NOTE_CHARS`` characters."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line.strip("\"'“”").strip()[:MAX_NOTE_CHARS]


def check_generator_config(component: str, config: Any) -> dict:
    """The ``context_generator:`` mapping, checked: one paragraph naming what is wrong."""
    if not isinstance(config, dict) or not config.get("model"):
        raise SpanQAError(f"{component}: context_notes: generator needs `context_generator:` with at least a model, "
                          f"e.g. {{backend: local, model: HuggingFaceTB/SmolLM2-135M-Instruct}} (or backend: openai "
                          f"with base_url and model). Fix the store's section of the pipeline YAML.")
    unknown = sorted(set(config) - set(GENERATOR_KEYS))
    if unknown:
        raise SpanQAError(f"{component}: unknown key(s) {unknown} in `context_generator:` (allowed: "
                          f"{', '.join(GENERATOR_KEYS)}). Fix the store's section of the pipeline YAML.")
    return dict(config)


class NoteWriter:
    """Writes, caches and attaches the generator's notes."""

    def __init__(self, config: dict, cache_file: str | Path):
        self.config = dict(config)
        self.cache_file = Path(cache_file)
        self.generator = None
        self.calls = 0  # generator calls made by this writer (what the cache saves shows here)
        self.cache: dict[str, str] = {}
        if self.cache_file.exists():
            try:
                self.cache = json.loads(self.cache_file.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                self.cache = {}  # a damaged cache only costs time: start afresh

    @staticmethod
    def model_of(config: dict) -> str:
        """What names the notes (part of the index key and of each note's cache key)."""
        return f"{config.get('backend', 'local')}:{config['model']}:{config.get('max_new_tokens', 48)}"

    @property
    def model(self) -> str:
        return self.model_of(self.config)

    def _generate(self, title: str, path: list[str], chunk: str) -> str:
        from components.core.backends.generation import make_generator

        if self.generator is None:
            params = {k: self.config[k] for k in ("model", "local_path", "device", "base_url", "api_key_env",
                                                   "timeout") if self.config.get(k) is not None}
            self.generator = make_generator(self.config.get("backend", "local"), component="document_store "
                                            "(context_generator)", **params)
            self.generator.warm_up()
        prompt = PROMPT.format(title=title or "(untitled)", path=" › ".join(path) or "(none)", chunk=chunk)
        self.calls += 1
        out = self.generator.generate([{"role": "user", "content": prompt}],
                                      max_new_tokens=int(self.config.get("max_new_tokens", 48)))
        return clean_note(out.text)

    def annotate(self, documents: list, settings, progress: bool = False) -> int:
        """Put a note for every chunk of ``documents`` into ``doc.layout["notes"]``; returns how many were written
        now (the rest came from the cache). Saved every 16 notes, so an interrupted run resumes."""
        from components.core.documents.layout import heading_path
        from components.core.retrieval.index import split_document

        work = []
        for doc in documents:
            _, _, chunks = split_document(doc, settings)
            title = str(doc.meta.get("title") or "")
            for c in chunks:
                path = heading_path(doc.layout, c.start)
                work.append((doc, c, note_key(self.model, title, path, doc.text[c.start:c.end]), title, path))
        missing = [w for w in work if w[2] not in self.cache]
        bar = None
        if progress and missing:
            from tqdm import tqdm

            bar = tqdm(total=len(missing), desc="context notes", unit="chunk")
        try:
            for n, (doc, c, key, title, path) in enumerate(missing, start=1):
                self.cache[key] = self._generate(title, path, doc.text[c.start:c.end])
                if bar is not None:
                    bar.update(1)
                if n % 16 == 0:
                    self.save()
        finally:
            if bar is not None:
                bar.close()
            self.save()
        for doc, c, key, _, _ in work:
            doc.layout = {**doc.layout, "notes": {**doc.layout.get("notes", {}), f"{c.start}-{c.end}": self.cache[key]}}
        return len(missing)

    def save(self) -> None:
        self.cache_file.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.cache_file.parent, prefix=f".{self.cache_file.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(self.cache, fh, ensure_ascii=False)
        os.replace(tmp, self.cache_file)
