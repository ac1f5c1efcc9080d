"""Turning text into index terms: lower-casing, word and identifier tokens, stopwords, Snowball stems.

``Analyzer`` is used for BM25 (documents and queries) and by anything that needs the "key terms" of a
question (the offline reader and the lexical verifier), so that all of them agree on what a term is.

Identifiers such as ``ERR-4012`` or ``SKU-LX-200`` are kept whole *and* split into their parts, so a
query for ``ERR-4012`` matches the code exactly while a query for ``4012`` still finds it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

_WORD = re.compile(r"[^\W_]+(?:[-_./][^\W_]+)*", re.UNICODE)
_HAS_DIGIT = re.compile(r"\d")


def english_stopwords() -> frozenset[str]:
    """The English stopword list of bm25s (a well-kept list, shared with our BM25 peer)."""
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


def is_identifier(token: str) -> bool:
    """A token that names one thing exactly: has a digit, or joins parts with - _ . / (``ERR-4012``)."""
    return bool(_HAS_DIGIT.search(token)) or any(c in token for c in "-_./")


@dataclass
class Analyzer:
    """Lower-case, tokenise, drop stopwords, stem.

    :param language: Snowball stemmer language (PyStemmer), or ``None`` for no stemming.
    :param stopwords: ``"english"``, a list of words, or ``None`` for none.
    :param split_identifiers: also index the parts of ``ERR-4012`` (``err``, ``4012``).
    """

    language: str | None = "english"
    stopwords: str | list[str] | None = "english"
    split_identifiers: bool = True
    _cache: dict = field(default_factory=dict, repr=False)

    @cached_property
    def _stopwords(self) -> frozenset[str]:
        if self.stopwords is None:
            return frozenset()
        if self.stopwords == "english":
            return english_stopwords()
        return frozenset(w.lower() for w in self.stopwords)

    @cached_property
    def _stemmer(self):
        if not self.language:
            return None
        import Stemmer

        return Stemmer.Stemmer(self.language)

    def words(self, text: str) -> list[str]:
        """Lower-cased word and identifier tokens, stopwords removed, not stemmed."""
        out = []
        for m in _WORD.finditer(text.lower()):
            tok = m.group()
            parts = re.split(r"[-_./]", tok) if self.split_identifiers and is_identifier(tok) else []
            if len(parts) > 1:
                out.append(tok)
                out.extend(p for p in parts if p and p not in self._stopwords)
            elif tok not in self._stopwords:
                out.append(tok)
        return out

    def stem(self, word: str) -> str:
        if self._stemmer is None or is_identifier(word):
            return word
        hit = self._cache.get(word)
        if hit is None:
            hit = self._cache[word] = self._stemmer.stemWord(word)
        return hit

    def __call__(self, text: str) -> list[str]:
        """Index terms of ``text``: ``words`` then stems."""
        return [self.stem(w) for w in self.words(text)]

    def to_dict(self) -> dict:
        return {"language": self.language, "stopwords": self.stopwords, "split_identifiers": self.split_identifiers}
