"""The model behind a verifier's verdicts: the lexical rules, an NLI classifier, spanqa's trained verifier, or an
LLM judge.

Resolved and loaded once in ``warm_up()``; when the model is unavailable and the YAML names a fallback —
``trained`` (spanqa's own verifier, ``fallback_model``, resolved by the one model resolver) or ``lexical`` (the
offline rules) — it switches to it and says so (``served_by``, a warning), never silently.
``components/routers/verifier_router.py`` holds one and asks it for NLI probabilities or an LLM verdict.

**Backends.**

- ``lexical`` (offline, default): the rules of ``components.core.verification.judgements.lexical_judgement`` —
  answer located; key terms of the question (named entities, numbers, identifiers) in the evidence,
  lead-in or document title → SUPPORTED; some only elsewhere in the read documents, or fewer than
  ``min_term_coverage`` of the question's content terms nearby → PARTIAL; answer not in the read text,
  or more than ``max_missing_key_terms`` of the key terms nowhere → UNSUPPORTED.
- ``nli``: an NLI sequence-classification model (``model``, default
  ``cross-encoder/nli-deberta-v3-small``). Premise = lead-in + evidence (one contiguous span of the
  source); hypothesis = ``hypothesis_template.format(question=query, answer=answer_text)``, by default
  ``"{question} {answer}"`` (e.g. "How long do refunds take for Acme Pro? 30 days"). Label order comes
  from the model config's ``id2label``. P(entailment) ≥ ``entail_threshold`` → SUPPORTED, else
  P(contradiction) ≥ ``contradiction_threshold`` → UNSUPPORTED, else PARTIAL. An answer that is not in
  the read text is UNSUPPORTED without asking the model.
- ``trained`` (the offline fallback of ``nli``): spanqa's cross-encoder (``models/spanqa-verifier-minilm-l6``,
  ``training/train_verifier.py``) reads the question and the answer marked in its sentence with lead-in
  (``verification.verifier_input.verifier_pair``) and gives P(the answer is right), learnt on the shipped
  reader's own candidates; ``judgements.trained_judgement`` maps it to a verdict.
- ``llm``: a generator from ``components.core.backends.generation.make_generator`` (``generator`` holds its
  ``backend`` plus parameters) is asked "Return SUPPORTED, PARTIAL or UNSUPPORTED, then one short
  reason" about the same premise; the first verdict word of the reply counts, an unparseable reply is
  UNSUPPORTED (reason ``unparseable_judge_reply``).
"""

from __future__ import annotations

from typing import Any

from haystack import logging

from components.core.errors import SpanQAError
from dataclasses import replace

from components.core.memo import MISSING, Memo
from components.core.verification.checks import UNSUPPORTED, Evidence
from components.core.verification.judgements import (Judgement, judge_messages, nli_label_index, parse_judge_reply,
                                                     trained_judgement)
from components.core.verification.verifier_input import verifier_pair
from components.core.backends.models import (ModelUnavailableError, fallback_label, load_hf_model, resolve_model,
                                             torch_device)

TRAINED_VERIFIER = "spanqa/verifier-minilm-l6"
TRAINED_MAX_LENGTH = 192  # the trained verifier's sequence length in training (training/train_verifier.py)

logger = logging.getLogger(__name__)


class JudgeBackend:
    """``backend`` ``"lexical"`` | ``"nli"`` | ``"llm"`` for ``component`` (named in messages).

    ``active`` is ``None`` until ``warm_up()`` (always ``"lexical"`` for the lexical backend) and then the
    backend in force (``"trained"`` when spanqa's verifier stands in); ``served_by`` says what answers
    (``resolve_model``'s description, the generator's, or ``fallback:<kind> (<model> unavailable)…``).
    """

    def __init__(self, backend: str, *, model: str, device: str | None, max_length: int,
                 generator: dict[str, Any] | None, fallback: str | None, component: str,
                 fallback_model: str = TRAINED_VERIFIER) -> None:
        self.backend, self.model, self.device, self.max_length = backend, model, device, max_length
        self.generator, self.fallback, self.component = generator, fallback, component
        self.fallback_model = fallback_model
        self.active: str | None = "lexical" if backend == "lexical" else None
        self.served_by: str | None = "lexical" if backend == "lexical" else None
        self._tokenizer = self._nli_model = self._labels = self._generator = None
        self._right_memo = Memo(maxsize=512)

    def _fall_back(self, what: str, exc: Exception) -> None:
        if self.fallback is None:
            raise exc
        if self.fallback == "trained":
            resolved = resolve_model(self.fallback_model, component=f"{self.component} fallback")
            self._tokenizer, self._nli_model = load_hf_model(
                resolved.path, "AutoModelForSequenceClassification", torch_device(self.device))
            self.active = "trained"
            self.served_by = f"{fallback_label('trained', what)}: {resolved.describe()}"
            logger.warning("{component}: {what} is unavailable; verifying with the trained fallback {model} instead.",
                           component=self.component, what=what, model=resolved.describe())
            return
        self.active = "lexical"
        self.served_by = f"fallback:lexical ({what} unavailable)"
        logger.warning("{component}: {what} is unavailable; verifying with the offline lexical rules instead.",
                       component=self.component, what=what)

    def warm_up(self) -> None:
        """Resolve and load the NLI model or the LLM judge (or switch to the lexical fallback)."""
        if self.active is not None:
            return
        if self.backend == "nli":
            try:
                resolved = resolve_model(self.model, component=self.component)
            except ModelUnavailableError as exc:
                self._fall_back(self.model, exc)
                return
            self._tokenizer, self._nli_model = load_hf_model(
                resolved.path, "AutoModelForSequenceClassification", torch_device(self.device)
            )
            try:
                self._labels = nli_label_index(self._nli_model.config.id2label)
            except ValueError as exc:
                raise SpanQAError(
                    f"{self.component}: the NLI model '{self.model}' is not an entailment classifier ({exc}); "
                    "use a model trained on MNLI/SNLI whose config names entailment, neutral and contradiction."
                ) from exc
            self.served_by = resolved.describe()
            self.active = "nli"
            return
        from components.core.backends.generation import make_generator  # the llm backend only

        params = {k: v for k, v in self.generator.items() if k != "backend"}
        params.setdefault("component", self.component)
        gen = make_generator(self.generator["backend"], **params)
        try:
            gen.warm_up()
        except ModelUnavailableError as exc:
            self._fall_back(str(self.generator.get("model") or self.generator["backend"]), exc)
            return
        self._generator = gen
        self.served_by = gen.served_by
        self.active = "llm"

    def nli_probabilities(self, premise: str, hypothesis: str) -> dict[str, float]:
        """``{"entailment", "neutral", "contradiction"}`` probabilities of the loaded NLI model."""
        import torch

        enc = self._tokenizer(
            premise, hypothesis, truncation="longest_first", max_length=self.max_length, return_tensors="pt"
        ).to(self._nli_model.device)
        with torch.inference_mode():
            probs = self._nli_model(**enc).logits[0].float().softmax(-1).tolist()
        return {name: float(probs[i]) for name, i in self._labels.items()}

    def right_probability(self, text_a: str, text_b: str) -> float:
        """The trained verifier's P(right) for one ``verifier_pair`` (remembered: widening from sentence to
        paragraph to section often judges the same answer in the same sentence again)."""
        if (hit := self._right_memo.get((text_a, text_b))) is not MISSING:
            return hit
        return self._right_memo.put((text_a, text_b), self._right_probability(text_a, text_b))

    def _right_probability(self, text_a: str, text_b: str) -> float:
        import torch

        enc = self._tokenizer(text_a, text_b, truncation="only_second",
                              max_length=min(self.max_length, TRAINED_MAX_LENGTH),
                              return_tensors="pt").to(self._nli_model.device)
        with torch.inference_mode():
            return float(torch.sigmoid(self._nli_model(**enc).logits[0, 0].float()))

    def trained_judgement(self, query: str, answer: str, evidence: Evidence, support: float, refute: float,
                          min_answer_coverage: float) -> Judgement:
        """The trained verifier's verdict on a located answer; a paraphrase with under ``min_answer_coverage`` of its
        terms in its passage is UNSUPPORTED before the model (the located-answer check no model does)."""
        if evidence.coverage < min_answer_coverage:
            return Judgement(UNSUPPORTED, f"answer_not_in_documents: {evidence.coverage:.2f} of its terms in the "
                                          f"cited passage")
        judgement = trained_judgement(self.right_probability(*verifier_pair(query, answer, evidence)), support, refute)
        return replace(judgement, used_lead_in=evidence.lead_in)

    def llm_judgement(self, query: str, answer: str, premise: str, max_new_tokens: int) -> Judgement:
        """The LLM judge's verdict on ``answer`` given ``premise`` (an unparseable reply is UNSUPPORTED)."""
        reply = self._generator.generate(judge_messages(query, answer, premise), max_new_tokens)
        return parse_judge_reply(reply.text)
