"""Run questions through a loaded pipeline and shape each result as spanqa's JSON contract.

One result per query (README, "Output"): ``query``, ``documents`` and, for reading pipelines, ``answer``,
``verdict``, ``reason``, ``route``, ``spans``, ``citations``, ``models`` and ``timings_ms``.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import hashlib
import json
import os
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from haystack import tracing
from haystack.tracing import Span, Tracer

from components.core.errors import SpanQAError
from components.core.memo import MISSING, Memo, asker
from components.expanders.sentence_window_expander import SentenceWindowExpander
from components.joiners.rrf_joiner import RRFJoiner
from components.rankers.cross_encoder_ranker import CrossEncoderRanker
from components.readers.extractive_reader import ExtractiveReader
from components.readers.generative_reader import GenerativeReader
from components.retrievers.hybrid_retriever import HybridRetriever
from components.routers.verifier_router import VerifierRouter

NOT_FOUND_TEXT = "not found in the source"
MAX_VERSION_RETRIES = 2  # a question is asked again at most this often when the index changes while it runs


class _TimingSpan(Span):
    def __init__(self):
        self.tags: dict[str, Any] = {}

    def set_tag(self, key: str, value: Any) -> None:
        self.tags[key] = value


# the timings of the run in progress in this thread (or task): a Haystack tracer is process-global, so
# each run collects into its own dict through a context variable and threads never mix their timings
_RUN_TIMINGS: contextvars.ContextVar[dict | None] = contextvars.ContextVar("spanqa_run_timings", default=None)
_TRACER_LOCK = threading.Lock()


class TimingTracer(Tracer):
    """A Haystack tracer that sums the wall time of each component's runs (loops included) into the dict of
    the run in progress (``collect_timings``). It wraps whatever tracer the application had installed, so an
    app's own tracing (Langfuse, OpenTelemetry) keeps working."""

    def __init__(self, inner: Tracer | None = None):
        self.inner = inner

    @contextlib.contextmanager
    def trace(self, operation_name, tags=None, parent_span=None):
        start = time.perf_counter()
        try:
            if self.inner is not None:
                with self.inner.trace(operation_name, tags=tags, parent_span=parent_span) as span:
                    yield span
            else:
                yield _TimingSpan()
        finally:
            ms = _RUN_TIMINGS.get()
            if ms is not None and operation_name == "haystack.component.run" and tags:
                ms[tags.get("haystack.component.name", "?")] += (time.perf_counter() - start) * 1000

    def current_span(self):
        return self.inner.current_span() if self.inner is not None else None


def install_timing_tracer() -> None:
    """Put one ``TimingTracer`` in front of Haystack's tracer, once per process (idempotent, thread-safe)."""
    with _TRACER_LOCK:
        actual = tracing.tracer.actual_tracer
        if isinstance(actual, TimingTracer):
            return
        from haystack.tracing.tracer import NullTracer

        inner = None if actual is None or isinstance(actual, NullTracer) else actual
        tracing.enable_tracing(TimingTracer(inner))


@contextlib.contextmanager
def collect_timings():
    """``with collect_timings() as ms:`` — per-component milliseconds of the pipeline runs inside the block."""
    install_timing_tracer()
    ms: dict[str, float] = defaultdict(float)
    token = _RUN_TIMINGS.set(ms)
    try:
        yield ms
    finally:
        _RUN_TIMINGS.reset(token)


def _by_type(pipeline, *classes: type) -> list[str]:
    """The names of the pipeline's components that are instances of ``classes`` (subclasses too)."""
    return [name for name, comp in pipeline.walk() if isinstance(comp, classes)]


def doc_json(d) -> dict[str, Any]:
    out = {
        "doc_id": d.meta.get("doc_id"),
        "chunk_id": d.meta.get("chunk_id", d.id),
        "char_start": d.meta.get("char_start"),
        "char_end": d.meta.get("char_end"),
        "score": d.score,
        "text": d.content,
    }
    for key in ("page", "heading_path"):  # where the chunk lies in the original file (converted documents)
        if d.meta.get(key):
            out[key] = d.meta[key]
    return out


def unique_doc_ids(documents) -> list[str]:
    """Source-document ids in rank order, each once (chunk rankings → document rankings)."""
    return list(dict.fromkeys(d.meta.get("doc_id") for d in documents))


class QueryRunner:
    """Runs one pipeline for many questions; knows which components play which role by their class."""

    def __init__(self, pipeline, audit_log: str | None = None, answer_cache_ttl_s: float | None = None):
        self.pipeline = pipeline
        # exact repeats of a question (same pipeline, same index, same options) within the TTL are answered from
        # memory; ``None`` or 0 turns the cache off
        self.answer_cache = Memo(maxsize=4096, ttl_s=answer_cache_ttl_s) if answer_cache_ttl_s else None
        self._pipeline_hash = hashlib.sha256(
            json.dumps(pipeline.to_dict(), sort_keys=True, default=str).encode()).hexdigest()[:16]
        self.retriever = next(iter(_by_type(pipeline, HybridRetriever)), None)
        self.joiner = next(iter(_by_type(pipeline, RRFJoiner)), None)
        self.ranker = next(iter(_by_type(pipeline, CrossEncoderRanker)), None)
        self.expander = next(iter(_by_type(pipeline, SentenceWindowExpander)), None)
        # the expander that widens what the verifier doubted (mode "widen"): what was read last, when it ran
        self.widener = next((n for n in _by_type(pipeline, SentenceWindowExpander)
                             if getattr(pipeline.get_component(n), "mode", None) == "widen"), None)
        self.readers = _by_type(pipeline, ExtractiveReader, GenerativeReader)
        self.verifier = next(iter(_by_type(pipeline, VerifierRouter)), None)
        if self.retriever is None:
            from components.core.errors import SpanQAError

            raise SpanQAError("The pipeline has no HybridRetriever component: spanqa needs one to find passages.")
        self.audit_log = Path(audit_log) if audit_log else None
        self._audit_lock = threading.Lock()
        self._warm_lock = threading.Lock()
        self.warmed = False
        self._retrieval: QueryRunner | None = None

    def warm_up(self) -> dict[str, float]:
        """Load models and the index once; returns how long each component took."""
        times = {}
        with self._warm_lock:
            for name, comp in self.pipeline.walk():
                if hasattr(comp, "warm_up"):
                    start = time.perf_counter()
                    comp.warm_up()
                    times[name] = round((time.perf_counter() - start) * 1000, 1)
            self.warmed = True
        return times

    def models(self) -> dict[str, str]:
        return {name: comp.served_by for name, comp in self.pipeline.walk() if getattr(comp, "served_by", "")}

    def confidence_bar(self) -> float | None:
        """The min_confidence in force for this pipeline's answers (None: no bar)."""
        if not self.verifier or not self.readers:
            return None
        return self.pipeline.get_component(self.verifier).confidence_bar(reader_kind(self))

    def store(self):
        return self.pipeline.get_component(self.retriever).document_store

    def abstain_threshold(self) -> float | None:
        """The rerank score below which the pipeline abstains before reading (the one in force)."""
        if not self.ranker:
            return None
        ranker = self.pipeline.get_component(self.ranker)
        return getattr(ranker, "active_threshold", getattr(ranker, "score_threshold", None))

    def retrieval_only(self) -> QueryRunner:
        """A runner over the retrieval part of this pipeline (retriever, joiner, ranker), for retrieval metrics
        of a reading pipeline without paying for reading. Built once from this pipeline's own definition; the
        index and the models are shared (they are memoised), so it costs no second load."""
        if self._retrieval is None:
            from haystack import Pipeline

            from components.app.pipeline_io import ALLOWED_MODULES

            spec = self.pipeline.to_dict()
            keep = {n for n in (self.retriever, self.joiner, self.ranker) if n}
            spec["components"] = {n: c for n, c in spec["components"].items() if n in keep}
            spec["connections"] = [c for c in spec["connections"]
                                   if c["sender"].split(".")[0] in keep and c["receiver"].split(".")[0] in keep]
            self._retrieval = QueryRunner(Pipeline.from_dict(spec, allowed_modules=ALLOWED_MODULES))
        return self._retrieval

    def ask(self, query: str, filters: dict | None = None, top_k: int | None = None,
            retrieval_depth: int | None = None, groups: list[str] | None = None,
            principal: str | None = None) -> dict[str, Any]:
        """Run one question. ``top_k`` cuts the final ranking; ``retrieval_depth`` sets the retriever's lists.

        ``groups``: the asker's groups — only documents they may read are searched, read and cited (None: no
        restriction, a local user). ``principal`` names the asker in the audit log. The answer cache keys on both.

        When the answer is NOT_FOUND and the corpus has superseded documents (left out of retrieval), the
        question is asked once more of those alone: if one of them answers, the result stays NOT_FOUND with
        reason ``only_superseded_sources`` naming them, so the user learns that only an outdated source answers.

        Everything the question memoises (reads, embeddings) is the asker's own (``memo.asker``): another
        asker's repeat of it is computed afresh, so its speed reveals nothing."""
        scope = (principal, None if groups is None else tuple(sorted(set(groups))))
        with asker(None if scope == (None, None) else scope):
            return self._ask_as(query, filters, top_k, retrieval_depth, groups, principal)

    def _ask_as(self, query: str, filters: dict | None, top_k: int | None, retrieval_depth: int | None,
                groups: list[str] | None, principal: str | None) -> dict[str, Any]:
        start = time.perf_counter()
        if not self.warmed:
            self.warm_up()
        version = self.store().current_version()  # read per question: a re-index by any process shows at once
        key = None
        if self.answer_cache is not None:
            scope = None if groups is None else tuple(sorted(set(groups)))
            key = (self._pipeline_hash, version, query, json.dumps(filters, sort_keys=True), top_k, retrieval_depth,
                   scope)
            hit = self.answer_cache.get(key)
            if hit is not MISSING:
                result = copy.deepcopy(hit)
                result["route"] = ["cache:answer", *result.get("route", [])]
                result["timings_ms"] = {"answer_cache": round((time.perf_counter() - start) * 1000, 3)}
                if self.audit_log is not None and self.readers:
                    self._audit(result, principal, groups)
                return result
        result = self._answer_fresh(query, filters, top_k, retrieval_depth, groups)
        # one version from retrieval to the last widening: when a write landed while the question ran, its
        # stages may have read two versions — ask again (bounded), so no answer mixes old and new text
        for _ in range(MAX_VERSION_RETRIES):
            now = self.store().current_version()
            if now == version:
                break
            version = now
            result = self._answer_fresh(query, filters, top_k, retrieval_depth, groups)
            result["route"] = ["reread:index-changed", *result.get("route", [])]
        else:
            if self.store().current_version() != version:
                raise SpanQAError(f"the index changed {MAX_VERSION_RETRIES + 1} times while this question ran; ask "
                                  f"again when the re-index has finished")
        if self.audit_log is not None and self.readers:  # the answer given, once (not one read again)
            self._audit(result, principal, groups)
        if key is not None:
            key = (key[0], version, *key[2:])
            self.answer_cache.put(key, copy.deepcopy(result))
        return result

    def _answer_fresh(self, query: str, filters: dict | None, top_k: int | None,
                      retrieval_depth: int | None, groups: list[str] | None = None) -> dict[str, Any]:
        result = self._ask(query, filters, top_k, retrieval_depth, groups=groups)
        retriever = self.pipeline.get_component(self.retriever)
        if (self.readers and result.get("verdict") == "NOT_FOUND" and retriever.superseded == "exclude"
                and retriever.superseded_documents()):
            old = self._ask(query, filters, top_k, retrieval_depth, superseded="only", groups=groups)
            if old.get("verdict") == "SUPPORTED":
                names = list(dict.fromkeys(s["doc_id"] for s in old["spans"]))
                result.update(
                    reason=f"only_superseded_sources: only {', '.join(names)} (marked superseded) answer(s); "
                           f"current sources do not", rejected_answer=old["answer"], superseded_sources=names,
                    route=[*result["route"], "superseded:only", *old["route"]])
        return result

    def _ask(self, query: str, filters: dict | None, top_k: int | None, retrieval_depth: int | None,
             superseded: str | None = None, groups: list[str] | None = None) -> dict[str, Any]:
        if not self.warmed:
            self.warm_up()
        inputs: dict[str, dict] = {self.retriever: {"query": query}}
        if superseded is not None:
            inputs[self.retriever]["superseded"] = superseded
        if groups is not None:
            inputs[self.retriever]["groups"] = sorted(set(groups))
        if retrieval_depth:
            inputs[self.retriever]["top_k"] = retrieval_depth
        if filters is not None:
            inputs[self.retriever]["filters"] = filters
        for name in [self.ranker, self.verifier, *self.readers]:
            if name:
                inputs[name] = {"query": query}
        last_ranking = self.ranker or self.joiner
        if top_k and last_ranking:
            inputs.setdefault(last_ranking, {})["top_k"] = top_k
        with collect_timings() as ms:
            keep = {n for n in (self.retriever, self.joiner, self.ranker, self.expander, self.widener) if n}
            out = self.pipeline.run(inputs, include_outputs_from=keep | set(self.readers))
        return self._shape(query, out, ms)

    def _shape(self, query: str, out: dict[str, Any], ms: dict[str, float]) -> dict[str, Any]:
        stages: dict[str, list] = {}
        r = out.get(self.retriever, {})
        if r.get("bm25_documents") is not None and self.pipeline.get_component(self.retriever).use_bm25:
            stages["bm25"] = r["bm25_documents"]
        if r.get("dense_documents") is not None and self.pipeline.get_component(self.retriever).use_dense:
            stages["dense"] = r["dense_documents"]
        if self.joiner and "documents" in out.get(self.joiner, {}):
            stages["fused"] = out[self.joiner]["documents"]
        elif r.get("documents") is not None:  # fusion: store — the retriever fused the lists itself
            stages["fused"] = r["documents"]
        if self.ranker and "documents" in out.get(self.ranker, {}):
            stages["reranked"] = out[self.ranker]["documents"]
        final = next((stages[s] for s in ("reranked", "fused", "dense", "bm25") if s in stages), [])
        result: dict[str, Any] = {"query": query, "documents": [doc_json(d) for d in final]}
        result["_stages"] = {s: unique_doc_ids(docs) for s, docs in stages.items()}
        if self.readers:
            result.update(self._answer(out))
            from components.app.locations import add_locations

            for spans in (result["spans"], *(c["spans"] for c in result.get("conflicts") or [])):
                add_locations(spans, self.store().source, getattr(self.store(), "data_dir", None))
            windows = out.get(self.expander, {}).get("documents", []) if self.expander else []
            result["_read"] = [doc_json(w) for w in windows]
            # what the reader read last when the verifier widened (else nothing: ``_read`` was read last) and what it
            # proposed last: where a right answer was lost, for the benchmarks (components.evaluation.docsets)
            widened = (out.get(self.widener, {}).get("documents") or []) if self.widener else []
            result["_read_last"] = [doc_json(w) for w in widened]
            result["_candidates"] = reader_candidates(out, self.readers)
            usage = result.get("usage") or {}
            result["_reader_tokens"] = usage.get("prompt_tokens") or sum(len(w.content.split()) for w in windows)
            # what a full-document reader would be sent instead: the whole source documents of those windows
            store = self.store()
            result["_full_document_tokens"] = sum(store.document_words(d)
                                                  for d in dict.fromkeys(w.meta.get("doc_id") for w in windows))
            no_answer = (out.get(self.ranker, {}).get("no_answer") or [None])[0] if self.ranker else None
            if no_answer is not None:  # the ranker abstained: its best score, not a fused RRF score
                result["_top_score"] = no_answer.meta.get("best_score")
            else:
                top = stages.get("reranked") or stages.get("fused") or []
                # the score the ranker's abstention threshold is on (its best cosine when it kept the fused order)
                result["_top_score"] = top[0].meta.get("rerank_gate", top[0].score) if top else None
        result["models"] = self.models()
        result["timings_ms"] = {k: round(v, 1) for k, v in ms.items()}
        return result

    def _answer(self, out: dict[str, Any]) -> dict[str, Any]:
        final = None
        if self.verifier:
            v = out.get(self.verifier, {})
            final = (v.get("answers") or v.get("not_found") or [None])[0]
        if final is None and self.ranker:
            final = (out.get(self.ranker, {}).get("no_answer") or [None])[0]
        if final is None:  # no verifier in the graph: the reader's best answer, unverified
            for name in self.readers:
                answers = out.get(name, {}).get("answers") or []
                final = answers[0] if answers else None
        meta = dict(getattr(final, "meta", {}) or {})
        data = getattr(final, "data", None)
        verdict = meta.get("verdict") or ("UNVERIFIED" if data else "NOT_FOUND")
        if verdict != "SUPPORTED" and self.verifier:
            data = None
        spans = meta.get("spans") or []
        return {
            "answer": data,
            "verdict": verdict,
            "reason": meta.get("reason", ""),
            # what the reader proposed and the verifier refused (diagnostics only, never an answer)
            "rejected_answer": meta.get("candidate") if verdict == "NOT_FOUND" else None,
            # an answer the confidence bar held back: what was found, where, how sure, and the bar (the page says so)
            "held_back": held_back(meta, spans) if verdict == "NOT_FOUND" else None,
            "route": meta.get("route", []),
            "spans": spans,
            "citations": meta.get("citations", []),
            # other documents' different answers the sources also support (reason "conflict: …"): both are said
            "conflicts": meta.get("conflicts", []),
            "confidence": meta.get("confidence"),  # calibrated P(right); also on a low_confidence refusal
            "score": getattr(final, "score", None),
            "usage": meta.get("usage"),
            "_signals": meta.get("signals"),
            "_supported": meta.get("last_verdict", verdict) == "SUPPORTED" and meta.get("signals") is not None,
        }

    def _audit(self, result: dict[str, Any], principal: str | None = None, groups: list[str] | None = None) -> None:
        record = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "principal": principal,  # who asked (never the key); None: a local, unrestricted user
            "groups": None if groups is None else sorted(set(groups)),
            "query": result["query"],
            "retrieved": [{"doc_id": d["doc_id"], "chunk_id": d["chunk_id"], "score": d["score"]} for d in result["documents"]],
            "answer": result.get("answer"),
            "spans": [{k: s.get(k) for k in ("doc_id", "char_start", "char_end")} for s in result.get("spans", [])],
            "verdict": result.get("verdict"),
            "reason": result.get("reason"),
            "route": result.get("route"),
            "models": result.get("models"),
        }
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        with self._audit_lock:  # one whole line per answer, even from many threads
            self.audit_log.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.audit_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)


def reader_candidates(out: dict[str, Any], readers: list[str]) -> list[dict[str, Any]]:
    """The answers the reader proposed in its last read (best first; its no-answer left out): ``answer``,
    ``score`` (None for a generated answer, which has none) and the ``doc_id`` it was read from (None when a
    generated answer does not say)."""
    found = []
    for name in readers:
        for a in out.get(name, {}).get("answers") or []:
            if getattr(a, "data", None):
                doc = getattr(a, "document", None)
                found.append({"answer": str(a.data), "score": getattr(a, "score", None),
                              "doc_id": (a.meta or {}).get("doc_id") or (doc.meta.get("doc_id") if doc else None)})
    return sorted(found, key=lambda c: -(c["score"] or 0.0))


def reader_kind(runner: QueryRunner) -> str:
    """``generative`` when the pipeline's reader is a GenerativeReader, else ``extractive`` (the calibration file
    keeps one confidence combiner per kind)."""
    from components.readers.generative_reader import GenerativeReader

    readers = [runner.pipeline.get_component(r) for r in runner.readers]
    return "generative" if any(isinstance(r, GenerativeReader) for r in readers) else "extractive"


def held_back(meta: dict[str, Any], spans: list[dict[str, Any]]) -> dict[str, Any] | None:
    """``{answer, doc_id, confidence, min_confidence}`` of a verified answer the confidence bar held back, or None
    (a refusal for any other reason holds nothing back: it was not supported)."""
    bar, confidence = meta.get("min_confidence"), meta.get("confidence")
    if bar is None or confidence is None or not meta.get("candidate") or "confidence:low" not in meta.get("route", []):
        return None
    return {"answer": meta["candidate"], "doc_id": spans[0].get("doc_id") if spans else None,
            "confidence": confidence, "min_confidence": bar}


def public(result: dict[str, Any]) -> dict[str, Any]:
    """The result without internal fields (those starting with an underscore)."""
    return {k: v for k, v in result.items() if not k.startswith("_")}
