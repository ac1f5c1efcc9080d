"""The offline "sentence" reading strategy: answer with the best-supported sentence of a window, verbatim.

When no extractive QA model is available, ``ExtractiveReader(fallback="sentence")`` still answers: it picks,
in each window, the unit (sentence, table row or code part from ``components.core.text.splitting``) that best
supports the question and returns it with one unit of lead-in as the answer span. Everything here is pure:
the embedding model comes in as a callable ``embed(list[str]) -> array (n, dim)``.

Scoring of a unit ``u`` for question ``q`` (both terms lie in [0, 1], so the score does too)::

    score(u) = COSINE_WEIGHT * max(0, cos(e(q), e(u))) + (1 - COSINE_WEIGHT) * coverage(q, u)
    coverage(q, u) = sum of weights of q's key terms found in u / sum of weights of q's key terms

Key terms are ``Analyzer`` terms of the question (stemmed, no stopwords, no question words such as
"what" or "does"); a key term found only in the unit's lead-in (the unit before it in the same paragraph,
which often holds the subject a pronoun refers to) counts half. Identifiers and numbers
(``ERR-4012``, ``200``) weigh ``IDENTIFIER_WEIGHT``, other terms 1. A question without key terms is scored by
the cosine alone. The no-answer score is ``1 - best score`` over all windows: weak support (best < 0.5)
makes abstaining the top answer. The constants are round, general values, not tuned on any data set.

Two more rules make the chosen unit the one that holds the *value* asked for:

- headings, table header rows and bare code fences are never answers (they may be lead-in);
- a question that asks for a quantity (``analysis.asks_for_quantity``) halves the score of a unit without a
  number, and "how many <unit>" halves it again when the unit of measure is not named; a question that asks
  for a cause ("why", "what causes") or a time ("when", "in what year") halves the score of a unit that
  states none ("because", "when" … / a number, a month, "century" …).

A table row is scored (embedding and key terms) together with its table's header row, which names the
columns, but the answer span is the row itself. A sentence that opens with a pronoun or connective ("It then
exits with status 3.") is embedded together with the sentence before it, which says what "it" is.

A sentence that names a key in backticks but lacks the value asked for ("each token may send the number of
requests shown in `rate_limit_per_minute`") is scored with that key's line in a code block of the same window
(``"rate_limit_per_minute": 120``); if it wins, the answer span is that line and the sentence is evidence.

The answer span of the best unit is otherwise the unit plus the unit before it when both lie in the same block
(paragraph) — a lead-in that usually names what the sentence is about. If the span still does not mention
an entity the question names (an identifier, or a capitalised word that does not open the question), the
span widens by one more neighbouring unit that mentions it, the preceding one first (e.g. a heading).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from components.core.text.analysis import (
    QUESTION_WORDS,
    Analyzer,
    asked_unit,
    asks_for_quantity,
    asks_for_reason,
    asks_for_time,
    has_quantity,
    has_reason,
    has_time,
    is_identifier,
    mentions_unit,
    opens_with_reference,
)
from components.core.text.injection import is_directive
from components.core.text.splitting import (CODE, TABLE, Span, key_definitions, named_keys, split_blocks, split_units,
                                            table_header_line)
from components.core.text.key_terms import key_terms as key_terms_named

COSINE_WEIGHT = 0.5
IDENTIFIER_WEIGHT = 2.0
Embed = Callable[[list[str]], "np.ndarray"]


@dataclass(frozen=True)
class Unit:
    """One unit of a window: its character span in the window text and the index of its block.

    ``context`` is extra text the unit is scored with (a table row's header row); ``answerable`` is False
    for headings, table header rows and bare code fences, which can be lead-in but never the answer.
    """

    span: Span
    block: int
    context: str = ""
    answerable: bool = True
    directive: bool = False  # addresses the reader ("ignore previous instructions…"): never answer nor lead-in

    def scored_text(self, text: str) -> str:
        body = self.span.slice(text)
        return f"{self.context}\n{body}" if self.context else body


def embedded_text(text: str, units: Sequence[Unit], i: int) -> str:
    """What unit ``i`` is embedded as: its scored text, preceded by its lead-in (the previous unit of the same
    block) when it opens with a pronoun or connective ("It then exits with status 3." means nothing alone)."""
    unit = units[i]
    body = unit.scored_text(text)
    if (i > 0 and not unit.context and units[i - 1].block == unit.block and not units[i - 1].directive
            and opens_with_reference(body)):
        return f"{units[i - 1].span.slice(text)} {body}"
    return body


@dataclass(frozen=True)
class SentenceAnswer:
    """The answer of one window: characters ``[start, end)`` of the window text, its ``score`` in [0, 1],
    the ``best`` unit that earned the score and all ``units`` the span covers (the evidence)."""

    start: int
    end: int
    score: float
    best: Span
    units: tuple[Span, ...]


_BARE_FENCE = re.compile(r"\s*(```|~~~)[\w+-]*\s*")


def _is_heading(line: str) -> bool:
    return line.lstrip().startswith("#")


def window_units(text: str) -> list[Unit]:
    """All units of ``text`` (blocks split into sentences / table rows / code parts), in order."""
    units = []
    for b, block in enumerate(split_blocks(text)):
        parts = split_units(text, block)
        # a table's header row (none when the text begins inside the table: its first row is a row)
        head = table_header_line(text, block.start, block.end) if block.kind == TABLE else None
        header = text[head[0]:head[1]].strip() if head else ""
        for u in parts:
            body = u.slice(text)
            directive = is_directive(body)
            if block.kind == TABLE:
                is_header = head is not None and u.start <= head[1] and head[0] <= u.start
                units.append(Unit(u, b, "" if is_header else header, answerable=not is_header and not directive,
                                  directive=directive))
            elif block.kind == CODE:
                units.append(Unit(u, b, answerable=not _BARE_FENCE.fullmatch(body) and not directive, directive=directive))
            else:
                units.append(Unit(u, b, answerable=not _is_heading(body) and not directive, directive=directive))
    return units


def key_terms(question: str, analyzer: Analyzer) -> dict[str, float]:
    """Index terms of the question with their weights: identifiers and numbers weigh ``IDENTIFIER_WEIGHT``.

    ``QUESTION_WORDS`` (what, when, does ...) are not key terms.
    """
    terms: dict[str, float] = {}
    for word in analyzer.words(question):
        if word in QUESTION_WORDS:
            continue
        weight = IDENTIFIER_WEIGHT if is_identifier(word) else 1.0
        term = analyzer.stem(word)
        terms[term] = max(weight, terms.get(term, 0.0))
    return terms


def coverage(terms: dict[str, float], text: str, analyzer: Analyzer) -> float:
    """Weighted fraction of the question's key ``terms`` that occur in ``text`` (0 when there are none)."""
    total = sum(terms.values())
    if total == 0:
        return 0.0
    present = set(analyzer(text))
    return sum(w for t, w in terms.items() if t in present) / total


def question_entities(question: str, analyzer: Analyzer) -> list[str]:
    """What the question names, as lower-cased unstemmed words (``"err-4012"``, ``"eiffel"``), in order.

    The same named entities, numbers and identifiers the lexical verifier requires near an answer
    (``key_terms.key_terms``), so reader and verifier agree on what a span must mention.
    """
    named = key_terms_named(question)
    words = [w for entity in named.entities for w in analyzer.words(entity)] + list(named.identifiers)
    return [w for w in dict.fromkeys(words) if w not in QUESTION_WORDS]


def mentions(text: str, entity: str, analyzer: Analyzer) -> bool:
    """Whether ``text`` contains the word or identifier ``entity`` (as produced by ``question_entities``)."""
    return entity in analyzer.words(text)


def unit_scores(cosines: np.ndarray, coverages: np.ndarray, has_terms: bool = True) -> np.ndarray:
    """``COSINE_WEIGHT * max(0, cos) + (1 - COSINE_WEIGHT) * coverage`` per unit (cosine alone without terms)."""
    cos = np.clip(np.asarray(cosines, dtype=np.float64), 0.0, 1.0)
    if not has_terms:
        return cos
    return COSINE_WEIGHT * cos + (1.0 - COSINE_WEIGHT) * np.asarray(coverages, dtype=np.float64)


def answer_units(text: str, units: Sequence[Unit], best: int, entities: Sequence[str], analyzer: Analyzer):
    """Indices ``(first, last)`` of the units forming the answer span around unit ``best``.

    One unit of lead-in from the same block; then, if an entity of the question is still not mentioned,
    one more neighbouring unit (preceding first, in any block) that mentions a missing entity.
    """
    first = best - 1 if best > 0 and units[best - 1].block == units[best].block and not units[best - 1].directive else best
    last = best
    covered = text[units[first].span.start : units[last].span.end]
    missing = [e for e in entities if not mentions(covered, e, analyzer)]
    if missing:
        for extra in (first - 1, last + 1):
            if 0 <= extra < len(units) and not units[extra].directive and any(
                    mentions(units[extra].span.slice(text), e, analyzer) for e in missing):
                first, last = min(first, extra), max(last, extra)
                break
    return first, last


def answer_type_factor(question: str, text: str, analyzer: Analyzer) -> float:
    """1.0, halved when a quantity is asked and ``text`` has no number (again for a missing unit of measure),
    or when a cause is asked ("why", "what causes") and ``text`` states none."""
    factor = 1.0
    if asks_for_reason(question) and not has_reason(text):
        factor *= 0.5
    if asks_for_time(question) and not has_time(text):
        factor *= 0.5
    if asks_for_quantity(question) and not has_quantity(text):
        factor *= 0.5
    unit = asked_unit(question)
    if unit and not mentions_unit(text, unit, analyzer):
        factor *= 0.5
    return factor


def window_definitions(text: str, units: Sequence[Unit]) -> dict[str, Span]:
    """``key → its code line`` over the code units of a window (``text.key_definitions``; first one wins)."""
    found: dict[str, Span] = {}
    for unit in units:
        for key, line in key_definitions(text, unit.span).items():
            found.setdefault(key, line)
    return found


def typed_factor(
    question: str, text: str, unit: Unit, definitions: dict[str, Span], analyzer: Analyzer
) -> tuple[float, Span | None]:
    """``answer_type_factor`` of a unit, and the code line that supplies the value it lacks (else ``None``).

    A prose unit that names a key in backticks ("the number shown in `rate_limit_per_minute`") without
    stating the value the question asks for is read together with that key's line in a code block of the
    window (``"rate_limit_per_minute": 120``); when the line supplies the value, the line is the answer.
    """
    body = unit.span.slice(text)
    factor = answer_type_factor(question, body, analyzer)
    if factor == 1.0 or unit.span.kind == CODE:
        return factor, None
    best: tuple[float, Span | None] = (factor, None)
    for key in named_keys(body):
        line = definitions.get(key)
        if line is not None:
            resolved = answer_type_factor(question, f"{body}\n{line.slice(text)}", analyzer)
            if resolved > best[0]:
                best = (resolved, line)
    return best


def lead_in_coverage(terms: dict[str, float], text: str, units: Sequence[Unit], i: int, analyzer: Analyzer) -> float:
    """Coverage of unit ``i`` where a key term found only in its lead-in (previous unit, same block) counts half."""
    own = coverage(terms, units[i].scored_text(text), analyzer)
    if i == 0 or units[i - 1].block != units[i].block:
        return own
    with_lead = coverage(terms, units[i - 1].span.slice(text) + "\n" + units[i].scored_text(text), analyzer)
    return own + 0.5 * (with_lead - own)


def read_window(
    question: str,
    text: str,
    units: Sequence[Unit],
    cosines: np.ndarray,
    analyzer: Analyzer,
) -> SentenceAnswer | None:
    """The answer of one window from its units and their cosine similarity to the question (``None``: no units)."""
    candidates = [i for i, u in enumerate(units) if u.answerable]
    if not candidates:
        return None
    terms = key_terms(question, analyzer)
    covs = np.array([lead_in_coverage(terms, text, units, i, analyzer) for i in range(len(units))])
    scores = unit_scores(cosines, covs, has_terms=bool(terms))
    definitions = window_definitions(text, units)
    factors, values = zip(*(typed_factor(question, text, u, definitions, analyzer) for u in units), strict=True)
    scores *= np.array(factors)
    best = max(candidates, key=lambda i: (scores[i], -i))  # ties: the earliest unit
    if values[best] is not None:  # the value sits in the code line of the key the sentence names
        value = values[best]
        return SentenceAnswer(value.start, value.end, float(scores[best]), units[best].span, (value, units[best].span))
    first, last = answer_units(text, units, best, question_entities(question, analyzer), analyzer)
    if units[best].context and first < best:  # a table row is its own answer; the header is its context
        first = best
    return SentenceAnswer(
        start=units[first].span.start,
        end=units[last].span.end,
        score=float(scores[best]),
        best=units[best].span,
        units=tuple(u.span for u in units[first : last + 1]),
    )


def _normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


def read_windows(
    question: str, texts: Sequence[str], embed: Embed, analyzer: Analyzer | None = None
) -> list[SentenceAnswer | None]:
    """Answer of each window text; the question and all units are embedded in ONE ``embed`` call."""
    analyzer = analyzer or Analyzer()
    units = [window_units(t) for t in texts]
    pieces = [question] + [embedded_text(t, us, i) for t, us in zip(texts, units, strict=True) for i in range(len(us))]
    vectors = _normalise(np.asarray(embed(pieces), dtype=np.float64))
    cosines = vectors[1:] @ vectors[0]
    answers, pos = [], 0
    for text, us in zip(texts, units, strict=True):
        answers.append(read_window(question, text, us, cosines[pos : pos + len(us)], analyzer))
        pos += len(us)
    return answers


def no_answer_score(answers: Sequence[SentenceAnswer | None]) -> float:
    """``1 - best score`` over the windows' answers (1.0 when no window had any unit)."""
    scores = [a.score for a in answers if a is not None]
    return 1.0 - max(scores) if scores else 1.0
