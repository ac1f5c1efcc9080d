"""The one exception of conversion: a file that cannot become a document, with the reason a person reads."""

from __future__ import annotations


class ConversionError(Exception):
    """The file is skipped and listed with ``str(exc)`` as its reason (never a crash of the whole index)."""
