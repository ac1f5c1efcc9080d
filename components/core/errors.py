"""Errors that spanqa reports to a user as one paragraph (run.py prints them without a traceback)."""


class SpanQAError(Exception):
    """A problem the user can fix: the message says which file or component, and what to do."""


class ParameterError(SpanQAError, ValueError):
    """A component parameter of the wrong type or out of range (``components.core.params``): the same sentence for
    the same mistake in every component, a 422 from the server (the request's fault, never a 500 or 502)."""
