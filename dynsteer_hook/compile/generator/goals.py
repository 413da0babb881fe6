"""Goal rules: what each kind of request needs, as data flow over the tools at hand.

One small function per intent (action on a subject) finds the goal tool and chains
backwards through its required arguments: an identifier the user did not give comes
from a look-up, a relative time from the clock, coordinates from the location or a
place search. ``GOALS`` maps (action, subject) to its rule; ``plan_intent`` runs one.
Rules speak of subjects (``contact``, ``reminder``, ``weather``), never of tool names,
so they hold under scrambled names and missing descriptions.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from dynsteer_hook.compile.generator.instruction import Intent
from dynsteer_hook.compile.generator.necessity_plan import NEEDED, PlanBuilder, PlanOp, distinctive_word
from dynsteer_hook.compile.generator.tool_semantics import ToolProfile
from dynsteer_hook.model.when import find_moment

GoalRule = Callable[[PlanBuilder, Intent], None]

_UPCOMING = re.compile(r"\b(?:upcoming|next|coming|future|soon|later)\b", re.IGNORECASE)
_LOWER = ("lower", "start", "from", "after", "since", "min")
_UPPER = ("upper", "end", "until", "before", "max")
_YEAR = re.compile(r"\b(?:19|20)\d\d\b")


def _pin_moment(b: PlanBuilder, tool: ToolProfile) -> None:
    """The timestamp of a reminder is the moment the user states: their words now, or a later turn's."""
    stamps = tool.args_of("timestamp")
    if not stamps:
        return
    moment = find_moment(b.reading.text)
    b.pin(tool.name, stamps[0].name, "moment", moment.words if moment is not None and moment.hour is not None else "")


def _pin_text(b: PlanBuilder, tool: ToolProfile, words: str | None) -> None:
    """The text of a reminder is what the user dictated (their distinctive words, or a later turn's)."""
    texts = tool.args_of("text")
    if not texts:
        return
    arg = next((a for a in texts if a.name.lower() in ("content", "title", "text", "body")), texts[0])
    b.pin(tool.name, arg.name, "words", words or "")


def _pin_year(b: PlanBuilder, holiday: ToolProfile) -> None:
    """A holiday the user names without a year is this year's (ToolSandbox's convention)."""
    if not _YEAR.search(b.reading.text):
        for a in holiday.args:
            if a.name.lower() == "year":
                b.pin(holiday.name, a.name, "year")


def _pin_upcoming(b: PlanBuilder) -> None:
    """A search for what is upcoming may not end, or start, in the past (its bounds on when, not on creation)."""
    if not _UPCOMING.search(f"{b.reading.cue('recency')} {b.reading.cue('relative_time')}"):
        return
    reader = b.find(("read",), "reminder")
    if reader is None or reader.name not in b.ops:
        return
    for a in reader.args_of("timestamp"):
        if "creat" in a.name.lower():
            continue
        parts = a.name.lower().split("_")
        if any(p.startswith(_LOWER) for p in parts):
            b.pin(reader.name, a.name, "from_now")
        elif any(p.startswith(_UPPER) for p in parts):
            b.pin(reader.name, a.name, "beyond_now")


def _verify_lookup(b: PlanBuilder, entity: str, consumer: ToolProfile) -> None:
    """Hierarchical focus: look an entity up before acting on it even when its identifier is given."""
    lookup = b.find(("read",), entity)
    if lookup is not None:
        b.add(lookup.name, 0.3, f"check the {entity} before acting on it", focus="hierarchical",
              why=(("rule", f"hierarchical focus: look the {entity} up before {consumer.name} even though its identifier is given"),))
        b.edge(lookup.name, consumer.name, 0.3, focus="hierarchical")


def _recency_clock(b: PlanBuilder, reader: ToolProfile, evidence: float) -> None:
    """Recency (latest, upcoming, yesterday) is judged against the current time; reading it first is natural, not forced."""
    if b.need_now(None, reader.name, required=evidence >= 0.8, evidence=evidence,
                  because=f"'{b.reading.cue('recency') or b.reading.cue('relative_time')}' is judged against the current time"):
        clock = b.find(("read",), "now")
        if clock is not None:
            b.edge(clock.name, reader.name, 0.35, focus="reordered")


def toggle(b: PlanBuilder, intent: Intent) -> None:
    """Turn a device setting on or off."""
    tool = b.find(("toggle",), intent.subject)
    if tool is None:
        b.absent.append(intent)
        return
    value = bool(intent.value)
    b.goal_tool(intent, ("toggle",), f"turn {intent.subject.replace('_', ' ')} {'on' if value else 'off'}", b.switch_pred(tool, value))


def read_status(b: PlanBuilder, intent: Intent) -> None:
    b.goal_tool(intent, ("read",), f"read the {intent.subject.split(':')[1].replace('_', ' ')} status")


def read_contact(b: PlanBuilder, intent: Intent) -> None:
    b.goal_tool(intent, ("read",), "look up the contact")


def create_contact(b: PlanBuilder, intent: Intent) -> None:
    tool = b.find(("create",), "contact")
    b.goal_tool(intent, ("create",), "add the contact", b.phone_pred(tool) if tool else ())


def change_contact(b: PlanBuilder, intent: Intent) -> None:
    """Remove or update a contact: its identifier comes from the user or from a look-up."""
    tool = b.find((intent.action,), "contact")
    if tool is None:
        b.absent.append(intent)
        return
    ids = tool.args_of("id:contact")
    id_arg = ids[0] if ids and ids[0].required else None
    preds = b.id_pred(tool, "contact") if id_arg is not None else ()
    b.goal_tool(intent, (intent.action,), f"{'remove' if intent.action == 'delete' else 'update'} the contact", preds)
    if b.reading.via_message:  # "the last person I texted": the person is found through the messages
        b.need_record("message", tool, None, tool.name)
        b.need_now(None, tool.name, required=False, evidence=0.55 if b.reading.recency else 0.3,
                   because=f"'{b.reading.cue('recency')}' of the messages" if b.reading.recency else "")
    if id_arg is not None and not preds:
        b.need_record("contact", tool, id_arg, tool.name)
    elif preds:
        _verify_lookup(b, "contact", tool)


def send_message(b: PlanBuilder, intent: Intent) -> None:
    """Send a message: the recipient's number comes from the user or from the contacts."""
    tool = b.find(("send", "create"), "message")
    if tool is None:
        b.absent.append(intent)
        return
    preds = b.phone_pred(tool) + b.contains(tool, ("text",), ("content", "message", "body", "text"), distinctive_word(b.reading.quoted))
    b.add(tool.name, intent.evidence, "send the message", preds, why=b.intent_why(intent, tool))
    b.goal_tools.append(tool.name)
    phones = [a for a in tool.args_of("phone") if a.required]
    if phones and not b.reading.phones:
        b.need_record("contact", tool, phones[0], tool.name)
    elif phones:
        _verify_lookup(b, "contact", tool)


def read_message(b: PlanBuilder, intent: Intent) -> None:
    """Find a message; the clock only when its time is stated against now ('yesterday', 'today'). An order among the
    messages themselves ('my latest text') is read from their timestamps, so it needs no clock. The person the user
    last talked to ('who did I talk to last') keeps the clock as a weak guess: the conversation may go on to bound the
    search in time."""
    tool = b.goal_tool(intent, ("read",), "find the message")
    if tool is not None and (b.reading.relative_time or (b.reading.via_message and b.reading.recency)):
        _recency_clock(b, tool, 0.55)


def create_reminder(b: PlanBuilder, intent: Intent) -> None:
    """Add a reminder: its timestamp comes from a date conversion or from the clock; a place gives coordinates."""
    tool = b.find(("create",), "reminder")
    if tool is None:
        b.absent.append(intent)
        return
    preds = b.contains(tool, ("text",), ("content", "title", "text"), distinctive_word(b.reading.reminder_text))
    b.goal_tool(intent, ("create",), "add the reminder", preds)
    _pin_moment(b, tool)
    _pin_text(b, tool, b.reading.reminder_text)
    r = b.reading
    if r.absolute_date:
        converter = b.find(("compute",), "to_timestamp")
        if converter is not None:
            b.add(converter.name, NEEDED, "turn the date into a timestamp", why=(
                ("instruction", f"'{r.cue('absolute_date')}'"), ("data_flow", f"{tool.name} takes a timestamp; {converter.name} turns a date into one")))
            b.edge(converter.name, tool.name)
    elif r.relative_time or r.recency:
        b.need_now(tool, tool.name, required=True, evidence=NEEDED, because=f"'{r.cue('relative_time') or r.cue('recency')}'")
    else:
        _untold_time(b, tool)
    if r.place and tool.args_of("coord"):
        b.need_place(tool, tool.name, evidence=0.8)


def _untold_time(b: PlanBuilder, reminder: ToolProfile) -> None:
    """No time in the request yet (the user gives it in a later turn): how it becomes a timestamp is unknown.

    * Only the clock offered: the time is likely relative to now, a weak guess as before (0.55).
    * Only a date converter offered, in a small catalog: it is offered for a reason, so it is planned.
    * Both offered: the clock stays the guess in a curated catalog, but in a broad one (more than six tools beyond the
      plan: ten distraction tools, or everything) neither is required, since a wrong requirement would never settle for
      an agent that took the other way.
    """
    clock, converter = b.find(("read",), "now"), b.find(("compute",), "to_timestamp")
    told = ("instruction", "no date or time in the request: the user gives it later")
    if converter is not None and clock is None:
        if b.focused_beyond(converter.name):
            b.add(converter.name, 0.6, "turn the date into a timestamp", why=(
                told, ("schema", f"{converter.name} is the one way to a timestamp that the small catalog offers")))
            b.edge(converter.name, reminder.name, 0.6)
        return
    if clock is None:
        return
    broad = converter is not None and not b.focused_beyond(clock.name, converter.name, limit=6)
    b.need_now(None, reminder.name, required=False, evidence=0.45 if broad else 0.55,
               because="no date in the request: it may be given relative to now"
               + ("; a broad catalog offers a date converter as well" if broad else ""))


def change_reminder(b: PlanBuilder, intent: Intent) -> None:
    """Update or remove a reminder found by a look-up; relative times need the clock."""
    tool = b.find((intent.action,), "reminder")
    if tool is None:
        b.absent.append(intent)
        return
    ids = tool.args_of("id:reminder")
    id_arg = ids[0] if ids and ids[0].required else None
    preds = b.id_pred(tool, "reminder") if id_arg is not None else ()
    b.goal_tool(intent, (intent.action,), f"{'remove' if intent.action == 'delete' else 'update'} the reminder", preds)
    if id_arg is not None and not preds:
        b.need_record("reminder", tool, id_arg, tool.name)
    elif preds:
        _verify_lookup(b, "reminder", tool)
    words = f"'{b.reading.cue('relative_time') or b.reading.cue('recency')}'"
    if intent.action == "update" and b.reading.relative_time:
        b.need_now(tool, tool.name, required=True, evidence=NEEDED, because=words)
        _pin_moment(b, tool)
    elif b.reading.recency or b.reading.relative_time:
        b.need_now(None, tool.name, required=True, evidence=0.8, because=words)
    _pin_upcoming(b)


def read_reminder(b: PlanBuilder, intent: Intent) -> None:
    tool = b.goal_tool(intent, ("read",), "find the reminder")
    if tool is not None and (b.reading.recency or b.reading.relative_time):
        _recency_clock(b, tool, 0.8)
    _pin_upcoming(b)


def read_holiday(b: PlanBuilder, intent: Intent) -> None:
    tool = b.find(("read",), "holiday")
    preds = b.contains(tool, ("text",), (), distinctive_word(b.reading.holiday)) if tool is not None else ()
    b.goal_tool(intent, ("read",), f"find the date of {b.reading.holiday or 'the holiday'}", preds)
    if tool is not None:
        _pin_year(b, tool)


def time_until(b: PlanBuilder, intent: Intent) -> None:
    """Time until a date: the clock and the date, both before the difference."""
    tool = b.goal_tool(intent, ("compute",), "count the time until the date")
    if tool is None:
        return
    b.need_now(tool, tool.name, required=True, evidence=NEEDED, because=f"{intent.cue}: the time from now")
    if b.reading.holiday:
        holiday = b.find(("read",), "holiday")
        if holiday is None:
            b.lack(tool.name, "no tool finds the holiday's date", NEEDED)
        else:
            b.add(holiday.name, NEEDED, f"find the date of {b.reading.holiday}", why=(
                ("instruction", f"'{b.reading.holiday}'"), ("data_flow", f"{tool.name} needs the holiday's date")))
            b.edge(holiday.name, tool.name)
            _pin_year(b, holiday)


def read_address(b: PlanBuilder, intent: Intent) -> None:
    """Address of coordinates: the user's, the current location's, or a place's."""
    tool = b.goal_tool(intent, ("read",), "find the address")
    if tool is None or b.reading.coords or not [a for a in tool.required if a.kind == "coord"]:
        return
    if b.reading.place and not b.reading.here:
        b.need_place(tool, tool.name)
    else:
        b.need_here(tool, tool.name)


def read_place(b: PlanBuilder, intent: Intent) -> None:
    b.goal_tool(intent, ("read",), f"find {b.reading.place or 'the place'}")


def distance(b: PlanBuilder, intent: Intent) -> None:
    """Distance from here to a place: both coordinate pairs before the computation."""
    tool = b.goal_tool(intent, ("compute",), "compute the distance")
    if tool is None or b.reading.coords:
        return
    b.need_here(tool, tool.name)
    b.need_place(tool, tool.name)


def read_weather(b: PlanBuilder, intent: Intent) -> None:
    tool = b.goal_tool(intent, ("read",), "read the weather")
    if tool is not None and b.reading.place and tool.args_of("coord"):
        b.need_place(tool, tool.name, evidence=0.7)


def convert_unit(b: PlanBuilder, intent: Intent) -> None:
    """Unit conversion, of a temperature read first when the request is about the weather."""
    tool = b.goal_tool(intent, ("compute",), "convert the unit")
    if tool is None or not b.reading.has("read", "weather"):
        return
    weather = b.find(("read",), "weather")
    if weather is None:
        b.lack(tool.name, "no tool reads the temperature to convert", NEEDED)
    else:
        b.edge(weather.name, tool.name)


def read_stock(b: PlanBuilder, intent: Intent) -> None:
    b.goal_tool(intent, ("read",), "look up the stock")


def convert_currency(b: PlanBuilder, intent: Intent) -> None:
    b.goal_tool(intent, ("compute", "read"), "convert the currency")


def generic(b: PlanBuilder, intent: Intent) -> None:
    b.goal_tool(intent, (intent.action,), f"{intent.action} {intent.subject}")


_UPDATED_THROUGH = {"contact": "contact", "message": "contact", "reminder": "reminder"}
"""The records an update may follow a question about: a contact found directly or through the messages, a reminder."""


def offered_update(b: PlanBuilder) -> None:
    """A question about records, asked where the catalog holds nothing but the plan and a tool that updates them.

    In a conversation over several turns the first message is often only the question ("Who are my friends?"); the change
    it leads to comes in a later turn. A catalog holding nothing beyond the plan, the update and its look-up offers the
    update for a reason, so it is planned (with its look-ups, through ``change_contact`` or ``change_reminder``) on
    moderate evidence, after the question's own operations. Any other tool on offer (distraction tools are chosen among
    similar ones, so an update tool sits beside most questions about records) removes the signal."""
    if any(b.profiles[g].mutates for g in b.goal_tools if g in b.profiles):
        return
    asked = [i for i in b.reading.intents if i.action == "read" and i.subject in _UPDATED_THROUGH]
    for intent in asked:
        entity = _UPDATED_THROUGH[intent.subject]
        updater = b.find(("update",), entity)
        lookup = b.find(("read",), entity)
        if updater is None or lookup is None or updater.name in b.ops or not b.focused_beyond(updater.name, lookup.name, limit=0):
            continue
        cue = f"{intent.cue or 'a question'} about {entity} records, {updater.name} offered beside nothing but the plan"
        missing = len(b.missing)
        plan_intent(b, Intent("update", entity, evidence=0.6, cue=cue))
        del b.missing[missing:]  # a guessed later turn cannot make the task insufficient
        for g in b.goal_tools:
            if g not in (updater.name, lookup.name) and g in b.ops:
                b.edge(g, updater.name, 0.6)
        return


GOALS: dict[tuple[str, str], GoalRule] = {
    ("toggle", "wifi"): toggle, ("toggle", "cellular"): toggle, ("toggle", "location_service"): toggle, ("toggle", "low_battery_mode"): toggle,
    ("read", "status"): read_status,
    ("read", "contact"): read_contact, ("create", "contact"): create_contact,
    ("delete", "contact"): change_contact, ("update", "contact"): change_contact,
    ("send", "message"): send_message, ("read", "message"): read_message,
    ("create", "reminder"): create_reminder, ("update", "reminder"): change_reminder, ("delete", "reminder"): change_reminder,
    ("read", "reminder"): read_reminder,
    ("read", "holiday"): read_holiday, ("compute", "time_diff"): time_until,
    ("read", "address"): read_address, ("read", "place"): read_place, ("compute", "distance"): distance,
    ("read", "weather"): read_weather, ("compute", "unit"): convert_unit,
    ("read", "stock"): read_stock, ("compute", "currency"): convert_currency,
}


def plan_intent(b: PlanBuilder, intent: Intent) -> None:
    """Plan one intent; what it adds is never surer than the intent itself."""
    before, missing = dict(b.ops), len(b.missing)
    rule = GOALS.get((intent.action, intent.subject.split(":")[0]), generic)
    b.rule = f"goal rule {rule.__name__}"
    rule(b, intent)
    b.rule = ""
    for name, op in list(b.ops.items()):
        old = before.get(name)
        if op.evidence > intent.evidence and (old is None or op.evidence > old.evidence):
            b.ops[name] = PlanOp(op.tool, max(intent.evidence, old.evidence if old else 0.0), op.description, op.args, op.core, op.focus, op.why)
    if intent.evidence < 0.5:  # a guess at what the user wants cannot make the task insufficient
        del b.missing[missing:]
