"""Text an agent, a user simulator or a tool produced, made safe where it is shown.

Two places show such text: judge prompts, where it sits between evidence markers it must
not be able to forge, and Markdown reports, where it must not open a block, a link, an
image, raw HTML or a code span. ``for_prompt`` clips a value and defuses every spelling
of the marker words (any case, spacing or punctuation between the letters, fullwidth and
other compatibility forms, invisible characters, letters borrowed from other scripts);
``for_markdown`` clips a value to one line and backslash-escapes the ASCII punctuation
Markdown gives meaning to. Pure: no I/O.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

MARKER_REMOVED = "[marker removed]"
CLIPPED = " ...[clipped]"

# Letters of other scripts that look like Latin ones (after NFKC, which already folds
# fullwidth, mathematical and enclosed forms): Cyrillic, Greek, Cherokee, small capitals.
_LOOKALIKES = {
    "a": "аАαΑᴀ", "b": "вВβΒʙᏴ", "c": "сСϲϹᴄᏟ", "d": "ԁᴅᎠ", "e": "еЕεΕᴇᎬ", "g": "ɢᏀԌ", "h": "һНΗʜᎻ",
    "i": "іІιΙɪӀᏆ", "j": "јЈᴊᎫ", "k": "кКκΚᴋᏦ", "l": "ʟᏞӏ", "m": "мМμΜᴍᎷ", "n": "ոηΝɴ", "o": "оОοΟᴏ",
    "p": "рРρΡᴘᏢ", "q": "ԛ", "r": "ʀᏒ", "s": "ѕЅꜱᏚ", "t": "тТτΤᴛᎢ", "u": "υᴜ", "v": "ѵѴνᴠᏙ",
    "w": "ԝᴡᎳ", "x": "хХχΧ", "y": "уУγΥʏ", "z": "ΖᴢᏃ",
}
_FOLD = {unicodedata.normalize("NFKC", ch): latin for latin, chars in _LOOKALIKES.items() for ch in chars}  # keyed as NFKC leaves them
_HIDDEN = {"Cf", "Mn", "Me", "Cc", "Zl", "Zp"}  # invisible: format, combining, control, separators


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, saying so when cut."""
    return text if len(text) <= limit else text[: max(0, limit - len(CLIPPED))] + CLIPPED


def skeleton(text: str) -> tuple[str, list[int]]:
    """The lower-case Latin letters and digits ``text`` reads as, and where each came from.

    Invisible characters, punctuation and spacing are dropped and look-alike letters of
    other scripts folded, so every spelling of a word gives the same skeleton.
    """
    out: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        if unicodedata.category(ch) in _HIDDEN:
            continue
        c = _FOLD.get(ch) or ch.lower()
        if len(c) == 1 and ("a" <= c <= "z" or "0" <= c <= "9"):
            out.append(c)
            where.append(i)
    return "".join(out), where


def defuse(text: str, words: tuple[str, ...]) -> str:
    """``text`` with every spelling of ``words`` (read in order, as one phrase) replaced by a notice."""
    phrase = "".join(w.lower() for w in words)
    folded, where = skeleton(text)
    spans: list[tuple[int, int]] = []
    start = folded.find(phrase)
    while start >= 0:
        end = start + len(phrase)
        spans.append((where[start], where[end - 1] + 1))
        start = folded.find(phrase, end)
    for lo, hi in reversed(spans):
        text = text[:lo] + MARKER_REMOVED + text[hi:]
    return text


def for_prompt(value: Any, limit: int, words: tuple[str, ...]) -> str:
    """A value as judge prompts may show it: text, compatibility forms folded, marker words defused, no angle brackets, clipped."""
    text = clip(_text(value), 4 * limit)  # bound the work before normalising
    text = unicodedata.normalize("NFKC", text)
    text = defuse(text, words).replace("<", "\u2039").replace(">", "\u203a")
    return clip(text, limit)


# Untrusted text never starts a line here (every line opens with the report's own prefix), so
# only inline syntax needs escaping: code spans, emphasis, strikethrough, links, images,
# autolinks (including bare www. and scheme:// links and e-mail addresses), HTML, entities,
# math, table cell breaks and the escape character itself. An underscore between two
# letters or digits cannot open or close emphasis and stays readable (send_message).
_MD_SPECIAL = re.compile(r"[\\`*\[\]<>&|~$@]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])|:(?=/)|(?<=[wW]{3})\.")
_MD_BREAKS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]+")


def for_markdown(value: Any, limit: int = 300) -> str:
    """A value as one inline Markdown span: clipped, on one line, its Markdown punctuation escaped.

    CommonMark reads a backslash-escaped ASCII punctuation character as that literal
    character, so no table cell break, emphasis, link, image, autolink, HTML tag, entity or
    code span can start inside; line breaks, control and bidirectional-override characters
    become spaces, so no block (heading, list, code fence) can start either.
    """
    text = _MD_BREAKS.sub(" ", clip(_text(value), limit))
    return _MD_SPECIAL.sub(lambda m: "\\" + m.group(0), text)
