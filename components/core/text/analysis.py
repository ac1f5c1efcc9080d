"""Turning text into index terms: lower-casing, word and identifier tokens, stopwords, Snowball stems.

``Analyzer`` is used for BM25 (documents and queries) and by anything that needs the "key terms" of a
question (the offline reader and the lexical verifier), so that all of them agree on what a term is.

Identifiers such as ``ERR-4012`` or ``SKU-LX-200`` are kept whole *and* split into their parts, so a
query for ``ERR-4012`` matches the code exactly while a query for ``4012`` still finds it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

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


# ------------------------------------------------------------------------------ what a question asks
# General English, shared by the offline reader and the lexical verifier; not tuned on any data set.

# Question, auxiliary and pronoun words: never key terms, never "content" terms of a question.
QUESTION_WORDS = frozenset(
    """what which who whom whose when where why how whats whos
    do does did done is are was were be been being am can could should would will shall may might must
    has have had having i me my mine we us our ours you your yours he him his she her hers it its they
    them their theirs this that these those there here some any all each every other another
    please list name describe explain tell give show find say says said mean means meant
    much many long often far about than also just only very""".split()
)

_ASKS_QUANTITY = re.compile(
    r"\bhow (many|much|long|far|old|often|big|large|high|tall|wide|deep|fast|heavy|soon|quickly|frequently)\b"
    r"|\b(what|which)\s+(\w+\s+){0,2}?(number|amount|percentage|percent|price|cost|size|length|duration|"
    r"interval|rate|limit|port|year|version|temperature|speed|distance|capacity|frequency|voltage|weight|"
    r"height|width|depth|age|fee|timeout|count)\b"
    r"|\b(what|which)\s+(exit|error|return|response|http|status)\s+(status|code)\b",  # "exit status 3"
    re.IGNORECASE,
)
# digits that start a number (not the tail of a code such as GLN-MOT-01), or an English number word
_QUANTITY = re.compile(
    r"(?<![\w-])\d"
    r"|\b(zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|"
    r"fifty|sixty|hundred|thousand|million|billion|dozen|twice|half|single|double)\b",
    re.IGNORECASE,
)
_HOW_MANY_UNIT = re.compile(r"\bhow many (\w+)", re.IGNORECASE)
UNIT_WORDS = frozenset(
    """second seconds minute minutes hour hours day days week weeks month months year years decade decades
    century centuries millisecond milliseconds metre metres meter meters centimetre centimetres centimeter
    centimeters millimetre millimetres kilometre kilometres kilometer kilometers mile miles foot feet inch
    inches yard yards gram grams kilogram kilograms pound pounds ounce ounces ton tons tonne tonnes litre
    litres liter liters gallon gallons percent degree degrees watt watts volt volts amp amps lumen lumens
    byte bytes kilobyte kilobytes megabyte megabytes gigabyte gigabytes terabyte terabytes dollar dollars
    euro euros cent cents""".split()
)


_ASKS_REASON = re.compile(r"^\s*why\b|\bwhat (causes|caused|makes|made|leads to|led to|triggers)\b|\bfor what reason\b", re.I)
_REASON = re.compile(
    r"\b(because|due to|caused by|causes|since|as a result|results? from|when|if|after|so that|owing to|"
    r"thanks to|in order to|the reason)\b",
    re.IGNORECASE,
)


_ASKS_TIME = re.compile(r"^\s*when\b|\b(in |by |since |until )?(what|which) (year|century|decade|date|day|month|era|period)\b",
                        re.IGNORECASE)
_TIME = re.compile(
    r"\b(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|"
    r"jun|jul|aug|sep|sept|oct|nov|dec|monday|tuesday|wednesday|thursday|friday|saturday|sunday|today|yesterday|"
    r"tomorrow|century|centuries|decade|decades|year|years|month|months|week|weeks|day|days|ago|era|age|period|"
    r"spring|summer|autumn|fall|winter|morning|evening|night|dawn|noon|midnight|bc|ad|bce|ce)\b",
    re.IGNORECASE,
)


def asks_for_time(question: str) -> bool:
    """Whether the question asks when ("when …", "in what year …", "which century …")."""
    return bool(_ASKS_TIME.search(question))


def has_time(text: str) -> bool:
    """Whether ``text`` states a time: a number (a year, a date) or a time word (a month, "century", "ago" …)."""
    return has_quantity(text) or bool(_TIME.search(text))


def asks_for_reason(question: str) -> bool:
    """Whether the question asks for a cause ("why …", "what causes …")."""
    return bool(_ASKS_REASON.search(question))


def has_reason(text: str) -> bool:
    """Whether ``text`` states a cause or condition ("because", "due to", "when", "if" …)."""
    return bool(_REASON.search(text))


def asks_for_quantity(question: str) -> bool:
    """Whether the question asks for a number ("how many …", "how long …", "what is the price …")."""
    return bool(_ASKS_QUANTITY.search(question))


def has_quantity(text: str) -> bool:
    """Whether ``text`` states a number (digits or an English number word)."""
    return bool(_QUANTITY.search(text))


def asked_unit(question: str) -> str | None:
    """The unit of measure a "how many <unit>" question asks in (``hours`` → ``"hours"``), else ``None``."""
    m = _HOW_MANY_UNIT.search(question)
    return m.group(1).lower() if m and m.group(1).lower() in UNIT_WORDS else None


def mentions_unit(text: str, unit: str, analyzer: Analyzer) -> bool:
    """Whether ``text`` uses ``unit`` in any form (``hour`` / ``hours`` / ``hrs`` is not guessed: stems only)."""
    return analyzer.stem(unit) in {analyzer.stem(w) for w in analyzer.words(text)} or unit in text.lower()


# A sentence that opens with one of these words leans on the sentence before it ("It then exits with status 3").
_ANAPHORIC_OPENING = re.compile(
    r"\s*(it|its|they|them|their|this|these|that|those|he|his|she|her|such|then|there|thus|here)\b", re.IGNORECASE
)


def opens_with_reference(sentence: str) -> bool:
    """Whether ``sentence`` opens with a pronoun or a connective that refers to what came before."""
    return bool(_ANAPHORIC_OPENING.match(sentence))


# ------------------------------------------------------------------ when a question says the opposite
# The two commonest ways a question is unanswerable although every word of it is in the source (SQuAD 2.0's
# "negation" and "antonym" categories): it negates what the source states, or it swaps a word for its
# opposite. General English pairs, both directions; not taken from any data set.

_NEGATION = re.compile(r"\b(not|never|no|none|nothing|neither|nor|cannot|without)\b|n't\b", re.IGNORECASE)

ANTONYM_PAIRS = tuple(
    tuple(p.split())
    for p in """most least|more less|more fewer|largest smallest|biggest smallest|greatest smallest|highest lowest|
    higher lower|upper lower|increase decrease|increasing decreasing|maximum minimum|maximal minimal|best worst|
    better worse|first last|before after|earlier later|earliest latest|past future|inside outside|easy difficult|
    easy hard|easier harder|easiest hardest|simple complex|simplicity complexity|ease difficulty|
    always never|increase reduce|above below|positive negative|true false|accept reject|allow forbid|
    include exclude|internal external|strong weak|stronger weaker|large small|larger smaller|fast slow|
    faster slower|old new|older newer|major minor|success failure|win lose|north south|east west""".split("|")
)
# negating prefixes and the letters they may stand before (im-possible, il-legal, ir-regular, in-direct)
_NEGATING_PREFIXES = (("non", ""), ("un", ""), ("dis", ""), ("im", "bmp"), ("il", "l"), ("ir", "r"), ("in", ""))
_MIN_STEM_AFTER_PREFIX = 5  # "unconnected" → "connected"; "display" → "play" is no negation


# "whether or not", "may or may not", "or not": alternatives, not negations
_NOT_A_NEGATION = re.compile(r"\b(?:(\w+) or \1 not|or not)\b", re.IGNORECASE)


def is_negated(text: str) -> bool:
    """Whether ``text`` contains a negation (not, never, no, cannot, n't, without ...); "whether or not" and
    "may or may not" name both alternatives and are no negation."""
    return bool(_NEGATION.search(_NOT_A_NEGATION.sub(" ", text)))


def _unprefixed(word: str) -> str | None:
    for prefix, before in _NEGATING_PREFIXES:
        rest = word[len(prefix):]
        if word.startswith(prefix) and len(rest) >= _MIN_STEM_AFTER_PREFIX and (not before or rest[0] in before):
            return rest
    return None


@lru_cache(maxsize=4)
def _opposites(language: str | None) -> tuple[Analyzer, dict[str, frozenset[str]]]:
    """An analyzer that keeps stopwords ("most", "before") and the stem → opposite stems map of ``ANTONYM_PAIRS``."""
    plain = Analyzer(language=language, stopwords=None, split_identifiers=False)
    opposites: dict[str, set[str]] = {}
    for x, y in ANTONYM_PAIRS:
        opposites.setdefault(plain.stem(x), set()).add(plain.stem(y))
        opposites.setdefault(plain.stem(y), set()).add(plain.stem(x))
    return plain, {k: frozenset(v) for k, v in opposites.items()}


def opposite_terms(question: str, evidence: str, analyzer: Analyzer) -> list[tuple[str, str]]:
    """``(question word, evidence word)`` pairs where the question uses the opposite of what the evidence says.

    A question word counts only when its own stem is NOT in the evidence while its opposite is: an antonym from
    ``ANTONYM_PAIRS`` ("decrease" / "increase"), or the same word with or without a negating prefix
    ("unconnected" / "connected", "solvable" / "unsolvable"). Stopwords count here ("most", "before").
    """
    plain, opposites = _opposites(analyzer.language)
    q_words = [w for w in plain.words(question) if not is_identifier(w)]
    e_words = [w for w in plain.words(evidence) if not is_identifier(w)]
    q_stems = {plain.stem(w) for w in q_words}
    e_stems = {plain.stem(w): w for w in e_words}
    e_bases = {plain.stem(rest): w for w in e_words if (rest := _unprefixed(w))}
    found: list[tuple[str, str]] = []
    for w in dict.fromkeys(q_words):
        s = plain.stem(w)
        if s in e_stems:
            continue
        candidates = [e_stems[o] for o in sorted(opposites.get(s, ())) if o in e_stems and o not in q_stems]
        rest = _unprefixed(w)
        if rest and plain.stem(rest) in e_stems:
            candidates.append(e_stems[plain.stem(rest)])
        if s in e_bases and plain.stem(e_bases[s]) not in q_stems:
            candidates.append(e_bases[s])
        if candidates:
            found.append((w, candidates[0]))
    return found
