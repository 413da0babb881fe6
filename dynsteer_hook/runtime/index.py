"""What the evaluator looks up in a blueprint, built once per run.

Milestones by id and in blueprint order, the milestones each tool can settle, the minefields
each tool can step on, bindings by consumer, the dominator tree, and the catalog with the
arguments whose schema lists their values.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from dynsteer_hook.model.blueprint import Binding, Blueprint, Milestone, Minefield
from dynsteer_hook.model.catalog import ToolCatalog
from dynsteer_hook.model.dominators import START, DominatorTree
from dynsteer_hook.model.events import ToolCall
from dynsteer_hook.model.spelling import spelled_in
from dynsteer_hook.runtime.screening import screened_tools


class BlueprintIndex:
    """Look-ups into one blueprint.

    Attributes:
        blueprint: The blueprint.
        catalog: Its tool catalog.
        order: Milestone id -> position in the blueprint (the order stages of one action are judged in).
        by_id: Milestone id -> milestone.
        dominators: The dominator tree of the milestone graph.
        idom: Milestone id -> its immediate dominator.
        tool_owners: Tool name -> ids of the milestones it can settle.
        consumed: Milestone id -> the bindings it consumes.
        producers: Ids of milestones that produce a binding.
        minefield_summary: (id, tool, reason) of every minefield, for judges.
    """

    __slots__ = ("_enum_args", "_mines_by_tool", "blueprint", "by_id", "catalog", "consumed", "dominators", "idom", "minefield_summary",
                 "order", "producers", "sha256_16", "tool_owners")

    def __init__(self, blueprint: Blueprint) -> None:
        self.blueprint = blueprint
        self.catalog = ToolCatalog(blueprint.catalog)
        self.order = {m.id: i for i, m in enumerate(blueprint.milestones)}
        self.by_id: dict[str, Milestone] = {m.id: m for m in blueprint.milestones}
        self.dominators = DominatorTree([m.id for m in blueprint.milestones], [(e.source, e.target) for e in blueprint.edges])
        self.idom = self.dominators.idom_map()
        self.tool_owners: dict[str, set[str]] = defaultdict(set)
        for m in blueprint.milestones:
            self.tool_owners[m.tool].add(m.id)
        self._mines_by_tool: dict[str, list[Minefield]] = defaultdict(list)
        for f in blueprint.minefields:
            self._mines_by_tool[f.tool].append(f)
        self.consumed: dict[str, list[Binding]] = defaultdict(list)
        for b in blueprint.bindings:
            self.consumed[b.consumer].append(b)
        self.producers = {b.producer for b in blueprint.bindings}
        self.minefield_summary = tuple((f.id, f.tool, f.reason) for f in blueprint.minefields)
        self._enum_args: dict[str, frozenset[str]] = {}
        self.sha256_16 = hashlib.sha256(blueprint.to_json().encode()).hexdigest()[:16]

    def owned(self, tool: str, canonical: str | None) -> bool:
        """Whether some milestone uses the tool (by its agent-facing or canonical name)."""
        return bool(self.tool_owners.get(tool)) or bool(canonical and self.tool_owners.get(canonical))

    def mines_for(self, call: ToolCall) -> list[Minefield]:
        """The minefields of every tool the call could mean; for a refused call, also of every minefield tool its
        name spells (in look-alike letters, reversed, after a prefix: see ``model.spelling``)."""
        names = screened_tools(call)
        if call.rejected is not None:
            names = (*names, *(t for t in spelled_in(call.tool, list(self._mines_by_tool)) if t not in names))
        return [f for name in names for f in self._mines_by_tool.get(name, [])]

    def enums(self, tool: str) -> frozenset[str]:
        """Arguments of ``tool`` whose schema lists the allowed values (never blamed as invented)."""
        listed = self._enum_args.get(tool)
        if listed is None:
            props = self.catalog.properties(tool)
            listed = self._enum_args[tool] = frozenset(a for a, p in props.items() if isinstance(p, Mapping) and "enum" in p)
        return listed

    def anchor_of(self, frontier: list[str] | tuple[str, ...], settled_order: list[str]) -> str:
        """The dominator anchor of a stop: idom of the first frontier milestone, else the last settled one."""
        return self.idom.get(frontier[0], START) if frontier else (settled_order[-1] if settled_order else START)

    def summary(self) -> dict[str, Any]:
        """The blueprint as reports name it."""
        bp = self.blueprint
        prov = bp.provenance
        return {
            "task": bp.task,
            "sha256_16": self.sha256_16,
            "milestones": len(bp.milestones),
            "edges": len(bp.edges),
            "minefields": len(bp.minefields),
            "generators": list(prov.generators) if prov else [],
        }
