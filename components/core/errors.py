"""Errors that spanqa reports to a user as one paragraph (run.py prints them without a traceback)."""


class SpanQAError(Exception):
    """A problem the user can fix: the message says which file or component, and what to do."""


class ParameterError(SpanQAError, ValueError):
    """A component parameter of the wrong type or out of range (``components.core.params``): the same sentence for
    the same mistake in every component, a 422 from the server (the request's fault, never a 500 or 502)."""


def causes(exc: BaseException | None):
    """``exc`` and what caused it (``__cause__``, else ``__context__``), outermost first, each once."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def reported_error(exc: BaseException) -> SpanQAError | None:
    """The ``SpanQAError`` inside ``exc``'s chain (Haystack wraps a component's in ``PipelineRuntimeError``)."""
    return next((e for e in causes(exc) if isinstance(e, SpanQAError)), None)
