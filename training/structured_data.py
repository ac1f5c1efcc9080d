"""Structured-text reading examples built from real public tables and configuration files.

The sources are verbatim copies of public files (``training/structured/sources/``; repository, commit and licence
in ``training/structured/sources.json``): error-code and status-code tables (HTTP status codes, musl's errno
messages, libcurl's error codes, libuv's error constants) and commented configuration files (PgBouncer, Redis,
Unbound, OpenSSH's sshd_config, Mosquitto). Each source gives records — a code with its meaning, a key with its
default value — and each record gives questions read on a block of text that holds it:

- a table block: a few consecutive rows as a Markdown table with its header (the one row model spanqa's HTML, Word
  and PDF converters produce), or as a list of ``code: meaning`` lines, or (libcurl) the original Markdown;
- a config block: the original lines around the key (comments included, fenced or not), or the block's keys
  re-rendered as YAML, JSON, INI or ``.env``.

A wide table (S&P 500 constituents' financials: a ticker and a name, then many value columns) gives blocks of a few
rows under some of its columns, asked for one cell ("What was ABT's 52 week high?"); its unanswerable questions ask
about a company the block does not hold or a column it does not show (``wide_paragraphs``).

``definition_lists.py`` writes the same blocks and each source's records as definition lists under a heading path,
asked which term a description belongs to.

Questions ask what a code means ("What does ENOENT mean?"), which code has a meaning, or a key's default value;
the answer is the cell's or the value's exact span. A third of the questions ask about a record of the same source
that the block does not hold (the right reply is no answer). Sources are split whole: ``train`` sources feed the
reader and verifier training, ``heldout`` ones only the benchmark (``benchmarks/structured_reading.py``).

    python training/structured_data.py --split train --out .spanqa/training/structured-train.json
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent / "structured"


SPLITS = ("train", "calibrate", "heldout")


@dataclass(frozen=True)
class Record:
    key: str  # the code or the config key, as written in the source
    value: str  # its meaning or default value, as written
    number: str = ""  # a numeric code beside a named one (libcurl)
    line: int = -1  # config: the line of the source that sets it


# -- tables -------------------------------------------------------------------------------------------------
def http_codes(text: str) -> list[Record]:
    out = []
    for row in json.loads(text):
        if re.fullmatch(r"\d{3}", row["code"]):
            out.append(Record(row["code"], row["phrase"].strip("* ")))
    return out


def musl_errno(text: str) -> list[Record]:
    return [Record(k, v) for k, v in re.findall(r'^E\((E[A-Z0-9]+),\s*"([^"]+)"\)', text, re.M)]


def curl_errors(text: str) -> list[Record]:
    out = []
    for name, number, body in re.findall(r"^## (CURLE_[A-Z0-9_]+) \((\d+)\)\n\n(.+?)(?=\n\n|\Z)", text, re.M | re.S):
        body = " ".join(body.split())
        first = re.match(r"(.+?\.)(\s|$)", body)
        out.append(Record(name, first.group(1) if first else body, number))
    return out


def sqlite_codes(text: str) -> list[Record]:
    return [Record(k, " ".join(v.split()), n)
            for k, n, v in re.findall(r"^#define (SQLITE_[A-Z]+)\s+(\d+)\s+/\* (.+?)\s*\*/$", text, re.M)]


def libuv_errors(text: str) -> list[Record]:
    return [Record(k, " ".join(v.split()))
            for k, v in re.findall(r"^\.\. c:macro:: (UV_[A-Z0-9_]+)\n\n\s+(.+?)\n", text, re.M)]


# -- configs: (key, default) lines, each source's own syntax ---------------------------------------------------
CONFIG_LINES = {
    "pgbouncer.ini": re.compile(r"^;?([a-z_]+) = (\S+)$"),
    "redis.conf": re.compile(r"^(?:# )?([a-z]+(?:-[a-z]+)+|port|timeout|daemonize|loglevel|databases|maxclients) "
                             r"([0-9a-z]+[a-z0-9.]*)$"),
    "unbound-example.conf": re.compile(r"^\s*# ([a-z]+(?:-[a-z]+)+): ([^\s#]+)$"),
    "sshd_config": re.compile(r"^#?([A-Z][a-z]+(?:[A-Z][a-z0-9]+)+|Port) (\S+)$"),
    "mosquitto.conf": re.compile(r"^#([a-z]+(?:_[a-z]+)+) (\S+)$"),
    "system.conf": re.compile(r"^#([A-Z][A-Za-z]+)=([^\s{]+)$"),  # a value made by the build ({{...}}) is no default
    "logind.conf": re.compile(r"^#([A-Z][A-Za-z]+)=([^\s{]+)$"),
}


def config_records(name: str, text: str) -> list[Record]:
    """Keys set once (or always to the same value) in the file: an example line that sets a key twice to
    different values is not a default, so such keys are left out."""
    seen: dict[str, list[Record]] = {}
    for i, line in enumerate(text.splitlines()):
        m = CONFIG_LINES[name].match(line)
        if m:
            seen.setdefault(m.group(1), []).append(Record(m.group(1), m.group(2), line=i))
    return [rs[0] for rs in seen.values() if len({r.value for r in rs}) == 1]


TABLES = {"http-status-codes.json": http_codes, "musl-strerror.h": musl_errno, "curl-errors.md": curl_errors,
          "libuv-errors.rst": libuv_errors, "sqlite-result-codes.h": sqlite_codes}
PRODUCTS = {"http-status-codes.json": "HTTP", "musl-strerror.h": "musl libc", "curl-errors.md": "libcurl",
            "libuv-errors.rst": "libuv", "pgbouncer.ini": "PgBouncer", "redis.conf": "Redis",
            "unbound-example.conf": "Unbound", "sshd_config": "OpenSSH sshd", "mosquitto.conf": "Mosquitto",
            "sqlite-result-codes.h": "SQLite", "system.conf": "systemd", "logind.conf": "systemd-logind"}
HEADERS = {"http-status-codes.json": ("Status code", "Reason phrase"), "musl-strerror.h": ("Error", "Message"),
           "curl-errors.md": ("Code", "Meaning"), "libuv-errors.rst": ("Constant", "Meaning"),
           "sqlite-result-codes.h": ("Result code", "Meaning")}


def records(name: str) -> list[Record]:
    text = (ROOT / "sources" / name).read_text(encoding="utf-8")
    return TABLES[name](text) if name in TABLES else config_records(name, text)


# -- blocks of text ---------------------------------------------------------------------------------------------
def table_block(name: str, rows: list[Record], rng: random.Random) -> str:
    product, (h_key, h_value) = PRODUCTS[name], HEADERS[name]
    title = rng.choice([f"# {product} error codes\n\n", f"## {h_key}s\n\n", ""])
    lead = rng.choice([f"The table below lists {h_key.lower()}s and what each one means.\n\n",
                       f"{product} reports the following {h_key.lower()}s.\n\n", ""])
    form = rng.random()
    if name == "curl-errors.md" and form < 0.3:  # libcurl's own layout
        body = "\n\n".join(f"## {r.key} ({r.number})\n\n{r.value}" for r in rows)
    elif form < 0.75:
        number = any(r.number for r in rows)  # libcurl, SQLite: a number column
        head = f"| {h_key} | " + ("Number | " if number else "") + f"{h_value} |"
        rule = "|---|" + ("---|" if number else "") + "---|"
        body = "\n".join([head, rule] + [f"| {r.key} | " + (f"{r.number} | " if number else "") + f"{r.value} |"
                                         for r in rows])
    else:
        sep = rng.choice([": ", " — ", " - "])
        body = "\n".join(f"- {r.key}{sep}{r.value}" for r in rows)
    return title + lead + body


def render_pairs(rows: list[Record], fmt: str) -> str:
    if fmt == "yaml":
        return "\n".join(f"{r.key}: {r.value}" for r in rows)
    if fmt == "json":
        def value(v: str) -> str:
            return v if re.fullmatch(r"-?\d+(\.\d+)?|true|false", v) else json.dumps(v)
        return "{\n" + ",\n".join(f'  "{r.key}": {value(r.value)}' for r in rows) + "\n}"
    if fmt == "env":
        return "\n".join(f"{env_key(r.key)}={r.value}" for r in rows)
    return "\n".join(f"{r.key} = {r.value}" for r in rows)  # ini


def config_block(name: str, lines: list[str], rows: list[Record], rng: random.Random) -> str:
    product = PRODUCTS[name]
    if rng.random() < 0.5:  # the original lines, comments and all
        first, last = min(r.line for r in rows), max(r.line for r in rows)
        first = max(0, first - rng.randint(0, 6))
        body = "\n".join(lines[first: last + 1]).strip("\n")
    else:
        fmt = rng.choice(["yaml", "json", "ini", "env"])
        body = render_pairs(rows, fmt)
    lead = rng.choice([f"The default {product} configuration:\n\n", f"## {product} settings\n\n", ""])
    fence = rng.random() < 0.5
    return lead + (f"```\n{body}\n```" if fence else body)


# -- questions -----------------------------------------------------------------------------------------------
def table_question(name: str, r: Record, rng: random.Random) -> tuple[str, str]:
    """(question, the answer's text) for a table record."""
    if name == "http-status-codes.json":
        return rng.choice([(f"What does HTTP status code {r.key} mean?", r.value),
                           (f"What is the reason phrase of status {r.key}?", r.value),
                           (f"Which status code means {r.value}?", r.key)])
    if r.number and rng.random() < 0.3:
        return rng.choice([(f"What is the number of {r.key}?", r.number),
                           (f"Which {PRODUCTS[name]} error is {r.number}?", r.key)])
    return rng.choice([(f"What does {r.key} mean?", r.value), (f"What does the error {r.key} indicate?", r.value),
                       (f"What is the meaning of {r.key}?", r.value), (f"What does {r.key} stand for?", r.value)])


def config_question(name: str, r: Record, rng: random.Random) -> tuple[str, str]:
    key, product = r.key, PRODUCTS[name]
    words = re.sub(r"[_-]+", " ", re.sub(r"(?<=[a-z])(?=[A-Z])", " ", key)).lower()
    return rng.choice([(f"What is the default {key}?", r.value), (f"What is {key} set to by default?", r.value),
                       (f"What is the default value of {key} in {product}?", r.value),
                       (f"What is the default {words} in {product}?", r.value)])


def env_key(key: str) -> str:
    return re.sub(r"[^A-Z0-9]+", "_", key.upper())


def answer_start(context: str, answer: str, key: str) -> int:
    """The answer's offset in ``context``: on the line that starts with the record's key (a table row, a list
    item, a config line — never a comment that mentions the key), after the key; for libcurl's own layout, in
    the paragraph under the key's heading. -1 when the block does not hold it."""
    for m in re.finditer(r"^.*$", context, re.M):
        line = m.group(0)
        for k in (key, env_key(key)):
            at = re.match(r"[\s|#;\-\"]*(?:## )?" + re.escape(k) + r"(?=[\s:=\"|]|$)", line)
            if not at:
                continue
            if answer == key:
                return m.start() + line.index(k, at.start())
            hit = line.find(answer, at.end())
            if hit >= 0:
                return m.start() + hit
            if line.startswith("## ") and context.startswith(answer, m.end() + 2):
                return m.end() + 2
    return -1


# -- wide tables: a row of many values under their columns (financial data, statistics) --------------------------
# a source: its key columns (a ticker, a name), the value columns asked about, how a block is titled
WIDE = {"sp500-financials.csv": (("Symbol", "Name"), ("Sector", "Price", "Price/Earnings", "Dividend Yield",
                                                    "Earnings/Share", "52 Week Low", "52 Week High", "Market Cap",
                                                    "EBITDA", "Price/Sales", "Price/Book"), "S&P 500 companies")}


def wide_rows(name: str) -> list[dict]:
    keys, columns, _ = WIDE[name]
    text = (ROOT / "sources" / name).read_text(encoding="utf-8")
    return [{c: row[c].strip() for c in keys + columns} for row in csv.DictReader(io.StringIO(text))]


def shown_value(value: str, commas: bool) -> str:
    """A cell as a report prints it: 2 decimals at most, thousands separated when ``commas``."""
    try:
        x = float(value)
    except ValueError:
        return value
    if x.is_integer() and "." not in value:
        return f"{int(x):,}" if commas else value
    return f"{x:,.2f}" if commas else f"{x:.2f}"


def wide_block(name: str, rows: list[dict], columns: list[str], rng: random.Random) -> str:
    keys, _, title = WIDE[name]
    commas = rng.random() < 0.5
    head = rng.choice([f"## {title}\n\n", f"# {title}: financial data\n\n", ""])
    lines = ["| " + " | ".join(keys + tuple(columns)) + " |", "|" + "---|" * (len(keys) + len(columns))]
    lines += ["| " + " | ".join([r[k] for k in keys] + [shown_value(r[c], commas) for c in columns]) + " |"
              for r in rows]
    return head + "\n".join(lines)


def wide_question(name: str, row: dict, column: str, rng: random.Random) -> str:
    (ticker, company), _, _ = WIDE[name]
    who = rng.choice([row[company], row[company], row[ticker]])
    what = column if column[0].isupper() and column[1:2].isupper() else column.lower()
    if column == "Sector":
        return rng.choice([f"Which sector is {who} in?", f"What sector does the table list for {who}?"])
    return rng.choice([f"What is the {what} of {who}?", f"What was {who}'s {what}?",
                       f"What {what} does the table give for {who}?", f"How much is the {what} of {who}?"])


def wide_answer_start(context: str, name: str, row: dict, column_index: int) -> int:
    """The offset of the cell ``column_index`` (keys first) of ``row``'s line in ``context``; -1 if absent."""
    from components.core.reading.keyed_lookup import row_cells

    ticker = WIDE[name][0][0]
    m = re.search(r"^\| " + re.escape(row[ticker]) + r" \|.*$", context, re.M)
    if not m:
        return -1
    cells = row_cells(context, m.start(), m.end())
    return cells[column_index][0] if column_index < len(cells) else -1


def wide_paragraphs(name: str, rng: random.Random, unanswerable: float) -> list[dict]:
    """Blocks of 3-10 rows under 5-9 of the value columns; a question per second row: a shown cell, or (a share
    ``unanswerable``) a row the block does not hold or a column it does not show."""
    keys, columns, _ = WIDE[name]
    rows, out = wide_rows(name), []
    for i in range(0, len(rows), 2):
        size = rng.randint(3, 10)
        first = max(0, min(i - rng.randint(0, size - 1), len(rows) - size))
        block = rows[first: first + size]
        shown = sorted(rng.sample(range(len(columns)), rng.randint(5, 9)))
        cols = [columns[c] for c in shown]
        context = wide_block(name, block, cols, rng)
        row, qid = rows[i], f"{Path(name).stem}-{i}"
        if rng.random() < unanswerable:
            hidden = [c for c in columns if c not in cols and row[c]]
            if rng.random() < 0.5 and hidden:  # a column this block does not show
                question = wide_question(name, row, rng.choice(hidden), rng)
            else:  # a company this block does not hold
                others = rows[:first] + rows[first + size:]
                question = wide_question(name, rng.choice(others), rng.choice(cols), rng)
            qas = [{"id": qid, "question": question, "answers": [], "is_impossible": True}]
        else:
            filled = [c for c in cols if row[c]]
            if not filled:
                continue
            column = rng.choice(filled)
            question = wide_question(name, row, column, rng)
            start = wide_answer_start(context, name, row, len(keys) + cols.index(column))
            answer = context[start: context.index(" |", start)] if start >= 0 else ""
            if not answer:
                continue
            qas = [{"id": qid, "question": question, "is_impossible": False,
                    "answers": [{"text": answer, "answer_start": start}]}]
        out.append({"context": context, "qas": qas})
    return out


def build(split: str, seed: int = 13, per_record: int = 2, unanswerable: float = 1 / 3, families=()) -> dict:
    """SQuAD 2.0 JSON of every source of ``split``: one article per source, one paragraph per block; each of
    ``families`` (``(suffix, paragraphs(name, rng, unanswerable))``, e.g. ``definition_lists``) adds an article per
    source titled with its suffix."""
    meta = json.loads((ROOT / "sources.json").read_text(encoding="utf-8"))["sources"]
    rng = random.Random(seed)
    data = []
    for src in (s for s in meta if s["split"] == split):
        name = src["file"]
        if name in WIDE:
            data.append({"title": f"structured-{Path(name).stem}",
                         "paragraphs": wide_paragraphs(name, rng, unanswerable)})
            continue
        recs = records(name)
        lines = (ROOT / "sources" / name).read_text(encoding="utf-8").splitlines()
        paragraphs = []
        for i, r in enumerate(recs):
            for j in range(per_record):
                size = rng.randint(3, 10)
                first = max(0, min(i - rng.randint(0, size - 1), len(recs) - size))
                rows = recs[first: first + size]
                if name in TABLES:
                    context = table_block(name, rows, rng)
                else:
                    if max(x.line for x in rows) - min(x.line for x in rows) > 25:  # lines far apart: this key alone
                        rows = [r]
                    context = config_block(name, lines, rows, rng)
                qid = f"{Path(name).stem}-{i}-{j}"
                if rng.random() < unanswerable:
                    absent = [x for x in recs if x.key not in context and x.value not in context]
                    if not absent:
                        continue
                    other = rng.choice(absent)
                    question, _ = (table_question if name in TABLES else config_question)(name, other, rng)
                    qas = [{"id": qid, "question": question, "answers": [], "is_impossible": True}]
                else:
                    question, answer = (table_question if name in TABLES else config_question)(name, r, rng)
                    start = answer_start(context, answer, r.key)
                    if start < 0:
                        continue
                    qas = [{"id": qid, "question": question, "is_impossible": False,
                            "answers": [{"text": answer, "answer_start": start}]}]
                paragraphs.append({"context": context, "qas": qas})
        data.append({"title": f"structured-{Path(name).stem}", "paragraphs": paragraphs})
        for suffix, paragraphs_of in families:
            data.append({"title": f"structured-{Path(name).stem}-{suffix}",
                         "paragraphs": paragraphs_of(name, rng, unanswerable)})
    return {"version": "v2.0", "data": data}


def main(argv=None, families=(), description: str | None = None) -> int:
    p = argparse.ArgumentParser(description=description or __doc__.split("\n\n")[0])
    p.add_argument("--split", choices=SPLITS, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--per-record", type=int, default=2, help="blocks (questions) per record")
    args = p.parse_args(argv)
    data = build(args.split, args.seed, args.per_record, families=families)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(data, indent=1), encoding="utf-8")
    qas = [qa for a in data["data"] for p in a["paragraphs"] for qa in p["qas"]]
    print(f"{len(qas):,} questions ({sum(qa['is_impossible'] for qa in qas):,} unanswerable) from "
          f"{len(data['data'])} sources -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
