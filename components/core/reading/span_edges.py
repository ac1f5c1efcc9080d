"""A span never cuts an identifier: the edges of a decoded span snapped to the whole name it lies in.

The reader's tokenizer splits words at punctuation, so the span it decodes can start or end inside one
whitespace-free name — ``PROMPT2`` of ``_PROMPT2``, ``tar.gz`` of ``go1.4-bootstrap-20171003.tar.gz``,
``ENABLED`` of ``CGO_ENABLED=0``. Such a piece is not what the text states, and a verifier reading it marked
inside the name judges a fragment. ``identifier_span`` widens the span to the whole name when the span cuts it
and the name is an identifier: it holds ``_``, or a ``.`` between two letters or digits, or a ``:`` between two
digits, or it is a command-line option (``--auto-hybrid-regex``, ``-lexslt``); a span inside a file path from its
root (``xml/catalog`` of ``/etc/xml/catalog``) to the whole path (``whole_token_span``). A name ends at white space,
at ``=`` and ``/`` and at a ``:`` between letters: the ``no`` of ``#CrashChangeVT=no`` is a value and the ``8443`` of
``hub.local:8443/api`` a port, not pieces of a name.
Ordinary words are left alone: ``1990`` of ``1990s`` or ``Saxon`` of ``Anglo-Saxon`` is what a reader of prose
meant, and SQuAD's answers are cut that way.

    identifier_span("the global variable _PROMPT2.", 21, 28)   # (20, 28): "_PROMPT2", the full stop left out
    identifier_span("in the 1990s", 7, 11)                     # (7, 11): not an identifier, unchanged
"""

from __future__ import annotations

import dataclasses
import re

from components.core.reading.span_decoding import SpanCandidate

_JOINED = re.compile(r"_|[A-Za-z0-9]\.[A-Za-z0-9]|\d:\d")
_OPTION = re.compile(r"-{1,2}[A-Za-z][A-Za-z0-9]")  # a command-line option: -lexslt, --auto-hybrid-regex
_OPTION_NAME = re.compile(r"-{1,2}[A-Za-z][\w.\-]*")
_PATH = re.compile(r"(?:~|\.{1,2})?(?:/[\w.\-]+)+/?")  # a file path from its root: /etc/xml/catalog, ~/.fzf
OPENERS = "([{<\"'`«“‘*"
CLOSERS = ")]}>\"'`»”’*.,;:!?"
MAX_NAME = 80  # characters: a longer whitespace-free run (a URL with a query, base64) is not widened into


def _word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _ends_name(text: str, i: int) -> bool:
    """Whether ``text[i]`` parts two names: white space, ``=`` (``KEY=value`` is a key and its value), ``/`` (a
    path or URL is names in a row: the port ``8443`` of ``hub.local:8443/api/v2`` is one of them) or a ``:`` that
    is not between two digits (``10:30`` is one time, ``#Key:value`` two things)."""
    ch = text[i]
    if ch.isspace() or ch in "=/":
        return True
    return ch == ":" and not (0 < i < len(text) - 1 and text[i - 1].isdigit() and text[i + 1].isdigit())


def _cuts_left(text: str, start: int) -> bool:
    """Whether ``start`` lies inside a name: a letter, digit or ``_`` before it, or a joiner after one."""
    if start <= 0:
        return False
    before = text[start - 1]
    return _word_char(before) or (before in ".-:" and not _ends_name(text, start - 1) and start >= 2
                                  and _word_char(text[start - 2]))


def _cuts_right(text: str, end: int) -> bool:
    if end >= len(text):
        return False
    after = text[end]
    return _word_char(after) or (after in ".-:" and not _ends_name(text, end) and end + 1 < len(text)
                                 and _word_char(text[end + 1]))


def _trimmed(text: str, s: int, e: int, start: int, end: int) -> tuple[int, int]:
    """``s:e`` without the quotes, brackets and closing punctuation around it, never cutting into ``start:end``."""
    while s < start and text[s] in OPENERS:
        s += 1
    while e > end and text[e - 1] in CLOSERS:
        e -= 1
    return s, e


def whole_token_span(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The whole file path from its root (``/etc/xml/catalog``, ``~/.fzf``, ``./testall.sh``) or command-line option
    (``-lexslt``; ``--build-type`` of ``--build-type=complete``: a value after ``=`` is not the option) that
    ``start:end`` lies inside and does not cover, or None: a path is one name, though ``/`` parts a URL's."""
    s, e = start, end
    while s > 0 and not text[s - 1].isspace():
        s -= 1
    while e < len(text) and not text[e].isspace():
        e += 1
    s, e = _trimmed(text, s, e, start, end)
    if _OPTION.match(text, s) and "=" in text[s:e] and text.index("=", s, e) >= end:
        e = text.index("=", s, e)  # the option, not its value
    if (s, e) == (start, end) or e - s > MAX_NAME:
        return None
    if _PATH.fullmatch(text, s, e) or _OPTION_NAME.fullmatch(text, s, e):
        return s, e
    return None


def identifier_span(text: str, start: int, end: int) -> tuple[int, int]:
    """``(start, end)`` widened to the whole identifier it cuts, else unchanged (see the module's doc)."""
    if not (0 <= start < end <= len(text)):
        return start, end
    whole = whole_token_span(text, start, end)
    if whole is not None:
        return whole
    if not (_cuts_left(text, start) or _cuts_right(text, end)):
        return start, end
    s, e = start, end
    while s > 0 and not _ends_name(text, s - 1):
        s -= 1
    while e < len(text) and not _ends_name(text, e):
        e += 1
    s, e = _trimmed(text, s, e, start, end)
    name = text[s:e]
    if s > start or e < end or e - s > MAX_NAME or not (_JOINED.search(name) or _OPTION.match(name)):
        return start, end
    return s, e


def whole_identifier(span: SpanCandidate, context: str) -> SpanCandidate:
    """``span`` with its characters widened by ``identifier_span`` (its tokens and scores kept); a keyed cell is
    whole already."""
    if span.keyed:
        return span
    start, end = identifier_span(context, span.char_start, span.char_end)
    if (start, end) == (span.char_start, span.char_end):
        return span
    return dataclasses.replace(span, char_start=start, char_end=end)
