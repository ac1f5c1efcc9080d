"""Text normalised once, at conversion: the characters a PDF text layer, a web page or a Word file carries that
no reader sees as text and that break term matching, encoding or offsets.

``normalise_char`` maps one character to what the canonical text keeps (``""`` drops it; a ligature becomes its
letters), so a converter that keeps a character index per output character (``pdf.page_text``) stays exact;
``normalise_text`` applies it to a whole converted text (HTML, Word), counting what it changed::

    normalise_text("co\\u00adoperate\\u00a0now\\ud800")    # ("cooperate now\\ufffd", 3)

- lone surrogates (invalid in UTF-8: they crashed the index build) → U+FFFD;
- soft hyphens, zero-width characters, byte-order marks and the non-characters U+FFFE/U+FFFF → dropped
  (mid-word they split one word into two terms);
- no-break and other fixed-width spaces → a plain space;
- control characters other than tab and newline → a space;
- the Latin ligatures U+FB00–FB06 (ﬁ, ﬂ, …) → their letters;
- a spacing accent right after its letter (``Age\u02c6ncia``, as TeX typesets it) → the accented letter
  (``composed``; the accent's character is dropped, the letter keeps its place).
"""

from __future__ import annotations

import unicodedata

DROPPED = frozenset("\u00ad\u200b\u200c\u200d\u2060\ufeff\ufffe\uffff")
SPACES = frozenset("\u00a0\u2007\u202f\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2008\u2009\u200a\u205f\u3000")


def normalise_char(ch: str) -> str:
    """What the canonical text keeps of ``ch``."""
    code = ord(ch)
    if ch in DROPPED:
        return ""
    if 0xD800 <= code <= 0xDFFF:
        return "\ufffd"
    if ch in SPACES:
        return " "
    if (code < 32 and ch not in "\t\n") or 0x7F <= code < 0xA0:
        return " "
    if 0xFB00 <= code <= 0xFB06:
        return unicodedata.normalize("NFKC", ch)
    return ch


# a spacing accent a typesetter (TeX above all) writes after its letter: Age\u02c6ncia, Aviac\u00b8a\u02dco
SPACING_ACCENTS = {"\u02c6": "\u0302", "\u02dc": "\u0303", "\u00b8": "\u0327", "\u00a8": "\u0308",
                   "\u02da": "\u030a", "\u02c7": "\u030c", "\u02d8": "\u0306", "\u00b4": "\u0301"}
VOWELS = frozenset("aeiouyAEIOUY")


def composed(letter: str, ch: str) -> str | None:
    """The one character that ``letter`` and the spacing accent ``ch`` typeset after it make (``e`` + ``ˆ`` →
    ``ê``, ``c`` + ``¸`` → ``ç``), or ``None``. An acute accent is taken over a vowel only: after a consonant it is
    an apostrophe typed wrong (``don´t``)."""
    mark = SPACING_ACCENTS.get(ch)
    if mark is None or not letter.isalpha() or (ch == "\u00b4" and letter not in VOWELS):
        return None
    out = unicodedata.normalize("NFC", letter + mark)
    return out if len(out) == 1 else None


def needs_normalising(text: str) -> bool:
    return any(normalise_char(c) != c for c in text)


def normalise_text(text: str) -> tuple[str, int]:
    """``(text, changed)``: ``text`` with every character normalised and how many characters changed."""
    if not needs_normalising(text) and not any(c in SPACING_ACCENTS for c in text):
        return text, 0
    out, changed = [], 0
    last = -1  # the element of ``out`` that holds the last kept character
    for ch in text:
        accented = composed(out[last][-1], ch) if last >= 0 else None
        if accented is not None:  # the letter before takes the accent
            out[last] = out[last][:-1] + accented
            changed += 1
            continue
        kept = normalise_char(ch)
        changed += kept != ch
        out.append(kept)
        last = len(out) - 1 if kept else last
    return "".join(out), changed
