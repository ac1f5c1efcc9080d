"""Errors that spanqa reports to a user as one paragraph (run.py prints them without a traceback)."""


class SpanQAError(Exception):
    """A problem the user can fix: the message says which file or component, and what to do."""
