"""The model behind a verifier's verdicts: none (the lexical rules), an NLI classifier, or an LLM judge.

Resolved and loaded once in ``warm_up()``; when the model is unavailable and the YAML names
``fallback: lexical`` it switches to the offline rules and says so (``served_by``, a warning), never silently.
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
- ``llm``: a generator from ``components.core.backends.generation.make_generator`` (``generator`` holds its
  ``backend`` plus parameters) is asked "Return SUPPORTED, PARTIAL or UNSUPPORTED, then one short
  reason" about the same premise; the first verdict word of the reply counts, an unparseable reply is
  UNSUPPORTED (reason ``unparseable_judge_reply``).
"""

from __future__ import annotations

from typing import Any

from haystack import logging

from components.core.errors import SpanQAError
from components.core.verification.judgements import Judgement, judge_messages, nli_label_index, parse_judge_reply
from components.core.backends.models import ModelUnavailableError, load_hf_model, resolve_model, torch_device

logger = logging.getLogger(__name__)


class JudgeBackend:
    """``backend`` ``"lexical"`` | ``"nli"`` | ``"llm"`` for ``component`` (named in messages).

    ``active`` is ``None`` until ``warm_up()`` (always ``"lexical"`` for the lexical backend) and then the
    backend in force; ``served_by`` says what answers (``resolve_model``'s description, the generator's, or
    ``fallback:lexical (<model> unavailable)``).
    """

    def __init__(self, backend: str, *, model: str, device: str | None, max_length: int,
                 generator: dict[str, Any] | None, fallback: str | None, component: str) -> None:
        self.backend, self.model, self.device, self.max_length = backend, model, device, max_length
        self.generator, self.fallback, self.component = generator, fallback, component
        self.active: str | None = "lexical" if backend == "lexical" else None
        self.served_by: str | None = "lexical" if backend == "lexical" else None
        self._tokenizer = self._nli_model = self._labels = self._generator = None

    def _fall_back(self, what: str, exc: Exception) -> None:
        if self.fallback is None:
            raise exc
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

    def llm_judgement(self, query: str, answer: str, premise: str, max_new_tokens: int) -> Judgement:
        """The LLM judge's verdict on ``answer`` given ``premise`` (an unparseable reply is UNSUPPORTED)."""
        reply = self._generator.generate(judge_messages(query, answer, premise), max_new_tokens)
        return parse_judge_reply(reply.text)
