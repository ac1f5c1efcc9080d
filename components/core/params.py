"""Checks for component parameters: one clear sentence naming the component, the parameter, what was given,
what is expected — raised as ``SpanQAError`` at construction (YAML load) and for run-time overrides.

Usage::

    from components.core.params import check_positive_int

    check_positive_int("HybridRetriever", "top_k", 10)     # fine
    check_positive_int("HybridRetriever", "top_k", -5)     # SpanQAError: ... top_k must be a whole number ≥ 1 ...
"""

from __future__ import annotations

from typing import Any

from components.core.errors import ParameterError

__all__ = ["ParameterError", "check_choice", "check_fraction", "check_int", "check_number", "check_positive_int"]


def _fail(component: str, name: str, value: Any, expected: str) -> None:
    raise ParameterError(f"{component}: parameter '{name}' is {value!r}, but it must be {expected}. "
                      f"Fix it in the pipeline YAML (or on the command line).")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value  # not NaN


def check_positive_int(component: str, name: str, value: Any, optional: bool = False) -> None:
    """``value`` is a whole number ≥ 1 (or ``None`` when ``optional``)."""
    if value is None and optional:
        return
    if not _is_int(value) or value < 1:
        _fail(component, name, value, "a whole number ≥ 1" + (" (or null)" if optional else ""))


def check_int(component: str, name: str, value: Any, low: int = 0, optional: bool = False) -> None:
    """``value`` is a whole number ≥ ``low`` (or ``None`` when ``optional``)."""
    if value is None and optional:
        return
    if not _is_int(value) or value < low:
        _fail(component, name, value, f"a whole number ≥ {low}" + (" (or null)" if optional else ""))


def check_number(component: str, name: str, value: Any, low: float | None = None, high: float | None = None,
                 optional: bool = False) -> None:
    """``value`` is a number in ``[low, high]`` (either bound may be open-ended)."""
    if value is None and optional:
        return
    if not _is_number(value) or (low is not None and value < low) or (high is not None and value > high):
        span = f"between {low} and {high}" if low is not None and high is not None else (
            f"≥ {low}" if low is not None else f"≤ {high}" if high is not None else "any finite number")
        _fail(component, name, value, f"a number {span}" + (" (or null)" if optional else ""))


def check_fraction(component: str, name: str, value: Any, high: float = 1.0, high_open: bool = False,
                   optional: bool = False) -> None:
    """``value`` is a number in ``[0, high]`` (``[0, high)`` when ``high_open``)."""
    if value is None and optional:
        return
    if not _is_number(value) or value < 0 or value > high or (high_open and value == high):
        _fail(component, name, value, f"a number from 0 to {high} ({'excluded' if high_open else 'included'})")


def check_choice(component: str, name: str, value: Any, choices: tuple | list) -> None:
    if value not in choices:
        _fail(component, name, value, "one of " + ", ".join(repr(c) for c in choices))
