"""The Hayhooks ``PipelineWrapper`` of a spanqa pipeline: one ``QueryRunner``, warmed once, shared by every request.

``run_api(query)`` returns exactly ``public(result)`` — the object ``run.py --json`` prints — for the REST
route and the MCP tool; ``run_chat_completion`` answers OpenAI-compatible chat with the answer text and its
sources, or "not found in the source". Requests before warm-up and indexing have finished are refused with
503; a question over the YAML's limit with 413 (``limits.check_question``).

A wrapper class is made per deployment by ``wrapper_class(config)``: Hayhooks instantiates the class itself
(``create_pipeline_wrapper_instance``), so the settings travel as a class attribute.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from hayhooks import BasePipelineWrapper, get_last_user_message

# Answers computed at once: one per core. More threads only fight over the GIL (and the event loop with them:
# /ready waited seconds behind 100 answers); the others wait on this semaphore, which releases the GIL.
ANSWERING = threading.BoundedSemaphore(max(1, os.cpu_count() or 1))

from components.app.runner import NOT_FOUND_TEXT, QueryRunner, public
from components.serving.auth import requester_groups, requester_name
from components.serving.limits import Refused, check_question, classify_failure, one_line


@dataclass
class ServingConfig:
    """What ``run.py --serve`` decided: the loaded pipeline and the per-run options that apply to queries."""

    name: str
    pipeline: Any
    spec: dict[str, Any]
    max_question_chars: int
    audit_log: str | None = None
    answer_cache_ttl_s: float | None = None
    min_confidence: float | None = None
    top_k: int | None = None
    filters: dict | None = None


@dataclass
class Readiness:
    """Where warm-up stands: ``starting`` → ``warming`` → ``ready`` (or ``failed`` with a one-line reason)."""

    state: str = "starting"
    reason: str = "starting: models and the index are not loaded yet"
    warm_ups: int = 0
    error: BaseException | None = None  # what made warm-up fail (run.py --serve reports it and exits 2)
    warm_up_ms: dict[str, float] = field(default_factory=dict)
    index: dict[str, Any] = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        return self.state == "ready"

    def as_json(self, name: str, index: dict[str, Any] | None = None) -> dict[str, Any]:
        """What ``/ready`` says. Without ``index`` (a request without a key): whether the server is ready and its
        version — never a file name, a skip reason or a count of documents. With a key, ``index`` is what
        that key may know of the index (``readable_index``), and the state's reason and timings are added."""
        bare = {"ready": self.ready, "state": self.state, "version": spanqa_version()}
        if index is None:
            return bare
        return {**bare, "reason": self.reason, "pipeline": name, "warm_ups": self.warm_ups,
                "warm_up_ms": self.warm_up_ms, "index": index}


def spanqa_version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("spanqa")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def readable_index(store, rule, groups: list[str], summary: dict[str, Any]) -> dict[str, Any]:
    """What a key holder of ``groups`` may know of the index: how many documents it may read, and how many
    files were skipped (their names and reasons are for the operator: ``run.py --index``, the server log)."""
    forbidden = store.forbidden_documents(rule, frozenset(groups)) if rule is not None else frozenset()
    return {"documents": len(set(store.document_ids()) - forbidden), "skipped": len(summary.get("skipped") or [])}


def index_summary(stats: dict[str, Any]) -> dict[str, Any]:
    """The JSON-friendly part of a store's stats (counts, whether built or loaded, seconds, skipped files)."""
    keep = ("documents", "chunks", "built", "seconds", "found")
    out = {k: stats[k] for k in keep if k in stats}
    out["skipped"] = [list(s) for s in stats.get("skipped") or []]
    return out


def chat_field(text: Any) -> str:
    """A value from a document (a file name, a citation, an answer) on one line of a chat reply: control characters
    — ANSI escapes, a newline in a file name that would forge a citation line — shown as escapes, never sent."""
    from components.app.render import plain

    return plain(text).replace("\n", "\\n").replace("\t", "\\t")


def chat_text(result: dict[str, Any]) -> str:
    """A chat reply for one result: the answer and its sources (doc id and character offsets), or the abstention.

    A retrieval pipeline (no reader) answers with its top passages. Every value taken from a document is
    ``chat_field``-escaped."""
    if "verdict" not in result:
        docs = result.get("documents") or []
        if not docs:
            return NOT_FOUND_TEXT
        lines = [f"[{i}] {chat_field(d['doc_id'])} (chars {d['char_start']}–{d['char_end']}): "
                 f"{chat_field(one_line(d['text'], 200))}"
                 for i, d in enumerate(docs[:3], start=1)]
        return "Top passages:\n" + "\n".join(lines)
    if result.get("answer") is None:
        reason = result.get("reason")
        return NOT_FOUND_TEXT + (f" ({one_line(reason, 200)})" if reason else "")
    sources = list(dict.fromkeys((chat_field(s["doc_id"]), s["char_start"], s["char_end"],
                                  chat_field((s.get("location") or {}).get("cite") or "") or None)
                                 for s in result.get("spans") or []))
    cited = "\n".join(f"[{i}] {cite + ',' if cite and cite != doc else doc} chars {start}–{end}"
                      for i, (doc, start, end, cite) in enumerate(sources, start=1))
    text = f"{chat_field(result['answer'])}\n\nSources:\n{cited}" if cited else chat_field(result["answer"])
    for conflict in result.get("conflicts") or []:  # the sources disagree: the other value and where it stands
        first = (conflict.get("spans") or [{}])[0]
        where = chat_field((first.get("location") or {}).get("cite") or first.get("doc_id"))
        text += (f"\n\nBut another source says {chat_field(conflict['answer'])!r}: {where}, chars "
                 f"{first.get('char_start')}–"
                 f"{first.get('char_end')}")
    return text


class SpanQAPipelineWrapper(BasePipelineWrapper):
    """Hayhooks wrapper around one spanqa ``QueryRunner`` (thread-safe: one warmed pipeline for all threads)."""

    config: ServingConfig | None = None

    def setup(self) -> None:
        """Wrap the already loaded pipeline (``run.py`` loads it first, so YAML errors are one paragraph)."""
        cfg = self.config
        if cfg is None:
            raise RuntimeError("SpanQAPipelineWrapper needs a ServingConfig: make the class with wrapper_class().")
        self.pipeline = cfg.pipeline
        self.runner = QueryRunner(cfg.pipeline, audit_log=cfg.audit_log, answer_cache_ttl_s=cfg.answer_cache_ttl_s)
        if cfg.min_confidence is not None and self.runner.verifier:
            cfg.pipeline.get_component(self.runner.verifier).min_confidence = cfg.min_confidence
        self.readiness = Readiness()
        self._warm_lock = threading.Lock()

    def warm_up(self) -> Readiness:
        """Load the models and the index once per process (later calls return at once)."""
        with self._warm_lock:
            if self.readiness.state in ("ready", "failed"):
                return self.readiness
            self.readiness.state, self.readiness.reason = "warming", "warming up: loading models and indexing"
            start = time.perf_counter()
            try:
                self.readiness.warm_up_ms = self.runner.warm_up()
                self.readiness.warm_ups += 1
                self.readiness.index = index_summary(self.runner.store().stats)
            except Exception as exc:  # noqa: BLE001 - told to clients by /ready and 503s, one line
                self.readiness.state, self.readiness.reason = "failed", f"warm-up failed: {classify_failure(exc)[1]}"
                self.readiness.error = exc
                return self.readiness
            self.readiness.warm_up_ms["total"] = round((time.perf_counter() - start) * 1000, 1)
            self.readiness.state, self.readiness.reason = "ready", "ready"
            return self.readiness

    def _require_ready(self) -> None:
        if not self.readiness.ready:
            raise Refused(503, f"not ready ({self.readiness.reason}); retry when GET /ready answers 200",
                          headers={"Retry-After": "2"})

    def access_rule(self):
        """The access rule of the pipeline's retriever (who may read which document)."""
        return self.runner.pipeline.get_component(self.runner.retriever).access_rule

    def run_api(self, query: str) -> dict:
        """
        Answer a question from the pipeline's sources, with the answer span's document and character offsets.

        Returns the spanqa result: answer (null when not found in the source), verdict, reason, confidence,
        spans [{doc_id, char_start, char_end, text}], route, documents, models, timings_ms.

        Args:
            query: The question, in natural language.
        """
        question = check_question(query, self.config.max_question_chars)
        self._require_ready()
        with ANSWERING:  # at most one answer per core computes; the rest wait without holding the GIL
            try:
                result = self.runner.ask(question, filters=self.config.filters, top_k=self.config.top_k,
                                         groups=requester_groups(), principal=requester_name())
            except Exception as exc:  # noqa: BLE001 - a status and one line for the client (504 timeout, 502, 500)
                raise Refused(*classify_failure(exc)) from exc
        return public(result)

    def run_chat_completion(self, model: str, messages: list[dict], body: dict) -> str:
        """OpenAI-compatible chat: the last user message is the question; the reply is ``chat_text``. A refusal
        keeps its status (the OpenAI router turns any other exception into a 500)."""
        from fastapi import HTTPException

        try:
            return chat_text(self.run_api(get_last_user_message(messages) or ""))
        except Refused as exc:
            raise HTTPException(status_code=exc.status, detail=exc.reason, headers=exc.headers or None) from None


def wrapper_class(config: ServingConfig) -> type[SpanQAPipelineWrapper]:
    """A ``PipelineWrapper`` class bound to ``config``, for Hayhooks to instantiate and ``setup()``."""
    return type("PipelineWrapper", (SpanQAPipelineWrapper,), {"config": config, "__module__": __name__})
