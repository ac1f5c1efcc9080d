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


CHECKS = ("Checks by state.\n\n| State | Permit | Handgun | Long Gun | Handgun | Long Gun | Totals |\n"
          "|---|---|---|---|---|---|---|\n| Alabama | 18,870 | 23,022 | 22,650 | 14 | 15 | 71,137 |\n"
          "| Alaska | 209 | 3,062 | 3,209 | 9 |  | 7,095 |\n| Arizona | 2,303 | 12,382 | 9,041 | 5 | 3 | 27,087 |\n")


def _terms(text: str) -> set[str]:
    from components.core.text.analysis import Analyzer
    from components.core.text.key_terms import content_terms

    return content_terms(text, Analyzer())  # the reader's: question words ("what", "how", "mean") are no terms


def _asked(question: str, text: str, header: str | None = None) -> list[str]:
    from components.core.reading.keyed_lookup import in_asked_column

    rows = named(question, keyed_lines(text), text)
    assert len(rows) == 1, rows
    row = in_asked_column(rows[0], text, header, _terms(question), _terms)
    return [text[s:e] for s, e in row.values]


def test_the_column_a_question_names_is_the_only_candidate_leftmost_among_equal_names():
    assert _asked("How many handgun checks were there in Alabama?", CHECKS) == ["23,022"]  # not the second Handgun
    assert _asked("How many long gun checks did Arizona have?", CHECKS) == ["9,041"]
    assert _asked("How many checks were run in Alaska in total?", CHECKS) == ["7,095"]  # Totals: the stem "total"
    assert _asked("How many permit checks did Arizona record?", CHECKS) == ["2,303"]
    # no header names what is asked: every value cell stays a candidate, the reader chooses
    assert _asked("What happened in Alabama?", CHECKS) == ["18,870", "23,022", "22,650", "14", "15", "71,137"]


def test_a_text_that_begins_inside_a_table_reads_its_first_line_as_a_row_and_takes_the_header_from_the_source():
    from components.core.text.splitting import header_above

    start = CHECKS.index("| Alaska")
    window = CHECKS[start:]
    assert [window[k.key[0]:k.key[1]] for k in keyed_lines(window)] == ["Alaska", "Arizona"]  # Alaska is no header
    s, e = header_above(CHECKS, start)
    header = CHECKS[s:e]
    assert header.startswith("| State | Permit |")
    assert _asked("How many long gun checks did Arizona have?", window, header) == ["9,041"]
    assert _asked("How many long gun checks did Arizona have?", window) == [  # no header known: every cell
        "2,303", "12,382", "9,041", "5", "3", "27,087"]


def test_a_question_word_never_names_a_column():
    text = "| Code | Meaning | What to try |\n|---|---|---|\n| ERR-8844 | Voltage too low | Use the 12 V adapter |\n"
    assert _asked("What does ERR-8844 indicate?", text) == ["Voltage too low", "Use the 12 V adapter"]  # both stay
    assert _asked("What should I try for ERR-8844?", text) == ["Use the 12 V adapter"]


def test_an_empty_asked_cell_gives_no_candidate():
    from components.core.reading.keyed_lookup import Keyed, in_asked_column

    text = "| Code | Meaning | Fix |\n|---|---|---|\n| E1 | Disk full |  |\n"
    row = named("What is the fix for E1?", keyed_lines(text), text)[0]
    assert [text[s:e] for s, e in row.values] == ["Disk full"]
    assert in_asked_column(row, text, None, _terms("What is the fix for E1?"), _terms).values == ()
    assert isinstance(row, Keyed) and row.columns == (1,)


def test_a_prose_block_of_key_value_items_is_keyed_and_a_mixed_one_is_not():
    text = ("Errors:\n\n- UV_E2BIG: argument list too long\n- UV_EACCES: permission denied\n* 404: Not Found\n\n"
            "Note: a note\nthat wraps.\n")
    rows = keyed_lines(text)
    assert [(text[slice(*r.key)], [text[slice(*v)] for v in r.values]) for r in rows] == [
        ("UV_E2BIG", ["argument list too long"]), ("UV_EACCES", ["permission denied"]), ("404", ["Not Found"])]
    row = named("What does UV_EACCES mean?", rows, text)[0]
    assert row.values == ((text.index("permission"), text.index("permission") + len("permission denied")),)
    assert row.line == (text.index("- UV_EACCES"), text.index("\n* 404"))
    dashes = "- UV_ENOTCONN \u2014 socket is not connected\n- UV_ENOTDIR \u2014 not a directory\n"
    row = named("What does the error UV_ENOTDIR indicate?", keyed_lines(dashes), dashes)[0]
    assert dashes[slice(*row.values[0])] == "not a directory"
    one = "- UV_ENOTDIR \u2014 not a directory"  # a window that holds one item of a list
    assert [one[slice(*r.values[0])] for r in keyed_lines(one)] == ["not a directory"]
    assert keyed_lines("Note: a line of prose on its own.") == ()  # one unmarked line is prose


def pairs(text: str) -> list[tuple[str, list[str]]]:
    return [(text[slice(*r.key)], [text[slice(*v)] for v in r.values]) for r in keyed_lines(text)]


def test_config_directives_live_or_shipped_commented_out_are_keyed_and_comments_are_not():
    shipped = ("# Logging\n#SyslogFacility AUTH\n#LogLevel INFO\n\n# Authentication:\n\n#LoginGraceTime 2m\n"
               "#HostKey /etc/ssh/ssh_host_rsa_key\n#RekeyLimit default none\n")
    assert pairs(shipped) == [("SyslogFacility", ["AUTH"]), ("LogLevel", ["INFO"]), ("LoginGraceTime", ["2m"]),
                              ("HostKey", ["/etc/ssh/ssh_host_rsa_key"]), ("RekeyLimit", ["default none"])]
    fenced = "```\n# the listener\nlistener 1883\nPort 22\n```\n"  # in a code block any keyword is a directive
    assert pairs(fenced) == [("listener", ["1883"]), ("Port", ["22"])]
    mixed = "```\n#ListenAddress ::\nPort = 22\n#LogLevel INFO\n```"  # `key = value` and directives together
    assert pairs(mixed) == [("ListenAddress", ["::"]), ("Port", ["22"]), ("LogLevel", ["INFO"])]
    code = "```python\ndef f(x):\n    x = 1\n    return x\n```"  # code is not a config file
    assert pairs(code) == [("x", ["1"])]
    row = named("What is LoginGraceTime set to?", keyed_lines(shipped), shipped)[0]
    assert row.values == (_span(shipped, "2m"),)


def test_prose_is_never_read_as_directives():
    assert keyed_lines("Some prose here\nand more prose.\n") == ()  # plain words: not identifiers, not commented
    assert keyed_lines("# A heading\nPort 22 is the default.\n") == ()  # a comment-like heading, then prose
    assert pairs("MaxAuthTries 6\nMaxSessions 10\n") == [("MaxAuthTries", ["6"]), ("MaxSessions", ["10"])]


def test_a_json_object_without_a_fence_is_keyed_like_code():
    text = '## Settings\n\n{\n  "Port": 22,\n  "AddressFamily": "any",\n  "Enabled": true\n}'
    assert pairs(text) == [("Port", ["22"]), ("AddressFamily", ["any"]), ("Enabled", ["true"])]


def test_an_identifier_is_named_by_its_words_in_order():
    assert names_key("What is the default syslog facility in OpenSSH sshd?", "SyslogFacility")
    assert names_key("What is the default authorized keys command user?", "AuthorizedKeysCommandUser")
    assert names_key("Is X11 forwarding allowed?", "X11Forwarding")
    assert names_key("How many max client conn are allowed?", "max_client_conn")
    assert not names_key("Which facility logs syslog?", "SyslogFacility")  # the words, but not in order
    assert not names_key("What is the default keys command user?", "AuthorizedKeysCommandUser")  # not all of them
    assert not names_key("What is the syslog facilityname?", "SyslogFacility")  # whole words only


def test_another_setting_only_when_the_named_identifier_is_nowhere():
    from components.core.reading.keyed_lookup import another_setting

    conf = "#keepalive_interval 60\n#max_inflight 20\n"
    at = conf.index("60")
    assert another_setting("What is the default max_keepalive?", conf, at, at + 2) == ("max_keepalive",
                                                                                      "keepalive_interval")
    assert another_setting("What is the default keepalive_interval?", conf, at, at + 2) is None  # named
    assert another_setting("What is the default keepalive interval?", conf, at, at + 2) is None  # no identifier
    assert another_setting("What does MosquittoBridge set the keepalive to?", conf, at, at + 2,
                           title="MosquittoBridge settings") is None  # the title holds it
    assert another_setting("What is the default max_keepalive?", "It is 60 seconds.", 6, 8) is None  # prose
