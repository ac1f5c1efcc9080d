"""Rows and settings a question names by their key: a table row by its first cell, a config line by its key.

Structured text answers by lookup. "What does error E4031 mean?" names a row of an error-code table by the code in
its first cell; "What is the default max_client_conn?" names the line ``max_client_conn = 100`` of a config block.
A reader model matches such identifiers poorly (WordPiece cuts ``E4031`` into pieces that many rows share), so
when a question names a key *exactly*, the answer is taken from that row's other cells or that line's value — the
model still chooses among them and scores them, and the verifier still judges them.

- ``keyed_lines(text)``: every table row (not the header), every ``key: value`` / ``key = value`` line of a
  code block or of a JSON object, every item of a prose block made only of ``key: value`` items (``- ENOENT: no
  such file``, ``ENOENT — no such file``), and every ``Keyword value`` directive of a config file's block
  (``#LoginGraceTime 2m``, see ``_directives``), as ``Keyed(key, values, line)`` character ranges of ``text``;
- ``named(query, keyed, text)``: those whose key the question names — the key's whole text, case-insensitive,
  between non-word characters, at least two characters with a letter or digit, and not a stop word; or an
  identifier's words in order ("syslog facility" names ``SyslogFacility``);
- ``another_setting``: an answer that is the value of a setting the question does not name, while the question
  names an identifier the text does not hold.

    rows = named("What does error E4031 mean?", keyed_lines(text), text)
    rows[0].values   # ((start, end),) of "Quota for the project is exhausted"
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from components.core.text.analysis import english_stopwords, is_identifier
from components.core.text.splitting import (CODE, PROSE, TABLE, _KEY_LINE, _TABLE_RULE, _lines, split_blocks,
                                            table_header_line)


# a prose line that is a `key: value` item, list-marked or not (``- UV_E2BIG: argument list too long``,
# ``**maxwait**: how long …``, ``404: Not Found``, ``ENOTDIR — not a directory``); the value is the rest of the line
_LIST_KEY_LINE = re.compile(r"[ \t]*(?:[-*+\u2022][ \t]+|\d{1,3}[.)][ \t]+)?[`*\"']*([A-Za-z0-9_][\w.-]*)[`*\"']*"
                            r"(?:[ \t]*[:=](?!//)|[ \t]+[\u2014\u2013-])[ \t]*([^\s{\[].*?)[ \t]*$")


_LIST_MARK = re.compile(r"[ \t]*(?:[-*+\u2022]|\d{1,3}[.)])[ \t]")

# a configuration directive, the `Keyword value` of sshd_config, mosquitto.conf, nginx, Apache …, live or shipped
# commented out (``#Port 22``, ``#max_queued_messages 1000``; a comment has a space after its mark: ``# Logging``)
_DIRECTIVE = re.compile(r"[ \t]*([#;]?)([A-Za-z_][\w.-]*)[ \t]+((?![=:](?:\s|$))[^\s#;].*?)[ \t]*;?[ \t]*$")
_COMMENT = re.compile(r"[ \t]*(?:[#;]|//)(?:[ \t].*)?$")
_BRACES = {"{", "}", "},", "[", "]", "],"}  # the lines of a JSON object that hold no key
_FENCE = re.compile(r"[ \t]*(?:```|~~~)")
_CAMEL = re.compile(r"[a-z0-9][A-Z]")  # an inner capital: ``MaxAuthTries``, ``X11Forwarding``


def _identifier_key(key: str) -> bool:
    """A key written as an identifier: ``analysis.is_identifier``'s (a digit, or parts joined by - _ . /) or
    CamelCase."""
    return is_identifier(key) or _CAMEL.search(key) is not None


@dataclass(frozen=True)
class Keyed:
    key: tuple[int, int]  # the first cell / the key
    values: tuple[tuple[int, int], ...]  # the other non-empty cells / the value (quotes left out)
    line: tuple[int, int]  # the whole row / line
    columns: tuple[int, ...] = ()  # a table row's: the column of each value (the key's is 0)
    header: tuple[int, int] | None = None  # a table row's: the header row of its table, when ``text`` holds it


def row_cells(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """``(start, end)`` of each cell of the pipe-table row ``text[start:end]`` (white space trimmed)."""
    cells, pos = [], text.find("|", start, end) + 1
    while 0 < pos < end:
        nxt = text.find("|", pos, end)
        if nxt == -1:
            break
        s, e = pos, nxt
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        cells.append((s, e))
        pos = nxt + 1
    return cells


@lru_cache(maxsize=512)
def keyed_lines(text: str) -> tuple[Keyed, ...]:
    """The table rows and config lines of ``text`` with their key and values; memoised per text."""
    out: list[Keyed] = []
    for block in split_blocks(text):
        if block.kind == TABLE:
            header = table_header_line(text, block.start, block.end)  # None: the text begins inside the table
            for ls, le in _lines(text, block.start, block.end):
                if (ls, le) == header or _TABLE_RULE.match(text[ls:le]):
                    continue  # the header row names the columns, not a row
                cells = row_cells(text, ls, le)
                columns = tuple(i for i, c in enumerate(cells) if i > 0 and c[1] > c[0])
                if cells and cells[0][1] > cells[0][0] and columns:
                    out.append(Keyed(cells[0], tuple(cells[i] for i in columns), (ls, le), columns, header))
        elif block.kind == PROSE:  # `key: value` items and nothing else (``- E2BIG: argument list too long``): two
            # or more lines, or one list item (a window may hold one item of a longer list)
            lines = [(ls, le) for ls, le in _lines(text, block.start, block.end) if text[ls:le].strip()]
            found = [_LIST_KEY_LINE.match(text, ls, le) for ls, le in lines]
            listed = len(lines) == 1 and _LIST_MARK.match(text, *lines[0]) is not None  # one item a window holds
            if (len(lines) >= 2 or listed) and all(found):
                for m, line in zip(found, lines):
                    out.append(Keyed(m.span(1), (m.span(2),), line))
            elif lines and text[lines[0][0]:lines[0][1]].strip().startswith(("{", "[")) and \
                    text[lines[-1][0]:lines[-1][1]].strip().endswith(("}", "]")):
                out += _assignments(text, lines)  # a JSON object written without a code fence
            else:
                out += _directives(text, lines, fenced=False)
        elif block.kind == CODE:
            lines = list(_lines(text, block.start, block.end))
            assigned = _assignments(text, lines)  # `key = value` lines; the rest may be `Keyword value` ones
            taken = {k.line for k in assigned}
            rest = [(ls, le) for ls, le in lines if (ls, le) not in taken and text[ls:le].strip() not in _BRACES]
            out += sorted(assigned + _directives(text, rest, fenced=True), key=lambda k: k.line)
    return tuple(out)


def _assignments(text: str, lines) -> list[Keyed]:
    """The ``key: value`` / ``key = value`` / ``"key": value,`` lines of a code block, quotes left out."""
    out = []
    for ls, le in lines:
        m = _KEY_LINE.match(text, ls, le)
        if not m:
            continue
        s, e = m.span(2)
        if e - s >= 2 and text[s] == text[e - 1] and text[s] in "\"'":
            s, e = s + 1, e - 1
        if e > s:
            out.append(Keyed(m.span(1), ((s, e),), (ls, le)))
    return out


def _directives(text: str, lines, fenced: bool) -> list[Keyed]:
    """The ``Keyword value`` lines of a block made of directives and comments only (a config file's way): in a code
    block any keyword; in prose only directives shipped commented out (``#Port 22``) or keywords written as
    identifiers (``MaxAuthTries 6``), so that two lines of ordinary prose are never read as settings."""
    out = []
    for ls, le in lines:
        line = text[ls:le]
        if not line.strip() or _COMMENT.match(line) or (fenced and _FENCE.match(line)):
            continue
        m = _DIRECTIVE.match(text, ls, le)
        opens = m is not None and m.group(3).endswith((":", "{", "(")) and m.group(3).strip(":") != ""
        if m is None or opens or not (fenced or m.group(1) or _identifier_key(m.group(2))):
            return []  # a line that opens a block (`def f(x):`, `server {`) is code, not a setting
        out.append(Keyed(m.span(2), (m.span(3),), (ls, le)))
    return out


def _norm(text: str) -> str:
    return " ".join(text.strip().strip("`*_\"'").rstrip(":").split()).casefold()


def key_words(key: str) -> list[str]:
    """The words an identifier joins, as a person says them: ``AuthorizedKeysCommandUser`` → authorized keys
    command user, ``max_client_conn`` → max client conn, ``HTTPProxy`` → http proxy, ``X11Forwarding`` → x11
    forwarding."""
    parts = re.findall(r"[A-Z]+\d*(?=[A-Z][a-z])|[A-Z]?[a-z]+\d*|[A-Z]+\d*|\d+", key.strip().strip("`*_\"'"))
    return [p.casefold() for p in parts]


def names_key(query: str, key: str) -> bool:
    """Whether ``query`` names ``key`` exactly (see the module's rules), or names an identifier's words in order
    (``the default syslog facility`` names ``SyslogFacility``)."""
    k = _norm(key)
    if len(k) < 2 or not any(ch.isalnum() for ch in k) or k in english_stopwords():
        return False
    asked = " ".join(query.split()).casefold()
    if re.search(r"(?<!\w)" + re.escape(k) + r"(?!\w)", asked) is not None:
        return True
    words = key_words(key) if " " not in k else []
    return len(words) >= 2 and re.search(r"(?<![\w-])" + r"[\s_-]+".join(map(re.escape, words)) + r"(?![\w-])",
                                         asked) is not None


def named(query: str, keyed: tuple[Keyed, ...] | list[Keyed], text: str) -> list[Keyed]:
    """The rows and lines of ``keyed`` (of ``text``) whose key ``query`` names."""
    return [k for k in keyed if names_key(query, text[k.key[0] : k.key[1]])]


def names_a_key_of(query: str, text: str) -> bool:
    """Whether ``query`` names the key of a table row or setting ``text`` holds: a lookup the passage can answer
    whatever a sentence embedding makes of ``AddressFamily: any``."""
    return bool(named(query, keyed_lines(text), text))


# a word of a question that can only be a name: CamelCase (``AuthorizedKeysCommandUser``) or snake_case
# (``max_keepalive``) — not every identifier: ``COVID-19`` or ``2019`` may be written otherwise in the text
_ASKED_WORD = re.compile(r"(?<![\w.-])[A-Za-z]\w*(?![\w-])")


def another_setting(query: str, text: str, start: int, end: int, title: str = "") -> tuple[str, str] | None:
    """``(identifier, key)`` when ``text[start:end]`` is the value of a row or setting keyed ``key`` that the
    question does not name, while the question names an identifier (CamelCase or snake_case) that neither ``text``
    nor the document's ``title`` holds: the answer is a neighbouring setting's value ("the default max_keepalive?"
    answered from ``keepalive_interval 60``). ``None`` otherwise.

    >>> another_setting("What is the default max_keepalive?", "#keepalive_interval 60", 20, 22)
    ('max_keepalive', 'keepalive_interval')
    """
    row = next((k for k in keyed_lines(text) if any(s <= start and end <= e for s, e in k.values)), None)
    if row is None or names_key(query, text[row.key[0]:row.key[1]]):
        return None
    for m in (m for m in _ASKED_WORD.finditer(query) if "_" in m.group() or _CAMEL.search(m.group())):
        if re.search(r"(?<![\w-])" + re.escape(m.group()) + r"(?![\w-])", f"{title}\n{text}", re.IGNORECASE) is None:
            return m.group(), text[row.key[0]:row.key[1]]
    return None


def asked_column(question_terms: set[str], names: list[str], terms) -> int | None:
    """The column (≥ 1: the first names the row) whose header shares the most content terms with the question, the
    leftmost among equals (under a two-line header the plain name is the first group's); None when no header
    shares a term. ``terms(text)`` makes a text's content terms the way ``question_terms`` were made.

    >>> words = lambda t: set(t.lower().split())
    >>> asked_column({"long", "gun", "pennsylvania"}, ["State", "Handgun", "Long Gun", "Long Gun"], words)
    2
    """
    overlap = [len(terms(name) & question_terms) if i else 0 for i, name in enumerate(names)]
    best = max(range(len(names)), key=lambda i: (overlap[i], -i), default=0)
    return best if best and overlap[best] else None


def in_asked_column(row: Keyed, text: str, header_text: str | None, question_terms: set[str], terms) -> Keyed:
    """``row`` with only its value under the column the question asks about, when a header row names one — the
    table's own (``row.header``) or, for a text that begins inside the table, ``header_text`` (its header row,
    from the source); ``row`` unchanged when no header aligns with the row's cells or none is asked about."""
    if not row.columns:
        return row
    if row.header is not None:
        names = [text[s:e] for s, e in row_cells(text, *row.header)]
    elif header_text:
        names = [header_text[s:e] for s, e in row_cells(header_text, 0, len(header_text))]
    else:
        return row
    if len(names) != len(row_cells(text, *row.line)):
        return row
    column = asked_column(question_terms, names, terms)
    if column is None:
        return row
    if column not in row.columns:  # the column asked about is empty in this row: it answers nothing
        return Keyed(row.key, (), row.line, (), row.header)
    i = row.columns.index(column)
    return Keyed(row.key, (row.values[i],), row.line, (column,), row.header)
