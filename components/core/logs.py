"""Logging helpers shared by the layers above."""

from __future__ import annotations

import contextlib
import logging


@contextlib.contextmanager
def quiet_logger(name: str):
    """Silence the logger ``name`` inside the block (for a library that logs a traceback before raising an error
    that spanqa explains in one paragraph, or that logs noise spanqa reports itself)."""
    log = logging.getLogger(name)
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        log.setLevel(level)
