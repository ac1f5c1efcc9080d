"""Definition lists built from the structured-text sources: a term, then what it means, under the section heading
that says what kind of term it is — the shape of a reference page's columns ("SHOW POOLS"), signals or command-line
options, where a user asks which term has a description. Each source's records (``structured_data.records``: a
code and its meaning; a config key and the first sentence of the comment above it) become blocks of 3-8 entries as
Pandoc's ``term`` / ``:   description``, a term over its indented description, ``- term: description`` items or
``**term** — description``; a question asks which term a description belongs to (two thirds) or what a term means,
and a third ask about a record of the same source that the block lacks.

    python training/definition_lists.py --split train --out .spanqa/training/structured-train-defs.json

writes ``structured_data.py``'s blocks of the split and, beside each source's, its definition lists.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import structured_data
from structured_data import CONFIG_LINES, PRODUCTS, ROOT, TABLES, Record, records

NOUNS = {"http-status-codes.json": "status code", "musl-strerror.h": "error", "curl-errors.md": "error code",
         "libuv-errors.rst": "error constant", "sqlite-result-codes.h": "result code"}
SECTIONS = {"http-status-codes.json": "Status codes", "musl-strerror.h": "Error numbers",
            "curl-errors.md": "Error codes", "libuv-errors.rst": "Error constants",
            "sqlite-result-codes.h": "Result codes"}


def described_records(name: str) -> list[Record]:
    """Records with a description: a table's code and its meaning; a config key and the first sentence of the
    comment right above its line (3-30 words; a key with none is left out)."""
    if name in TABLES:
        return records(name)
    lines = (ROOT / "sources" / name).read_text(encoding="utf-8").splitlines()
    out = []
    for r in records(name):
        comment, i = [], r.line - 1
        while i >= 0 and re.match(r"\s*[#;]", lines[i]) and not CONFIG_LINES[name].match(lines[i]):
            text = re.sub(r"^\s*[#;]+\s?", "", lines[i]).strip()
            if not text:
                break  # an empty comment line ends the key's paragraph
            comment.insert(0, text)
            i -= 1
        desc = " ".join(" ".join(comment).split())
        first = re.match(r"(.+?[.!?])(\s|$)", desc)
        desc = (first.group(1) if first else desc).rstrip(".:")
        value_list = re.fullmatch(r"[^,]+(, [^,]+)+", desc) and len(desc.split()) <= 2 * (desc.count(",") + 1)
        if 3 <= len(desc.split()) <= 30 and r.key not in desc and not value_list:  # a list of values says nothing
            out.append(Record(r.key, desc, line=r.line))
    return out


def definition_block(name: str, rows: list[Record], rng: random.Random) -> str:
    """``rows`` as a definition list under a heading path: Pandoc's ``term`` / ``:   description``, a term over
    its indented description, ``- term: description`` items, or ``**term** — description``."""
    product = PRODUCTS[name]
    section = SECTIONS.get(name) or rng.choice(["Settings", "Configuration options", "Parameters"])
    head = rng.choice([f"# {product} reference\n\n## {section}\n\n", f"## {section}\n\n",
                       f"# {product}\n\nSee below.\n\n## {section}\n\n"])
    form = rng.choice(["pandoc", "indented", "bullet", "bold"])
    if form == "bullet":
        body = "\n".join(f"- {r.key}: {r.value}" for r in rows)
    else:
        entry = {"pandoc": "{k}\n:   {v}", "indented": "{k}\n    {v}", "bold": "**{k}** — {v}"}[form]
        body = "\n\n".join(entry.format(k=r.key, v=r.value) for r in rows)
    return head + body


def definition_question(name: str, r: Record, rng: random.Random) -> tuple[str, str]:
    """(question, the answer's text): which term a description belongs to (two thirds), or what a term means."""
    noun = NOUNS.get(name) or rng.choice(["setting", "option", "configuration key"])
    desc = r.value[0].lower() + r.value[1:] if r.value[1:2].islower() else r.value
    if rng.random() < 1 / 3:
        return rng.choice([(f"What does {r.key} mean?", r.value), (f"What is {r.key} for?", r.value)])
    if name in TABLES:
        return rng.choice([(f"Which {noun} means {desc}?", r.key), (f"Which {noun} indicates {desc}?", r.key),
                           (f"What is the {PRODUCTS[name]} {noun} for {desc}?", r.key)])
    return rng.choice([(f"Which {noun} is described as: {desc}?", r.key),
                       (f"Which {PRODUCTS[name]} {noun} is for this: {desc}?", r.key),
                       (f"What {noun} does the reference give for: {desc}?", r.key)])


def definition_start(context: str, answer: str, key: str) -> int:
    """The answer's offset: the term where its entry begins, or its description after it; -1 when absent."""
    m = re.search(r"^(?:- |\*\*)?(" + re.escape(key) + r")(?=\*\*|:|\n|$)", context, re.M)
    if not m:
        return -1
    return m.start(1) if answer == key else context.find(answer, m.end(1))


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def definition_paragraphs(name: str, rng: random.Random, unanswerable: float) -> list[dict]:
    """Blocks of 3-8 described records as a definition list, a question per record; a share
    ``unanswerable`` ask about a record of the same source that the block does not hold."""
    recs, out = described_records(name), []
    for i in range(len(recs)):
        size = rng.randint(3, 8)
        first = max(0, min(i - rng.randint(0, size - 1), len(recs) - size))
        context = definition_block(name, recs[first: first + size], rng)
        qid = f"{Path(name).stem}-def-{i}"
        if rng.random() < unanswerable:
            shown = [words(x.value) for x in recs[first: first + size]]
            # a record the block lacks whose description is not nearly one the block shows (TLS options of the
            # client and the server read alike)
            absent = [x for x in recs[:first] + recs[first + size:]
                      if all(len(words(x.value) & w) <= len(words(x.value)) / 2 for w in shown)]
            if not absent:
                continue
            question, _ = definition_question(name, rng.choice(absent), rng)
            qas = [{"id": qid, "question": question, "answers": [], "is_impossible": True}]
        else:
            question, answer = definition_question(name, recs[i], rng)
            start = definition_start(context, answer, recs[i].key)
            if start < 0:
                continue
            qas = [{"id": qid, "question": question, "is_impossible": False,
                    "answers": [{"text": answer, "answer_start": start}]}]
        out.append({"context": context, "qas": qas})
    return out


def main(argv=None) -> int:
    return structured_data.main(argv, families=(("definitions", definition_paragraphs),),
                                description="structured_data.py's blocks, and each source's definition lists")


if __name__ == "__main__":
    raise SystemExit(main())
