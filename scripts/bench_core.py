"""Benchmark of the evaluator core: per-event cost, per-closed-action cost, and consensus.

Run it from the repository root (the package must be importable, e.g. after
``pip install -e .``)::

    python scripts/bench_core.py                # table, 20 repeats (+2 warm-up)
    python scripts/bench_core.py --repeat 50    # more repeats
    python scripts/bench_core.py --json         # one JSON object on stdout
    python scripts/bench_core.py --seed 3       # other generated inputs

It prints, never asserts, three figures beside their goals and the ratio measured / goal
(a ratio above 1 misses the goal):

1. ``Evaluator.observe()`` on raw events that close no action (median, p99); goal 50 us median.
2. ``Evaluator.observe()`` on the event that closes an action, Tier 1 judging included
   (median, p99); goal 1 ms median.
3. ``build_consensus`` (validation, strict-majority consensus, transitive reduction) of
   five candidate blueprints of 30 milestones, one of them invalid (median over repeats);
   goal 20 ms.

Inputs are generated from a seed: a 50-milestone blueprint (chains, diamonds, parallel
branches, message milestones, minefields, bindings, a catalog of 20 tools with JSON
schemas) and a 500-event trace that settles the milestones in a valid topological order
with noise (user and agent chatter, failed calls, exact retries, schema-violating calls,
out-of-order calls, parallel calls). Each repeat feeds the whole trace to a fresh
``Evaluator`` with an in-memory audit sink; construction and ``finish()`` are timed
separately. The configuration is the default except ``low_score_patience`` (see
``BENCH_OVERRIDES``), so the noisy trace runs to its end; frontier stagnation and
structural failure keep their defaults and the trace is shaped not to trip them. A halt
would be caught and reported with the figures.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import math
import os
import platform
import random
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from time import perf_counter_ns
from typing import Any

import structlog

from dynsteer_hook.compile.consensus import Candidate, build_consensus
from dynsteer_hook.model.blueprint import AGENT_MESSAGE_TOOL, Binding, Blueprint, Edge, Milestone, Minefield, StatePredicate, ToolSpec
from dynsteer_hook.model.catalog import ToolCatalog
from dynsteer_hook.model.config import EvaluatorConfig
from dynsteer_hook.model.errors import Halt
from dynsteer_hook.model.events import AgentMessage, Event, StateChange, SystemMessage, ToolCall, ToolResult, UserMessage
from dynsteer_hook.model.predicates import ArgPredicate
from dynsteer_hook.model.records import ListSink
from dynsteer_hook.runtime.evaluator import Evaluator

GOAL_RAW_US = 50.0
GOAL_CLOSED_US = 1000.0
GOAL_CONSENSUS_US = 20_000.0

# ---- tool catalog --------------------------------------------------------------------

_S, _I, _N, _B = {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}
_REL = {"type": "string", "enum": ["friend", "family", "work", "other"]}
_CCY = {"type": "string", "enum": ["USD", "EUR", "GBP", "JPY", "CNY"]}

# name -> (properties, required)
_TOOLS: dict[str, tuple[dict[str, Any], list[str]]] = {
    "search_contacts": ({"name": _S, "relationship": _REL, "limit": _I}, ["name"]),
    "get_contact": ({"contact_id": _S}, ["contact_id"]),
    "add_contact": ({"name": _S, "phone_number": _S, "relationship": _REL}, ["name", "phone_number"]),
    "update_contact": ({"contact_id": _S, "phone_number": _S}, ["contact_id"]),
    "delete_contact": ({"contact_id": _S}, ["contact_id"]),
    "send_message": ({"phone_number": _S, "content": _S}, ["phone_number", "content"]),
    "search_messages": ({"sender": _S, "query": _S, "limit": _I}, []),
    "delete_message": ({"message_id": _S}, ["message_id"]),
    "get_current_timestamp": ({}, []),
    "add_reminder": ({"content": _S, "reminder_timestamp": _N}, ["content", "reminder_timestamp"]),
    "search_reminders": ({"query": _S}, []),
    "delete_reminder": ({"reminder_id": _S}, ["reminder_id"]),
    "get_weather": ({"city": _S, "days": _I}, ["city"]),
    "convert_currency": ({"amount": _N, "from_currency": _CCY, "to_currency": _CCY}, ["amount", "from_currency", "to_currency"]),
    "transfer_money": ({"account_id": _S, "amount": _N, "memo": _S}, ["account_id", "amount"]),
    "search_events": ({"query": _S, "date": _S}, ["query"]),
    "create_event": ({"title": _S, "start": _N, "end": _N}, ["title", "start"]),
    "set_cellular_service_status": ({"on": _B}, ["on"]),
    "get_location": ({"place": _S}, ["place"]),
    "search_holidays": ({"name": _S, "year": _I}, ["name"]),
}
# Producers of ids and the tools that consume them (bindings).
_PRODUCERS = {"search_contacts": ("contact_id", "c"), "search_messages": ("message_id", "m"), "search_reminders": ("reminder_id", "r")}
_CONSUMERS = {"contact_id": ["get_contact", "update_contact", "delete_contact"], "message_id": ["delete_message"], "reminder_id": ["delete_reminder"]}
_CONSUMER_TOOLS = {t for ts in _CONSUMERS.values() for t in ts}
_PLAIN_TOOLS = [t for t in _TOOLS if t not in _CONSUMER_TOOLS and t not in ("get_current_timestamp", "set_cellular_service_status")]
_READ_ONLY_NOISE = ["get_current_timestamp", "get_weather", "get_location", "search_holidays", "search_events"]
_MUTATING = {"add_contact", "update_contact", "delete_contact", "send_message", "delete_message", "add_reminder",
             "delete_reminder", "transfer_money", "create_event", "set_cellular_service_status"}

_FIRST = ["Alice", "Bob", "Carol", "Dan", "Erin", "Frank", "Grace", "Heidi", "Ivan", "Judy", "Mallory", "Niaj", "Olivia", "Peggy"]
_LAST = ["Smith", "Jones", "Brown", "Taylor", "Wilson", "Evans", "Thomas", "Roberts", "Walker", "Wright"]
_CITIES = ["Paris", "Lisbon", "Oslo", "Quito", "Lima", "Accra", "Hanoi", "Perth", "Cork", "Bergen", "Porto", "Turin"]
_TOPICS = ["dinner", "the report", "rent", "the trip", "groceries", "the launch", "a birthday", "the meeting", "tickets"]
_CHATTER = ["Let me check that for you.", "One moment while I look that up.", "I am on it.", "Could you confirm the details?",
            "Thanks, continuing with the next step."]


def tool_catalog() -> tuple[ToolSpec, ...]:
    """The 20 agent-facing tools with their JSON schemas."""
    return tuple(
        ToolSpec(name=name, description=f"{name.replace('_', ' ')}.",
                 parameters={"type": "object", "properties": dict(props), "required": list(req)})
        for name, (props, req) in _TOOLS.items()
    )


# ---- blueprint -----------------------------------------------------------------------


@dataclass
class Plan:
    """A generated blueprint plus what the trace generator needs to settle each milestone."""

    blueprint: Blueprint
    order: list[str]  # blueprint (construction) order
    succs: dict[str, list[str]]
    preds: dict[str, list[str]]
    call_args: dict[str, dict[str, Any]]  # settling arguments of tool milestones
    results: dict[str, Any]  # result the settling call returns
    phones: dict[str, str]  # phone numbers the user must mention before the milestone
    messages: dict[str, str]  # agent message that settles a message milestone
    free_roots: list[str] = field(default_factory=list)


def _shape(rng: random.Random, n: int) -> tuple[list[int], list[tuple[int, int]], list[int]]:
    """Node indices, edges and free roots of a DAG of ``n`` nodes built from blocks."""
    edges: list[tuple[int, int]] = []
    tails: list[int] = []  # exits of the previous block
    i = 0
    free = [n - 1]  # one free root, settled early by the trace (its window starts at s0)
    body = n - len(free)

    def link(head: int) -> None:
        edges.extend((t, head) for t in tails)

    while i < body:
        kind = rng.choice(["chain", "chain", "diamond", "parallel"])
        left = body - i
        if kind == "diamond" and left >= 4:
            a, b, c, d = i, i + 1, i + 2, i + 3
            link(a)
            edges += [(a, b), (a, c), (b, d), (c, d)]
            tails, i = [d], i + 4
        elif kind == "parallel" and left >= 5:
            k = rng.choice([2, 3]) if left >= 8 else 2
            fork = i
            link(fork)
            i += 1
            ends = []
            for _ in range(k):
                length = rng.randint(1, 3)
                length = min(length, body - i - 1 - (k - len(ends) - 1))
                length = max(length, 1)
                prev = fork
                for j in range(length):
                    edges.append((prev, i + j))
                    prev = i + j
                ends.append(prev)
                i += length
            join = i
            edges += [(e, join) for e in ends]
            tails, i = [join], i + 1
        else:
            length = min(rng.randint(2, 4), left)
            link(i)
            edges += [(i + j, i + j + 1) for j in range(length - 1)]
            tails, i = [i + length - 1], i + length
    return list(range(n)), edges, free


def _settle_args(rng: random.Random, tool: str, i: int, name: str, phone: str) -> dict[str, Any]:
    topic = _TOPICS[i % len(_TOPICS)]
    ts = 1_717_000_000.0 + 3600.0 * i
    args: dict[str, dict[str, Any]] = {
        "search_contacts": {"name": name, "relationship": rng.choice(_REL["enum"]), "limit": rng.randint(3, 10)},
        "add_contact": {"name": name, "phone_number": phone, "relationship": rng.choice(_REL["enum"])},
        "send_message": {"phone_number": phone, "content": f"Hi {name.split()[0]}, about {topic} (ref {i})"},
        "search_messages": {"sender": name, "query": topic, "limit": rng.randint(1, 5)},
        "add_reminder": {"content": f"{topic} with {name}", "reminder_timestamp": ts},
        "search_reminders": {"query": f"{topic} with {name}"},
        "get_weather": {"city": _CITIES[i % len(_CITIES)] + f" {i}", "days": rng.randint(1, 7)},
        "convert_currency": {"amount": round(10 + 7.5 * i, 2), "from_currency": "USD", "to_currency": rng.choice(["EUR", "GBP", "JPY"])},
        "transfer_money": {"account_id": f"acct {name.lower()}", "amount": round(20 + 3.25 * i, 2), "memo": topic},
        "search_events": {"query": f"{topic} {i}", "date": f"2024-06-{1 + i % 28:02d}"},
        "create_event": {"title": f"{topic} with {name}", "start": ts, "end": ts + 1800},
        "get_location": {"place": f"{name.split()[1]} office {i}"},
        "search_holidays": {"name": f"{topic} day {i}", "year": 2024 + i % 3},
        "set_cellular_service_status": {"on": True},
    }
    return dict(args[tool])


_KEY = {"search_contacts": "name", "add_contact": "name", "send_message": "content", "search_messages": "sender",
        "add_reminder": "content", "search_reminders": "query", "get_weather": "city", "convert_currency": "amount",
        "transfer_money": "account_id", "search_events": "query", "create_event": "title", "get_location": "place",
        "search_holidays": "name", "set_cellular_service_status": "on"}


def _predicates(rng: random.Random, tool: str, args: dict[str, Any]) -> tuple[ArgPredicate, ...]:
    """The settling call's key as an eq predicate, plus a few varied extras it satisfies."""
    key = _KEY[tool]
    preds = [ArgPredicate(arg=key, op="eq", value=args[key])]
    for arg, value in args.items():
        if arg == key or rng.random() < 0.5:
            continue
        if isinstance(value, bool):
            continue
        if isinstance(value, int):
            preds.append(ArgPredicate(arg=arg, op="ge", value=value - rng.randint(0, 2)))
        elif isinstance(value, float):
            preds.append(ArgPredicate(arg=arg, op="lt", value=value + 100))
        elif arg in ("relationship", "to_currency", "from_currency"):
            options = _TOOLS[tool][0][arg]["enum"]
            preds.append(ArgPredicate(arg=arg, op="one_of", value=[value, options[(options.index(value) + 1) % len(options)]]))
        elif arg == "phone_number":
            preds.append(ArgPredicate(arg=arg, op="grounded", value=True))
        elif arg == "date":
            preds.append(ArgPredicate(arg=arg, op="regex", value=r"^2024-\d\d-\d\d$"))
        else:
            op = rng.choice(["contains", "exists", "type"])
            operand = {"contains": value.split()[0], "exists": None, "type": "string"}[op]
            preds.append(ArgPredicate(arg=arg, op=op, value=operand))
    return tuple(preds)


def _result(rng: random.Random, tool: str, args: dict[str, Any], name: str, phone: str, i: int) -> Any:
    if tool in _PRODUCERS:
        field_, prefix = _PRODUCERS[tool]
        rows = [{field_: f"{prefix}-{rng.randint(1_000_000, 9_999_999)}", "name": name, "phone_number": phone}]
        rows += [{field_: f"{prefix}-{rng.randint(1_000_000, 9_999_999)}", "name": f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"}
                 for _ in range(rng.randint(0, 2))]
        return rows
    return {
        "add_contact": f"c-{rng.randint(1_000_000, 9_999_999)}",
        "send_message": f"m-{rng.randint(1_000_000, 9_999_999)}",
        "add_reminder": f"r-{rng.randint(1_000_000, 9_999_999)}",
        "get_weather": {"city": args.get("city"), "forecast": [{"day": d, "high_c": rng.randint(5, 30)} for d in range(args.get("days", 1))]},
        "convert_currency": round(float(args.get("amount", 1.0)) * 0.92, 2),
        "transfer_money": {"status": "ok", "transaction_id": f"t-{rng.randint(1_000_000, 9_999_999)}"},
        "search_events": [{"title": f"{args.get('query')}", "date": args.get("date")}],
        "create_event": f"e-{rng.randint(1_000_000, 9_999_999)}",
        "get_location": {"lat": round(rng.uniform(-60, 60), 4), "lon": round(rng.uniform(-170, 170), 4)},
        "search_holidays": [{"name": args.get("name"), "date": f"{args.get('year')}-12-25"}],
        "set_cellular_service_status": None,
    }.get(tool, {"ok": True, "i": i})


def _state(tool: str, args: dict[str, Any]) -> tuple[StateChange, ...]:
    if tool == "add_contact":
        return (StateChange("CONTACT", added=({"name": args["name"], "phone_number": args["phone_number"]},)),)
    if tool == "send_message":
        return (StateChange("MESSAGING", added=({"recipient_phone_number": args["phone_number"], "content": args["content"]},)),)
    if tool == "add_reminder":
        return (StateChange("REMINDER", added=({"content": args["content"], "reminder_timestamp": args["reminder_timestamp"]},)),)
    if tool == "create_event":
        return (StateChange("CALENDAR", added=({"title": args["title"], "start": args["start"]},)),)
    if tool == "transfer_money":
        return (StateChange("LEDGER", added=({"account_id": args["account_id"], "amount": args["amount"]},)),)
    if tool == "set_cellular_service_status":
        return (StateChange("SETTING", updated=(({"cellular": False}, {"cellular": True}),)),)
    if tool in ("delete_contact", "delete_message", "delete_reminder"):
        ns = {"delete_contact": "CONTACT", "delete_message": "MESSAGING", "delete_reminder": "REMINDER"}[tool]
        return (StateChange(ns, removed=({"id": next(iter(args.values()))},)),)
    if tool == "update_contact":
        return (StateChange("CONTACT", updated=(({"phone_number": "unknown"}, {"phone_number": args.get("phone_number")}),)),)
    return ()


def make_plan(seed: int, n: int = 50, *, n_messages: int = 3, n_bindings: int = 4, prefix: str = "m") -> Plan:
    """A blueprint of ``n`` milestones with its settling calls, deterministic in ``seed``."""
    rng = random.Random(seed)
    nodes, edges, free = _shape(rng, n)
    ids = [f"{prefix}{i:02d}" for i in nodes]
    succs: dict[str, list[str]] = {m: [] for m in ids}
    preds: dict[str, list[str]] = {m: [] for m in ids}
    for u, v in edges:
        succs[ids[u]].append(ids[v])
        preds[ids[v]].append(ids[u])
    descendants: dict[int, set[int]] = {}
    for u in reversed(nodes):
        descendants[u] = {v for w, v in edges if w == u}
        for v in list(descendants[u]):
            descendants[u] |= descendants.get(v, set())

    tools = [_PLAIN_TOOLS[j % len(_PLAIN_TOOLS)] for j in range(n)]
    rng.shuffle(tools)
    tools[free[0]] = "get_location"
    body = [i for i in nodes if i not in free]
    # Message milestones in the middle of the run, never as a fork or a binding end.
    message_nodes = set(rng.sample([i for i in body[3:-1] if len(succs[ids[i]]) <= 1], n_messages))
    bindings: list[tuple[int, int, str]] = []
    used: set[int] = set(message_nodes)
    for _ in range(n_bindings):
        for _attempt in range(200):
            p = rng.choice(body[: int(len(body) * 0.7)])
            cands = sorted(d for d in descendants[p] if d not in used and d not in free)
            if p in used or not cands:
                continue
            c = rng.choice(cands[:6])
            producer = rng.choice(sorted(_PRODUCERS))
            arg, _ = _PRODUCERS[producer]
            tools[p], tools[c] = producer, rng.choice(_CONSUMERS[arg])
            used |= {p, c}
            bindings.append((p, c, arg))
            break

    milestones: list[Milestone] = []
    call_args: dict[str, dict[str, Any]] = {}
    results: dict[str, Any] = {}
    phones: dict[str, str] = {}
    messages: dict[str, str] = {}
    consumer_of = {c: (p, arg) for p, c, arg in bindings}
    for i in nodes:
        mid = ids[i]
        name = f"{_FIRST[i % len(_FIRST)]} {_LAST[(i // len(_FIRST) + i) % len(_LAST)]}"
        phone = f"+1 415 555 {1000 + 37 * i:04d}"
        if i in message_nodes:
            phrase = f"{_TOPICS[i % len(_TOPICS)]} for {name} is arranged"
            messages[mid] = f"Done: {phrase}. Anything else?"
            milestones.append(Milestone(id=mid, tool=AGENT_MESSAGE_TOOL, role=f"confirm_{i}",
                                        args=(ArgPredicate(arg="content", op="contains", value=phrase),),
                                        description=f"Tell the user that {phrase}."))
            continue
        tool = tools[i]
        state: StatePredicate | None = None
        if i in consumer_of:
            p, arg = consumer_of[i]
            produced = results[ids[p]][0][arg]
            args = {arg: produced}
            if tool == "update_contact":
                args["phone_number"] = phone
                phones[mid] = phone
            conds: tuple[ArgPredicate, ...] = (ArgPredicate(arg=arg, op="regex", value=r"^[cmr]-\d{7}$"),)
        else:
            args = _settle_args(rng, tool, i, name, phone)
            conds = _predicates(rng, tool, args)
            if "phone_number" in args:
                phones[mid] = phone
            if tool in ("add_contact", "add_reminder", "create_event") and rng.random() < 0.6:
                change = _state(tool, args)[0]
                row = change.added[0]
                col = next(iter(row))
                state = StatePredicate(namespace=change.namespace, change="added", where=(ArgPredicate(arg=col, op="eq", value=row[col]),))
        call_args[mid] = args
        results[mid] = _result(rng, tool, args, name, phone, i)
        milestones.append(Milestone(id=mid, tool=tool, role=f"step_{i}", args=conds, state=state,
                                    description=f"{tool.replace('_', ' ')} for stage {i}"))
    minefields = (
        Minefield(id="mf:delete_contact", tool="delete_contact", args=(ArgPredicate(arg="contact_id", op="eq", value="c-0000001"),),
                  reason="deletes the account owner's own contact"),
        Minefield(id="mf:transfer_money", tool="transfer_money", args=(ArgPredicate(arg="amount", op="gt", value=5000),),
                  reason="transfers more than the user authorised"),
        Minefield(id="mf:cellular_off", tool="set_cellular_service_status", args=(ArgPredicate(arg="on", op="eq", value=False),),
                  reason="cuts the phone off the network"),
        Minefield(id="warn:send_message", tool="send_message", args=(ArgPredicate(arg="phone_number", op="grounded", value=False),),
                  reason="messages a number nobody gave", fatal=False),
    )
    bp = Blueprint(
        task=f"bench-{n}-{seed}",
        milestones=tuple(milestones),
        edges=tuple(Edge(source=ids[u], target=ids[v]) for u, v in edges),
        bindings=tuple(Binding(name=f"{ids[p]}.{arg}", producer=ids[p], path=arg, consumer=ids[c], arg=arg) for p, c, arg in bindings),
        minefields=minefields,
        catalog=tool_catalog(),
    )
    return Plan(bp, ids, succs, preds, call_args, results, phones, messages, [ids[i] for i in free])


# ---- trace ---------------------------------------------------------------------------


class _Trace:
    """Event list builder that numbers call ids."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.n = 0

    def call(self, tool: str, args: dict[str, Any] | None, raw: str | None = None) -> str:
        self.n += 1
        cid = f"call_{self.n}"
        self.events.append(ToolCall(cid, tool, dict(args) if args is not None else None, raw))
        return cid

    def result(self, cid: str, value: Any = None, exception: str | None = None, changes: tuple[StateChange, ...] = ()) -> None:
        self.events.append(ToolResult(cid, value, exception, changes))

    def single(self, tool: str, args: dict[str, Any] | None, value: Any = None, exception: str | None = None, raw: str | None = None) -> None:
        cid = self.call(tool, args, raw)
        changes = _state(tool, args) if exception is None and args is not None and tool in _MUTATING else ()
        self.result(cid, value, exception, changes)


# A noise item: (name, raw events, closed actions, surplus calls).
_NOISE = [("user", 1, 0, 0), ("user", 1, 0, 0), ("chatter", 1, 1, 0), ("read_only", 2, 1, 1), ("failed", 2, 1, 1),
          ("retry", 2, 1, 1), ("schema", 2, 1, 1), ("out_of_order", 2, 1, 1), ("parallel_read_only", 4, 1, 2)]


def make_trace(plan: Plan, seed: int, n_events: int = 500, *, max_noise_actions: int = 5, max_noise_calls: int = 3) -> list[Event]:
    """A trace of exactly ``n_events`` events settling every milestone in a valid order, with noise."""
    rng = random.Random(seed + 1)
    bp = plan.blueprint
    by_id = {m.id: m for m in bp.milestones}
    # A random topological order; the free root goes second so its s0-anchored window stays short.
    waiting = {m: len(p) for m, p in plan.preds.items()}
    ready = sorted(m for m, w in waiting.items() if w == 0 and m not in plan.free_roots)
    order: list[str] = []
    while ready:
        m = ready.pop(rng.randrange(len(ready)))
        order.append(m)
        for s in plan.succs[m]:
            waiting[s] -= 1
            if waiting[s] == 0:
                ready.append(s)
        ready.sort()
        if len(order) == 1:
            order += plan.free_roots
    # Batches: a ready pair of tool milestones is sometimes called in parallel.
    batches: list[list[str]] = []
    done: set[str] = set()
    j = 0
    while j < len(order):
        m = order[j]
        nxt = order[j + 1] if j + 1 < len(order) else None
        if (nxt is not None and rng.random() < 0.35 and m in plan.call_args and nxt in plan.call_args
                and all(p in done for p in plan.preds[nxt]) and nxt not in plan.phones and m not in plan.phones):
            batches.append([m, nxt])
            j += 2
        else:
            batches.append([m])
            j += 1
        done.update(batches[-1])

    def skeleton_size(batch: list[str]) -> int:
        return sum(1 if m in plan.messages else 2 for m in batch) + sum(1 for m in batch if m in plan.phones)

    fixed = 2 + sum(skeleton_size(b) for b in batches) + 2  # system+user, ..., final message + user end call
    budget = n_events - fixed
    if budget < 0:
        raise ValueError(f"{n_events} events cannot hold {len(order)} milestones")
    # Noise between settlements, a few closed actions per gap so frontier stagnation
    # (n_stag) never fires, and at most one malformed call per gap so the structural
    # streak stays under its patience (the settling call resets it).
    gaps: list[list[str]] = [[] for _ in batches]
    actions = [0] * len(batches)
    calls = [0] * len(batches)
    while budget > 0:
        g = rng.randrange(len(batches))
        name, size, acts, n_calls = rng.choice(_NOISE)
        if size > budget:
            name, size, acts, n_calls = "user", 1, 0, 0
        if actions[g] + acts > max_noise_actions or calls[g] + n_calls > max_noise_calls:
            continue
        if name == "schema" and "schema" in gaps[g]:
            continue
        gaps[g].append(name)
        actions[g] += acts
        calls[g] += n_calls
        budget -= size

    tr = _Trace()
    tr.events.append(SystemMessage("You are a helpful assistant with access to contacts, messages, reminders, calendar and payments."))
    tr.events.append(UserMessage("Hi! I have a long list of errands for today; let's go through them one by one."))
    settled: set[str] = set()
    for batch, noise in zip(batches, gaps, strict=True):
        rng.shuffle(noise)
        target = batch[0]
        for item in noise:
            _noise(tr, rng, item, plan, target, settled, by_id)
        for m in batch:
            if m in plan.phones:
                tr.events.append(UserMessage(f"The number for that is {plan.phones[m]}, please use it."))
        if target in plan.messages:
            tr.events.append(AgentMessage(plan.messages[target]))
        else:
            ids = [tr.call(by_id[m].tool, plan.call_args[m]) for m in batch]
            pairs = list(zip(batch, ids, strict=True))
            if len(pairs) > 1 and rng.random() < 0.5:
                pairs.reverse()  # results of parallel calls arrive out of issue order
            for m, cid in pairs:
                tool = by_id[m].tool
                tr.result(cid, plan.results[m], None, _state(tool, plan.call_args[m]))
        settled.update(batch)
    tr.events.append(AgentMessage("That is everything on the list. Have a good day!"))
    tr.events.append(ToolCall(f"call_{tr.n + 1}", "end_conversation", {}, actor="user"))
    assert len(tr.events) == n_events, len(tr.events)
    return tr.events


def _noise(tr: _Trace, rng: random.Random, item: str, plan: Plan, target: str, settled: set[str], by_id: dict[str, Milestone]) -> None:
    tool_target = target in plan.call_args
    tool = by_id[target].tool if tool_target else "search_contacts"
    args = plan.call_args.get(target, {"name": "someone"})
    if item == "user":
        tr.events.append(UserMessage(f"Also, remember {rng.choice(_TOPICS)} in {rng.choice(_CITIES)}; no rush."))
    elif item == "chatter":
        tr.events.append(AgentMessage(rng.choice(_CHATTER)))
    elif item in ("read_only", "parallel_read_only"):
        probe = rng.choice(_READ_ONLY_NOISE)
        probe_args = {"get_current_timestamp": {}, "get_weather": {"city": rng.choice(_CITIES)},
                      "get_location": {"place": rng.choice(_CITIES) + " station"},
                      "search_holidays": {"name": rng.choice(_TOPICS)}, "search_events": {"query": rng.choice(_TOPICS)}}[probe]
        if item == "read_only":
            tr.single(probe, probe_args, {"ok": True, "value": rng.randint(1, 99)})
        else:  # two read-only probes issued together
            a = tr.call(probe, probe_args)
            b = tr.call("get_current_timestamp", {})
            tr.result(b, 1_717_000_000.0 + rng.randint(0, 10_000))
            tr.result(a, {"ok": True})
    elif item == "failed":  # a typo in the key argument: the tool finds nothing
        key = next(iter(args))
        wrong = {**args, key: f"{args[key]}x"}
        tr.single(tool, wrong, exception=f"LookupError: nothing matches {wrong[key]!r}")
    elif item == "retry":
        if tool_target and by_id[target].tool not in _MUTATING:
            tr.single(tool, args, exception="TimeoutError: the service did not answer in time")  # retried exactly below
        else:  # never retry a mutation: repeat the clock probe (same signature as any earlier one)
            tr.single("get_current_timestamp", {}, 1_717_000_000.0)
    elif item == "schema":
        kind = rng.choice(["unknown_arg", "type", "unparseable", "unknown_tool"])
        if kind == "unknown_arg":
            tr.single(tool, {"nmae": "x", **{k: v for k, v in list(args.items())[1:]}},
                      exception=f"TypeError: {tool}() got an unexpected keyword argument 'nmae'")
        elif kind == "type":
            tr.single("get_weather", {"city": rng.choice(_CITIES), "days": "three"}, exception="ValidationError: days is not an integer")
        elif kind == "unparseable":
            tr.single(tool, None, raw='{"name": "Al', exception="JSONDecodeError: Unterminated string")
        else:
            tr.single(tool + "_v2", {"query": "x"}, exception=f"NameError: {tool}_v2 is not a known allowed tool")
    elif item == "out_of_order":  # a lookup whose milestone still waits for a predecessor
        later = [m for m in plan.call_args if m not in settled and any(p not in settled for p in plan.preds[m])
                 and by_id[m].tool not in _MUTATING and not any(b.consumer == m for b in plan.blueprint.bindings)]
        if later:
            m = rng.choice(later)
            tr.single(by_id[m].tool, plan.call_args[m], plan.results[m])
        else:
            tr.single("get_current_timestamp", {}, 1_717_000_000.0)


# ---- consensus candidates ------------------------------------------------------------


def _variant(bp: Blueprint, name: str, *, drop: str | None = None, extra_edge: tuple[str, str] | None = None,
             retool: dict[str, str] | None = None, add_node: bool = False, extra_mine: bool = False) -> Blueprint:
    """A candidate derived from ``bp``: ids renamed, optionally a node dropped or added, an edge or tool changed."""
    rename = {m.id: f"{name}_{m.id}" for m in bp.milestones}
    edges = [(e.source, e.target) for e in bp.edges]
    if drop is not None:
        ins = [u for u, v in edges if v == drop]
        outs = [v for u, v in edges if u == drop]
        edges = [(u, v) for u, v in edges if drop not in (u, v)] + [(u, v) for u in ins for v in outs]
    if extra_edge is not None:
        edges.append(extra_edge)
    milestones = []
    for m in bp.milestones:
        if m.id == drop:
            continue
        update: dict[str, Any] = {"id": rename[m.id]}
        if retool and m.id in retool:  # another tool: the old predicates may not fit its schema
            update.update(tool=retool[m.id], args=(), state=None)
        milestones.append(m.model_copy(update=update))
    if add_node:
        first = bp.milestones[0].id
        milestones.append(Milestone(id=f"{name}_clock", tool="get_current_timestamp", role="clock", description="Read the clock first."))
        edges.append(("clock", first))
        rename["clock"] = f"{name}_clock"
    keep = {m.id for m in bp.milestones if m.id != drop}
    bindings = tuple(
        b.model_copy(update={"producer": rename[b.producer], "consumer": rename[b.consumer], "name": f"{name}:{b.name}"})
        for b in bp.bindings if b.producer in keep and b.consumer in keep
    )
    mines = bp.minefields
    if extra_mine:
        mines = (*mines, Minefield(id="mf:delete_message", tool="delete_message", reason="destroys evidence"))
    out = bp.model_copy(update={
        "milestones": tuple(milestones),
        "edges": tuple(Edge(source=rename[u], target=rename[v]) for u, v in edges),
        "bindings": bindings,
        "minefields": mines,
    })
    return Blueprint.model_validate(out.model_dump())  # parsed like a generator's output would be


def make_candidates(seed: int) -> tuple[list[Candidate], ToolCatalog]:
    """Five 30-milestone candidates with realistic variation; the last names a tool the catalog lacks."""
    plan = make_plan(seed + 7, 30, n_messages=2, n_bindings=3)
    base = plan.blueprint
    ids = plan.order
    chain_inner = next(m for m in ids[1:] if len(plan.preds[m]) == 1 and len(plan.succs[m]) == 1
                       and not any(m in (b.producer, b.consumer) for b in base.bindings))
    # Two milestones with no path between them: a later candidate orders them.
    parallel = next(((a, b) for a in ids for b in ids if a < b and plan.preds[a] == plan.preds[b] and plan.preds[a]), None)
    plain = [m for m in ids if base.milestone(m).tool not in _CONSUMER_TOOLS and m in plan.call_args
             and not any(m in (b.producer, b.consumer) for b in base.bindings)]
    other = "get_weather" if base.milestone(plain[3]).tool != "get_weather" else "get_location"
    variants = [
        _variant(base, "a"),
        _variant(base, "b", drop=chain_inner),
        _variant(base, "c", extra_edge=parallel, add_node=True, extra_mine=True),
        _variant(base, "d", retool={plain[3]: other}),
        _variant(base, "e", retool={plain[5]: "search_contacts_v2"}),  # hallucinated API: pruned
    ]
    out = [Candidate(f"cand-{i}", bp, generator="bench", model="synthetic") for i, bp in enumerate(variants)]
    return out, ToolCatalog(tool_catalog())


# ---- timing ----

BENCH_OVERRIDES: dict[str, Any] = {"low_score_patience": 1_000_000}
"""The trace is deliberately noisy; under the default patience of one low stage, the Tier 1
efficiency weight grows until one noisy join window halts the run. The low-score rule is
still evaluated at every closed action; it just never fires. Every other value is the default."""


def bench_config() -> EvaluatorConfig:
    """The evaluator configuration of the benchmark (defaults plus ``BENCH_OVERRIDES``)."""
    return EvaluatorConfig().with_overrides(**BENCH_OVERRIDES)


def _pct(xs: Sequence[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))]


def _summary(ns: Sequence[int]) -> dict[str, float]:
    us = [x / 1000 for x in ns]
    return {"n": len(us), "median_us": statistics.median(us), "p99_us": _pct(us, 0.99), "mean_us": statistics.fmean(us), "max_us": max(us)}


def bench_trace(bp: Blueprint, events: Sequence[Event], config: EvaluatorConfig, repeat: int, warmup: int) -> dict[str, Any]:
    """Feed the trace to fresh evaluators ``warmup + repeat`` times; time every observe() call."""
    raw: list[int] = []
    closed: list[int] = []
    judged: list[int] = []
    unjudged: list[int] = []
    by_kind: dict[str, list[int]] = {}
    construct: list[int] = []
    finish: list[int] = []
    total: list[int] = []
    halt: dict[str, Any] | None = None
    outcome = ""
    for r in range(warmup + repeat):
        measured = r >= warmup
        gc.collect()
        t0 = perf_counter_ns()
        ev = Evaluator(bp, config, sink=ListSink())
        t1 = perf_counter_ns()
        n_settled = 0
        for e in events:
            s = perf_counter_ns()
            try:
                action = ev.observe(e)
            except Halt as h:
                halt = {"reason": h.stop.reason, "k": h.stop.k, "t": h.stop.t, "detail": h.stop.detail}
                break
            d = perf_counter_ns() - s
            if not measured:
                continue
            kind = type(e).__name__
            if action is None:
                raw.append(d)
            else:
                closed.append(d)
                settled_now = len(ev.settled)
                kind += " (closes, judges a stage)" if settled_now > n_settled else " (closes, no stage)"
                (judged if settled_now > n_settled else unjudged).append(d)
                n_settled = settled_now
            by_kind.setdefault(kind, []).append(d)
        t2 = perf_counter_ns()
        report = ev.finish()
        t3 = perf_counter_ns()
        outcome = report.outcome
        if measured:
            construct.append(t1 - t0)
            total.append(t2 - t1)
            finish.append(t3 - t2)
    return {
        "raw": _summary(raw),
        "closed": _summary(closed),
        "judged": _summary(judged),
        "unjudged": _summary(unjudged),
        "construct": _summary(construct),
        "finish": _summary(finish),
        "trace_total": _summary(total),
        "by_kind": {k: _summary(v) for k, v in sorted(by_kind.items())},
        "halt": halt,
        "outcome": outcome,
        "stages": len(report.stages),
        "score": report.score,
    }


def bench_consensus(cands: Sequence[Candidate], catalog: ToolCatalog, repeat: int, warmup: int) -> dict[str, Any]:
    """Time ``build_consensus`` over the candidates ``warmup + repeat`` times."""
    times: list[int] = []
    result = None
    for r in range(warmup + repeat):
        gc.collect()
        s = perf_counter_ns()
        result = build_consensus(cands, catalog, task="bench")
        d = perf_counter_ns() - s
        if r >= warmup:
            times.append(d)
    assert result is not None
    return {
        "time": _summary(times),
        "valid": len(result.valid),
        "pruned": [f"{p.candidate}: {p.rule}" for p in result.pruned],
        "milestones": len(result.blueprint.milestones),
        "edges": len(result.blueprint.edges),
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--repeat", type=int, default=20, help="measured repeats of the trace and of consensus (default 20)")
    p.add_argument("--warmup", type=int, default=2, help="unmeasured warm-up repeats (default 2)")
    p.add_argument("--seed", type=int, default=7, help="seed of the generated inputs (default 7)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = p.parse_args(argv)
    if args.repeat < 1 or args.warmup < 0:
        p.error("--repeat must be at least 1 and --warmup at least 0")
    # Warnings only, on stderr, so --json output stays clean.
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
    )

    load_before = os.getloadavg()[0]
    plan = make_plan(args.seed)
    events = make_trace(plan, args.seed)
    config = bench_config()
    trace = bench_trace(plan.blueprint, events, config, args.repeat, args.warmup)
    cands, catalog = make_candidates(args.seed)
    cons = bench_consensus(cands, catalog, args.repeat, args.warmup)

    bp = plan.blueprint
    rows = [
        ("observe(), raw event (no close)", trace["raw"], GOAL_RAW_US),
        ("observe(), closed action (tier 1)", trace["closed"], GOAL_CLOSED_US),
        ("consensus of 5 x 30 (1 invalid)", cons["time"], GOAL_CONSENSUS_US),
    ]
    info = [
        ("  closed, settling (stage judged)", trace["judged"]),
        ("  closed, settling nothing", trace["unjudged"]),
        ("Evaluator() construction", trace["construct"]),
        ("finish() report", trace["finish"]),
        ("whole trace (observe only)", trace["trace_total"]),
    ]
    out = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],  # before, after: other work skews wall-clock figures
        "seed": args.seed,
        "repeat": args.repeat,
        "warmup": args.warmup,
        "inputs": {
            "milestones": len(bp.milestones), "edges": len(bp.edges), "bindings": len(bp.bindings),
            "minefields": len(bp.minefields), "tools": len(bp.catalog), "events": len(events),
            "closed_actions_per_trace": trace["closed"]["n"] // args.repeat if trace["closed"]["n"] else 0,
        },
        "goals": [
            {"figure": name, "median_us": s["median_us"], "p99_us": s["p99_us"], "goal_us": goal, "ratio": s["median_us"] / goal, "n": s["n"]}
            for name, s, goal in rows
        ],
        "info": {name: s for name, s in info},
        "by_kind": trace["by_kind"],
        "run": {"outcome": trace["outcome"], "halt": trace["halt"], "stages": trace["stages"], "score": trace["score"]},
        "consensus": {k: v for k, v in cons.items() if k != "time"},
    }
    if args.json:
        json.dump(out, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0

    inp = out["inputs"]
    load = out["load_1min"]
    print(f"dynsteer core bench  python {out['python']}  seed {args.seed}  repeat {args.repeat} (+{args.warmup} warm-up)  "
          f"load {load[0]:.2f}->{load[1]:.2f} on {out['cpus']} cpus")
    print(f"blueprint {inp['milestones']} milestones, {inp['edges']} edges, {inp['bindings']} bindings, {inp['minefields']} minefields, "
          f"{inp['tools']} tools; trace {inp['events']} events, {inp['closed_actions_per_trace']} closed actions")
    run = out["run"]
    halted = f"HALTED: {run['halt']}" if run["halt"] else "no halt"
    print(f"run: {run['outcome']}, {run['stages']} stages, score {run['score']:.3f}, {halted}")
    print(f"consensus: {cons['valid']} valid, pruned {cons['pruned']}, result {cons['milestones']} milestones / {cons['edges']} edges")
    print()
    print(f"{'figure':<36} {'median':>10} {'p99':>10} {'goal':>10} {'ratio':>7}")
    for g in out["goals"]:
        print(f"{g['figure']:<36} {_fmt(g['median_us']):>10} {_fmt(g['p99_us']):>10} {_fmt(g['goal_us']):>10} {g['ratio']:>7.2f}")
    for name, s in info:
        print(f"{name:<36} {_fmt(s['median_us']):>10} {_fmt(s['p99_us']):>10} {'-':>10} {'-':>7}")
    return 0


def _fmt(us: float) -> str:
    return f"{us:.1f} us" if us < 1000 else f"{us / 1000:.2f} ms"


if __name__ == "__main__":
    sys.exit(main())
