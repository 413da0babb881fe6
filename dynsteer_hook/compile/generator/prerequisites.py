"""Device-state prerequisites: services a plan may have to turn on first.

The public view shows no device state, but domain knowledge says what an operation
depends on: online look-ups (holidays, addresses, places, weather, stocks, exchange
rates) need wifi, sending a message needs cellular service, the current location needs
location service, and none of these can be turned on in low-battery mode. When the
catalog offers the switch, turning it on (low-battery mode off) is a speculative
milestone whose evidence grows with the signals that the state is in the way: the user
asks the agent to resolve issues alone, or the switch sits in a small catalog that holds
little beyond what the plan uses (a tool offered for a reason), or the user asks to turn a
service on (it is off for a reason; low-battery mode is the usual one). Such milestones
never gate others: their only order edges are weak hints that no majority keeps.
"""

from __future__ import annotations

from dynsteer_hook.compile.generator.necessity_plan import PlanBuilder

_SETTINGS = ("wifi", "cellular", "location_service", "low_battery_mode")


def settings_needed(b: PlanBuilder) -> dict[str, bool]:
    """Setting -> the value the plan's operations need it to have."""
    needed: dict[str, bool] = {}
    for name in list(b.ops):
        p = b.profiles.get(name)
        if p is None:
            continue
        if p.external:
            needed["wifi"] = True
        if p.subject == "here" or (p.subject in ("weather", "place") and not b.reading.coords and not b.reading.place):
            needed["location_service"] = True
        if p.action in ("send", "create") and p.subject == "message":
            needed["cellular"] = True
        if p.action == "toggle" and p.subject in _SETTINGS[:3] and b.toggle_value(p) is not False:
            needed["low_battery_mode"] = False
    if any(needed.get(s) for s in _SETTINGS[:3]):
        needed["low_battery_mode"] = False
    return needed


def focused_catalog(b: PlanBuilder) -> bool:
    """Whether the catalog holds at most three tools beyond what the plan uses and the device settings."""
    extra = [p for p in b.profiles.values() if p.name not in b.ops and not p.subject.startswith(("status:", *_SETTINGS))]
    return len(extra) <= 3


def add_prerequisites(b: PlanBuilder) -> None:
    """Add the speculative toggles the plan may need, each with its evidence."""
    needed = settings_needed(b)
    enabling_goal = any(p.action == "toggle" and b.toggle_value(p) is not False for p in (b.profiles[g] for g in b.goal_tools if g in b.profiles))
    base = 0.3 + (0.35 if b.reading.resolve_alone else 0.0) + (0.3 if focused_catalog(b) else 0.0)
    dependants = [n for n, o in b.ops.items() if o.core]
    for setting in _SETTINGS:
        tool = b.find(("toggle",), setting) if setting in needed else None
        if tool is None or tool.name in b.goal_tools:
            continue
        value = needed[setting]
        verb = "on" if value else "off"
        evidence = min(base + (0.2 if enabling_goal and setting == "low_battery_mode" else 0.0), 0.95)
        signals = [s for s, on in (("the user asks the agent to resolve issues alone", b.reading.resolve_alone),
                                   ("the switch sits in a small catalog", focused_catalog(b))) if on]
        b.rule = "prerequisite"
        b.add(tool.name, evidence, f"turn {setting.replace('_', ' ')} {verb} if the device state blocks the task", b.switch_pred(tool, value), core=False,
              why=(("rule", f"a planned operation may need {setting.replace('_', ' ')} {verb} (messages need cellular service, online "
                            "look-ups wifi, the current location its service; low-battery mode blocks all three)"
                            + (f"; {'; '.join(signals)}" if signals else "; no signal that the state is in the way")),))
        b.rule = ""
        b.notes.append(f"{tool.name}: prerequisite ({setting} {verb}), evidence {evidence:.2f}")
        for d in dependants:
            b.edge(tool.name, d, 0.35, focus="reordered")
