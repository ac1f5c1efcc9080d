"""The terms a question asks about, as reader and verifier both need them (pure functions, no models).

- ``key_terms(question)`` — what a supporting span must mention: named entities (runs of capitalised words)
  and numbers / identifiers (``analysis.is_identifier``).
- ``content_terms(question, analyzer)`` — the stems of its content words (question words removed).
- ``Vocab`` / ``has_term`` — stems and words of a text, and whether a key term occurs in it.

Example::

    key_terms("Does Acme Pro refund ERR-4012 charges?")   # KeyTerms(entities=("Acme Pro",), identifiers=("err-4012",))
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from components.core.text.analysis import QUESTION_WORDS, Analyzer, english_stopwords, is_identifier

_TOKEN = re.compile(r"[^\W_]+(?:[-_./'’][^\W_]+)*", re.UNICODE)
_SENTENCE_END = re.compile(r"[.?!:;]\s*$")
_POSSESSIVE = re.compile(r"['’]s$", re.IGNORECASE)


@dataclass(frozen=True)
class KeyTerms:
    """Named entities (surface form) and identifiers/numbers (lower case) of a question."""

    entities: tuple[str, ...] = ()
    identifiers: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.entities) + len(self.identifiers)

    def all(self) -> tuple[str, ...]:
        return self.entities + self.identifiers


def _function_word(word: str) -> bool:
    w = word.casefold()
    return w in QUESTION_WORDS or w in english_stopwords()


def key_terms(question: str) -> KeyTerms:
    """The question's named entities, numbers and identifiers.

    - Identifiers: tokens with a digit or joined by ``- _ . /`` (``ERR-4012``, ``30``, ``v2.1``).
    - Named entities: maximal runs of capitalised words separated by spaces only. A run that opens a
      sentence loses its leading function words (question words, auxiliaries, pronouns, stopwords:
      "Does Acme Pro ..." → "Acme Pro"), and a single word left there is dropped (capitalised only
      because it starts the sentence); a run of two or more words is kept ("Acme Pro costs what?").
      Inside a sentence capitals are kept as written ("the Long Island ferry"), except the pronoun "I".
    """
    entities: list[str] = []
    identifiers: list[str] = []
    run: list[tuple[str, bool]] = []  # (word, sentence_initial)

    def close() -> None:
        words = list(run)
        run.clear()
        while words and words[0][1] and _function_word(words[0][0]):  # "What", "Does" opening a sentence
            words = [(w, True) for w, _ in words[1:]]
        if [w for w, _ in words] == ["I"]:
            return
        if not words or (len(words) == 1 and (words[0][1] or _function_word(words[0][0]))):
            return  # a lone "On" opening a quoted title names nothing; "The Who" does
        name = " ".join(w for w, _ in words)
        if name not in entities:
            entities.append(name)

    prev_end = 0
    for m in _TOKEN.finditer(question):
        tok = _POSSESSIVE.sub("", m.group())
        between = question[prev_end : m.start()]
        initial = prev_end == 0 or bool(_SENTENCE_END.search(question[:m.start()]))
        if run and between.strip():  # punctuation between words ends a name
            close()
        if is_identifier(tok):
            close()
            low = tok.casefold()
            if low not in identifiers:
                identifiers.append(low)
        elif tok[0].isupper():
            run.append((tok, initial))
        else:
            close()
        prev_end = m.end()
    close()
    return KeyTerms(tuple(entities), tuple(identifiers))


def content_terms(question: str, analyzer: Analyzer) -> set[str]:
    """Stems of the question's words without function words (question words, auxiliaries, stopwords)
    and single letters ("Pro's" → "pro"); identifiers count once, whole (``err-4012``, not its parts)."""
    whole = Analyzer(language=None, stopwords=analyzer.stopwords, split_identifiers=False)
    return {
        analyzer.stem(w)
        for w in whole.words(question)
        if w not in QUESTION_WORDS and (len(w) > 1 or w.isdigit())
    }


@dataclass
class Vocab:
    """Stems and (split) words of a text, for term look-ups."""

    stems: set[str] = field(default_factory=set)
    words: set[str] = field(default_factory=set)

    def add(self, text: str, analyzer: Analyzer) -> "Vocab":
        words = analyzer.words(text)
        self.words.update(words)
        self.stems.update(analyzer.stem(w) for w in words)
        return self

    def has_entity(self, entity: str, analyzer: Analyzer) -> bool:
        stems = analyzer(entity)
        return bool(stems) and all(s in self.stems for s in stems)

    def has_identifier(self, ident: str) -> bool:
        return ident in self.words


def has_term(vocab: Vocab, terms: KeyTerms, term: str, analyzer: Analyzer) -> bool:
    return vocab.has_identifier(term) if term in terms.identifiers else vocab.has_entity(term, analyzer)
