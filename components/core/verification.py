"""Checking an answer against the text it was read from, and deciding where the query goes next.

Pure functions and small dataclasses, no Haystack components and no models; ``VerifierRouter``
(``components/routers/verifier_router.py``) is the glue. Everything works on character offsets into the
ORIGINAL source documents, and every sentence comes from ``components.core.text`` (no other splitting).

Pieces:

- ``route_decision(level, verdict, max_level)`` — the routing table of the widening loop:
  SUPPORTED → ``answers``; at ``window`` (or ``chunk``) PARTIAL → widen to ``paragraph`` and UNSUPPORTED →
  widen to ``passage``; at ``paragraph`` anything else → ``passage``; at ``passage`` → ``not_found``.
  ``max_level`` caps the widening (a capped target that is not wider than the current level → not_found).
- ``visible_texts(pieces)`` — the read documents merged per source document into contiguous visible
  stretches (overlapping windows of one document become one stretch), each split into units (sentences,
  table rows, code parts) with ``split_blocks`` / ``split_units``.
- ``locate_extractive`` / ``locate_generative`` — where the answer is: its exact span (by the reader's
  offsets, else a case-insensitive search), the unit(s) containing it (the *evidence*) and up to
  ``lead_in_units`` preceding visible units of the same paragraph, or a heading right above it (the
  *lead-in*, which usually names the subject: "Acme Pro subscriptions. Refunds are available within 30
  days."). The lead-in never reaches into the previous paragraph, which may be about something else.
  An answer that is a ``key: value`` line of a code block also has *references*: the sentences that name
  that key in backticks ("the number shown in `rate_limit_per_minute`"); they count like a lead-in.
  A generative answer that is not verbatim is located by token coverage: the shortest run of units of a
  cited passage holding as many of its terms as that passage holds.
- ``key_terms(question)`` — the terms a supporting span must mention: named entities (runs of
  capitalised words, see ``key_terms``), numbers and identifiers (``analysis.is_identifier``).
- ``lexical_judgement`` — the offline verdict (rules below); ``nli_judgement`` / ``nli_label_index`` —
  the mapping of an NLI model's probabilities; ``judge_messages`` / ``parse_judge_reply`` — the LLM judge.

Lexical rules, in order (thresholds are parameters; nothing here is tuned on a dataset):

1. the answer is not located in the read documents (generative: neither verbatim nor with at least
   ``min_answer_coverage`` of its terms in one cited passage) → UNSUPPORTED ``answer_not_in_documents``;
2. more than ``max_missing_key_terms`` of the key terms occur nowhere in the read documents (titles
   included) → UNSUPPORTED ``key_terms_missing``;
3. the question says the opposite of the evidence (with its lead-in): it is negated ("What can*not* be
   solved ...") and the evidence is not → UNSUPPORTED ``negation_mismatch``; or it uses a word whose
   opposite the evidence uses instead ("decrease" / "increase", "unconnected" / "connected";
   ``analysis.opposite_terms``) → UNSUPPORTED ``opposite_terms`` — SQuAD 2.0's two commonest kinds of
   unanswerable question, which share every other word with the source;
4. some key term is not in the evidence, its lead-in or the document title, but elsewhere (or, for at
   most ``max_missing_key_terms`` of them, nowhere) → PARTIAL ``key_terms_elsewhere``;
5. fewer than ``min_term_coverage`` of the question's content terms (stems, question words removed) are
   in the evidence, lead-in or title → PARTIAL ``low_term_coverage``;
6. the question asks for a quantity ("how many / much / long / far …", "what price / port / year …")
   and the answer holds no number, or it asks "how many <unit>" and the answer never names that unit, or
   it asks when and the answer states no time (a number, a month, "century" …) →
   PARTIAL ``answer_type_missing`` (the value asked for is not there);
7. otherwise SUPPORTED.

Example::

    vis = visible_texts([Piece("d1", 0, "Acme Pro plans. Refunds take 30 days.", "Billing")])
    ev = locate_extractive(vis, "30 days", doc_id="d1", start=29, end=36, lead_in_units=2)
    j = lexical_judgement("How long do refunds take for Acme Pro?", ev, vis, Analyzer())
    j.verdict, j.reason          # ("SUPPORTED", "supported: ...")
    route_decision("window", "PARTIAL")  # ("widen", "paragraph")
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

from components.core.analysis import (
    QUESTION_WORDS,
    Analyzer,
    asked_unit,
    asks_for_quantity,
    asks_for_time,
    english_stopwords,
    has_quantity,
    has_time,
    is_identifier,
    is_negated,
    mentions_unit,
    opposite_terms,
)
from components.core.injection import is_directive
from components.core.text import CODE, PROSE, TABLE, Span, key_definitions, named_keys, split_blocks, split_units

SUPPORTED, PARTIAL, UNSUPPORTED, NOT_FOUND = "SUPPORTED", "PARTIAL", "UNSUPPORTED", "NOT_FOUND"
VERDICTS = (SUPPORTED, PARTIAL, UNSUPPORTED)

# narrow → wide; a "chunk" (no expander in the pipeline) is treated like a "window"
LEVELS = ("chunk", "window", "paragraph", "passage")
WIDEN_LEVELS = ("paragraph", "passage")

# --------------------------------------------------------------------------------------------- routing


def level_rank(level: str) -> int:
    """Position of ``level`` in ``LEVELS`` (chunk and window share the narrowest rank)."""
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}: use one of {', '.join(LEVELS)}")
    return max(LEVELS.index(level), 1)


def route_decision(level: str, verdict: str, max_level: str = "passage") -> tuple[str, str | None]:
    """Where a verdict at ``level`` sends the query: ``("answers", None)``, ``("widen", target)`` or
    ``("not_found", None)``.

    ``max_level`` ("paragraph" or "passage") caps the widening target; when the capped target is not
    wider than ``level`` the query ends as not found.
    """
    if max_level not in WIDEN_LEVELS:
        raise ValueError(f"max_level must be one of {WIDEN_LEVELS}, got {max_level!r}")
    if verdict == SUPPORTED:
        return "answers", None
    if verdict not in VERDICTS:
        raise ValueError(f"unknown verdict {verdict!r}")
    rank = level_rank(level)
    if rank == 1:
        target = "paragraph" if verdict == PARTIAL else "passage"
    elif level == "paragraph":
        target = "passage"
    else:
        return "not_found", None
    if level_rank(target) > level_rank(max_level):
        target = max_level
    if level_rank(target) <= rank:
        return "not_found", None
    return "widen", target


# ------------------------------------------------------------------------------------- visible text


@dataclass(frozen=True)
class Piece:
    """One read document: ``text`` is the source document ``doc_id`` from offset ``start``."""

    doc_id: str
    start: int
    text: str
    title: str = ""


@dataclass(frozen=True)
class Visible:
    """A contiguous stretch ``[start, end)`` of one source document that the reader saw, with its units."""

    doc_id: str
    start: int
    end: int
    text: str
    title: str
    units: tuple[Span, ...]
    unit_blocks: tuple[int, ...] = ()  # index of the block (``split_blocks``) each unit belongs to
    headings: frozenset[int] = frozenset()  # indexes of blocks that are headings (see ``lead_in``)

    def slice(self, start: int, end: int) -> str:
        """Original text of ``[start, end)`` (absolute offsets inside this stretch)."""
        return self.text[start - self.start : end - self.start]

    def contains(self, start: int, end: int) -> bool:
        return self.start <= start and end <= self.end


def _is_heading(text: str, units: list[Span]) -> bool:
    """A heading block: one prose line that does not end like a sentence ("Acme Pro Billing", "## Refunds")."""
    return (
        len(units) == 1
        and units[0].kind == PROSE
        and "\n" not in text.strip()
        and not text.rstrip().endswith((".", "!", "?"))
    )


def _units(text: str, offset: int) -> tuple[tuple[Span, ...], tuple[int, ...], frozenset[int]]:
    units: list[Span] = []
    owners: list[int] = []
    headings = set()
    for b, block in enumerate(split_blocks(text)):
        mine = split_units(text, block)
        if _is_heading(block.slice(text), mine):
            headings.add(b)
        units.extend(Span(u.start + offset, u.end + offset, u.kind) for u in mine)
        owners.extend([b] * len(mine))
    return tuple(units), tuple(owners), frozenset(headings)


def visible_texts(pieces: Iterable[Piece]) -> list[Visible]:
    """Merge the read pieces per document into contiguous stretches (overlapping or touching pieces join).

    Stretches are returned per document in order of the document's first appearance, then by offset.
    """
    by_doc: dict[str, list[Piece]] = {}
    for p in pieces:
        if p.text:
            by_doc.setdefault(p.doc_id, []).append(p)
    out: list[Visible] = []
    for doc_id, group in by_doc.items():
        group = sorted(group, key=lambda p: p.start)
        title = next((p.title for p in group if p.title), "")
        cur_start, cur_text = group[0].start, group[0].text
        merged: list[tuple[int, str]] = []
        for p in group[1:]:
            cur_end = cur_start + len(cur_text)
            if p.start <= cur_end:
                tail = p.text[cur_end - p.start :]
                cur_text += tail
            else:
                merged.append((cur_start, cur_text))
                cur_start, cur_text = p.start, p.text
        merged.append((cur_start, cur_text))
        for start, text in merged:
            out.append(Visible(doc_id, start, start + len(text), text, title, *_units(text, start)))
    return out


# ------------------------------------------------------------------------------------------ locating


@dataclass(frozen=True)
class Evidence:
    """Where an answer stands: its span (``None`` when located only by term coverage), the unit(s)
    around it and the preceding visible units of the same document."""

    visible: Visible
    answer: tuple[int, int] | None
    units: tuple[Span, ...]
    lead_in: tuple[Span, ...] = ()
    coverage: float = 1.0  # share of the answer's terms found in ``units`` (1.0 when verbatim)
    references: tuple[Span, ...] = ()  # sentences naming (in backticks) the key whose code line is the answer

    @property
    def doc_id(self) -> str:
        return self.visible.doc_id

    @property
    def evidence_span(self) -> tuple[int, int]:
        return self.units[0].start, self.units[-1].end

    @property
    def context_span(self) -> tuple[int, int]:
        """Lead-in + evidence: one contiguous span of the source document."""
        start = self.lead_in[0].start if self.lead_in else self.units[0].start
        return start, self.units[-1].end

    @property
    def evidence_text(self) -> str:
        return self.visible.slice(*self.evidence_span)

    @property
    def lead_in_text(self) -> str:
        return self.visible.slice(self.lead_in[0].start, self.lead_in[-1].end) if self.lead_in else ""

    @property
    def context_text(self) -> str:
        return self.visible.slice(*self.context_span)

    @property
    def references_text(self) -> str:
        return "\n".join(self.visible.slice(u.start, u.end) for u in self.references)


def span_dict(doc_id: str, start: int, end: int, text: str) -> dict:
    return {"doc_id": doc_id, "char_start": start, "char_end": end, "text": text}


def _pattern(text: str) -> re.Pattern | None:
    """Case-insensitive pattern for ``text`` with any run of white space matching any other."""
    words = text.split()
    if not words:
        return None
    return re.compile(r"\s+".join(re.escape(w) for w in words), re.IGNORECASE)


def _same(a: str, b: str) -> bool:
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def evidence_for(visible: Visible, start: int, end: int, lead_in_units: int) -> Evidence:
    """The units of ``visible`` overlapping ``[start, end)`` and up to ``lead_in_units`` units before them."""
    idx = [i for i, u in enumerate(visible.units) if u.start < end and u.end > start]
    if not idx:  # the span lies in white space between units: take the nearest unit
        dist = [min(abs(u.start - start), abs(u.end - end)) for u in visible.units]
        idx = [dist.index(min(dist))]
    units = tuple(visible.units[i] for i in idx)
    return Evidence(visible, (start, end), units, lead_in(visible, idx[0], lead_in_units),
                    references=referring_units(visible, start, end))


def referring_units(visible: Visible, start: int, end: int) -> tuple[Span, ...]:
    """Prose units of ``visible`` that name, in backticks, a key whose code line (``text.key_definitions``)
    overlaps ``[start, end)``: "the limit shown in `rate_limit_per_minute`" for ``"rate_limit_per_minute": 120``."""
    keys = set()
    for u in visible.units:  # code units are code blocks (or their blank-line parts), already split
        if u.kind == CODE:
            local = Span(u.start - visible.start, u.end - visible.start, CODE)
            for key, line in key_definitions(visible.text, local).items():
                if line.start + visible.start < end and start < line.end + visible.start:
                    keys.add(key)
    if not keys:
        return ()
    return tuple(
        u for u in visible.units
        if u.kind == PROSE and keys.intersection(named_keys(visible.slice(u.start, u.end)))
    )


def lead_in(visible: Visible, first: int, n: int) -> tuple[Span, ...]:
    """Up to ``n`` visible units right before unit ``first``, within its block (paragraph); a heading
    block directly before that block (one line, no final . ! ?) is included when the budget reaches it.
    A lead-in never crosses into another paragraph, whose subject may be a different one."""
    block = visible.unit_blocks[first]
    if visible.units[first].kind == TABLE:
        return table_lead_in(visible, first) if n > 0 else ()
    lead: list[Span] = []
    i = first - 1
    while i >= 0 and len(lead) < n:
        owner = visible.unit_blocks[i]
        if owner != block:
            if owner == block - 1 and owner in visible.headings:
                lead.insert(0, visible.units[i])
            break
        if not is_directive(visible.slice(visible.units[i].start, visible.units[i].end)):  # data, never lead-in
            lead.insert(0, visible.units[i])
        i -= 1
    return tuple(lead)


def table_lead_in(visible: Visible, row: int) -> tuple[Span, ...]:
    """A table row's lead-in: the table's heading (a heading block right before it) and its header row —
    never the neighbouring row, which describes another item."""
    block = visible.unit_blocks[row]
    rows = [i for i, b in enumerate(visible.unit_blocks) if b == block]
    lead = [visible.units[rows[0]]] if rows[0] != row else []
    before = rows[0] - 1
    if before >= 0 and visible.unit_blocks[before] == block - 1 and (block - 1) in visible.headings:
        lead.insert(0, visible.units[before])
    return tuple(lead)


def locate_extractive(
    visibles: list[Visible],
    text: str | None,
    *,
    doc_id: str | None = None,
    start: int | None = None,
    end: int | None = None,
    lead_in_units: int = 2,
) -> Evidence | None:
    """Evidence for an answer given by its offsets and/or its text.

    The reader's offsets win when the read text there equals ``text`` (ignoring case and spacing);
    otherwise ``text`` is searched case-insensitively, in the answer's own document first (nearest to
    ``start``), then in the other read documents in order. ``None`` when it is not in the read text.
    """
    visibles = [v for v in visibles if v.units]
    if doc_id is not None and start is not None and end is not None and end > start:
        for v in visibles:
            if v.doc_id == doc_id and v.contains(start, end) and (text is None or _same(v.slice(start, end), text)):
                return evidence_for(v, start, end, lead_in_units)
    pattern = _pattern(text or "")
    if pattern is None:
        return None
    own = [v for v in visibles if v.doc_id == doc_id]
    hits = [(v, m) for v in own for m in pattern.finditer(v.text)]
    if hits:
        ref = start if start is not None else 0
        v, m = min(hits, key=lambda h: abs(h[0].start + h[1].start() - ref))
        return evidence_for(v, v.start + m.start(), v.start + m.end(), lead_in_units)
    for v in visibles:
        if v.doc_id == doc_id:
            continue
        m = pattern.search(v.text)
        if m:
            return evidence_for(v, v.start + m.start(), v.start + m.end(), lead_in_units)
    return None


def _regions(visibles: list[Visible], cited: list[tuple[str, int, int]] | None) -> list[tuple[Visible, int, int]]:
    """The parts of the visible text the answer cites (all of it when it cites nothing visible)."""
    regions = []
    for doc_id, start, end in cited or []:
        for v in visibles:
            s, e = max(start, v.start), min(end, v.end)
            if v.doc_id == doc_id and e > s:
                regions.append((v, s, e))
    return regions or [(v, v.start, v.end) for v in visibles]


def locate_generative(
    visibles: list[Visible],
    text: str | None,
    analyzer: Analyzer,
    *,
    cited: list[tuple[str, int, int]] | None = None,
    lead_in_units: int = 2,
) -> Evidence | None:
    """Evidence for a free-text answer within its cited regions (all visible text when none are cited).

    Verbatim (case-insensitive) first; else, per cited region, the shortest run of consecutive units that
    holds as many of the answer's terms as the whole region does; the region with the highest share wins
    (``Evidence.coverage``). ``None`` when no term of the answer occurs in any cited region.
    """
    visibles = [v for v in visibles if v.units]
    regions = _regions(visibles, cited)
    pattern = _pattern(text or "")
    if pattern is None:
        return None
    for v, s, e in regions:
        m = pattern.search(v.text, s - v.start, e - v.start)
        if m:
            return evidence_for(v, v.start + m.start(), v.start + m.end(), lead_in_units)
    terms = set(analyzer(text or ""))
    if not terms:
        return None
    best: tuple[float, int, Visible, list[Span]] | None = None
    for v, s, e in regions:
        units = [u for u in v.units if u.start < e and u.end > s]
        unit_terms = [set(analyzer(v.slice(u.start, u.end))) & terms for u in units]
        reach = len(set().union(*unit_terms)) if unit_terms else 0
        if reach == 0:
            continue
        run: list[Span] | None = None
        for i in range(len(units)):
            got: set[str] = set()
            for j in range(i, len(units)):
                got |= unit_terms[j]
                if len(got) == reach:
                    if run is None or j + 1 - i < len(run):
                        run = units[i : j + 1]
                    break
        cov = reach / len(terms)
        if run is not None and (best is None or cov > best[0] or (cov == best[0] and len(run) < best[1])):
            best = (cov, len(run), v, run)
    if best is None:
        return None
    cov, _, v, run = best
    return Evidence(v, None, tuple(run), lead_in(v, v.units.index(run[0]), lead_in_units), coverage=cov)


# ----------------------------------------------------------------------------------------- key terms

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
class _Vocab:
    """Stems and (split) words of a text, for term look-ups."""

    stems: set[str] = field(default_factory=set)
    words: set[str] = field(default_factory=set)

    def add(self, text: str, analyzer: Analyzer) -> "_Vocab":
        words = analyzer.words(text)
        self.words.update(words)
        self.stems.update(analyzer.stem(w) for w in words)
        return self

    def has_entity(self, entity: str, analyzer: Analyzer) -> bool:
        stems = analyzer(entity)
        return bool(stems) and all(s in self.stems for s in stems)

    def has_identifier(self, ident: str) -> bool:
        return ident in self.words


def _has(vocab: _Vocab, terms: KeyTerms, term: str, analyzer: Analyzer) -> bool:
    return vocab.has_identifier(term) if term in terms.identifiers else vocab.has_entity(term, analyzer)


# ------------------------------------------------------------------------------------------ verdicts


@dataclass(frozen=True)
class Judgement:
    """A verdict with a short reason (``code`` or ``code: detail``) and the lead-in units it relied on."""

    verdict: str
    reason: str
    used_lead_in: tuple[Span, ...] = ()


def _quote(terms: Iterable[str]) -> str:
    return ", ".join(f"'{t}'" for t in terms)


def lexical_judgement(
    question: str,
    evidence: Evidence | None,
    visibles: list[Visible],
    analyzer: Analyzer,
    *,
    use_title: bool = True,
    min_term_coverage: float = 0.5,
    max_missing_key_terms: float = 0.5,
    min_answer_coverage: float = 0.8,
) -> Judgement:
    """The offline verdict (rules 1-7 of the module docstring)."""
    if evidence is None or evidence.coverage < min_answer_coverage:
        detail = "" if evidence is None else f": only {evidence.coverage:.2f} of its terms in one cited passage"
        return Judgement(UNSUPPORTED, f"answer_not_in_documents{detail}")

    terms = key_terms(question)
    everywhere = _Vocab()
    for v in visibles:
        everywhere.add(v.text, analyzer)
        if use_title and v.title:
            everywhere.add(v.title, analyzer)
    local = _Vocab().add(evidence.evidence_text, analyzer)
    lead = _Vocab().add(evidence.lead_in_text, analyzer).add(evidence.references_text, analyzer)
    if use_title and evidence.visible.title:
        lead.add(evidence.visible.title, analyzer)
    near = _Vocab(local.stems | lead.stems, local.words | lead.words)

    missing = [t for t in terms.all() if not _has(everywhere, terms, t, analyzer)]
    if terms and len(missing) / len(terms) > max_missing_key_terms:
        return Judgement(UNSUPPORTED, f"key_terms_missing: {_quote(missing)} not in the read documents")

    stated = f"{evidence.lead_in_text}\n{evidence.evidence_text}\n{evidence.references_text}"
    if is_negated(question) and not is_negated(stated):
        return Judgement(UNSUPPORTED, "negation_mismatch: the question is negated, the evidence is not")
    opposite = opposite_terms(question, stated, analyzer)
    if opposite:
        said = ", ".join(f"'{q}' where the source says '{e}'" for q, e in opposite)
        return Judgement(UNSUPPORTED, f"opposite_terms: the question says {said}")

    # the lead-in units that supply a question term the evidence itself lacks
    needed = {analyzer.stem(w) for t in terms.all() for w in analyzer.words(t)} | content_terms(question, analyzer)
    needed -= local.stems
    used = tuple(
        u for u in evidence.lead_in if needed & set(analyzer(evidence.visible.slice(u.start, u.end)))
    )

    elsewhere = [t for t in terms.all() if not _has(near, terms, t, analyzer)]
    if elsewhere:
        found = [t for t in elsewhere if t not in missing]
        parts = []
        if found:
            parts.append(f"{_quote(found)} only elsewhere in the read documents")
        if missing:
            parts.append(f"{_quote(missing)} not found")
        return Judgement(PARTIAL, "key_terms_elsewhere: " + "; ".join(parts), used)

    content = content_terms(question, analyzer)
    if content:
        have = sum(1 for s in content if s in near.stems)
        if have / len(content) < min_term_coverage:
            return Judgement(
                PARTIAL, f"low_term_coverage: {have}/{len(content)} question terms near the answer", used
            )
    answer_text = evidence.visible.slice(*evidence.answer) if evidence.answer is not None else evidence.evidence_text
    if asks_for_quantity(question) and not has_quantity(answer_text):
        return Judgement(PARTIAL, "answer_type_missing: the question asks for a quantity, the answer has none", used)
    if asks_for_time(question) and not has_time(answer_text):
        return Judgement(PARTIAL, "answer_type_missing: the question asks when, the answer states no time", used)
    unit = asked_unit(question)
    if unit and not mentions_unit(answer_text, unit, analyzer):
        return Judgement(PARTIAL, f"answer_type_missing: the question asks for {unit}, the answer does not say", used)
    what = "answer" if evidence.answer is not None else f"{evidence.coverage:.2f} of the answer's terms"
    keys = f" with {_quote(terms.all())}" if terms else ""
    return Judgement(SUPPORTED, f"supported: {what} in the evidence{keys}", used)


# ---------------------------------------------------------------------------------------------- NLI

DEFAULT_HYPOTHESIS = "{question} {answer}"


def nli_label_index(id2label: dict) -> dict[str, int]:
    """``{"entailment": i, "neutral": j, "contradiction": k}`` from a model config's ``id2label``.

    Label names are matched by prefix, case-insensitively (``ENTAILMENT``, ``entail``, ``Contradiction``).
    Raises ``ValueError`` when one of the three is missing (e.g. ``LABEL_0``..).
    """
    index: dict[str, int] = {}
    for i, name in id2label.items():
        low = str(name).casefold()
        for key in ("entailment", "neutral", "contradiction"):
            if low.startswith(key[:6]):
                index[key] = int(i)
    missing = [k for k in ("entailment", "neutral", "contradiction") if k not in index]
    if missing:
        raise ValueError(f"id2label {dict(id2label)} has no {', '.join(missing)} label")
    return index


def nli_judgement(
    probs: dict[str, float], entail_threshold: float = 0.5, contradiction_threshold: float = 0.5
) -> Judgement:
    """SUPPORTED if P(entailment) ≥ ``entail_threshold``; else UNSUPPORTED if P(contradiction) ≥
    ``contradiction_threshold``; else PARTIAL (neutral: the span neither entails nor contradicts)."""
    pe, pn, pc = probs["entailment"], probs["neutral"], probs["contradiction"]
    detail = f"entailment {pe:.2f}, neutral {pn:.2f}, contradiction {pc:.2f}"
    if pe >= entail_threshold:
        return Judgement(SUPPORTED, f"nli: {detail}")
    if pc >= contradiction_threshold:
        return Judgement(UNSUPPORTED, f"nli: {detail}")
    return Judgement(PARTIAL, f"nli: {detail}")


# ---------------------------------------------------------------------------------------- LLM judge

JUDGE_SYSTEM = (
    "You check whether a piece of evidence supports an answer to a question.\n"
    "SUPPORTED: the evidence states the answer to this question.\n"
    "PARTIAL: the evidence states the answer, but not for everything the question names.\n"
    "UNSUPPORTED: the evidence does not state the answer, or contradicts it.\n"
    "Return SUPPORTED, PARTIAL or UNSUPPORTED, then one short reason."
)

_VERDICT_WORD = re.compile(r"\b(NOT[\s_-]+SUPPORTED|UNSUPPORTED|SUPPORTED|PARTIAL(?:LY)?)\b")
_VERDICT_WORD_ANY_CASE = re.compile(_VERDICT_WORD.pattern, re.IGNORECASE)


def judge_messages(question: str, answer: str, evidence: str) -> list[dict]:
    """The chat messages of the LLM judge (system rules + one user turn)."""
    user = (
        f"Evidence:\n{evidence}\n\nQuestion: {question}\nAnswer: {answer}\n\n"
        "Return SUPPORTED, PARTIAL or UNSUPPORTED, then one short reason."
    )
    return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": user}]


def parse_judge_reply(text: str | None) -> Judgement:
    """The first verdict word of a judge reply (upper-case words first, then any case) and its reason.

    "NOT SUPPORTED" counts as UNSUPPORTED and "PARTIALLY" as PARTIAL. The reason is the rest of that line
    (at most 200 characters). No verdict word → UNSUPPORTED with reason ``unparseable_judge_reply``.
    """
    text = text or ""
    m = _VERDICT_WORD.search(text) or _VERDICT_WORD_ANY_CASE.search(text)
    if m is None:
        shown = " ".join(text.split())[:80]
        return Judgement(UNSUPPORTED, f"unparseable_judge_reply: {shown!r}")
    word = re.sub(r"[\s_-]+", " ", m.group(1).upper())
    if word in ("UNSUPPORTED", "NOT SUPPORTED"):
        verdict = UNSUPPORTED
    else:
        verdict = PARTIAL if word.startswith("PARTIAL") else SUPPORTED
    reason = ""
    for line in text[m.end() :].split("\n"):  # the rest of the verdict's line, else the next non-empty line
        reason = " ".join(line.lstrip(" \t:;,.-–—*\"'").rstrip(" *\"'").split())[:200]
        if reason:
            break
    return Judgement(verdict, f"llm: {reason}" if reason else "llm: no reason given")
