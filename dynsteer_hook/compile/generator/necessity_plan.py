"""The necessity plan: operations, orders, bindings and minefields, each with its evidence.

A ``Plan`` is what the planner (``planner``) makes of a public view and what the candidate
generator (``candidates``) thresholds into candidate graphs. ``PlanBuilder`` holds the
primitives the goal rules (``goals``) compose: find the tool doing an action on a subject,
add an operation, order two operations, bind a value carried verbatim, and satisfy a
requirement (a record look-up, the clock, the current location, a place search) or record
that nothing can satisfy it. Evidence in [0, 1] says how sure the public view makes us that
every valid completion needs the item.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from dynsteer_hook.compile.generator.instruction import Intent, Reading
from dynsteer_hook.compile.generator.tool_semantics import ArgInfo, ToolProfile
from dynsteer_hook.model.blueprint import ValuePin
from dynsteer_hook.model.predicates import ArgPredicate

NEEDED = 0.85
"""Evidence of an operation the data flow forces."""

SURE = 0.8
"""Evidence from which an unmet need makes a task insufficient."""

STOPWORDS = frozenset({
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
    why: tuple[tuple[str, str], ...] = ()  # (kind, detail): what in the public view, and which rule, put it here


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
    read_only: bool = False  # the tool only reads: only a call acting on inputs the agent was never shown is hazardous
    any_args: tuple[str, ...] = ()  # arguments whose values the agent cannot know: passing any of them is the hazard


@dataclass(frozen=True, slots=True)
class Plan:
    """Everything the generator needs to emit candidates."""

    ops: tuple[PlanOp, ...]
    edges: tuple[PlanEdge, ...]
    bindings: tuple[PlanBinding, ...]
    minefields: tuple[PlanMine, ...]
    reading: Reading
    notes: tuple[str, ...] = ()
    pins: tuple[tuple[str, tuple[ValuePin, ...]], ...] = ()  # (tool, its pinned values)


def distinctive_word(text: str | None) -> str | None:
    """The longest content word of ``text`` (at least four letters), for a loose ``contains`` predicate."""
    if not text:
        return None
    candidates = [w for w in re.findall(r"[A-Za-z]{4,}", text) if w.lower() not in STOPWORDS]
    return max(candidates, key=len).lower() if candidates else None


@dataclass
class PlanBuilder:
    """Mutable plan under construction; ``goals`` and ``planner`` drive it."""

    reading: Reading
    profiles: dict[str, ToolProfile]
    databases: dict[str, dict[str, str]]
    ops: dict[str, PlanOp] = field(default_factory=dict)
    edges: dict[tuple[str, str], PlanEdge] = field(default_factory=dict)
    bindings: list[PlanBinding] = field(default_factory=list)
    missing: list[tuple[str, str]] = field(default_factory=list)  # (goal tool, what cannot be obtained), for certain needs only
    unknowable: dict[str, tuple[str, ...]] = field(default_factory=dict)  # goal tool -> the arguments only a made-up value fills
    absent: list[Intent] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    goal_tools: list[str] = field(default_factory=list)
    rule: str = ""  # the rule now adding operations, recorded in their ``why``
    pins: dict[str, list[ValuePin]] = field(default_factory=dict)  # tool -> values of its settling call the user's words fix

    # -- lookup ----------------------------------------------------------------------

    def find(self, actions: tuple[str, ...], subject: str) -> ToolProfile | None:
        """The tool doing ``actions`` on ``subject``; for look-ups, reading and computing are interchangeable
        (with name and description hidden, a look-up and a computation look alike)."""
        hits = [p for p in self.profiles.values() if p.action in actions and p.subject == subject]
        if not hits and set(actions) <= {"read", "compute"}:
            hits = [p for p in self.profiles.values() if p.action in ("read", "compute") and p.subject == subject]
        return min(hits, key=lambda p: (p.opaque_name, len(p.args), p.name)) if hits else None

    def add(self, tool: str, evidence: float, description: str, args: tuple[ArgPredicate, ...] = (), *, core: bool = True, focus: str = "",
            why: tuple[tuple[str, str], ...] = ()) -> None:
        """Add an operation, or raise the evidence of one already planned; ``why`` and the current rule join its reasons."""
        old = self.ops.get(tool)
        reasons = tuple(dict.fromkeys((*(old.why if old else ()), *why, *((("rule", f"{self.rule}: {description}"),) if self.rule else ()))))
        if old is None or evidence > old.evidence:
            self.ops[tool] = PlanOp(tool, evidence, description, args or (old.args if old else ()), core or bool(old and old.core), focus, reasons)
        elif core and not old.core:
            self.ops[tool] = PlanOp(old.tool, old.evidence, old.description, old.args, True, old.focus, reasons)
        else:
            self.ops[tool] = PlanOp(old.tool, old.evidence, old.description, old.args, old.core, old.focus, reasons)

    def pin(self, tool: str, arg: str, kind: str, words: str = "") -> None:
        """A value of ``tool``'s settling call that the user's words fix (``ValuePin``)."""
        pinned = ValuePin(arg=arg, kind=kind, words=words[:500])
        if pinned not in self.pins.setdefault(tool, []):
            self.pins[tool].append(pinned)

    def edge(self, source: str, target: str, evidence: float = NEEDED, focus: str = "") -> None:
        """Order ``source`` before ``target``."""
        if source != target and (source, target) not in self.edges:
            self.edges[(source, target)] = PlanEdge(source, target, evidence, focus)

    def lack(self, goal: str, why: str, evidence: float) -> None:
        """Record a value nobody can supply; only a need the plan is sure of makes the task insufficient."""
        if evidence >= SURE:
            self.missing.append((goal, why))
        else:
            self.notes.append(f"unmet optional need: {why}")

    def bind(self, producer: ToolProfile, consumer: ToolProfile, arg: ArgInfo, column: str) -> None:
        """``consumer.arg`` carries the ``column`` value of ``producer``'s result."""
        self.bindings.append(PlanBinding(producer.name, consumer.name, arg.name, column))

    def focused_beyond(self, *names: str, limit: int = 3) -> bool:
        """Whether the catalog holds at most ``limit`` tools beyond the plan, ``names`` and the device settings:
        a tool offered in so small a catalog is offered for a reason."""
        settings = ("status:", "wifi", "cellular", "location_service", "low_battery_mode")
        extra = [p for p in self.profiles.values() if p.name not in self.ops and p.name not in names and not p.subject.startswith(settings)]
        return len(extra) <= limit

    # -- requirements ------------------------------------------------------------------

    def need_record(self, entity: str, consumer: ToolProfile, arg: ArgInfo | None, goal: str, evidence: float = NEEDED) -> bool:
        """A lookup of ``entity`` records feeding ``consumer`` (``arg`` when a value flows verbatim)."""
        producer = self.find(("read",), entity)
        if producer is None:
            self.lack(goal, f"no tool looks up {entity} records for {consumer.name}", evidence)
            return False
        column = self._column_for(producer, arg.name) if arg is not None else None
        flow = (f"{consumer.name} needs a {entity} record"
                + (f": its required argument '{arg.name}' is not in the request" if arg is not None else "")
                + (f" and comes from the '{column}' column of {producer.name}'s result" if column else ""))
        self.add(producer.name, evidence, f"look up the {entity} {consumer.name} needs",
                 why=(("data_flow", flow), ("schema", f"{producer.name} looks up {entity} records ({self._schema_words(producer)})")))
        self.edge(producer.name, consumer.name, evidence)
        if arg is not None and column:
            self.bind(producer, consumer, arg, column)
        return True

    @staticmethod
    def _schema_words(p: ToolProfile) -> str:
        """What in a tool's schema says what it does."""
        if p.opaque_name:
            return f"read from its description and arguments {', '.join(a.name for a in p.args) or 'none'}"
        return f"its name and description; arguments {', '.join(a.name for a in p.args) or 'none'}"

    def _column_for(self, producer: ToolProfile, arg: str) -> str | None:
        table = {"contact": "CONTACT", "message": "MESSAGING", "reminder": "REMINDER"}.get(producer.subject)
        columns = self.databases.get(table or "", {})
        if arg in columns:
            return arg
        return next((c for c in columns if c.endswith(arg) or arg.endswith(c)), None)

    def need_now(self, consumer: ToolProfile | None, goal: str, *, required: bool, evidence: float, because: str = "") -> bool:
        """The current time; ordered before ``consumer`` when a required argument is computed from it."""
        clock = self.find(("read",), "now")
        if clock is None:
            if required:
                self.lack(goal, "the current time cannot be read with these tools", evidence)
                profile = self.profiles.get(goal)
                stamps = tuple(a.name for a in profile.args_of("timestamp")) if profile is not None else ()
                if stamps:
                    self.unknowable[goal] = stamps
            return not required
        why: list[tuple[str, str]] = []
        if because:
            why.append(("instruction", because))
        if consumer is not None and required:
            why.append(("data_flow", f"a time argument of {consumer.name} is computed from the current time"))
        else:
            why.append(("rule", f"{goal} may need the current time ({'required' if required else 'optional'})"))
        self.add(clock.name, evidence, "read the current time", why=tuple(why))
        if consumer is not None and required:
            self.edge(clock.name, consumer.name, evidence)
        return True

    def need_here(self, consumer: ToolProfile, goal: str) -> bool:
        """The current location, read before ``consumer`` and carried into its coordinates."""
        locator = self.find(("read",), "here")
        if locator is None:
            self.lack(goal, "the user's current coordinates cannot be read with these tools", NEEDED)
            return False
        self.add(locator.name, NEEDED, "read the current location", why=(
            ("data_flow", f"the coordinates {consumer.name} needs are the user's own ({self.reading.cue('here') or 'no place named'})"),))
        self.edge(locator.name, consumer.name)
        coords = consumer.args_of("coord")
        if len(coords) == 2:
            for a in coords:
                self.bind(locator, consumer, a, "latitude" if "lat" in a.name else "longitude")
        return True

    def need_place(self, consumer: ToolProfile, goal: str, evidence: float = NEEDED) -> bool:
        """A search for the named place, whose coordinates ``consumer`` needs."""
        finder = self.find(("read",), "place")
        if finder is None:
            self.lack(goal, f"no tool finds the coordinates of {self.reading.place or 'the place'}", evidence)
            return False
        self.add(finder.name, evidence, f"find {self.reading.place or 'the place'}", why=(
            ("instruction", f"'{self.reading.place}'" if self.reading.place else "a place the request names"),
            ("data_flow", f"{consumer.name} needs the coordinates of that place")))
        self.edge(finder.name, consumer.name, evidence)
        return True

    # -- predicates ------------------------------------------------------------------

    def contains(self, tool: ToolProfile, kinds: tuple[str, ...], names: tuple[str, ...], value: str | None) -> tuple[ArgPredicate, ...]:
        """A case-insensitive ``contains`` on the first *required* argument of those kinds (and names)."""
        if not value:
            return ()
        for a in tool.required:
            if a.kind in kinds and (not names or a.name in names):
                return (ArgPredicate(arg=a.name, op="contains", value=value),)
        return ()

    def phone_pred(self, tool: ToolProfile) -> tuple[ArgPredicate, ...]:
        """The last ten digits of the one phone number the user gave."""
        if len(self.reading.phones) != 1:
            return ()
        digits = re.sub(r"\D", "", self.reading.phones[0])[-10:]
        return self.contains(tool, ("phone",), (), digits)

    def id_pred(self, tool: ToolProfile, entity: str) -> tuple[ArgPredicate, ...]:
        """The one identifier the user gave."""
        if len(self.reading.uuids) != 1:
            return ()
        return self.contains(tool, (f"id:{entity}",), (), self.reading.uuids[0].lower())

    def switch_pred(self, tool: ToolProfile, value: bool) -> tuple[ArgPredicate, ...]:
        """The direction of a toggle, when its switch is (or may be) boolean."""
        for a in tool.args_of("switch"):
            if a.json_type in (None, "boolean"):
                return (ArgPredicate(arg=a.name, op="eq", value=value),)
        return ()

    def goal_tool(self, intent: Intent, actions: tuple[str, ...], description: str, args: tuple[ArgPredicate, ...] = ()) -> ToolProfile | None:
        """The tool that carries out ``intent`` (recorded as absent when the catalog has none)."""
        tool = self.find(actions, intent.subject)
        if tool is None:
            self.absent.append(intent)
            return None
        self.add(tool.name, intent.evidence, description, args, why=self.intent_why(intent, tool))
        self.goal_tools.append(tool.name)
        return tool

    def intent_why(self, intent: Intent, tool: ToolProfile) -> tuple[tuple[str, str], ...]:
        """The user's words behind an intent and the schema that makes ``tool`` carry it out."""
        return (("instruction", f"{intent.cue or 'the request'} read as {intent.action} {intent.subject}"),
                ("schema", f"{tool.name} does {tool.action} on {tool.subject} ({self._schema_words(tool)})"))

    def toggle_value(self, p: ToolProfile) -> bool | None:
        """The direction a planned toggle is set to, if its predicate says."""
        op = self.ops.get(p.name)
        for pred in op.args if op else ():
            if pred.op == "eq" and isinstance(pred.value, bool):
                return pred.value
        return None
