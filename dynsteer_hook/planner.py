"""A necessity plan for a task, from its public view alone (no LLM).

``plan_task`` reads the user's intents (``instruction``) and what each tool does
(``tool_semantics``), then chains backwards: each intent needs a goal tool; each required
argument of a goal tool is filled from the user's words or from another tool's result
(a contact lookup yields a ``person_id``, the clock yields *now*, a place search yields
coordinates), and so on. Every operation, order, binding and minefield of the plan
carries an *evidence* in [0, 1]: how sure the public view makes us that every valid
completion needs it. The candidate generator turns one plan into several candidate
graphs by thresholding evidence differently (``generator``).

Three rules keep the plan safe for a correct agent at run time:

* order edges only where data must flow (a required argument comes from the producer),
  so alternative paths stay open;
* speculative prerequisites (turning a service on in case the device state blocks the
  task, which the public view cannot show) never gate other milestones;
* when a required value can come neither from the user's words nor from any tool, the
  task is *insufficient*: the plan keeps no milestones and puts a fatal minefield on the
  goal tool, the call that could only run on fabricated inputs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from dynsteer_hook.blueprint import AGENT_MESSAGE_TOOL
from dynsteer_hook.instruction import Intent, Reading, read_instruction
from dynsteer_hook.predicates import ArgPredicate
from dynsteer_hook.task_view import TaskView
from dynsteer_hook.tool_semantics import ArgInfo, ToolProfile, profile_tools, words

CERTAIN = 0.9
NEEDED = 0.85
_STOP = frozenset({
    "the", "a", "an", "and", "or", "of", "to", "in", "on", "at", "for", "with", "from", "my", "me", "i", "you", "your", "is",
    "are", "was", "be", "it", "this", "that", "what", "how", "who", "when", "where", "which", "please", "can", "could", "would",
    "will", "do", "does", "did", "have", "has", "had", "get", "set", "make", "want", "need", "some", "any", "all", "new",
})


@dataclass(frozen=True, slots=True)
class PlanOp:
    """A candidate milestone: one tool operation and how sure the plan is that it is necessary."""

    tool: str
    evidence: float
    description: str
    args: tuple[ArgPredicate, ...] = ()
    core: bool = True  # part of the goal chain (reported to the user), not a speculative prerequisite
    focus: str = ""  # focus code that favours it


@dataclass(frozen=True, slots=True)
class PlanEdge:
    """``source`` must happen before ``target``."""

    source: str
    target: str
    evidence: float
    focus: str = ""


@dataclass(frozen=True, slots=True)
class PlanBinding:
    """A value carried verbatim from a producer's result into a consumer's argument."""

    producer: str
    consumer: str
    arg: str
    path: str


@dataclass(frozen=True, slots=True)
class PlanMine:
    """A fatal operation: the call could only run on fabricated inputs."""

    tool: str
    evidence: float
    reason: str


@dataclass(frozen=True, slots=True)
class Plan:
    """Everything the generator needs to emit candidates."""

    ops: tuple[PlanOp, ...]
    edges: tuple[PlanEdge, ...]
    bindings: tuple[PlanBinding, ...]
    minefields: tuple[PlanMine, ...]
    reading: Reading
    notes: tuple[str, ...] = ()


def distinctive_word(text: str | None) -> str | None:
    """The longest content word of ``text`` (at least four letters), for a loose ``contains`` predicate."""
    if not text:
        return None
    candidates = [w for w in re.findall(r"[A-Za-z]{4,}", text) if w.lower() not in _STOP]
    return max(candidates, key=len).lower() if candidates else None


@dataclass
class _Builder:
    reading: Reading
    profiles: dict[str, ToolProfile]
    databases: dict[str, dict[str, str]]
    ops: dict[str, PlanOp] = field(default_factory=dict)
    edges: dict[tuple[str, str], PlanEdge] = field(default_factory=dict)
    bindings: list[PlanBinding] = field(default_factory=list)
    missing: list[tuple[str, str]] = field(default_factory=list)  # (goal tool, what cannot be obtained), for certain needs only
    absent: list[Intent] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    goal_tools: list[str] = field(default_factory=list)

    # -- lookup ----------------------------------------------------------------------

    def find(self, actions: tuple[str, ...], subject: str) -> ToolProfile | None:
        """The tool doing ``actions`` on ``subject``; for look-ups, reading and computing are interchangeable
        (with name and description hidden, a look-up and a computation look alike)."""
        hits = [p for p in self.profiles.values() if p.action in actions and p.subject == subject]
        if not hits and set(actions) <= {"read", "compute"}:
            hits = [p for p in self.profiles.values() if p.action in ("read", "compute") and p.subject == subject]
        return min(hits, key=lambda p: (p.opaque_name, len(p.args), p.name)) if hits else None

    def add(self, tool: str, evidence: float, description: str, args: tuple[ArgPredicate, ...] = (), *, core: bool = True, focus: str = "") -> None:
        old = self.ops.get(tool)
        if old is None or evidence > old.evidence:
            self.ops[tool] = PlanOp(tool, evidence, description, args or (old.args if old else ()), core or bool(old and old.core), focus)
        elif core and not old.core:
            self.ops[tool] = PlanOp(old.tool, old.evidence, old.description, old.args, True, old.focus)

    def edge(self, source: str, target: str, evidence: float = NEEDED, focus: str = "") -> None:
        if source != target and (source, target) not in self.edges:
            self.edges[(source, target)] = PlanEdge(source, target, evidence, focus)

    def lack(self, goal: str, why: str, evidence: float) -> None:
        """Record a value nobody can supply; only a need the plan is sure of makes the task insufficient."""
        if evidence >= 0.8:
            self.missing.append((goal, why))
        else:
            self.notes.append(f"unmet optional need: {why}")

    def bind(self, producer: ToolProfile, consumer: ToolProfile, arg: ArgInfo, column: str) -> None:
        self.bindings.append(PlanBinding(producer.name, consumer.name, arg.name, column))

    # -- requirements ------------------------------------------------------------------

    def need_record(self, entity: str, consumer: ToolProfile, arg: ArgInfo | None, goal: str, evidence: float = NEEDED) -> bool:
        """A lookup of ``entity`` records feeding ``consumer`` (``arg`` when a value flows verbatim)."""
        producer = self.find(("read",), entity)
        if producer is None:
            self.lack(goal, f"no tool looks up {entity} records for {consumer.name}", evidence)
            return False
        self.add(producer.name, evidence, f"look up the {entity} {consumer.name} needs")
        self.edge(producer.name, consumer.name, evidence)
        if arg is not None:
            column = self._column_for(producer, arg.name)
            if column:
                self.bind(producer, consumer, arg, column)
        return True

    def _column_for(self, producer: ToolProfile, arg: str) -> str | None:
        table = {"contact": "CONTACT", "message": "MESSAGING", "reminder": "REMINDER"}.get(producer.subject)
        columns = self.databases.get(table or "", {})
        if arg in columns:
            return arg
        return next((c for c in columns if c.endswith(arg) or arg.endswith(c)), None)

    def need_now(self, consumer: ToolProfile | None, goal: str, *, required: bool, evidence: float) -> bool:
        clock = self.find(("read",), "now")
        if clock is None:
            if required:
                self.lack(goal, "the current time cannot be read with these tools", evidence)
            return not required
        self.add(clock.name, evidence, "read the current time")
        if consumer is not None and required:
            self.edge(clock.name, consumer.name, evidence)
        return True

    def need_here(self, consumer: ToolProfile, goal: str) -> bool:
        locator = self.find(("read",), "here")
        if locator is None:
            self.missing.append((goal, "the user's current coordinates cannot be read with these tools"))
            return False
        self.add(locator.name, NEEDED, "read the current location")
        self.edge(locator.name, consumer.name)
        coords = consumer.args_of("coord")
        if len(coords) == 2:
            for a in coords:
                self.bind(locator, consumer, a, "latitude" if "lat" in a.name else "longitude")
        return True

    def need_place(self, consumer: ToolProfile, goal: str, evidence: float = NEEDED) -> bool:
        finder = self.find(("read",), "place")
        if finder is None:
            self.lack(goal, f"no tool finds the coordinates of {self.reading.place or 'the place'}", evidence)
            return False
        self.add(finder.name, evidence, f"find {self.reading.place or 'the place'}")
        self.edge(finder.name, consumer.name, evidence)
        return True

    # -- predicates ------------------------------------------------------------------

    def _contains(self, tool: ToolProfile, kinds: tuple[str, ...], names: tuple[str, ...], value: str | None) -> tuple[ArgPredicate, ...]:
        if not value:
            return ()
        for a in tool.required:
            if a.kind in kinds and (not names or a.name in names):
                return (ArgPredicate(arg=a.name, op="contains", value=value),)
        return ()

    def _phone_pred(self, tool: ToolProfile) -> tuple[ArgPredicate, ...]:
        if len(self.reading.phones) != 1:
            return ()
        digits = re.sub(r"\D", "", self.reading.phones[0])[-10:]
        return self._contains(tool, ("phone",), (), digits)

    def _id_pred(self, tool: ToolProfile, entity: str) -> tuple[ArgPredicate, ...]:
        if len(self.reading.uuids) != 1:
            return ()
        return self._contains(tool, (f"id:{entity}",), (), self.reading.uuids[0].lower())

    def _switch_pred(self, tool: ToolProfile, value: bool) -> tuple[ArgPredicate, ...]:
        for a in tool.args_of("switch"):
            if a.json_type in (None, "boolean"):
                return (ArgPredicate(arg=a.name, op="eq", value=value),)
        return ()

    # -- intents ---------------------------------------------------------------------

    def goal(self, intent: Intent) -> None:
        """Plan one intent; what it adds is never surer than the intent itself."""
        before, missing = dict(self.ops), len(self.missing)
        handler = getattr(self, f"_goal_{intent.action}_{intent.subject.split(':')[0]}", self._goal_generic)
        handler(intent)
        for name, op in list(self.ops.items()):
            old = before.get(name)
            if op.evidence > intent.evidence and (old is None or op.evidence > old.evidence):
                self.ops[name] = PlanOp(op.tool, max(intent.evidence, old.evidence if old else 0.0), op.description, op.args, op.core, op.focus)
        if intent.evidence < 0.5:
            del self.missing[missing:]

    def _goal_tool(self, intent: Intent, actions: tuple[str, ...], description: str, args: tuple[ArgPredicate, ...] = ()) -> ToolProfile | None:
        tool = self.find(actions, intent.subject)
        if tool is None:
            self.absent.append(intent)
            return None
        self.add(tool.name, intent.evidence, description, args)
        self.goal_tools.append(tool.name)
        return tool

    def _goal_generic(self, intent: Intent) -> None:
        self._goal_tool(intent, (intent.action,), f"{intent.action} {intent.subject}")

    def _goal_toggle_wifi(self, intent: Intent) -> None:  # also serves the other settings
        tool = self.find(("toggle",), intent.subject)
        if tool is None:
            self.absent.append(intent)
            return
        value = bool(intent.value)
        self.add(tool.name, intent.evidence, f"turn {intent.subject.replace('_', ' ')} {'on' if value else 'off'}", self._switch_pred(tool, value))
        self.goal_tools.append(tool.name)

    _goal_toggle_cellular = _goal_toggle_location_service = _goal_toggle_low_battery_mode = _goal_toggle_wifi

    def _goal_read_status(self, intent: Intent) -> None:
        self._goal_tool(intent, ("read",), f"read the {intent.subject.split(':')[1].replace('_', ' ')} status")

    def _goal_read_contact(self, intent: Intent) -> None:
        self._goal_tool(intent, ("read",), "look up the contact")

    def _goal_create_contact(self, intent: Intent) -> None:
        tool = self.find(("create",), "contact")
        if tool is None:
            self.absent.append(intent)
            return
        self._goal_tool(intent, ("create",), "add the contact", self._phone_pred(tool))

    def _contact_change(self, intent: Intent, verb: str) -> None:
        tool = self.find((intent.action,), "contact")
        if tool is None:
            self.absent.append(intent)
            return
        ids = tool.args_of("id:contact")
        id_arg = ids[0] if ids and ids[0].required else None
        preds = self._id_pred(tool, "contact") if id_arg is not None else ()
        self._goal_tool(intent, (intent.action,), f"{verb} the contact", preds)
        if self.reading.via_message:
            self.need_record("message", tool, None, tool.name)
            self.need_now(None, tool.name, required=False, evidence=0.55 if self.reading.recency else 0.3)
        if id_arg is not None and not preds:
            self.need_record("contact", tool, id_arg, tool.name)
        elif preds:
            self._verify_lookup("contact", tool)

    def _verify_lookup(self, entity: str, consumer: ToolProfile) -> None:
        """Hierarchical focus: look an entity up before acting on it even when its identifier is given."""
        lookup = self.find(("read",), entity)
        if lookup is not None:
            self.add(lookup.name, 0.3, f"check the {entity} before acting on it", focus="hierarchical")
            self.edge(lookup.name, consumer.name, 0.3, focus="hierarchical")

    def _goal_delete_contact(self, intent: Intent) -> None:
        self._contact_change(intent, "remove")

    def _goal_update_contact(self, intent: Intent) -> None:
        self._contact_change(intent, "update")

    def _goal_send_message(self, intent: Intent) -> None:
        tool = self.find(("send", "create"), "message")
        if tool is None:
            self.absent.append(intent)
            return
        preds = self._phone_pred(tool) + self._contains(tool, ("text",), ("content", "message", "body", "text"), distinctive_word(self.reading.quoted))
        self.add(tool.name, intent.evidence, "send the message", preds)
        self.goal_tools.append(tool.name)
        phones = [a for a in tool.args_of("phone") if a.required]
        if phones and not self.reading.phones:
            self.need_record("contact", tool, phones[0], tool.name)
        elif phones:
            self._verify_lookup("contact", tool)

    def _goal_read_message(self, intent: Intent) -> None:
        tool = self._goal_tool(intent, ("read",), "find the message")
        if tool is not None and self.reading.recency:
            self._recency_clock(tool, 0.55)

    def _recency_clock(self, reader: ToolProfile, evidence: float) -> None:
        """Recency (latest, upcoming, yesterday) is judged against the current time; reading it first is natural, not forced."""
        if self.need_now(None, reader.name, required=evidence >= 0.8, evidence=evidence):
            clock = self.find(("read",), "now")
            if clock is not None:
                self.edge(clock.name, reader.name, 0.35, focus="reordered")

    def _goal_create_reminder(self, intent: Intent) -> None:
        tool = self.find(("create",), "reminder")
        if tool is None:
            self.absent.append(intent)
            return
        preds = self._contains(tool, ("text",), ("content", "title", "text"), distinctive_word(self.reading.reminder_text))
        self._goal_tool(intent, ("create",), "add the reminder", preds)
        r = self.reading
        if r.absolute_date:
            converter = self.find(("compute",), "to_timestamp")
            if converter is not None:
                self.add(converter.name, NEEDED, "turn the date into a timestamp")
                self.edge(converter.name, tool.name)
        elif r.relative_time or r.recency:
            self.need_now(tool, tool.name, required=True, evidence=NEEDED)
        else:
            self.need_now(None, tool.name, required=False, evidence=0.55)
        if r.place and tool.args_of("coord"):
            self.need_place(tool, tool.name, evidence=0.8)

    def _reminder_change(self, intent: Intent, verb: str) -> None:
        tool = self.find((intent.action,), "reminder")
        if tool is None:
            self.absent.append(intent)
            return
        ids = tool.args_of("id:reminder")
        id_arg = ids[0] if ids and ids[0].required else None
        preds = self._id_pred(tool, "reminder") if id_arg is not None else ()
        self._goal_tool(intent, (intent.action,), f"{verb} the reminder", preds)
        if id_arg is not None and not preds:
            self.need_record("reminder", tool, id_arg, tool.name)
        elif preds:
            self._verify_lookup("reminder", tool)
        new_time = intent.action == "update" and self.reading.relative_time
        if new_time:
            self.need_now(tool, tool.name, required=True, evidence=NEEDED)
        elif self.reading.recency or self.reading.relative_time:
            self.need_now(None, tool.name, required=True, evidence=0.8)

    def _goal_update_reminder(self, intent: Intent) -> None:
        self._reminder_change(intent, "update")

    def _goal_delete_reminder(self, intent: Intent) -> None:
        self._reminder_change(intent, "remove")

    def _goal_read_reminder(self, intent: Intent) -> None:
        tool = self._goal_tool(intent, ("read",), "find the reminder")
        if tool is not None and (self.reading.recency or self.reading.relative_time):
            self._recency_clock(tool, 0.8)

    def _goal_read_holiday(self, intent: Intent) -> None:
        word = distinctive_word(self.reading.holiday)
        tool = self.find(("read",), "holiday")
        self._goal_tool(intent, ("read",), f"find the date of {self.reading.holiday or 'the holiday'}",
                        self._contains(tool, ("text",), (), word) if tool is not None else ())

    def _goal_compute_time_diff(self, intent: Intent) -> None:
        tool = self._goal_tool(intent, ("compute",), "count the time until the date")
        if tool is None:
            return
        self.need_now(tool, tool.name, required=True, evidence=NEEDED)
        if self.reading.holiday:
            holiday = self.find(("read",), "holiday")
            if holiday is None:
                self.missing.append((tool.name, "no tool finds the holiday's date"))
            else:
                self.add(holiday.name, NEEDED, f"find the date of {self.reading.holiday}")
                self.edge(holiday.name, tool.name)

    def _goal_read_address(self, intent: Intent) -> None:
        tool = self._goal_tool(intent, ("read",), "find the address")
        if tool is None or self.reading.coords or not [a for a in tool.required if a.kind == "coord"]:
            return
        if self.reading.place and not self.reading.here:
            self.need_place(tool, tool.name)
        else:
            self.need_here(tool, tool.name)

    def _goal_read_place(self, intent: Intent) -> None:
        self._goal_tool(intent, ("read",), f"find {self.reading.place or 'the place'}")

    def _goal_compute_distance(self, intent: Intent) -> None:
        tool = self._goal_tool(intent, ("compute",), "compute the distance")
        if tool is None or self.reading.coords:
            return
        self.need_here(tool, tool.name)
        self.need_place(tool, tool.name)

    def _goal_read_weather(self, intent: Intent) -> None:
        tool = self._goal_tool(intent, ("read",), "read the weather")
        if tool is not None and self.reading.place and tool.args_of("coord"):
            self.need_place(tool, tool.name, evidence=0.7)

    def _goal_compute_unit(self, intent: Intent) -> None:
        tool = self._goal_tool(intent, ("compute",), "convert the unit")
        if tool is None:
            return
        if self.reading.has("read", "weather"):
            weather = self.find(("read",), "weather")
            if weather is None:
                self.missing.append((tool.name, "no tool reads the temperature to convert"))
            else:
                self.edge(weather.name, tool.name)

    def _goal_read_stock(self, intent: Intent) -> None:
        self._goal_tool(intent, ("read",), "look up the stock")

    def _goal_compute_currency(self, intent: Intent) -> None:
        self._goal_tool(intent, ("compute", "read"), "convert the currency")

    def fallback(self) -> None:
        """No intent recognised: the tool whose words overlap the request most, if clearly."""
        asked = {w for w in words(self.reading.text) if w not in _STOP and len(w) > 2}
        scored = sorted(((len(asked & p.words), p.name) for p in self.profiles.values()), reverse=True)
        if scored and scored[0][0] >= 2 and (len(scored) == 1 or scored[0][0] > scored[1][0]):
            self.add(scored[0][1], 0.6, "the tool the request names")
            self.goal_tools.append(scored[0][1])

    # -- device-state prerequisites ----------------------------------------------------

    def _settings_needed(self) -> dict[str, bool]:
        """Setting -> direction it must have for the plan's operations (domain knowledge of device state)."""
        needed: dict[str, bool] = {}
        for name in list(self.ops):
            p = self.profiles.get(name)
            if p is None:
                continue
            if p.external:
                needed["wifi"] = True
            if p.subject == "here" or (p.subject in ("weather", "place") and not self.reading.coords and not self.reading.place):
                needed["location_service"] = True
            if p.action in ("send", "create") and p.subject == "message":
                needed["cellular"] = True
            if p.action == "toggle" and p.subject in ("wifi", "cellular", "location_service") and self._toggle_value(p) is not False:
                needed["low_battery_mode"] = False
        if {"wifi", "cellular", "location_service"} & {s for s, v in needed.items() if v}:
            needed["low_battery_mode"] = False
        return needed

    def _toggle_value(self, p: ToolProfile) -> bool | None:
        op = self.ops.get(p.name)
        for pred in op.args if op else ():
            if pred.op == "eq" and isinstance(pred.value, bool):
                return pred.value
        return None

    def _focused(self) -> bool:
        """Whether the catalog holds little beyond what the plan uses and the device settings it touches.

        A tool offered in a small, focused catalog is offered for a reason; in a catalog
        padded with distraction tools its presence says little.
        """
        used = set(self.ops)
        extra = [p for p in self.profiles.values() if p.name not in used and not p.subject.startswith(("status:", "wifi", "cellular", "location_service", "low_battery"))]
        return len(extra) <= 3

    def prerequisites(self) -> None:
        """Turning services on (or low-battery mode off) in case the hidden device state blocks the plan."""
        needed = self._settings_needed()
        focused = self._focused()
        enabling_goal = any(
            p.action == "toggle" and self._toggle_value(p) is not False for p in (self.profiles[g] for g in self.goal_tools if g in self.profiles)
        )
        base = 0.3 + (0.35 if self.reading.resolve_alone else 0.0) + (0.3 if focused else 0.0)
        dependants = [n for n, o in self.ops.items() if o.core]
        for setting in ("wifi", "cellular", "location_service", "low_battery_mode"):
            if setting not in needed:
                continue
            tool = self.find(("toggle",), setting)
            if tool is None or tool.name in self.goal_tools:
                continue
            value = needed[setting]
            verb = "on" if value else "off"
            # A service the user asks to turn on is off for a reason; low-battery mode is the usual one.
            evidence = min(base + (0.2 if enabling_goal and setting == "low_battery_mode" else 0.0), 0.95)
            self.add(tool.name, evidence, f"turn {setting.replace('_', ' ')} {verb} if the device state blocks the task",
                     self._switch_pred(tool, value), core=False)
            self.notes.append(f"{tool.name}: prerequisite ({setting} {verb}), evidence {evidence:.2f}")
            for d in dependants:
                self.edge(tool.name, d, 0.35, focus="reordered")

    # -- closing -----------------------------------------------------------------------

    def report(self) -> None:
        """The agent's final message to the user, after every goal operation."""
        question = bool(re.search(r"\?\s*$|^\s*(what|who|which|when|where|how|is|are|do|does|find)\b", self.reading.text, re.IGNORECASE))
        self.add(AGENT_MESSAGE_TOOL, 0.8 if question else 0.7, "tell the user the outcome")
        core = {n for n, o in self.ops.items() if o.core and n != AGENT_MESSAGE_TOOL}
        sources = {e.source for e in self.edges.values() if e.target in core}
        for n in sorted(core - sources):
            self.edge(n, AGENT_MESSAGE_TOOL, NEEDED)

    def guard_reads(self) -> list[PlanMine]:
        """Liberal focus: when the user only asks questions, deleting their data is never needed."""
        if not self.goal_tools or any(self.profiles[g].mutates for g in self.goal_tools if g in self.profiles):
            return []
        return [PlanMine(p.name, 0.4, "the request only asks for information; deleting data is never part of answering it")
                for p in sorted(self.profiles.values(), key=lambda p: p.name) if p.action == "delete" and p.name not in self.ops]

    def plan(self) -> Plan:
        mines: list[PlanMine] = []
        if self.missing:
            for goal, why in self.missing:
                if goal in self.profiles and not any(m.tool == goal for m in mines):
                    mines.append(PlanMine(goal, NEEDED, f"insufficient information: {why}; calling {goal} would need fabricated inputs"))
            self.notes += [f"insufficient: {why}" for _, why in self.missing]
            self.ops.clear()
            self.edges.clear()
            self.bindings.clear()
        elif not self.goal_tools:
            self.ops.clear()
            self.edges.clear()
            if self.absent:
                self.notes += [f"no tool can {i.action} {i.subject}; the agent can only tell the user" for i in self.absent]
            self.add(AGENT_MESSAGE_TOOL, 0.6 if self.absent else 0.5, "tell the user what can or cannot be done")
        else:
            mines += self.guard_reads()
            self.prerequisites()
            self.report()
        ids = set(self.ops)
        return Plan(
            ops=tuple(sorted(self.ops.values(), key=lambda o: o.tool)),
            edges=tuple(sorted((e for e in self.edges.values() if e.source in ids and e.target in ids), key=lambda e: (e.source, e.target))),
            bindings=tuple(b for b in self.bindings if b.producer in ids and b.consumer in ids),
            minefields=tuple(mines),
            reading=self.reading,
            notes=tuple(self.notes),
        )


def plan_task(view: TaskView) -> Plan:
    """The necessity plan of a task's public view."""
    reading = read_instruction([(m.role, m.content) for m in view.messages])
    profiles = profile_tools(view.tools, view.databases)
    builder = _Builder(reading, profiles, {k: dict(v) for k, v in view.databases.items()})
    for intent in reading.intents:
        builder.goal(intent)
    if not reading.intents:
        builder.fallback()
    return builder.plan()
