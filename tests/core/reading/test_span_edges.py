"""A decoded span that cuts an identifier is widened to the whole name; prose words are left as cut."""

import pytest

from components.core.reading.span_decoding import SpanCandidate
from components.core.reading.span_edges import identifier_span, whole_identifier


def _cut(text: str, piece: str) -> tuple[int, int]:
    start = text.index(piece)
    return start, start + len(piece)


@pytest.mark.parametrize(
    ("text", "piece", "expected"),
    [
        ("the global variable _PROMPT2.", "PROMPT2", "_PROMPT2"),
        ("use go1.4-bootstrap-20171003.tar.gz, which contains", "tar.gz", "go1.4-bootstrap-20171003.tar.gz"),
        ("set `CGO_ENABLED=0` before", "ENABLED", "CGO_ENABLED"),  # a name ends at "="
        ("set `CGO_ENABLED=0` before", "CGO", "CGO_ENABLED"),
        ("opens at 10:30 daily", "10", "10:30"),  # a ":" between digits joins
        ("see (config.yaml) first", "config", "config.yaml"),
        ("by setting EVENT_SHOW_METHOD, libevent", "EVENT_SHOW_METHOD", "EVENT_SHOW_METHOD"),
        # a command-line option is one name, its value after "=" is not part of it
        ("Use --auto-hybrid-regex.", "hybrid-regex", "--auto-hybrid-regex"),
        ("prepend -lexslt to the LIBS options", "lexslt", "-lexslt"),
        ("pass “--build-type=complete” to b2", "build-type", "--build-type"),
        ("try flac --lax first", "lax", "--lax"),
        # a file path from its root is one name, though "/" parts a URL's
        ("Which XML catalog: /etc/xml/catalog.", "xml/catalog", "/etc/xml/catalog"),
        ("then run ./testall.sh in tidy/test", "testall.sh", "./testall.sh"),
        ("add (~/.fzf) to the path", "fzf", "~/.fzf"),
    ],
)
def test_a_cut_identifier_becomes_the_whole_name(text, piece, expected):
    start, end = identifier_span(text, *_cut(text, piece))
    assert text[start:end] == expected


@pytest.mark.parametrize(
    ("text", "piece"),
    [
        ("in the 1990s the city grew", "1990"),  # a prose word: no joiner inside
        ("the Anglo-Saxon kings", "Saxon"),  # a hyphenated word is not a name
        ("Beyoncé's first album", "Beyoncé"),
        ("it costs $5.00 today.", "$5.00"),  # not cut: the full stop after it ends the sentence
        ("the Lakers won", "Lakers"),
        ("totals 2,236,457 checks", "236,457"),  # a comma is not a joiner
        ("#CrashChangeVT=no\n", "no"),  # a value after "=" is not a piece of its key
        ("#DefaultTasksMax=15%\n", "15%"),
        ("LOG_LEVEL=debug_all", "debug_all"),
        (":c:func:`uv_fs_req_cleanup`", "uv_fs_req_cleanup"),  # a ":" between letters parts names
        ("https://hub.local:8443/api/v2/lights/l-02", "8443"),  # a port: "/" and ":" part the names of a URL
        ("see golang.org/x/net", "x"),
        ("pass --build-type=complete to b2", "complete"),  # the value, not the option
        ("the 9/11 attacks", "11"),  # a path begins at its root
        ("the and/or case", "or"),
        ("a state-of-the-art tool", "art"),
        ("-9999 marks a missing value", "9999"),  # a negative number is not an option
        ("the city--which grew", "which"),
    ],
)
def test_prose_and_whole_spans_are_left_alone(text, piece):
    assert identifier_span(text, *_cut(text, piece)) == _cut(text, piece)


def test_a_long_run_without_spaces_is_not_widened():
    text = "token " + "a_" * 60 + "end"
    start, end = _cut(text, "a_a_a")
    assert identifier_span(text, start, end) == (start, end)


def test_whole_identifier_keeps_tokens_and_score_and_leaves_keyed_cells():
    text = "the secondary prompt is _PROMPT2."
    start, end = _cut(text, "PROMPT2")
    span = SpanCandidate(0, 5, 7, start, end, 3.5, 0.6)
    widened = whole_identifier(span, text)
    assert (widened.char_start, widened.char_end, widened.logit, widened.score) == (start - 1, end, 3.5, 0.6)
    keyed = SpanCandidate(0, 5, 7, start, end, 3.5, 0.6, keyed=True)
    assert whole_identifier(keyed, text) is keyed
