"""Readers: extract answer spans from the windows that retrieval and re-ranking selected."""

from components.readers.extractive_reader import ExtractiveReader

__all__ = ["ExtractiveReader"]
