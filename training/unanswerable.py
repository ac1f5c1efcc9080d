"""Unanswerable questions made from answerable ones — the kinds SQuAD 2.0's writers made most, read on the window
that holds the original answer and labelled no-answer (``reader_data.examples``; ``CONSTRUCTED_KINDS`` there):

- ``swapped_question`` — an entity or word of the question swapped for another of the same article ("How many
  awards did *Radar* Princess receive?");
- ``negated_question`` — the question negated ("What did Tesla *not* sell in 1890?");
- ``antonym_question`` — a word replaced by a WordNet antonym the paragraph never uses ("What is the *smallest*
  city?"; ``training/antonyms.py`` writes the table).

Words and parts of speech come from spaCy's tagger (``tagged``), loaded through the project's one model loader.

    import random
    from unanswerable import negated_question
    negated_question(question)          # "Who did the mayor not meet?" for "Who did the mayor meet?"
"""

from __future__ import annotations

import random
import re
from functools import lru_cache
from pathlib import Path
from questions import Question


# the parts of speech a question's writer swaps for another of the same article (SQuAD 2.0's "entity swap")
SWAP_TAGS = frozenset({"NN", "NNS", "NNP", "NNPS", "CD", "JJ"})


@lru_cache(maxsize=1)
def _tagger():
    from components.core.backends.models import load_spacy

    nlp, _ = load_spacy("en_core_web_sm", component="training")
    return nlp, [proc for name, proc in nlp.pipeline if name in ("tok2vec", "tagger", "attribute_ruler")]


@lru_cache(maxsize=50000)
def tagged(text: str) -> tuple[tuple[int, int, str], ...]:
    """``(start, end, tag)`` of each word of ``text`` (spaCy's Penn tags; the tagger only, no parser)."""
    nlp, procs = _tagger()
    doc = nlp.make_doc(text)
    for proc in procs:
        doc = proc(doc)
    return tuple((t.idx, t.idx + len(t.text), t.tag_) for t in doc if t.is_alpha or t.like_num)


def swapped_question(q: Question, paragraphs: list[str], rng: random.Random) -> str | None:
    """``q``'s question with one of its words that its paragraph contains (a noun, name, number or adjective,
    not in the answer) replaced by a word with the same part of speech from another paragraph of the same
    article that this paragraph never uses — a question the paragraph no longer answers — or None when no such
    pair exists."""
    here = {q.context[s:e].lower() for s, e, _ in tagged(q.context)}
    in_answers = {t.lower() for _, text in q.answers for t in text.split()}
    spots = [(s, e, tag) for s, e, tag in tagged(q.question)
             if tag in SWAP_TAGS and s > 0 and q.question[s:e].lower() in here
             and q.question[s:e].lower() not in in_answers]
    others = [p for p in paragraphs if p != q.context]
    if not spots or not others:
        return None
    s, e, tag = rng.choice(spots)
    for _ in range(4):
        other = rng.choice(others)
        pool = [other[a:b] for a, b, t in tagged(other) if t == tag and other[a:b].lower() not in here]
        if pool:
            return q.question[:s] + rng.choice(pool) + q.question[e:]
    return None


# the auxiliaries a negated question negates ("When did the war end?" → "When did the war not end?")
AUXILIARIES = frozenset("is are was were do does did can could will would has have had should may might must".split())
WORD = re.compile(r"[A-Za-z]+")
_VERB_TAGS = frozenset({"VB", "VBN", "VBG", "VBD", "VBP", "VBZ"})


def negated_question(q: Question) -> str | None:
    """``q``'s question negated — SQuAD 2.0's "negation" kind ("What did Tesla *not* sell in 1890?" asked of a
    paragraph that says what he sold): ``not`` before the first verb after its first auxiliary that is not its
    first word ("When was the census *not* carried out?"), or after that auxiliary when no verb follows ("What
    fluids are *not* in Neptune's interior?"); None when the question has no such auxiliary or is negated already
    (removing a negation can leave it answerable)."""
    from components.core.text.analysis import is_negated

    if is_negated(q.question):
        return None
    words = tagged(q.question)
    for n, (s, e, _tag) in enumerate(words):
        if s > 0 and q.question[s:e].lower() in AUXILIARIES:
            verb = next((vs for vs, _ve, tag in words[n + 1 :] if tag in _VERB_TAGS), None)
            if verb is not None:  # before the verb, whatever precedes it
                return q.question[:verb] + "not " + q.question[verb:]
            return q.question[:e] + " not" + q.question[e:]
    return None


ANTONYMS_FILE = Path(__file__).resolve().parent / "wordnet-antonyms.tsv"
# Penn tags → WordNet's parts of speech: adjectives, adverbs and verbs only (WordNet's noun antonyms are mostly
# senses a question never means: "ground" ↔ "figure", "home" ↔ "away")
_WORDNET_POS = {"JJ": "a", "JJR": "a", "JJS": "a", "RB": "r", "RBR": "r", "RBS": "r", "VB": "v", "VBD": "v",
                "VBG": "v", "VBN": "v", "VBP": "v", "VBZ": "v"}
_SUFFIXES = ("", "s", "es", "ed", "d", "er", "r", "est", "st", "ing")


@lru_cache(maxsize=1)
def antonym_table(path: str = str(ANTONYMS_FILE)) -> dict[tuple[str, str], tuple[str, ...]]:
    """``{(word, pos): antonyms}`` of WordNet's single-word antonym pairs (``training/antonyms.py`` writes the
    file; pos is a, r, v or n)."""
    table: dict[tuple[str, str], set[str]] = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            word, other, pos = line.split("\t")
            table.setdefault((word, pos), set()).add(other)
    return {k: tuple(sorted(o)) for k, o in table.items()}


def _antonym_forms(word: str, pos: str, table, vocabulary) -> list[str]:
    """Antonyms of ``word`` (part of speech ``pos``) inflected as it is (``largest`` → ``smallest``): a base form
    the table holds plus the same ending, kept only when that form occurs in ``vocabulary`` (the training
    paragraphs' words) — never a made-up spelling."""
    out = set()
    for suffix in _SUFFIXES:
        if suffix and not word.endswith(suffix):
            continue
        base = word[: len(word) - len(suffix)]
        for stem in {base, base + "e", base[:-1] if len(base) > 2 and base[-1] == base[-2] else base}:
            for other in table.get((stem, pos), ()):
                joins_on_e = suffix[:1] in ("e", "i") and other.endswith("e")  # late + est → latest
                form = (other[:-1] if joins_on_e else other) + suffix
                if form != word and (not suffix or form in vocabulary):
                    out.add(form)
    return sorted(out)


def antonym_question(q: Question, vocabulary: set[str], rng: random.Random, table=None) -> str | None:
    """``q``'s question with one adjective, adverb or verb its paragraph uses (not an auxiliary, not a word of the
    answer) replaced by a WordNet antonym that the paragraph never uses — SQuAD 2.0's "antonym" kind ("What is the
    *smallest* city?" asked of a paragraph naming the largest) — case kept, or None when there is no such word."""
    table = antonym_table() if table is None else table
    here = {w.lower() for w in WORD.findall(q.context)}
    in_answers = {w.lower() for _, text in q.answers for w in WORD.findall(text)}
    spots = []
    for s, e, tag in tagged(q.question):
        word = q.question[s:e].lower()
        if s == 0 or tag not in _WORDNET_POS or word not in here or word in in_answers or word in AUXILIARIES:
            continue
        forms = [f for f in _antonym_forms(word, _WORDNET_POS[tag], table, vocabulary) if f not in here]
        if forms:
            spots.append((s, e, forms))
    if not spots:
        return None
    s, e, forms = rng.choice(spots)
    form = rng.choice(forms)
    if q.question[s].isupper():
        form = form[0].upper() + form[1:]
    return q.question[:s] + form + q.question[e:]
