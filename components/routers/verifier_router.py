"""Verify the reader's best answer against the span it came from, and route: answer, widen, or not found."""

import inspect
from dataclasses import replace
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.dataclasses import ExtractedAnswer, GeneratedAnswer

from components.core.text.analysis import Analyzer
from components.core.verification.answers import (
    CHOICES,
    answer_score,
    best_answer,
    choose_judged,
    document_piece,
    locate_answer,
    ranked_answers,
    reader_prefers_no_answer,
)
from components.core.verification.confidence import (CalibrationFile, Calibrator, against_bar, answer_kind,
                                                     project_path)
from components.core.verification.outcome import not_found_answer, supported_meta
from components.core.errors import SpanQAError
from components.core.verification.judgements import (DEFAULT_HYPOTHESIS, Judgement, lexical_judgement,
                                                     model_free_refusal, nli_judgement)
from components.core.params import (ParameterError, check_choice, check_fraction, check_int, check_number,
                                    check_positive_int)
from components.core.verification.checks import (
    LEVELS,
    SUPPORTED,
    UNSUPPORTED,
    WIDEN_LEVELS,
    Evidence,
    Visible,
    route_decision,
    visible_texts,
)
from components.routers.judge_backend import TRAINED_VERIFIER, JudgeBackend

logger = logging.getLogger(__name__)

BACKENDS = ("lexical", "nli", "llm")
FALLBACKS = ("lexical", "trained")
DEFAULT_NLI_MODEL = "cross-encoder/nli-deberta-v3-small"

Answer = ExtractedAnswer | GeneratedAnswer


@component
class VerifierRouter:
    """
    Checks the reader's best answer against its span and routes the query through the widening loop.

    It receives the documents the reader read (all at one ``meta["level"]``: ``window``, ``paragraph`` or
    ``passage``) and the reader's answers, judges the best non-abstaining answer SUPPORTED, PARTIAL or
    UNSUPPORTED with a short reason, and returns exactly one of three outputs:

    - ``answers`` — SUPPORTED: a copy of the answer whose ``meta`` adds ``verdict``, ``reason``, ``route``
      and ``spans`` (``[{doc_id, char_start, char_end, text}]``: the answer span first when it is exact,
      then its evidence: the sentence(s) holding it and, when they were needed, the preceding sentences);
    - ``widen`` — copies of the documents with ``meta["widen_to"]`` (``paragraph`` or ``passage``) for the
      widener, which feeds them back to the reader through a ``BranchJoiner``. At ``window`` (or ``chunk``)
      PARTIAL widens to ``paragraph`` and UNSUPPORTED to ``passage``; at ``paragraph`` anything but
      SUPPORTED widens to ``passage``; ``max_level`` caps this;
    - ``not_found`` — when it cannot widen further: one ``ExtractedAnswer(data=None)`` with ``meta``
      ``no_answer=True``, ``verdict="NOT_FOUND"``, ``reason`` (the last verdict's), ``route``,
      ``last_verdict`` and ``candidate`` (the rejected answer text, if any). No documents at all →
      reason ``no_candidates``; a reader that abstained counts as UNSUPPORTED ``reader_abstained``.

    **Route.** The route is read from ``documents[0].meta["route"]``; the verifier appends ``"read"`` and
    ``"verify:<VERDICT>"`` and, when widening, ``"widen:<level>"``; the result is put on every widened
    document and on the final answer. If the route already holds ``widen:<level>`` for the level it would
    widen to (a widener that did not change ``meta["level"]``), it stops with ``not_found`` instead of
    looping. Inputs are never mutated.

    **Evidence** is located by ``components.core.verification.answers.locate_answer`` (the sentence holding the
    answer and its lead-in); **verdicts** come from the backend (``lexical`` rules, an ``nli`` model or an ``llm``
    judge — ``components.routers.judge_backend`` says how each decides). Two checks no model makes come first,
    whatever the backend: a sentence addressing the reader is never evidence (``instruction_in_evidence``), and
    the value of a row or setting the question does not name, when the question names an identifier the read
    text does not hold, answers another setting (``another_setting``; ``keyed_lookup.another_setting``).

    **Offline fallback.** ``fallback="lexical"`` makes ``warm_up()`` switch to the lexical rules when the
    NLI model (or the LLM) is unavailable: ``served_by = "fallback:lexical (<model> unavailable)"`` and a
    warning is logged. Without a fallback ``warm_up()`` raises ``ModelUnavailableError``.

    ### Usage example

    ```python
    from haystack import Document
    from haystack.dataclasses import ExtractedAnswer
    from components.routers import VerifierRouter

    text = "Acme Pro is billed monthly. Refunds are available within 30 days."
    window = Document(content=text, meta={"doc_id": "billing", "char_start": 0, "char_end": len(text),
                                          "level": "window", "route": ["retrieve", "rerank", "expand"]})
    answer = ExtractedAnswer(query="q", score=0.9, data="30 days",
                             meta={"doc_id": "billing", "char_start": 57, "char_end": 64})
    verifier = VerifierRouter()                 # backend="lexical"
    verifier.warm_up()
    out = verifier.run(query="How long do refunds take for Acme Pro?", answers=[answer], documents=[window])
    out["answers"][0].meta["verdict"], out["answers"][0].meta["route"]
    # ("SUPPORTED", ["retrieve", "rerank", "expand", "read", "verify:SUPPORTED"])
    ```

    In YAML:

    ```yaml
    verifier:
      type: components.routers.verifier_router.VerifierRouter
      init_parameters:
        backend: nli
        model: cross-encoder/nli-deberta-v3-small
        entail_threshold: 0.5
        contradiction_threshold: 0.5
        fallback: lexical
        max_level: passage
    ```
    """

    def __init__(
        self,
        *,
        backend: str = "lexical",
        max_level: str = "passage",
        lead_in_units: int = 2,
        use_title: bool = True,
        min_term_coverage: float = 0.5,
        max_missing_key_terms: float = 0.5,
        min_answer_coverage: float = 0.8,
        model: str = DEFAULT_NLI_MODEL,
        device: str | None = None,
        max_length: int = 512,
        entail_threshold: float = 0.5,
        contradiction_threshold: float = 0.5,
        hypothesis_template: str = DEFAULT_HYPOTHESIS,
        generator: dict[str, Any] | None = None,
        max_new_tokens: int = 48,
        fallback: str | None = None,
        fallback_model: str = TRAINED_VERIFIER,
        support_threshold: float = 0.5,
        refute_threshold: float = 0.1,
        respect_reader_abstention: bool = True,
        max_candidates: int = 1,
        candidate_choice: str = "first",
        calibration: str | None = None,
        min_confidence: float | None = None,
        conflict_candidates: int = 5,
        conflict_min_score_ratio: float = 0.5,
    ) -> None:
        """
        Create the verifier; nothing is loaded until ``warm_up()``.

        :param backend: ``"lexical"`` (offline rules), ``"nli"`` or ``"llm"``.
        :param max_level: Widest level to widen to: ``"paragraph"`` or ``"passage"``.
        :param max_candidates: How many of the reader's best answers to judge, in score order; the first
            SUPPORTED one wins (1 = only the best answer), or the most probable one (``candidate_choice``).
        :param candidate_choice: Which of the judged answers judged SUPPORTED wins: ``"first"`` (in the reader's
            order) or ``"most_probable"`` (the trained verifier's highest P(right); ``first`` for a backend that gives
            no probability). Only matters with ``max_candidates`` above 1.
        :param respect_reader_abstention: When the reader's own no-answer outscores its best answer (SQuAD2
            no-answer), count it as UNSUPPORTED ``reader_abstained`` instead of judging the weaker span — unless
            that answer is the value of a row the question names by its key (``meta["keyed_lookup"]``): whether
            the named row answers is then the verifier's and the confidence's judgement.
        :param lead_in_units: How many visible sentences before the evidence count as its lead-in.
        :param use_title: Count the document's ``meta["title"]`` as lead-in (lexical key-term look-up).
        :param min_term_coverage: Lexical: share of the question's content terms needed near the answer
            for SUPPORTED (below → PARTIAL).
        :param max_missing_key_terms: Lexical: share of key terms that may be absent from all read
            documents before the verdict is UNSUPPORTED.
        :param min_answer_coverage: Share of a non-verbatim generated answer's terms that one cited passage
            must hold for the answer to count as found there.
        :param model: NLI model id or local directory (``backend="nli"``), resolved by ``resolve_model``.
        :param device: Torch device for the NLI model; ``None`` picks CUDA when present, else CPU.
        :param max_length: Token limit of a (premise, hypothesis) pair for the NLI model.
        :param entail_threshold: P(entailment) at or above which the NLI verdict is SUPPORTED.
        :param contradiction_threshold: P(contradiction) at or above which it is UNSUPPORTED.
        :param hypothesis_template: NLI hypothesis, with ``{question}`` and ``{answer}`` placeholders.
        :param generator: ``backend="llm"``: ``{"backend": "local" | "openai", **params}`` for
            ``make_generator`` (e.g. ``model``, ``base_url``, ``api_key_env``).
        :param max_new_tokens: Token budget of the LLM judge's reply.
        :param fallback: ``None`` (raise when the model is unavailable), ``"trained"`` (spanqa's verifier,
            ``fallback_model``) or ``"lexical"`` (the offline rules).
        :param fallback_model: Model id of the ``"trained"`` fallback, resolved like ``model``.
        :param support_threshold: Trained verifier: P(right) at or above which the verdict is SUPPORTED.
        :param refute_threshold: Trained verifier: P(right) below which it is UNSUPPORTED (PARTIAL between).
        :param calibration: JSON file of the fitted confidence combiner (``components.core.verification.confidence``), made by
            ``run.py … --eval … --calibrate``; a relative path is looked up from the working directory, then
            from the project root. ``None``: answers carry no confidence.
        :param conflict_candidates: How many of the reader's best answers are checked for a conflict: another
            document's different answer, rated at least ``conflict_min_score_ratio`` of the best and SUPPORTED too.
            Both are reported (``conflicts``, reason ``conflict: …``) and the confidence is multiplied by the best
            answer's share of their scores. 0 turns the check off.
        :param conflict_min_score_ratio: How well the reader must rate the other answer, relative to the best.
        :param min_confidence: Below this confidence a SUPPORTED answer becomes NOT_FOUND ``low_confidence``
            (the refused answer kept as ``candidate``). ``None`` uses the threshold the calibration file chose for
            its ``target_precision``; ``0`` never refuses.
        """
        check_fraction("VerifierRouter", "min_confidence", min_confidence, optional=True)
        check_fraction("VerifierRouter", "conflict_min_score_ratio", conflict_min_score_ratio)
        check_number("VerifierRouter", "conflict_candidates", conflict_candidates, low=0)
        self.conflict_candidates, self.conflict_min_score_ratio = int(conflict_candidates), conflict_min_score_ratio
        for name, value in (("min_term_coverage", min_term_coverage), ("max_missing_key_terms", max_missing_key_terms),
                            ("support_threshold", support_threshold), ("refute_threshold", refute_threshold),
                            ("min_answer_coverage", min_answer_coverage), ("entail_threshold", entail_threshold),
                            ("contradiction_threshold", contradiction_threshold)):
            check_fraction("VerifierRouter", name, value)
        self.calibration, self.min_confidence = calibration, min_confidence
        self._calibrations: CalibrationFile | None = None
        check_choice("VerifierRouter", "backend", backend, BACKENDS)
        check_choice("VerifierRouter", "fallback", fallback, (*FALLBACKS, None))
        check_choice("VerifierRouter", "max_level", max_level, WIDEN_LEVELS)
        if backend == "llm" and not (generator or {}).get("backend"):
            raise ParameterError(
                "VerifierRouter: backend 'llm' needs generator: {backend: local | openai, model: ...} in the YAML."
            )
        check_int("VerifierRouter", "lead_in_units", lead_in_units)
        self.backend = backend
        self.max_level = max_level
        self.respect_reader_abstention = bool(respect_reader_abstention)
        check_positive_int("VerifierRouter", "max_candidates", max_candidates)
        self.max_candidates = int(max_candidates)
        check_choice("VerifierRouter", "candidate_choice", candidate_choice, CHOICES)
        self.candidate_choice = candidate_choice
        self.lead_in_units = lead_in_units
        self.use_title = use_title
        self.min_term_coverage = min_term_coverage
        self.max_missing_key_terms = max_missing_key_terms
        self.min_answer_coverage = min_answer_coverage
        self.model = str(model)
        self.device = device
        self.max_length = max_length
        self.entail_threshold = entail_threshold
        self.contradiction_threshold = contradiction_threshold
        self.hypothesis_template = hypothesis_template
        self.generator = dict(generator) if generator else None
        self.max_new_tokens = max_new_tokens
        self.fallback = fallback
        self.fallback_model = str(fallback_model)
        self.support_threshold, self.refute_threshold = support_threshold, refute_threshold

        self.analyzer = Analyzer()
        self.judge_backend = JudgeBackend(backend, model=self.model, device=device, max_length=max_length,
                                          generator=self.generator, fallback=fallback, component=type(self).__name__,
                                          fallback_model=self.fallback_model)

    @property
    def active_backend(self) -> str | None:
        """The backend in force after ``warm_up()`` (``lexical`` also when it stands in for a missing model)."""
        return self.judge_backend.active

    @property
    def served_by(self) -> str | None:
        """What gives the verdicts: ``lexical``, the resolved model, or ``fallback:lexical (<model> unavailable)``."""
        return self.judge_backend.served_by

    # ------------------------------------------------------------------------------------- warm-up

    def warm_up(self) -> None:
        """Load the calibration file and the NLI model or LLM judge (or switch to the lexical fallback)."""
        if self.calibration and self._calibrations is None:
            self._calibrations = CalibrationFile.load(project_path(self.calibration), type(self).__name__)
        self.judge_backend.warm_up()

    # ------------------------------------------------------------------------------------- judging

    def locate(self, answer: Any, visibles: list[Visible]) -> Evidence | None:
        """Where ``answer`` stands in the read text (``components.core.verification.answers.locate_answer``)."""
        return locate_answer(answer, visibles, self.analyzer, self.lead_in_units)

    def nli_probabilities(self, premise: str, hypothesis: str) -> dict[str, float]:
        """``{"entailment", "neutral", "contradiction"}`` probabilities of the loaded NLI model."""
        return self.judge_backend.nli_probabilities(premise, hypothesis)

    def judge_candidates(self, query: str, answers: list[Any], visibles: list[Visible]):
        """``(answer, judgement, evidence)``: of the ``max_candidates`` best answers, the one ``candidate_choice``
        picks among those judged SUPPORTED (``choose_judged``), else the best answer with its own judgement (which
        routes the loop). With ``first`` the judging stops at the first SUPPORTED answer."""
        judged = []
        for candidate in ranked_answers(answers)[: self.max_candidates]:
            judgement, evidence = self.judge(query, candidate, visibles)
            judged.append((candidate, judgement, evidence))
            if judgement.verdict == SUPPORTED and self.candidate_choice == "first":
                break
        return choose_judged(judged, self.candidate_choice)

    def judge(self, query: str, answer: Any, visibles: list[Visible]) -> tuple[Judgement, Evidence | None]:
        """The verdict on ``answer`` with the active backend, and the evidence it was judged on."""
        evidence = self.locate(answer, visibles)
        refusal = model_free_refusal(query, evidence)
        if refusal is not None:
            return refusal, evidence
        if self.active_backend == "lexical":
            judgement = lexical_judgement(
                query,
                evidence,
                visibles,
                self.analyzer,
                use_title=self.use_title,
                min_term_coverage=self.min_term_coverage,
                max_missing_key_terms=self.max_missing_key_terms,
                min_answer_coverage=self.min_answer_coverage,
            )
            return judgement, evidence
        if evidence is None:
            return Judgement(UNSUPPORTED, "answer_not_in_documents"), None
        if self.active_backend == "trained":
            return self.judge_backend.trained_judgement(query, str(answer.data), evidence, self.support_threshold,
                                                        self.refute_threshold, self.min_answer_coverage), evidence
        premise = "\n".join(t for t in (evidence.context_text, evidence.references_text) if t)
        if self.active_backend == "nli":
            hypothesis = self.hypothesis_template.format(question=query, answer=answer.data)
            judgement = nli_judgement(
                self.nli_probabilities(premise, hypothesis), self.entail_threshold, self.contradiction_threshold
            )
        else:
            judgement = self.judge_backend.llm_judgement(query, str(answer.data), premise, self.max_new_tokens)
        return Judgement(judgement.verdict, judgement.reason, evidence.lead_in), evidence

    # ------------------------------------------------------------------------------------------ run

    def _not_found(self, query: str, reason: str, route: list[str], last_verdict: str, best: Any | None):
        return {"not_found": [not_found_answer(query, reason, route, last_verdict, best, self.served_by)]}

    @component.output_types(answers=list[Answer], widen=list[Document], not_found=list[ExtractedAnswer])
    def run(self, query: str, answers: list[Answer], documents: list[Document]) -> dict[str, Any]:
        """
        Verify the best answer read from ``documents`` and route the query.

        :param query: The question.
        :param answers: The reader's answers (abstentions have ``data=None`` / ``meta["no_answer"]``).
        :param documents: What the reader read, all at one ``meta["level"]`` (taken from the first).
        :returns: Exactly one of ``{"answers": [answer]}`` (SUPPORTED), ``{"widen": documents}`` or
            ``{"not_found": [ExtractedAnswer]}``.
        """
        if self.active_backend is None:
            self.warm_up()  # once: a Pipeline has done it already; a bare component warms itself here
        best = best_answer(answers)
        if not documents:
            route = ["read", f"verify:{UNSUPPORTED}"]
            return self._not_found(query, "no_candidates", route, UNSUPPORTED, best)

        first = documents[0].meta or {}
        level = first.get("level") or "window"
        if level not in LEVELS:
            raise SpanQAError(
                f"VerifierRouter: document level {level!r} is unknown (expected one of {', '.join(LEVELS)}); "
                "check the expander/widener that sets meta['level']."
            )
        base_route = list(first.get("route") or [])

        evidence = None
        if (best is not None and self.respect_reader_abstention and not (best.meta or {}).get("keyed_lookup")
                and reader_prefers_no_answer(answers, best)):
            judgement = Judgement(UNSUPPORTED, f"reader_abstained: no-answer outscored the best span ({answer_score(best):.2f})")
        elif best is None:
            judgement = Judgement(UNSUPPORTED, "reader_abstained")
        else:
            visibles = visible_texts(document_piece(d, i) for i, d in enumerate(documents))
            best, judgement, evidence = self.judge_candidates(query, answers, visibles)
        route = [*base_route, "read", f"verify:{judgement.verdict}"]

        decision, target = route_decision(level, judgement.verdict, self.max_level)
        if decision == "answers":
            kind = answer_kind(best)
            meta = supported_meta(query, best, answers, documents, evidence, judgement, route, level, self.analyzer,
                                  lambda a: self.judge(query, a, visibles), self.calibrator(kind),
                                  self.conflict_candidates, self.conflict_min_score_ratio)
            confidence, bar = meta["confidence"], self.confidence_bar(kind)
            if confidence is not None and bar is not None and confidence < bar:
                said, bar_said = against_bar(confidence, bar)
                why = f"low_confidence: confidence {said} below min_confidence {bar_said}"
                out = self._not_found(query, why + (f" ({meta['reason']})" if meta["conflicts"] else ""),
                                      [*route, "confidence:low"], judgement.verdict, best)
                out["not_found"][0].meta.update({k: meta[k] for k in ("signals", "confidence", "spans", "conflicts")},
                                                min_confidence=bar)
                return out
            return {"answers": [replace(best, meta=meta)]}
        if decision == "widen" and f"widen:{target}" in base_route:
            logger.warning(
                "VerifierRouter: documents already widened to {target} still have level {level}; "
                "stopping instead of looping (check the widener sets meta['level']).",
                target=target,
                level=level,
            )
            reason = f"{judgement.reason} (already widened to {target})"
            return self._not_found(query, reason, route, judgement.verdict, best)
        if decision == "widen":
            wide_route = [*route, f"widen:{target}"]
            widened = [replace(d, meta={**(d.meta or {}), "widen_to": target, "route": wide_route}) for d in documents]
            return {"widen": widened}
        return self._not_found(query, judgement.reason, route, judgement.verdict, best)

    def calibrator(self, kind: str) -> Calibrator | None:
        """The fitted combiner for ``kind`` (``extractive`` | ``generative``) answers, if the file has one."""
        return self._calibrations.get(kind) if self._calibrations is not None else None

    def confidence_bar(self, kind: str) -> float | None:
        """The confidence bar in force: ``min_confidence`` if set, else the threshold the calibration chose."""
        if self.min_confidence is not None:
            return self.min_confidence
        calibrator = self.calibrator(kind)
        return calibrator.min_confidence if calibrator is not None else None

    def to_dict(self) -> dict[str, Any]:
        """Serialise the init parameters (each is kept under its own name)."""
        names = [n for n in inspect.signature(type(self).__init__).parameters if n != "self"]
        return default_to_dict(self, **{name: getattr(self, name) for name in names})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "VerifierRouter":
        """Rebuild a verifier from ``to_dict()`` output (or YAML)."""
        return default_from_dict(cls, data)
