"""Backends: the one way to resolve and load models, and the generation backends (local GGUF, OpenAI-compatible)."""
