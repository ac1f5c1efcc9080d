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
- the Latin ligatures U+FB00–FB06 (ﬁ, ﬂ, …) → their letters.
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


def needs_normalising(text: str) -> bool:
    return any(normalise_char(c) != c for c in text)


def normalise_text(text: str) -> tuple[str, int]:
    """``(text, changed)``: ``text`` with every character normalised and how many characters changed."""
    if not needs_normalising(text):
        return text, 0
    out, changed = [], 0
    for ch in text:
        kept = normalise_char(ch)
        changed += kept != ch
        out.append(kept)
    return "".join(out), changed
