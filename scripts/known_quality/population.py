"""Which base scenarios a population of agents of known quality is measured on, and where each plays its fault.

A faulty agent differs from the clean solver only on a scenario where its fault can be built:
elsewhere it plays the clean solver and no evaluator can tell the two apart. The fault kinds
need different scenarios (in ToolSandbox only insufficient-information tasks have a minefield
the agent can call, and there the clean solver makes no call that a repeat, malformed or loop
fault could copy), so no scenario carries every kind. The rule, from the hidden ground truth
only (never from an evaluator's outcome):

1. a candidate is a base scenario where the variant of at least one selected fault kind can
   be built (``buildable``);
2. scenarios are taken one at a time for the selected kind that has its variant on the fewest
   chosen scenarios so far (ties in the order the kinds are given): the next candidate, in
   ``scan_order``, on which that kind can be built;
3. a candidate is kept only when ToolSandbox scores its clean solver 1.0 (``qualifies``);
   otherwise it is skipped with the reason and the next one is taken.

Every selected kind thus has its variant on as many chosen scenarios as the candidates allow.
A faulty agent then plays its fault on a share of the chosen scenarios where it can be built
(``plays_fault``), a different subset per agent, and the clean solver on the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field


def scan_order(names: Sequence[str], count: int, offset: int = 0) -> list[str]:
    """Every name, spread over the sorted list: a stride of ``len // count`` from ``offset``, then the next residue.

    The first ``count`` names with offset 0 are ``sorted(names)[::stride][:count]``; another offset
    starts from other names.
    """
    ordered = sorted(names)
    stride = max(1, len(ordered) // max(1, count))
    return [ordered[i] for i in sorted(range(len(ordered)), key=lambda i: ((i - offset) % stride, i))]


@dataclass
class Choice:
    """The chosen scenarios (in the order they were taken) and why the others were left out."""

    chosen: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # considered and left out: name -> reason
    no_variant: list[str] = field(default_factory=list)  # not candidates: no selected kind can be built
    carried: dict[str, int] = field(default_factory=dict)  # kind -> chosen scenarios carrying its variant

    def reasons(self) -> dict[str, int]:
        """How many considered scenarios were skipped, per reason."""
        out: dict[str, int] = {}
        for reason in self.skipped.values():
            out[reason] = out.get(reason, 0) + 1
        return out


def choose_balanced(order: Sequence[str], buildable: Mapping[str, frozenset[str]], kinds: Sequence[str], count: int,
                    qualifies: Callable[[str], str | None]) -> Choice:
    """Up to ``count`` scenarios by the rule of this module.

    Args:
        order: Every base scenario, in the order candidates are taken (``scan_order``).
        buildable: Per scenario, the fault kinds whose variant can be built there.
        kinds: The selected fault kinds.
        count: How many scenarios to choose.
        qualifies: ``None`` when the scenario may be kept (its clean solver scores 1.0), else why not;
            called once per considered scenario, in the order they are considered.
    """
    choice = Choice(carried=dict.fromkeys(kinds, 0))
    choice.no_variant = [n for n in order if not buildable.get(n, frozenset()) & set(kinds)]
    considered: set[str] = set()
    while len(choice.chosen) < count:
        open_kinds = [k for k in kinds if any(n not in considered and k in buildable.get(n, ()) for n in order)]
        if not open_kinds:
            break
        need = min(open_kinds, key=lambda k: (choice.carried[k], kinds.index(k)))
        name = next(n for n in order if n not in considered and need in buildable.get(n, ()))
        considered.add(name)
        why = qualifies(name)
        if why is not None:
            choice.skipped[name] = why
            continue
        choice.chosen.append(name)
        for k in kinds:
            choice.carried[k] += k in buildable[name]
    return choice


def plays_fault(chosen: Sequence[str], buildable: Mapping[str, frozenset[str]], kind: str, agent: int, share: float) -> set[str]:
    """The chosen scenarios on which faulty agent number ``agent`` plays its ``kind`` fault.

    About a ``share`` of the chosen scenarios where the fault can be built: rank r (in name order)
    is taken when ``(7 r + 3 agent) mod 20 < round(20 share)``, a fixed rule that differs per agent.
    """
    able = sorted(n for n in chosen if kind in buildable.get(n, ()))
    return {n for r, n in enumerate(able) if (r * 7 + agent * 3) % 20 < round(share * 20)}
