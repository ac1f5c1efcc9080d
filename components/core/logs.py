"""Logging helpers shared by the layers above."""

from __future__ import annotations

import contextlib
import logging
import sys


def say(message: str) -> None:
    """One line on stderr, ``spanqa: message``: what a store or server did to heal, wait or start (never silent,
    never a traceback)."""
    print(f"spanqa: {message}", file=sys.stderr, flush=True)


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
