"""What the user asks for, read from the public messages alone (no LLM).

``read_instruction`` turns the user's words into intents (an action on a subject, such
as *delete a contact* or *read the weather*) plus the cues a plan needs: literal values
the user gave (phone numbers, identifiers, coordinates, quoted text), time expressions
(relative, absolute, recency), whether the user speaks of their own location or of a
named place, and whether they asked the agent to resolve problems alone.

The rules are general phrasings of a personal-assistant domain (settings, contacts,
messages, reminders, time, places, weather, finance), written over words, not over
scenario names; nothing here looks at tools.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

SETTINGS = ("wifi", "cellular", "location_service", "low_battery_mode")


@dataclass(frozen=True, slots=True)
class Intent:
    """One thing the user wants: an action on a subject (``value`` is a toggle's direction)."""

    action: str  # read | toggle | create | update | delete | send | compute
    subject: str
    value: bool | None = None
    evidence: float = 0.9
    cue: str = ""  # the user's words that gave rise to it


@dataclass(frozen=True, slots=True)
class Reading:
    """The user's request as the planner needs it."""

    text: str
    intents: tuple[Intent, ...]
    phones: tuple[str, ...] = ()
    uuids: tuple[str, ...] = ()
    coords: tuple[str, ...] = ()
    quoted: str | None = None
    reminder_text: str | None = None
    recency: bool = False
    relative_time: bool = False
    absolute_date: bool = False
    here: bool = False
    place: str | None = None
    holiday: str | None = None
    via_message: bool = False
    resolve_alone: bool = False
    cues: tuple[tuple[str, str], ...] = ()  # (cue name, the user's words that set it)

    def cue(self, name: str) -> str:
        """The user's words behind a time, place or other cue ('' when none)."""
        return next((w for n, w in self.cues if n == name), "")

    def has(self, action: str, subject: str) -> bool:
        """Whether some intent is ``action`` on ``subject``."""
        return any(i.action == action and i.subject == subject for i in self.intents)


def _rx(*parts: str) -> re.Pattern[str]:
    return re.compile("|".join(parts), re.IGNORECASE)


_PHONE = re.compile(r"\+?\d[\d\-() ]{7,}\d")
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.IGNORECASE)
_DECIMAL = re.compile(r"-?(?<!\d)\d+\.\d+")
_QUOTED = re.compile(r"[\"“]([^\"”]{3,})[\"”]")
_SAYING = re.compile(r"\b(?:saying|says|that says)\b:?\s+(.+)$", re.IGNORECASE)

_SETTING_WORDS = {
    "wifi": _rx(r"\bwi-?fi\b", r"\binternet\b", r"\bwireless\b"),
    "cellular": _rx(r"\bcellular\b", r"\bcell ?phone signal\b", r"\bcell(ular)? (service|data|signal)\b", r"\bmobile data\b", r"\bsignal\b"),
    "location_service": _rx(r"\blocation services?\b", r"\bgps\b", r"\baccess (to )?my (current )?location\b"),
    "low_battery_mode": _rx(r"\blow[- ]battery\b", r"\bbattery saver\b", r"\bpower sav"),
}
_TOGGLE = _rx(r"\b(turn|switch|put)\b[^.?!]*\b(on|off)\b", r"\b(enable|disable|activate|deactivate)\b", r"\bget (it|me) (on|back|connected)\b",
              r"\bfix (that|it|this)\b", r"\bconnect(ed)? (me )?to\b")
_OFF = _rx(r"\boff\b", r"\bdisable\b", r"\bdeactivate\b")
_STATUS = _rx(r"^\s*(is|are)\b", r"\bcheck\b", r"\bstatus\b")

_CONTACT = _rx(r"\bcontacts?\b", r"\bcontact book\b", r"\bphone ?number\b", r"\brelationship\b", r"\bfriends?\b", r"\benem(y|ies)\b",
               r"\bboss\b", r"\bsomeone\b", r"\bperson\b", r"\bhis cell\b", r"\bher cell\b", r"\bwho'?s?\b", r"'s (phone |cell )?number\b")
_MESSAGE = _rx(r"\bmessages?\b", r"\btexts?\b", r"\bsms\b", r"\basked me\b", r"\btold me\b", r"\bsent me\b")
_VIA_MESSAGE = _rx(r"\bsent (a |an )?(message|text)s? to\b", r"\b(talk|talked|spoke|texted|messaged|contacted) (to |with )?\w*\b[^.?!]*\b(last|latest|recent)",
                   r"\b(whoever|who) i (talked|talk|texted|messaged|contacted|spoke)\b", r"\bwho did i (talk|text|message|contact)\b")
_REMINDER = _rx(r"\breminders?\b", r"\bremind\b", r"\bto-?do\b", r"\bto do\b")
_SEND = _rx(r"^\s*(please\s+)?(send|text|message|ask|tell)\b", r"\bsend (a|an|the) (message|text)\b", r"\b(can you|could you|please) (send|text|ask|tell)\b")

_CREATE = _rx(r"\b(add|create|save|new|make)\b", r"^\s*remind me\b", r"\bset (a|an) (reminder|todo|to-?do)\b")
_DELETE = _rx(r"\b(remove|delete|erase|cancel|clear)\b", r"\bget rid of\b", r"\bget \w+ out of\b")
_UPDATE = _rx(r"\b(update|change|modify|edit|postpone|push|move|reschedule|delay|rename)\b", r"\b(make|turn)\b[^.?!]*\bmy (enem|friend|boss|family)")

_HOLIDAY = _rx(r"\b(christmas|thanksgiving|halloween|easter|new year'?s?|independence day|labor day|memorial day|veterans day|columbus day|juneteenth|valentine'?s?|"
               r"martin luther king|presidents'? day|mother'?s day|father'?s day|holiday)\b[\w ]*?(day|eve)?\b")
_DAYS_UNTIL = _rx(r"\bhow (many|much|far|long)\b", r"\b(till|until|before)\b", r"\bdays? (to|left)\b")

_HERE = _rx(r"\bwhere am i\b", r"\b(what|which) city am i\b", r"\bmy (current )?(city|location|position)\b", r"\bam i in\b", r"\bhere\b",
            r"\bnear me\b", r"\baround me\b", r"\bhow far am i\b", r"\bfrom me\b")
_ADDRESS = _rx(r"\baddress\b", r"\b(what|which) city\b", r"\bwhere am i\b", r"\bmy (current )?city\b")
_DISTANCE = _rx(r"\bhow far\b", r"\bdistance\b", r"\bhow many (km|kilometers|kilometres|miles|meters)\b", r"\b(km|miles) (to|from)\b")
_PLACE_WORD = _rx(r"\b(park|bridge|canyon|foods|market|store|shop|restaurant|cafe|café|station|airport|mall|center|centre|museum|tower|creek|street|avenue|"
                  r"university|college|hospital|hotel|mountain|lake|beach|square|stadium|library|plaza|theater|theatre|zoo|building|falls|valley)\b")
_PLACE_PHRASE = re.compile(r"\b(?:at|in|of|from|to|near|the)\s+((?:the\s+)?[A-Z][\w'&.-]*(?:\s+(?:on|of|the|[A-Z][\w'&.-]*))*)")

_WEATHER = _rx(r"\bweather\b", r"\btemperature\b", r"\btemp\b", r"\bforecast\b", r"\bhow (cold|hot|warm)\b", r"\b(rain|snow|sunny|humid)\w*\b")
_CONVERT_UNIT = _rx(r"\bfahrenheit\b", r"\bkelvin\b", r"\bcan'?t read celsius\b", r"\bcannot read celsius\b", r"\bin celsius\b")
_UNITS = _rx(r"\b\d+(\.\d+)?\s*(miles?|km|kilomet(er|re)s?|met(er|re)s?|feet|foot|ft|inch(es)?|pounds?|lbs?|kg|kilograms?|grams?|ounces?|oz|"
              r"liters?|litres?|gallons?|cups?|celsius|fahrenheit|kelvin|degrees)\b[^.?!]*\b(to|in|into)\b")
_STOCK = _rx(r"\bstocks?\b", r"\bticker\b", r"\bshare price\b", r"\bnasdaq\b", r"\bnyse\b")
_CURRENCY = _rx(r"\b(usd|cny|eur|gbp|jpy|cad|aud|inr|chf|hkd|krw|rmb)\b", r"[$€£¥]\s?\d", r"\b(dollars?|euros?|yuan|yen|pounds sterling|rupees?)\b", r"\bcurrency\b")

_RECENCY = _rx(r"\b(latest|last|most recent|newest|oldest|earliest|first ever|upcoming|next|previous|recent(ly)?)\b", r"\bfirst\b[^.?!]*\b(text|message|reminder)")
_RELATIVE = _rx(r"\b(today|tonight|tomorrow|yesterday|now|later|soon|ago)\b", r"\b(this|next|last) (week|month|year|monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend)\b",
                r"\bin \d+ (minutes?|hours?|days?|weeks?)\b", r"\bupcoming\b")
_ABSOLUTE = _rx(r"\b\d{1,2}/\d{1,2}/\d{2,4}\b", r"\b\d{4}-\d{2}-\d{2}\b",
                r"\b(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.? \d{1,2}(st|nd|rd|th)?\b")
_RESOLVE = _rx(r"\bresolve (any|all|every)? ?(issues?|problems?)\b", r"\bon your own\b", r"\bby yourself\b", r"\bfix (any|all) (issues?|problems?)\b")
_REMINDER_TEXT = re.compile(r"\bto ((?:buy|call|get|pick|pay|book|send|take|check|clean|finish|submit|email|visit|water|feed|walk|renew|cancel|order)\b[^,.!?]*)", re.IGNORECASE)
_TIME_TAIL = re.compile(r"(?<!\s)\s+(?:tomorrow|today|tonight|next|this|on|at|by|in|\d).*$", re.IGNORECASE)
_NEAREST = re.compile(r"\b(?:nearest|closest|nearby)\s+([A-Z][\w'&.-]*(?:\s+[A-Z][\w'&.-]*)*)")
_CAPITALIZED = re.compile(r"\b(?<![\w'&-])([A-Z][\w'&-]*(?:\s+[A-Z][\w'&-]*)+)")


def _setting_subjects(text: str) -> list[str]:
    return [s for s in SETTINGS if _SETTING_WORDS[s].search(text)]


def _place(text: str) -> str | None:
    for m in _PLACE_PHRASE.finditer(text):
        phrase = m.group(1).strip().rstrip(".,!?")
        if _PLACE_WORD.search(phrase) or m.group(0).lower().startswith("at "):
            return phrase.removeprefix("the ").removeprefix("The ")
    for m in _CAPITALIZED.finditer(text):
        if _PLACE_WORD.search(m.group(1)):
            return m.group(1)
    near = _NEAREST.search(text)
    return near.group(1).rstrip(".,!?") if near else None


def _quoted(text: str) -> str | None:
    m = _QUOTED.search(text) or _SAYING.search(text)
    return m.group(1).strip().strip("\"“”.") or None if m else None


def _setting_intents(text: str) -> list[Intent]:
    subjects = _setting_subjects(text)
    if not subjects:
        return []
    if _TOGGLE.search(text) or re.search(r"\bsettings?\b", text, re.IGNORECASE):
        value = not _OFF.search(text)
        return [Intent("toggle", s, value, 0.95) for s in subjects]
    if _STATUS.search(text):
        return [Intent("read", f"status:{s}", None, 0.95) for s in subjects]
    return []


def _entity_intents(text: str, r: Reading) -> list[Intent]:
    out: list[Intent] = []
    reminder, message = bool(_REMINDER.search(text)), bool(_MESSAGE.search(text))
    if reminder:
        if _DELETE.search(text):
            out.append(Intent("delete", "reminder"))
        elif _UPDATE.search(text) and not re.search(r"^\s*(add|remind)\b", text, re.IGNORECASE):
            out.append(Intent("update", "reminder"))
        elif _CREATE.search(text):
            out.append(Intent("create", "reminder"))
        else:
            out.append(Intent("read", "reminder"))
        return out
    if _SEND.search(text) and not re.search(r"\b(find|search|look)\b", text, re.IGNORECASE):
        out.append(Intent("send", "message"))
        return out
    contact = bool(_CONTACT.search(text)) or bool(r.phones) or bool(r.uuids)
    if contact and _DELETE.search(text):
        out.append(Intent("delete", "contact"))
    elif contact and _UPDATE.search(text):
        out.append(Intent("update", "contact"))
    elif re.search(r"\badd\b[^.?!]*\bcontact", text, re.IGNORECASE) or re.search(r"\bnew contact\b", text, re.IGNORECASE):
        out.append(Intent("create", "contact"))
    if r.via_message or (message and not out):
        out.append(Intent("read", "message"))
    elif contact and not out and not r.place:
        out.append(Intent("read", "contact"))
    return out


def _world_intents(text: str, r: Reading) -> list[Intent]:
    out: list[Intent] = []
    if r.holiday:
        if _DAYS_UNTIL.search(text):
            out.append(Intent("compute", "time_diff"))
        else:
            out.append(Intent("read", "holiday"))
            if re.search(r"\bwhen\b", text, re.IGNORECASE):
                out.append(Intent("compute", "time_diff", evidence=0.4))
        return out
    if _WEATHER.search(text):
        out.append(Intent("read", "weather"))
        if _CONVERT_UNIT.search(text) and not re.search(r"\bin celsius\b", text, re.IGNORECASE):
            out.append(Intent("compute", "unit"))
        return out
    if _STOCK.search(text):
        return [Intent("read", "stock")]
    if _UNITS.search(text) and not _CURRENCY.search(text):
        return [Intent("compute", "unit")]
    if _CURRENCY.search(text) and re.search(r"\d", text):
        return [Intent("compute", "currency")]
    if _DISTANCE.search(text) and (r.place or r.coords):
        return [Intent("compute", "distance")]
    if r.coords or _ADDRESS.search(text) or (r.here and re.search(r"\bwhere\b", text, re.IGNORECASE)):
        return [Intent("read", "address")]
    if r.place and (re.search(r"\b(where|what|find|phone|address|open)\b", text, re.IGNORECASE)):
        out.append(Intent("read", "place"))
        if re.search(r"^\s*where'?s?\b", text, re.IGNORECASE):
            out.append(Intent("compute", "distance", evidence=0.4))
    return out


def _matched(pattern: re.Pattern[str] | None, text: str) -> str:
    m = pattern.search(text) if pattern is not None else None
    return m.group(0).strip() if m else ""


def _intent_cue(intent: Intent, text: str) -> str:
    """The words of ``text`` that the intent's subject and action rules matched, quoted."""
    subject = intent.subject.split(":")[-1]
    subjects: dict[str, re.Pattern[str] | None] = {
        "reminder": _REMINDER, "message": _MESSAGE, "contact": _CONTACT, "weather": _WEATHER, "holiday": _HOLIDAY,
        "time_diff": _DAYS_UNTIL, "stock": _STOCK, "currency": _CURRENCY, "unit": _UNITS if _UNITS.search(text) else _CONVERT_UNIT,
        "distance": _DISTANCE, "address": _ADDRESS if _ADDRESS.search(text) else _HERE, "place": _PLACE_WORD, **_SETTING_WORDS,
    }
    actions: dict[str, re.Pattern[str] | None] = {
        "create": _CREATE, "delete": _DELETE, "update": _UPDATE, "send": _SEND, "toggle": _TOGGLE if _TOGGLE.search(text) else None,
        "read": _STATUS if intent.subject.startswith("status:") else (_VIA_MESSAGE if subject == "message" else None),
    }
    words = [w for w in (_matched(actions.get(intent.action), text), _matched(subjects.get(subject), text)) if w]
    return " + ".join(f"'{w}'" for w in dict.fromkeys(words))


def read_instruction(messages: list[tuple[str, str]]) -> Reading:
    """Read the user's request from (role, content) messages the agent sees before acting."""
    text = " ".join(c.strip() for role, c in messages if role == "user").strip()
    decimals = _DECIMAL.findall(text)
    place = _place(text)
    holiday = _HOLIDAY.search(text)
    reminder = _REMINDER_TEXT.search(text)
    cues = Reading(
        text=text,
        intents=(),
        phones=tuple(p.strip() for p in _PHONE.findall(_UUID.sub(" ", text))),
        uuids=tuple(_UUID.findall(text)),
        coords=tuple(decimals) if len(decimals) >= 2 else (),
        quoted=_quoted(text),
        reminder_text=(_TIME_TAIL.sub("", reminder.group(1)).strip() or None) if reminder else None,
        recency=bool(_RECENCY.search(text)),
        relative_time=bool(_RELATIVE.search(text)),
        absolute_date=bool(_ABSOLUTE.search(text)),
        here=bool(_HERE.search(text)),
        place=place,
        holiday=holiday.group(0).strip() if holiday else None,
        via_message=bool(_VIA_MESSAGE.search(text)),
        resolve_alone=bool(_RESOLVE.search(text)),
    )
    found = {name: _matched(rx, text) for name, rx in (("recency", _RECENCY), ("relative_time", _RELATIVE), ("absolute_date", _ABSOLUTE),
                                                       ("here", _HERE), ("via_message", _VIA_MESSAGE), ("resolve_alone", _RESOLVE))}
    found.update(place=place or "", holiday=cues.holiday or "", reminder_text=cues.reminder_text or "", quoted=cues.quoted or "")
    intents = _setting_intents(text) or _entity_intents(text, cues) + _world_intents(text, cues)
    return replace(cues, intents=tuple(replace(i, cue=_intent_cue(i, text)) for i in intents),
                   cues=tuple((k, v) for k, v in found.items() if v))
