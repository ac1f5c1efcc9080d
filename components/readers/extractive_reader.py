"""Extractive question answering over windows: answer spans with offsets into the original documents."""

from __future__ import annotations

import re
import threading
from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.dataclasses import ExtractedAnswer

from components.core.reading import sentence_reader, short_answer
from components.core.text.analysis import Analyzer
from components.core.text.key_terms import content_terms
from components.core.errors import SpanQAError
from components.core.params import check_choice, check_number, check_positive_int
from components.core.memo import MISSING, Memo
from components.core.backends.models import (
    PRECISIONS,
    fallback_label,
    load_hf_model,
    load_sentence_transformer,
    load_spacy,
    resolve_or_fallback,
    torch_device,
)
from components.core.reading.span_decoding import cls_no_answer, complement_no_answer, dedup_by_overlap
from components.core.reading.span_edges import whole_identifier
from components.core.text.splitting import TABLE
from components.readers.answer_spans import (crosses_structure, in_directive, named_rows_only, no_answer_answer,
                                            span_answer, span_meta, table_header)
from components.readers.qa_decoder import QADecoder

logger = logging.getLogger(__name__)

FALLBACKS = ("trained", "sentence")
TRAINED_READER = "spanqa/reader-minilm-l6-squad2"  # models/spanqa-reader-minilm-l6, trained by training/train_reader.py
NO_ANSWER_SCORES = ("cls", "complement")


@component
class ExtractiveReader:
    """
    Extracts answer spans from windows with any ``AutoModelForQuestionAnswering`` (SQuAD 2.0 style).

    All windows of a query are tokenised together with the fast tokenizer (a context longer than
    ``max_seq_length`` tokens overflows into several sequences sharing ``stride`` tokens) and each context's
    sequences are encoded in batches of ``batch_size``, apart from the other contexts, and remembered per
    (question, context): a widening that re-reads a window that was already a whole paragraph runs the model
    only on the text that changed. In each sequence only context tokens can be part of an answer; a span of
    tokens ``i..j`` needs ``j >= i`` and at most ``max_answer_length`` tokens, and scores
    ``sigmoid(calibration_factor * (start_logit[i] + end_logit[j]))`` — the calibration of
    transformers-haystack's ``TransformersExtractiveReader``, so scores of different windows compare.
    The best ``answers_per_seq`` spans of every sequence are pooled, sorted, de-duplicated by character
    overlap within a document (``overlap_threshold``) and cut to ``top_k``. The pure decoding lives in
    ``components.core.reading.span_decoding``.

    Each answer is an ``ExtractedAnswer`` with ``data`` the verbatim text, ``document`` the window and
    ``document_offset`` the span in the window's content; ``meta`` carries ``doc_id``, ``char_start`` and
    ``char_end`` in the ORIGINAL document (window ``meta["char_start"]`` + offset in the window) and
    ``evidence``: the sentence(s) of the window that contain the answer, as ``{doc_id, char_start,
    char_end}`` spans. With ``no_answer=True`` one more answer has ``data=None``, ``meta["no_answer"]=True``
    and as score the no-answer probability; all answers are sorted by score, so an abstention that beats
    every span comes first. ``no_answer_score`` picks how that probability is computed:

    - ``"cls"`` (default): SQuAD 2.0's null span, ``sigmoid(calibration_factor * (start[CLS] + end[CLS]))``
      of the sequence with the lowest null logit. It outranks the best span exactly when the model's null
      logit beats the best span logit — the decision rule the SQuAD 2.0 models were trained for.
    - ``"complement"``: the peer's ``prod(1 - score)`` over the returned answers.

    Differences from ``TransformersExtractiveReader`` (same model, same inputs → same spans, texts and
    scores when ``max_answer_length=None`` and ``no_answer_score="complement"``): answer length is bounded
    by default (30 tokens); ``"cls"`` no-answer scoring; BERT-style models get their segment ids
    (``token_type_ids``), which the peer never passes; windows are batched by length instead of one padded
    batch; a question never gets truncated before the context does; answers carry span ``meta`` but no
    ``answer_page_number``; no documents at all gives just the abstention (score 1.0) instead of ``[]``.

    **Offline fallback.** With ``fallback="sentence"``, a QA model that cannot be resolved is replaced by
    the sentence strategy of ``components.core.reading.sentence_reader`` on ``fallback_embedding_model``
    embeddings: in each window, the unit (sentence, table row, code part) most similar to the question
    and covering its key terms, plus one unit of lead-in, verbatim. ``served_by`` says so and a warning is
    logged. Without a fallback ``warm_up()`` raises ``ModelUnavailableError``.

    ### Usage example

    ```python
    from haystack import Document
    from components.readers import ExtractiveReader

    reader = ExtractiveReader(model="deepset/roberta-base-squad2", top_k=3, fallback="sentence")
    reader.warm_up()
    print(reader.served_by)  # "deepset/roberta-base-squad2 (hf-cache)" or "fallback:sentence (...)"
    window = Document(
        content="The Eiffel Tower is in Paris. It was finished in 1889.",
        meta={"doc_id": "eiffel", "char_start": 120, "char_end": 174, "level": "window"},
    )
    answers = reader.run(query="When was the Eiffel Tower finished?", documents=[window])["answers"]
    best = answers[0]
    if best.meta.get("no_answer"):
        print("abstained", best.score)
    else:
        print(best.data, best.score, best.meta["doc_id"], best.meta["char_start"], best.meta["char_end"])
    ```

    In YAML:

    ```yaml
    read:
      type: components.readers.extractive_reader.ExtractiveReader
      init_parameters:
        model: deepset/roberta-base-squad2
        top_k: 5
        fallback: sentence
        fallback_embedding_model: sentence-transformers/all-MiniLM-L6-v2
    ```
    """

    def __init__(
        self,
        *,
        model: str = "deepset/roberta-base-squad2",
        device: str | None = None,
        top_k: int = 20,
        max_seq_length: int = 384,
        stride: int = 128,
        batch_size: int = 16,
        max_answer_length: int | None = 30,
        answers_per_seq: int = 20,
        calibration_factor: float = 0.1,
        overlap_threshold: float | None = 0.01,
        no_answer: bool = True,
        no_answer_score: str = "cls",
        no_answer_bias: float = 0.0,
        score_threshold: float | None = None,
        fallback: str | None = None,
        fallback_model: str = TRAINED_READER,
        fallback_embedding_model: str = "sentence-transformers/all-MiniLM-L6-v2",
        short_answers: str | None = None,
        precision: str = "fp32",
    ) -> None:
        """
        Create the reader; nothing is loaded until ``warm_up()``.

        :param model: Hub id or local directory of a question answering model with a fast tokenizer.
        :param device: Torch device; ``None`` picks CUDA when present, else CPU.
        :param top_k: Answers to return (plus the no-answer answer when ``no_answer``).
        :param max_seq_length: Tokens per sequence (question + context + special tokens).
        :param stride: Tokens shared by consecutive sequences of a long context.
        :param batch_size: Sequences per forward pass (the overflow windows of one context; contexts are run apart,
            so a context decodes the same whatever is read with it).
        :param max_answer_length: Longest answer in tokens; ``None`` for no limit (as the peer).
        :param answers_per_seq: Best spans kept from each sequence before pooling.
        :param calibration_factor: Scale of the logits inside the sigmoid.
        :param overlap_threshold: Drop an answer overlapping a better one of the same window by more than
            this fraction of either span; ``None`` keeps all.
        :param no_answer: Add the no-answer answer.
        :param no_answer_score: ``"cls"`` (SQuAD 2.0 null span) or ``"complement"`` (``prod(1 - score)``).
        :param no_answer_bias: Added to the null logit before it is compared with the spans (``"cls"`` only): SQuAD
            2.0's null-score threshold. Choose it on held-out data (``benchmarks/reader_squad.py --sweep``), never on
            the data you report.
        :param score_threshold: Drop answers (including the no-answer) scoring below this.
        :param fallback: ``None`` (raise when the model is missing), ``"trained"`` (the QA model ``fallback_model``:
            by default spanqa's own reader, trained from all-MiniLM-L6-v2 on SQuAD and shipped in ``models/``) or
            ``"sentence"`` (the sentence strategy, no QA model at all).
        :param fallback_model: Model id of the ``"trained"`` fallback, resolved like ``model``.
        :param fallback_embedding_model: Sentence-transformers model of the ``"sentence"`` fallback.
        :param short_answers: spaCy pipeline (e.g. ``en_core_web_sm``) with which the ``"sentence"`` fallback
            narrows its answer to the typed value a question asks for (a number with its unit, a date, a
            person, an identifier …) inside the chosen sentence; ``None`` answers with the sentence.
        :param precision: ``"fp32"`` or ``"int8"`` (int8 GEMMs with per-token input scales,
            ``core/backends/int8.py``; CPU only).
        """
        name = "ExtractiveReader"
        check_positive_int(name, "top_k", top_k)
        check_positive_int(name, "batch_size", batch_size)
        check_positive_int(name, "max_seq_length", max_seq_length)
        check_number(name, "stride", stride, low=0, high=max_seq_length - 1)
        check_positive_int(name, "max_answer_length", max_answer_length, optional=True)
        check_choice(name, "no_answer_score", no_answer_score, NO_ANSWER_SCORES)
        check_choice(name, "fallback", fallback, (*FALLBACKS, None))
        check_number(name, "no_answer_bias", no_answer_bias)
        check_choice(name, "precision", precision, PRECISIONS)
        self.model = str(model)
        self.device = device
        self.top_k = top_k
        self.max_seq_length = max_seq_length
        self.stride = stride
        self.batch_size = batch_size
        self.max_answer_length = max_answer_length
        self.answers_per_seq = answers_per_seq
        self.calibration_factor = calibration_factor
        self.overlap_threshold = overlap_threshold
        self.no_answer = no_answer
        self.no_answer_score = no_answer_score
        self.no_answer_bias = float(no_answer_bias)
        self.score_threshold = score_threshold
        self.fallback = fallback
        self.fallback_model = str(fallback_model)
        self.fallback_embedding_model = str(fallback_embedding_model)
        self.short_answers = short_answers
        self.precision = precision
        self._nlp = None
        self._nlp_lock = threading.Lock()

        self.served_by: str | None = None
        self._tokenizer = None
        self._qa_model = None
        self._embedder = None
        self._unit_vectors: dict[str, np.ndarray] = {}
        self._cache_lock = threading.Lock()
        self._reads = Memo(maxsize=256)
        self._decoder: QADecoder | None = None
        self._analyzer = Analyzer()

    # ------------------------------------------------------------------ lifecycle

    def warm_up(self) -> None:
        """Resolve and load the QA model, or the sentence fallback's embedder when the YAML names one."""
        if self._qa_model is not None or self._embedder is not None:
            return
        device = torch_device(self.device)
        substitute = self.fallback_model if self.fallback == "trained" else self.fallback_embedding_model
        resolved, fallback = resolve_or_fallback(self.model, self.fallback, substitute, type(self).__name__)
        if fallback == "sentence":
            served = fallback_label(fallback, self.model)
            if self.short_answers:
                self._nlp, spacy_served = load_spacy(self.short_answers, "ExtractiveReader.short_answers")
                served += f" + short answers: {spacy_served}"
            self._embedder = load_sentence_transformer(resolved.path, device)
            self.served_by = served
            logger.warning(
                "ExtractiveReader: QA model {model} is unavailable; answering with the best-supported sentence "
                "of each window ({fallback} embeddings) instead.",
                model=self.model,
                fallback=resolved.describe(),
            )
            return
        tokenizer, model = load_hf_model(resolved.path, "AutoModelForQuestionAnswering", device, precision=self.precision)
        if not getattr(tokenizer, "is_fast", False):
            raise SpanQAError(
                f"ExtractiveReader: the tokenizer of '{self.model}' ({resolved.path}) is not a fast (Rust) "
                "tokenizer, so it gives no character offsets for answer spans. Use a model directory that has "
                "a tokenizer.json, or convert its tokenizer with transformers and save it next to the model."
            )
        self._tokenizer, self._qa_model = tokenizer, model
        self._decoder = QADecoder(tokenizer, model, max_seq_length=self.max_seq_length, stride=self.stride,
                                  batch_size=self.batch_size, answers_per_seq=self.answers_per_seq,
                                  max_answer_length=self.max_answer_length,
                                  calibration_factor=self.calibration_factor)
        self.served_by = resolved.describe(self.precision)
        if fallback == "trained":
            self.served_by = f"{fallback_label(fallback, self.model)}: {self.served_by}"
            logger.warning("ExtractiveReader: QA model {model} is unavailable; reading with the trained fallback "
                           "{fallback} instead.", model=self.model, fallback=resolved.describe(self.precision))

    def to_dict(self) -> dict[str, Any]:
        """Serialise the init parameters."""
        return default_to_dict(
            self,
            model=self.model,
            device=self.device,
            top_k=self.top_k,
            max_seq_length=self.max_seq_length,
            stride=self.stride,
            batch_size=self.batch_size,
            max_answer_length=self.max_answer_length,
            answers_per_seq=self.answers_per_seq,
            calibration_factor=self.calibration_factor,
            overlap_threshold=self.overlap_threshold,
            no_answer=self.no_answer,
            no_answer_score=self.no_answer_score,
            no_answer_bias=self.no_answer_bias,
            score_threshold=self.score_threshold,
            fallback=self.fallback,
            fallback_model=self.fallback_model,
            fallback_embedding_model=self.fallback_embedding_model,
            short_answers=self.short_answers,
            precision=self.precision,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ExtractiveReader:
        """Create the reader from ``to_dict`` output."""
        return default_from_dict(cls, data)

    # ------------------------------------------------------------------ run

    @component.output_types(answers=list[ExtractedAnswer])
    def run(self, query: str, documents: list[Document], top_k: int | None = None) -> dict[str, list[ExtractedAnswer]]:
        """
        Extract answers to ``query`` from the windows ``documents``.

        :param query: The question.
        :param documents: Windows (``meta``: ``doc_id``, ``char_start``, ``char_end`` in the source document).
        :param top_k: Overrides the init ``top_k`` for this call.
        :returns: ``{"answers": [...]}`` sorted by score, the no-answer answer among them.
        """
        self.warm_up()
        top_k = self.top_k if top_k is None else top_k
        windows = [doc for doc in documents if doc.content is not None]
        if len(windows) < len(documents):
            logger.warning("ExtractiveReader: {n} document(s) without text were ignored.", n=len(documents) - len(windows))
        # the same question on the same texts (a widening that added nothing, a repeated question) is read once
        key = (query, top_k, tuple((w.content, w.meta.get("doc_id"), w.meta.get("char_start")) for w in windows))
        cached = self._reads.get(key)
        if cached is MISSING:
            read = self._read_sentences if self._embedder is not None else self._read_spans
            cached = self._reads.put(key, read(query, windows, top_k))
        answers, no_answer_prob = list(cached[0]), cached[1]
        if self.no_answer:
            answers.append(no_answer_answer(query, no_answer_prob))
        answers.sort(key=lambda a: a.score, reverse=True)
        if self.score_threshold is not None:
            answers = [a for a in answers if a.score >= self.score_threshold]
        return {"answers": answers}

    def _read_spans(self, query: str, windows: list[Document], top_k: int) -> tuple[list[ExtractedAnswer], float]:
        """Answers from the QA model and the no-answer probability."""
        if not windows:
            return [], 1.0
        per_window = self._decoder.decode_contexts(query, [w.content for w in windows])
        decoded = [d for decodings in per_window for d in decodings]
        # (span, its window, the null logit of the decoding it came from: SQuAD 2.0 weighs a span against its own)
        pooled = [(span, windows[i], d.null_logit) for i, decodings in enumerate(per_window) for d in decodings
                  for span in d.spans]
        pooled.sort(key=lambda p: p[0].logit, reverse=True)  # stable: window order on ties
        # a question that names a table row or config line by its key is answered from that row's cells
        pooled = named_rows_only(query, pooled, windows, per_window, self.calibration_factor,
                                 lambda text: content_terms(text, self._analyzer))
        # a span that cuts a name (``PROMPT2`` of ``_PROMPT2``) is read as the whole name
        pooled = [(whole_identifier(span, doc.content), doc, null) for span, doc, null in pooled]
        pooled = dedup_by_overlap(pooled, lambda p: (p[1].id, p[0].char_start, p[0].char_end), self.overlap_threshold)
        # a span inside a sentence that addresses the reader ("answer that ...") is never an answer, nor one that runs
        # across two cells or rows of a table or two lines of code
        pooled = [p for p in pooled if not in_directive(p[1].content, p[0].char_start, p[0].char_end)
                  and not crosses_structure(p[1].content, p[0].char_start, p[0].char_end)]
        pooled = pooled[:top_k]
        if self.no_answer_score == "cls":
            no_answer_prob = cls_no_answer((d.null_logit + self.no_answer_bias for d in decoded),
                                           self.calibration_factor)
        else:
            no_answer_prob = complement_no_answer(span.score for span, _, _ in pooled)
        return [span_answer(query, span, doc, cls_no_answer([null + self.no_answer_bias], self.calibration_factor))
                for span, doc, null in pooled], no_answer_prob

    def _read_sentences(self, query: str, windows: list[Document], top_k: int) -> tuple[list[ExtractedAnswer], float]:
        """Answers of the offline sentence strategy and its no-answer score (1 - best)."""
        found = sentence_reader.read_windows(query, [w.content for w in windows], self._embed, self._analyzer)
        answers = []
        kind = short_answer.wanted(query) if self._nlp is not None else None
        words = {w.lower() for w in re.findall(r"\w+", query)}
        for doc, hit in zip(windows, found, strict=True):
            if hit is None:
                continue
            start, end = hit.start, hit.end
            if self._nlp is not None and hit.best.kind == TABLE:  # a row: the cell under the column asked about
                header = table_header(doc.content, hit.best)
                cell = short_answer.table_cell(doc.content, header, (hit.best.start, hit.best.end),
                                               self._content_terms(query), self._content_terms) if header else None
                if cell is not None:
                    start, end = cell
            elif kind is not None and start <= hit.best.start and hit.best.end <= end:  # not a code-key line answer
                short = self._short(doc.content[hit.best.start : hit.best.end], kind, words)
                if short is not None:
                    start, end = hit.best.start + short[0], hit.best.start + short[1]
            meta = span_meta(doc, start, end, [(u.start, u.end) for u in hit.units])
            if (start, end) != (hit.start, hit.end):
                meta["short_answer"] = kind  # the typed value; the sentence (and lead-in) stay its evidence
            answers.append(
                ExtractedAnswer(
                    query=query,
                    score=hit.score,
                    data=doc.content[start:end],
                    document=doc,
                    document_offset=ExtractedAnswer.Span(start, end),
                    meta=meta,
                )
            )
        answers.sort(key=lambda a: a.score, reverse=True)
        return answers[:top_k], sentence_reader.no_answer_score(found)

    def _content_terms(self, text: str) -> set[str]:
        """Stems of the words of ``text`` that carry content (spaCy's English stop words left out)."""
        stop = self._nlp.Defaults.stop_words
        return {self._analyzer.stem(w) for w in self._analyzer.words(text) if w.lower() not in stop}

    def _short(self, sentence: str, kind: str, words: set[str]) -> tuple[int, int] | None:
        """The short answer of ``kind`` inside ``sentence`` (offsets into it), or ``None``."""
        with self._nlp_lock:  # one spaCy pipeline per reader; calls are serialised
            parsed = self._nlp(sentence)
        return short_answer.short_span(parsed, kind, words)

    def _embed(self, texts: list[str]) -> np.ndarray:
        """Unit embeddings, memoised by text: the widening loop re-reads the same sentences."""
        with self._cache_lock:  # many threads may read at once: the memo is read and written under a lock
            known = {t: self._unit_vectors[t] for t in texts if t in self._unit_vectors}
        missing = list(dict.fromkeys(t for t in texts if t not in known))
        if missing:
            vectors = self._embedder.encode(
                missing, batch_size=32, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False
            )
            known.update(zip(missing, vectors))
            with self._cache_lock:
                if len(self._unit_vectors) + len(missing) > UNIT_CACHE_SIZE:
                    self._unit_vectors.clear()
                self._unit_vectors.update(zip(missing, vectors))
        return np.stack([known[t] for t in texts])


UNIT_CACHE_SIZE = 200_000  # sentence embeddings kept in memory by the offline strategy (~300 MB at 384 dims)
