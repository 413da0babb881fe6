"""How a tool name may be spelled by a text that means it: the one folding that minefield screening
reads refused calls with.

A refused call names no tool exactly, yet its text may still spell a hazardous one: in another
case or width (NFKC, case folding), with look-alike letters of another script (Cyrillic ``е``
for Latin ``e``), with separators, zero-width or bidirectional control characters between its
letters, reversed behind a right-to-left override, or after a long prefix. ``fold`` reduces a
text to lower-case Latin letters and digits; ``spelled_in`` lists the names a text spells.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

MAX_FOLD_CHARS = 1_000_000
"""How much of a text is folded from each end (a longer text is read at its head and its tail)."""

# Look-alike letters of other scripts, folded to the Latin letter they imitate (lower case; the
# text is case-folded first). The common confusables of Cyrillic, Greek and Armenian.
_HOMOGLYPHS = {
    "а": "a", "в": "b", "с": "c", "д": "d", "е": "e", "ё": "e", "һ": "h", "і": "i", "ї": "i", "ј": "j", "к": "k",
    "л": "l", "м": "m", "н": "h", "о": "o", "р": "p", "ԛ": "q", "ѕ": "s", "т": "t", "у": "y", "ш": "w", "ԝ": "w",
    "х": "x", "ү": "y", "з": "3", "ɡ": "g", "ı": "i", "ӏ": "l", "ԁ": "d", "ց": "g", "օ": "o", "ս": "u", "հ": "h",
    "α": "a", "β": "b", "γ": "y", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t",
    "υ": "u", "χ": "x", "ω": "w", "ϲ": "c", "ϳ": "j", "ѵ": "v", "ɑ": "a", "ɩ": "i", "ℓ": "l",
}
_TABLE = str.maketrans(_HOMOGLYPHS)
_NOT_ALNUM = re.compile(r"[\W_]+")
_RTL = re.compile("[\u202b\u202e\u2067\u200f\u061c]")  # right-to-left embedding, override, isolate, mark


def fold(text: str) -> str:
    """``text`` as lower-case letters and digits only: NFKC, case-folded, look-alikes folded to Latin,
    everything else (separators, zero-width and bidi controls) dropped."""
    return _NOT_ALNUM.sub("", unicodedata.normalize("NFKC", text).casefold().translate(_TABLE))


def readings(text: str) -> tuple[str, ...]:
    """The folded forms a text may be read as: as written, and reversed when it holds a right-to-left control."""
    if len(text) > 2 * MAX_FOLD_CHARS:
        text = text[:MAX_FOLD_CHARS] + " " + text[-MAX_FOLD_CHARS:]
    folded = fold(text)
    return (folded, folded[::-1]) if _RTL.search(text) else (folded,)


def spelled_in(text: str, names: Iterable[str]) -> tuple[str, ...]:
    """The names (in order, without repeats) whose folded form occurs in a reading of ``text``."""
    forms = [f for f in readings(text) if f]
    out: list[str] = []
    for name in names:
        key = fold(name)
        if key and name not in out and any(key in f for f in forms):
            out.append(name)
    return tuple(out)
