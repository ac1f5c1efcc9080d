"""Re-rank retrieved passages with a cross-encoder; abstain early when even the best passage scores too low."""

from dataclasses import replace
from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.dataclasses import ExtractedAnswer

from components.core.backends.models import (
    PRECISIONS,
    fallback_label,
    load_cross_encoder,
    load_sentence_transformer,
    resolve_or_fallback,
    torch_device,
)
from components.core.params import check_choice, check_positive_int
from components.core.reading.keyed_lookup import names_a_key_of
from components.readers.extractive_reader import TRAINED_READER

logger = logging.getLogger(__name__)

STAGE = "rerank"
# offline re-rankers: "bi_encoder" (cosine of the MiniLM embedder; keeps the fused order by default) or "reader"
# (our trained reader's margin — best span over its own no-answer — fused by RRF with the incoming rank:
# benchmarks/reader_relevance.py, SQuAD development article nDCG@10 0.862 -> 0.903, but CISI 0.442 -> 0.421,
# so it suits question answering over documents that hold answers, not topical search; not the shipped default)
FALLBACKS = ("bi_encoder", "reader")
# how the bi-encoder fallback orders passages: its cosine alone throws away what BM25 added to the fused list
# (with the retriever's own embedder it is just the dense order: SQuAD R@5 0.964 fused -> 0.914). "fused"
# (default) keeps the incoming order and only gates on the best cosine; "fused_cosine" fuses the incoming rank
# with the cosine rank by RRF (measured: CISI R@5 0.081 -> 0.088 but SQuAD 0.964 -> 0.954, so not the default)
FALLBACK_ORDERS = ("fused_cosine", "fused", "cosine")


def fallback_order_scores(cosines: list[float], mode: str, k: float = 60.0) -> list[float]:
    """Scores whose descending order is the fallback's ranking of passages given in their incoming order."""
    n = len(cosines)
    if mode == "cosine":
        return list(cosines)
    if mode == "fused":
        return [1.0 / (k + r) for r in range(1, n + 1)]
    by_cosine = sorted(range(n), key=lambda i: -cosines[i])
    cos_rank = {i: r for r, i in enumerate(by_cosine, start=1)}
    return [1.0 / (k + i + 1) + 1.0 / (k + cos_rank[i]) for i in range(n)]


def reader_margin(reader, query: str, doc: Document) -> float:
    """How far an extractive reader's best span on ``doc`` scores above its own no-answer score."""
    answers = reader.run(query=query, documents=[doc])["answers"]
    spans = [a.score for a in answers if a.data is not None and not (a.meta or {}).get("no_answer")]
    null = max((a.score for a in answers if a.data is None or (a.meta or {}).get("no_answer")), default=0.0)
    return (max(spans) if spans else 0.0) - null


def passage_text(doc: Document, meta_fields: list[str], separator: str) -> str:
    """The text the model reads for ``doc``: the non-empty ``meta_fields`` values, then the content."""
    parts = [str(doc.meta[key]) for key in meta_fields if doc.meta.get(key) not in (None, "")]
    return separator.join([*parts, doc.content or ""])


def deduplicate(documents: list[Document]) -> list[Document]:
    """One Document per id, keeping the highest-scoring duplicate (the first one on ties), in input order."""
    best: dict[str, int] = {}
    for i, doc in enumerate(documents):
        j = best.get(doc.id)
        if j is None:
            best[doc.id] = i
        elif (doc.score if doc.score is not None else float("-inf")) > (
            documents[j].score if documents[j].score is not None else float("-inf")
        ):
            best[doc.id] = i
    keep = sorted(best.values())
    return [documents[i] for i in keep]


def with_stage(doc: Document, score: float, rank: int) -> Document:
    """A copy of ``doc`` with ``score``, ``meta.scores/ranks['rerank']`` and ``'rerank'`` on its route."""
    meta = dict(doc.meta)
    meta["scores"] = {**(doc.meta.get("scores") or {}), STAGE: score}
    meta["ranks"] = {**(doc.meta.get("ranks") or {}), STAGE: rank}
    meta["route"] = [*(doc.meta.get("route") or []), STAGE]
    return replace(doc, score=score, meta=meta)


@component
class CrossEncoderRanker:
    """
    Re-ranks (query, passage) pairs with a sentence-transformers ``CrossEncoder`` and keeps the best ``top_k``.

    Retrieve wide upstream (e.g. 50 windows), re-rank here, and hand the top few (e.g. 5) to the reader. The
    score of each pair is exactly what ``CrossEncoder.predict`` returns for it (with the model's own
    activation: ``cross-encoder/ms-marco-MiniLM-L-6-v2`` gives raw logits, roughly -11..+11). Each returned
    Document is a copy carrying ``score``, ``meta["scores"]["rerank"]``, ``meta["ranks"]["rerank"]`` (1-based
    among all candidates) and ``"rerank"`` appended to ``meta["route"]``; the inputs are left untouched.

    **Abstaining.** When the best score is below the active threshold the ranker returns *only*
    ``no_answer`` (one ``ExtractedAnswer`` with ``data=None`` and ``meta["no_answer"] = True``,
    ``reason="low_confidence"``), so nothing connected to ``documents`` runs. An empty candidate list gives
    ``reason="no_candidates"``. The threshold only gates abstention; it does not drop individual passages. A
    question that names the key of a table row or setting a passage holds (``keyed_lookup``) is never stopped
    by it: the reader and the verifier judge that lookup.

    **Offline fallback.** With ``fallback="bi_encoder"`` in the YAML, a cross-encoder that cannot be resolved
    is replaced by cosine similarity of normalised ``fallback_model`` embeddings (the pipeline's
    embedder), ``served_by`` says so and a warning is logged. Cosine scores live on another scale (-1..1)
    than cross-encoder logits, so that mode uses ``fallback_score_threshold`` instead of ``score_threshold``.
    ``query_prefix`` / ``document_prefix`` are prepended for that bi-encoder only (asymmetric models such
    as e5: ``"query: "`` / ``"passage: "``); the cross-encoder reads the plain pair.

    ### Usage example

    ```python
    from haystack import Document
    from components.rankers import CrossEncoderRanker

    ranker = CrossEncoderRanker(top_k=5, score_threshold=-2.0,
                                fallback="bi_encoder", fallback_score_threshold=0.3)
    ranker.warm_up()
    print(ranker.served_by)  # "cross-encoder/ms-marco-MiniLM-L-6-v2 (hf-cache)" or "fallback:bi_encoder (...)"
    docs = [Document(content="The Eiffel Tower is in Paris.", meta={"title": "Eiffel Tower", "route": ["retrieve"]}),
            Document(content="Bananas are rich in potassium.", meta={"title": "Banana", "route": ["retrieve"]})]
    out = ranker.run(query="Where is the Eiffel Tower?", documents=docs)
    if "no_answer" in out:
        print(out["no_answer"][0].meta["reason"])
    else:
        print([(d.meta["ranks"]["rerank"], d.score, d.content) for d in out["documents"]])
    ```

    In YAML:

    ```yaml
    rerank:
      type: components.rankers.cross_encoder_ranker.CrossEncoderRanker
      init_parameters:
        model: cross-encoder/ms-marco-MiniLM-L-6-v2
        top_k: 5
        score_threshold: -2.0
        fallback: bi_encoder
        fallback_model: sentence-transformers/all-MiniLM-L6-v2
        fallback_score_threshold: 0.3
    ```
    """

    def __init__(
        self,
        *,
        model: str = "cross-encoder/ms-marco-MiniLM-L-6-v2",
        device: str | None = None,
        top_k: int = 5,
        batch_size: int = 8,
        max_length: int | None = None,
        meta_fields_to_embed: list[str] | None = None,
        embedding_separator: str = "\n",
        score_threshold: float | None = None,
        fallback: str | None = None,
        fallback_model: str = "sentence-transformers/all-MiniLM-L6-v2",
        fallback_score_threshold: float | None = None,
        query_prefix: str = "",
        document_prefix: str = "",
        fallback_order: str = "fused",
        precision: str = "fp32",
        fallback_reader_model: str = TRAINED_READER,
    ) -> None:
        """
        Create the ranker; nothing is loaded until ``warm_up()``.

        :param model: Hub id or local directory of a cross-encoder (resolved by ``resolve_model``).
        :param device: Torch device; ``None`` picks CUDA when present, else CPU.
        :param top_k: How many of the re-ranked passages to return (must be > 0).
        :param batch_size: Pairs (or texts, in fallback mode) per forward pass. On CPU small batches of length-sorted
            pairs waste least (20 SQuAD-paragraph pairs, MiniLM-L6 shape: 0.63 s at 8, 1.0 s at 32); raise it on a GPU.
        :param max_length: Token limit of a (query, passage) pair; ``None`` keeps the model's own.
        :param meta_fields_to_embed: Meta fields put before the content, joined by ``embedding_separator``.
            ``None`` means ``["title"]``; pass ``[]`` to score the content alone.
        :param embedding_separator: Separator between the meta values and the content.
        :param score_threshold: Abstain (return only ``no_answer``) when the best cross-encoder score is
            below this. On the scale of ``CrossEncoder.predict`` for ``model`` (logits for ms-marco).
        :param fallback: ``None`` (raise when the model is missing) or ``"bi_encoder"``.
        :param fallback_model: Sentence-transformers embedder used by the ``"bi_encoder"`` fallback.
        :param fallback_score_threshold: Like ``score_threshold`` but for cosine scores in fallback mode.
        :param query_prefix: Prepended to the query for the bi-encoder fallback only.
        :param document_prefix: Prepended to each passage for the bi-encoder fallback only.
        :param fallback_order: How the bi-encoder fallback orders passages: ``"fused"`` (the incoming order,
            default), ``"fused_cosine"`` (RRF of the incoming rank and the cosine rank) or ``"cosine"``. The abstention
            threshold is always on the best cosine.
        :param precision: ``"fp32"`` or ``"int8"`` (int8 GEMMs with per-token input scales,
            ``core/backends/int8.py``; CPU only).
        :param fallback_reader_model: The extractive QA model of the ``"reader"`` fallback (default: spanqa's
            trained reader): each passage is scored by its best span's score minus its no-answer score, and passages
            are ordered by RRF of their incoming rank and that score's rank; ``fallback_score_threshold`` then
            applies to the best margin.
        """
        name = "CrossEncoderRanker"
        check_positive_int(name, "top_k", top_k)
        check_positive_int(name, "batch_size", batch_size)
        check_choice(name, "fallback", fallback, (*FALLBACKS, None))
        check_choice(name, "fallback_order", fallback_order, FALLBACK_ORDERS)
        check_choice(name, "precision", precision, PRECISIONS)
        self.fallback_order = fallback_order
        self.precision = precision
        self.model = str(model)
        self.device = device
        self.top_k = top_k
        self.batch_size = batch_size
        self.max_length = max_length
        self.meta_fields_to_embed = ["title"] if meta_fields_to_embed is None else list(meta_fields_to_embed)
        self.embedding_separator = embedding_separator
        self.score_threshold = score_threshold
        self.fallback = fallback
        self.fallback_model = str(fallback_model)
        self.fallback_score_threshold = fallback_score_threshold
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix

        self.fallback_reader_model = str(fallback_reader_model)
        self.served_by: str | None = None
        self._cross_encoder = None
        self._bi_encoder = None
        self._reader = None

    def warm_up(self) -> None:
        """Resolve and load the cross-encoder, or the bi-encoder fallback when the YAML names one."""
        if self._cross_encoder is not None or self._bi_encoder is not None or self._reader is not None:
            return
        device = torch_device(self.device)
        substitute = self.fallback_reader_model if self.fallback == "reader" else self.fallback_model
        resolved, fallback = resolve_or_fallback(self.model, self.fallback, substitute, type(self).__name__)
        if fallback is None:
            self._cross_encoder = load_cross_encoder(resolved.path, device, self.max_length, self.precision)
            self.served_by = resolved.describe(self.precision)
            return
        if fallback == "reader":
            from components.readers.extractive_reader import ExtractiveReader

            reader = ExtractiveReader(model=self.fallback_reader_model, device=self.device, top_k=5)
            reader.warm_up()
            self._reader = reader
            self.served_by = f"{fallback_label(fallback, self.model)}: {reader.served_by}"
            logger.warning("CrossEncoderRanker: cross-encoder {model} is unavailable; re-ranking with the reader "
                           "{reader}'s answer margins fused with the incoming order instead.",
                           model=self.model, reader=reader.served_by)
            return
        self._bi_encoder = load_sentence_transformer(resolved.path, device)
        self.served_by = fallback_label(fallback, self.model)
        logger.warning(
            "CrossEncoderRanker: cross-encoder {model} is unavailable; re-ranking with cosine similarity "
            "of {fallback} embeddings instead (fallback_score_threshold={threshold}).",
            model=self.model,
            fallback=resolved.describe(),
            threshold=self.fallback_score_threshold,
        )

    @property
    def active_threshold(self) -> float | None:
        """The threshold on the scale of the scorer that is serving (cross-encoder or fallback cosine)."""
        fallback = self._bi_encoder is not None or self._reader is not None
        return self.fallback_score_threshold if fallback else self.score_threshold

    def _stored_embeddings(self, documents: list[Document] | None) -> np.ndarray | None:
        """Passage vectors already computed by the index with the fallback's own model, when all have one.

        The retriever attaches each chunk's index embedding (title + text, the same model); re-encoding the
        same passages here would only cost time.
        """
        if not documents or self.document_prefix:
            return None
        if all(d.embedding is not None and d.meta.get("embedding_model") == self.fallback_model for d in documents):
            return np.asarray([d.embedding for d in documents], dtype=np.float32)
        return None

    def score(self, query: str, texts: list[str], documents: list[Document] | None = None) -> list[float]:
        """Scores of ``(query, text)`` pairs from whichever model ``warm_up()`` loaded."""
        if not texts:
            return []
        if self._cross_encoder is not None:
            scores = self._cross_encoder.predict(
                [(query, t) for t in texts], batch_size=self.batch_size, show_progress_bar=False
            )
            return [float(s) for s in scores]
        if self._bi_encoder is not None:
            q = self._bi_encoder.encode(
                [self.query_prefix + query], normalize_embeddings=True, show_progress_bar=False
            )[0]
            p = self._stored_embeddings(documents)
            if p is None:
                p = self._bi_encoder.encode(
                    [self.document_prefix + t for t in texts],
                    batch_size=self.batch_size,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                )
            return [float(s) for s in p @ q]
        if self._reader is not None:
            docs = documents or [Document(content=t, meta={"doc_id": str(i), "char_start": 0, "char_end": len(t)})
                                 for i, t in enumerate(texts)]
            return [reader_margin(self._reader, query, d) for d in docs]
        self.warm_up()
        return self.score(query, texts, documents)

    def _abstain(self, query: str, reason: str, best: float | None, route: list[str]) -> dict[str, Any]:
        answer = ExtractedAnswer(
            query=query,
            score=best if best is not None else 0.0,
            data=None,
            meta={
                "no_answer": True,
                "verdict": "NOT_FOUND",
                "reason": reason,
                "route": [*route, STAGE],
                "best_score": best,
                "threshold": self.active_threshold,
                "served_by": self.served_by,
            },
        )
        return {"no_answer": [answer]}

    @component.output_types(documents=list[Document], no_answer=list[ExtractedAnswer])
    def run(self, query: str, documents: list[Document], top_k: int | None = None) -> dict[str, Any]:
        """
        Re-rank ``documents`` for ``query``.

        :param query: The question.
        :param documents: Candidate passages (duplicates by id are collapsed, keeping the best-scored one).
        :param top_k: Overrides the ``top_k`` given at init.
        :returns: Either ``{"documents": [...]}`` (best first, at most ``top_k``) or, when abstaining,
            ``{"no_answer": [ExtractedAnswer]}`` with ``meta["reason"]`` ``"low_confidence"`` or
            ``"no_candidates"`` — never both keys.
        """
        top_k = self.top_k if top_k is None else top_k
        check_positive_int("CrossEncoderRanker", "top_k", top_k)
        self.warm_up()  # once: a Pipeline has done it already; a bare component warms itself here
        if not documents:
            return self._abstain(query, "no_candidates", None, [])

        candidates = deduplicate(documents)
        texts = [passage_text(d, self.meta_fields_to_embed, self.embedding_separator) for d in candidates]
        scores = self.score(query, texts, candidates)
        gate = max(scores)  # the abstention threshold is on the scorer's best score
        if self._reader is not None:  # RRF of the incoming (fused) rank and the reader's margin rank
            margins = scores
            scores = fallback_order_scores(margins, "fused_cosine")
            candidates = [replace(d, meta={**d.meta, "rerank_margin": m, "rerank_gate": gate})
                          for d, m in zip(candidates, margins)]
        elif self._bi_encoder is not None and self.fallback_order != "cosine":
            cosines = scores
            scores = fallback_order_scores(cosines, self.fallback_order)
            candidates = [replace(d, meta={**d.meta, "rerank_cosine": c, "rerank_gate": gate})
                          for d, c in zip(candidates, cosines)]
        order = sorted(range(len(candidates)), key=lambda i: -scores[i])  # stable: ties keep input order

        threshold = self.active_threshold
        if threshold is not None and gate < threshold and not any(names_a_key_of(query, d.content or "")
                                                                   for d in candidates):
            # a passage holding a row or setting the question names by its key is read whatever its score: a
            # scorer of sentences rates `AddressFamily: any` low for "What is AddressFamily set to?"
            best_i = order[0]
            route = list(candidates[best_i].meta.get("route") or [])
            return self._abstain(query, "low_confidence", gate, route)

        ranked = [with_stage(candidates[i], scores[i], rank) for rank, i in enumerate(order[:top_k], start=1)]
        return {"documents": ranked}

    def to_dict(self) -> dict[str, Any]:
        """Serialise the init parameters."""
        return default_to_dict(
            self,
            model=self.model,
            device=self.device,
            top_k=self.top_k,
            batch_size=self.batch_size,
            max_length=self.max_length,
            meta_fields_to_embed=self.meta_fields_to_embed,
            embedding_separator=self.embedding_separator,
            score_threshold=self.score_threshold,
            fallback=self.fallback,
            fallback_model=self.fallback_model,
            fallback_score_threshold=self.fallback_score_threshold,
            query_prefix=self.query_prefix,
            document_prefix=self.document_prefix,
            fallback_order=self.fallback_order,
            precision=self.precision,
            fallback_reader_model=self.fallback_reader_model,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CrossEncoderRanker":
        """Rebuild a ranker from ``to_dict()`` output (or YAML)."""
        return default_from_dict(cls, data)
