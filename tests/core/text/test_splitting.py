import pytest
from components.core.text.splitting import (CODE, PROSE, TABLE, chunk_units, crosses_hard_break, sentence_spans,
                                           split_blocks, split_units)

DOC = """# Refunds

Annual plans can be refunded. It must happen within 30 days of purchase. Dr. Smith approves exceptions.

| Plan | Price |
|------|-------|
| Spark | $0 |
| Glow | $4.99 |

```yaml
retry_interval_s: 45

timeout_s: 10
```
Last line here.
"""


def test_blocks_kinds_and_offsets():
    blocks = split_blocks(DOC)
    assert [b.kind for b in blocks] == [PROSE, PROSE, TABLE, CODE, PROSE]
    assert blocks[0].slice(DOC) == "# Refunds"
    assert blocks[2].slice(DOC).startswith("| Plan") and blocks[2].slice(DOC).endswith("$4.99 |")
    assert blocks[3].slice(DOC).startswith("```yaml") and blocks[3].slice(DOC).endswith("```")


def test_sentences_are_exact_slices_and_keep_abbreviations():
    para = split_blocks(DOC)[1]
    sents = sentence_spans(DOC, para.start, para.end)
    assert [s.slice(DOC) for s in sents] == [
        "Annual plans can be refunded.",
        "It must happen within 30 days of purchase.",
        "Dr. Smith approves exceptions.",
    ]


WRAPPED = """If curl is built with PSL support, it detects and
discards cookies that are specified for such suffix domains. Others
stay.

maxwait
:   How long the oldest client has waited, in seconds.
    If this grows, the pool is too small.

Options follow:
- one item
- two items that
  wrap here
Host: example.org
Port: 8080
# Heading
Text under it
"""


def test_a_line_that_wraps_a_paragraph_is_not_a_sentence_end():
    got = [u.slice(WRAPPED) for b in split_blocks(WRAPPED) for u in split_units(WRAPPED, b)]
    assert got == [
        "If curl is built with PSL support, it detects and\ndiscards cookies that are specified for such suffix "
        "domains.",
        "Others\nstay.",
        "maxwait\n:   How long the oldest client has waited, in seconds.",  # a definition joins its term
        "If this grows, the pool is too small.",
        "Options follow:",
        "- one item",  # list items, key-value lines and headings keep their line breaks
        "- two items that\n  wrap here",
        "Host: example.org",
        "Port: 8080",
        "# Heading",
        "Text under it",
    ]


def test_a_span_may_cross_a_wrap_but_not_a_list_item_a_heading_or_a_blank_line():
    at = WRAPPED.index
    assert not crosses_hard_break(WRAPPED, at("detects and"), at("discards") + 8)  # a wrap inside a sentence
    assert not crosses_hard_break(WRAPPED, at("maxwait"), at("How long"))  # a term and its definition
    assert crosses_hard_break(WRAPPED, at("one item"), at("- two") + 5)  # two list items
    assert not crosses_hard_break(WRAPPED, at("two items"), at("wrap here") + 9)  # one item that wraps
    assert crosses_hard_break(WRAPPED, at("Heading"), at("Text under") + 4)  # a heading and its text
    assert crosses_hard_break(WRAPPED, at("Others"), at("maxwait") + 3)  # across a blank line
    assert crosses_hard_break(WRAPPED, at("example.org"), at("Port") + 4)  # two key: value lines


QUOTED = """Notes follow.

> It is possible to disable epoll by setting EVENT_NOEPOLL,
> respectively.
>
> By setting the environment variable EVENT_SHOW_METHOD, libevent
> displays the kernel notification method that it uses.
> - a quoted item
> - another
"""


def test_a_quote_wraps_like_the_text_it_quotes():
    got = [u.slice(QUOTED) for b in split_blocks(QUOTED) for u in split_units(QUOTED, b)]
    assert got == [
        "Notes follow.",
        "> It is possible to disable epoll by setting EVENT_NOEPOLL,\n> respectively.",
        ">",  # the quote's blank line
        "> By setting the environment variable EVENT_SHOW_METHOD, libevent\n> displays the kernel notification "
        "method that it uses.",
        "> - a quoted item",  # a quoted list keeps its items
        "> - another",
    ]
    at = QUOTED.index
    assert not crosses_hard_break(QUOTED, at("libevent"), at("displays") + 8)
    assert crosses_hard_break(QUOTED, at("a quoted"), at("another"))


def test_table_rows_and_code_parts():
    blocks = split_blocks(DOC)
    rows = split_units(DOC, blocks[2])
    assert [r.slice(DOC) for r in rows] == ["| Plan | Price |", "| Spark | $0 |", "| Glow | $4.99 |"]
    parts = split_units(DOC, blocks[3])
    assert [p.slice(DOC) for p in parts] == ["```yaml\nretry_interval_s: 45", "timeout_s: 10\n```"]


def test_chunks_overlap_and_never_mix_kinds():
    units = [u for b in split_blocks(DOC) for u in split_units(DOC, b)]
    chunks = chunk_units(units, max_chars=90, overlap=0.4)
    assert all(len({u.kind for u in units if c.start <= u.start < c.end}) == 1 for c in chunks)
    prose = [c for c in chunks if c.kind == PROSE]
    # the first prose chunks share a sentence (overlap), and together cover every prose unit
    assert prose[1].start < prose[0].end
    covered = {u for u in units for c in chunks if c.start <= u.start and u.end <= c.end}
    assert covered == set(units)


def test_key_definitions_find_scalar_key_lines_of_code_blocks_only():
    from components.core.text.splitting import key_definitions, named_keys

    text = (
        "Set `max_retries` in the file; `port: 99` in prose is no definition.\n\n"
        "```yaml\nsync:\n  max_retries: 8\n  url: https://host:8443/x\n```\n\n"
        '```json\n{\n  "rate_limit_per_minute": 120,\n  "lights": [\n    1\n  ]\n}\n```'
    )
    found = {}
    for block in split_blocks(text):
        found.update({k: text[s.start : s.end] for k, s in key_definitions(text, block).items()})
    # 'sync:' and 'lights': open a nested value; a URL's 'https:' is no key; the trailing comma is not kept
    assert found == {"max_retries": "max_retries: 8", "url": "url: https://host:8443/x",
                     "rate_limit_per_minute": '"rate_limit_per_minute": 120'}
    assert named_keys("Each token may send the number shown in `rate_limit_per_minute` (see `x`, `x`).") == [
        "rate_limit_per_minute", "x"]
    assert named_keys("Run `sudo systemctl reload` now") == []  # a command is not a key name


@pytest.mark.parametrize("piece", [
    "Dr. Smith arrived at 5 p.m. He left. He left.",   # abbreviations; a sentence repeated
    "Yes. Yes. Yes.  Yes.\n\nNo.",                      # the same sentence many times, mixed white space
    "aa. aa. aa.",                                      # occurrences that could overlap
    "Price: $4.50 per unit.\u00a0Next sentence\u2003here. Last one",  # unicode spaces, no final stop
    "  Leading spaces. Trailing spaces.   ",
    "",
    "One sentence without a stop",
    "He said \"Stop.\" Then he left... Really? Yes!",
])
def test_sentence_spans_are_pysbds_own(piece):
    from components.core.text.splitting import _pysbd_spans, _segmenter

    want = [(s.sent, s.start, s.end) for s in _segmenter().segment(piece)]
    assert [(s.sent, s.start, s.end) for s in _pysbd_spans(piece)] == want


def test_a_tables_header_row_is_the_line_before_its_rule_and_is_found_from_inside_the_table():
    from components.core.documents.layout import table_row
    from components.core.text.splitting import header_above, is_rule, table_header_line

    text = "Intro.\n\n| Code | Meaning |\n|---|:--|\n| E1 | one |\n| E2 | two |\n\nAfter.\n"
    start = text.index("| Code")
    end = text.index("\n\nAfter")
    assert table_header_line(text, start, end) == (start, text.index("\n", start))
    inside = text.index("| E1")
    assert table_header_line(text, inside, end) is None  # seen from a row on: no header
    assert header_above(text, text.index("E2")) == (start, text.index("\n", start))  # any offset in the row
    assert header_above(text, start) is None  # the header itself has none above
    assert header_above(text, text.index("Intro")) is None  # prose
    assert is_rule("|---|:--|") and not is_rule("| | |")  # an empty header row is a row, not a rule
    # the data row numbers of locate(): an empty header row (a PDF table without one) is row 0, not skipped
    empty = "| | |\n|---|---|\n| E1 | one |\n"
    assert [table_row(empty, empty.index(x)) for x in ("| |", "E1")] == [0, 1]
    assert [table_row(text, text.index(x)) for x in ("Code", "E1", "E2")] == [0, 1, 2]
