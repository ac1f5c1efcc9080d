"""Rows and config lines a question names by their key, on hand-made text with exact offsets; and a character range
scored from a window's logits like any span."""

from __future__ import annotations

import numpy as np

from components.core.reading.keyed_lookup import keyed_lines, named, names_key
from components.core.reading.span_decoding import decode_window, range_logit

TEXT = ("Errors of the gateway.\n\n| Code | Meaning | Retry |\n|---|---|---|\n"
        "| E4012 | Token expired | yes |\n| E4031 | Quota exhausted |  |\n\n"
        "```ini\nmax_client_conn = 100\npool_mode = \"session\"\n# a comment\n```\n")


def _span(text: str, part: str, after: str = "") -> tuple[int, int]:
    s = text.index(part, text.index(after) if after else 0)
    return s, s + len(part)


def test_rows_and_config_lines_with_their_keys_and_values():
    keyed = keyed_lines(TEXT)
    assert [TEXT[k.key[0]:k.key[1]] for k in keyed] == ["E4012", "E4031", "max_client_conn", "pool_mode"]
    assert [[TEXT[s:e] for s, e in k.values] for k in keyed] == [
        ["Token expired", "yes"], ["Quota exhausted"], ["100"], ["session"]]  # empty cells and quotes left out
    assert TEXT[slice(*keyed[1].line)] == "| E4031 | Quota exhausted |  |"


def test_a_question_names_a_key_only_whole_and_never_by_a_stop_word():
    assert names_key("What does error E4031 mean?", "E4031")
    assert names_key("what does e4031 mean", "E4031")  # case-insensitive
    assert not names_key("What does error E40311 mean?", "E4031")  # a longer code is another code
    assert not names_key("What does error XE4031 mean?", "E4031")
    assert names_key("What is the default max_client_conn?", "`max_client_conn`")
    assert not names_key("What is it for?", "for")  # a stop word names nothing
    assert not names_key("Is it a?", "a")
    rows = named("What does E4031 mean?", keyed_lines(TEXT), TEXT)
    assert len(rows) == 1 and rows[0].values == (_span(TEXT, "Quota exhausted"),)  # the key is not its own value
    assert named("What does error E5000 mean?", keyed_lines(TEXT), TEXT) == []


def test_a_header_row_and_prose_are_never_keyed():
    text = "| Code | Meaning |\n|---|---|\n| E1 | one |\n\nCode means something in prose: E1 here.\n"
    assert [text[k.key[0]:k.key[1]] for k in keyed_lines(text)] == ["E1"]
    assert named("What does Code mean?", keyed_lines(text), text) == []


def test_a_range_is_scored_on_its_own_tokens_and_only_when_the_window_holds_it():
    # tokens: [CLS] q [SEP] "Quota" "exhausted" "now" [SEP]; context characters 0-5, 6-15, 16-19
    offsets = np.array([[0, 0], [0, 0], [0, 0], [0, 5], [6, 15], [16, 19], [0, 0]])
    seq = np.array([-1, 0, -1, 1, 1, 1, -1])
    start = np.array([0.0, 0, 0, 2.0, 0.5, 0.1, 0])
    end = np.array([0.0, 0, 0, 0.2, 3.0, 0.4, 0])
    d = decode_window(start, end, offsets, seq, k=3)
    whole = range_logit(d, 0, 15)
    assert (whole.start_token, whole.end_token, whole.logit) == (3, 4, 5.0)
    assert range_logit(d, 6, 19).logit == 0.5 + 0.4
    assert range_logit(d, 1, 15) is None  # not on a token boundary
    assert range_logit(d, 0, 30) is None  # past the window
