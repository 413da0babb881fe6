"""``dynsteer compare``: replays of several agents x repeats, meta-evaluated (paper Tables 1 and 3).

Each agent is a folder of recorded runs: the folder itself when it is one run (one repeat),
or its sub-folders, one per repeat (each a ToolSandbox run folder, or an output base holding
one); a manifest can name the folders instead. Every repeat is replayed with the same
options, then per agent: the DynSTEER and native (ToolSandbox similarity) mean score with its
spread over repeats, the replay stop rate, the share of exact 1.0 scores, and the judge
calls, tokens and cost; per agent pair and evaluator: a paired Wilcoxon signed-rank test over
the (task, repeat) trajectories both agents have; per evaluator: DS(eps) of eq. 10; and the
stops per criterion (Table 3).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from dynsteer_hook.errors import DynsteerError
from dynsteer_hook.metaeval import (
    PairKey,
    PairTest,
    all_pairs,
    discriminability,
    repeat_spread,
    saturation,
    stop_table,
)
from dynsteer_hook.toolsandbox.replay import ReplayOptions, _is_run, replay_runs

EVALUATORS = ("dynsteer", "native")


@dataclass(frozen=True)
class AgentRuns:
    """One agent's recorded runs, one folder per repeat."""

    name: str
    repeats: tuple[Path, ...]


def _repeats(folder: Path) -> tuple[Path, ...]:
    if _is_run(folder):
        return (folder,)
    subs = sorted(p for p in folder.iterdir() if p.is_dir())
    repeats = tuple(p for p in subs if _is_run(p) or any(_is_run(q) for q in p.iterdir() if q.is_dir()))
    if not repeats:
        raise DynsteerError(f"{folder} holds no recorded run; give each agent a folder of ToolSandbox runs, one sub-folder per repeat")
    return repeats


def agents_from(specs: Sequence[str], manifest: Path | None = None) -> list[AgentRuns]:
    """Agents from ``NAME=DIR`` (or ``DIR``, named after the folder) arguments and an optional manifest.

    A manifest is JSON: ``{"agents": {"NAME": ["RUN_DIR", ...], ...}}`` (relative paths are
    relative to the manifest's folder).

    Raises:
        DynsteerError: A folder or the manifest is missing or malformed, or a name repeats (one sentence).
    """
    agents: list[AgentRuns] = []
    for spec in specs:
        name, sep, path = spec.partition("=")
        folder = Path(path if sep else spec)
        name = name if sep else folder.name
        if not folder.is_dir():
            raise DynsteerError(f"agent folder {folder} does not exist; pass NAME=DIR with a folder of recorded runs")
        agents.append(AgentRuns(name, _repeats(folder)))
    if manifest is not None:
        try:
            data = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            raise DynsteerError(f"manifest {manifest} cannot be read as JSON ({type(exc).__name__}); write {{\"agents\": {{NAME: [RUN_DIR, ...]}}}}") from None
        table = data.get("agents") if isinstance(data, dict) else None
        if not isinstance(table, dict) or not all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in table.values()):
            raise DynsteerError(f"manifest {manifest} must be {{\"agents\": {{NAME: [RUN_DIR, ...]}}}}")
        for name, folders in table.items():
            paths = tuple((manifest.parent / f) if not Path(f).is_absolute() else Path(f) for f in folders)
            missing = [str(p) for p in paths if not p.is_dir()]
            if missing or not paths:
                raise DynsteerError(f"manifest {manifest}: agent {name!r} names missing folders {missing[:3] or '(none given)'}")
            agents.append(AgentRuns(str(name), paths))
    names = [a.name for a in agents]
    if len(set(names)) != len(names):
        raise DynsteerError(f"agent names repeat ({sorted({n for n in names if names.count(n) > 1})}); name them with NAME=DIR")
    if len(agents) < 2:
        raise DynsteerError("compare needs at least two agents (NAME=DIR ...)")
    return agents


def _usage(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    calls: dict[str, int] = {}
    tokens, cost = 0, 0.0
    for r in rows:
        u = r["judge_usage"]
        for tier, n in u["calls_by_tier"].items():
            calls[tier] = calls.get(tier, 0) + n
        tokens += u["tokens"]
        cost += u["cost_usd"]
    return {"calls_by_tier": dict(sorted(calls.items())), "calls": sum(calls.values()), "tokens": tokens, "cost_usd": round(cost, 6)}


def compare(agents: Sequence[AgentRuns], options: ReplayOptions, out: Path, *, processes: int = 1, eps: float = 0.01,
            alpha: float = 0.01, progress: bool = False, engine: str = "local", ray_address: str | None = None) -> dict[str, Any]:
    """Replay every agent's repeats into ``out/replays`` and compute the comparison."""
    scores: dict[str, dict[str, dict[PairKey, float]]] = {e: {} for e in EVALUATORS}
    per_agent: dict[str, dict[str, Any]] = {}
    stops: list[dict[str, Any]] = []
    for agent in agents:
        rows: list[dict[str, Any]] = []
        repeat_means: dict[str, list[float]] = {e: [] for e in EVALUATORS}
        skipped = 0
        for r, folder in enumerate(agent.repeats):
            summary = replay_runs([folder], options, out / "replays" / agent.name / f"repeat_{r}", processes, progress,
                                  engine=engine, ray_address=ray_address)
            skipped += summary["skipped"]
            done = summary["per_scenario"]
            rows += done
            for e in EVALUATORS:
                vals = [float(x["score"] if e == "dynsteer" else x["native_similarity"]) for x in done if e == "dynsteer" or x["native_similarity"] is not None]
                if vals:
                    repeat_means[e].append(sum(vals) / len(vals))
            for x in done:
                scores["dynsteer"].setdefault(agent.name, {})[(x["scenario"], r)] = float(x["score"])
                if x["native_similarity"] is not None:
                    scores["native"].setdefault(agent.name, {})[(x["scenario"], r)] = float(x["native_similarity"])
                if x["virtual_stop"] is not None:
                    stops.append({"agent": agent.name, "task": x["scenario"], "reason": x["stop"]["reason"], **x["virtual_stop"]})
        if not rows:
            raise DynsteerError(f"agent {agent.name!r}: no scenario could be replayed (see the skipped reasons under {out / 'replays' / agent.name})")
        entry: dict[str, Any] = {"repeats": len(agent.repeats), "trajectories": len(rows), "skipped": skipped}
        for e in EVALUATORS:
            mean, std = repeat_spread(repeat_means[e])
            vals = list(scores[e].get(agent.name, {}).values())
            entry[e] = {"mean": round(mean, 6), "std_over_repeats": round(std, 6), "saturation": round(saturation(vals), 6), "n": len(vals)}
        halted = [x for x in rows if x["virtual_stop"] is not None]
        entry["stop_rate"] = round(len(halted) / len(rows), 6)
        entry["mean_saved_progress_on_halted"] = round(sum(x["virtual_stop"]["saved_progress"] for x in halted) / len(halted), 6) if halted else None
        entry["judge"] = _usage(rows)
        per_agent[agent.name] = entry
    result: dict[str, Any] = {"agents": per_agent, "epsilon": eps, "alpha": alpha, "evaluators": {}}
    for e in EVALUATORS:
        present = {a: s for a, s in scores[e].items() if s}
        tests = all_pairs(present, eps, alpha)
        means = {a: per_agent[a][e]["mean"] for a in present}
        ds = discriminability(means, tests)
        result["evaluators"][e] = {
            "discriminability": {k: (round(v, 6) if isinstance(v, float) else v) for k, v in asdict(ds).items()},
            "pairs": [_pair(t) for t in tests],
            "saturation": round(saturation([v for s in present.values() for v in s.values()]), 6),
        }
    result["stops_by_criterion"] = stop_table(stops)
    result["distributions"] = {
        a: {**{e: sorted(scores[e].get(a, {}).values()) for e in EVALUATORS},
            "stop_progress": sorted(s["stop_progress"] for s in stops if s["agent"] == a)}
        for a in per_agent
    }
    return result


def _pair(t: PairTest) -> dict[str, Any]:
    return {"a": t.a, "b": t.b, "mean_a": round(t.mean_a, 6), "mean_b": round(t.mean_b, 6), "paired": t.paired,
            "p_value": None if t.p_value is None else float(f"{t.p_value:.6g}"), "beyond_margin": t.beyond_margin, "significant": t.significant}


def render_markdown(result: Mapping[str, Any]) -> str:
    """Tables 1 and 3 and the pair tests as Markdown."""
    eps, alpha = result["epsilon"], result["alpha"]
    lines = ["# DynSTEER comparison", "", f"Margin eps = {eps}, significance alpha = {alpha} (paired Wilcoxon signed-rank).", "",
             "## Table 1: scores per agent", "",
             "| agent | repeats | trajectories | DynSTEER mean | std | native mean | std | replay stop rate | saturation DS / native | judge calls | tokens | cost USD |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, a in result["agents"].items():
        d, n = a["dynsteer"], a["native"]
        lines.append(f"| {name} | {a['repeats']} | {a['trajectories']} | {d['mean']:.4f} | {d['std_over_repeats']:.4f} | {n['mean']:.4f} | "
                     f"{n['std_over_repeats']:.4f} | {a['stop_rate']:.2%} | {d['saturation']:.2%} / {n['saturation']:.2%} | {a['judge']['calls']} | "
                     f"{a['judge']['tokens']} | {a['judge']['cost_usd']:.6f} |")
    lines += ["", "## Discriminability (eq. 10)", "", "| evaluator | mu | sigma_pop | CV | pairs beyond eps | significant pairs | DS(eps) | saturation |",
              "|---|---|---|---|---|---|---|---|"]
    for e, v in result["evaluators"].items():
        ds = v["discriminability"]
        lines.append(f"| {e} | {ds['mu']:.4f} | {ds['sigma_pop']:.4f} | {ds['cv']:.4f} | {ds['beyond_margin']}/{ds['pairs']} | "
                     f"{ds['significant']}/{ds['pairs']} | {ds['ds']:.4f} | {v['saturation']:.2%} |")
    lines += ["", "## Agent pairs", "", "| evaluator | pair | means | paired n | p | separated |", "|---|---|---|---|---|---|"]
    for e, v in result["evaluators"].items():
        for p in v["pairs"]:
            pv = "-" if p["p_value"] is None else f"{p['p_value']:.3g}"
            lines.append(f"| {e} | {p['a']} vs {p['b']} | {p['mean_a']:.4f} / {p['mean_b']:.4f} | {p['paired']} | {pv} | {'yes' if p['significant'] else 'no'} |")
    lines += ["", "## Table 3: virtual stops per criterion", "", "| criterion | halted runs | unique tasks | mean stop progress | mean saved progress |",
              "|---|---|---|---|---|"]
    for reason, s in result["stops_by_criterion"].items():
        lines.append(f"| {reason} | {s['halted_runs']} | {s['unique_tasks']} | {s['mean_stop_progress']:.4f} | {s['mean_saved_progress']:.4f} |")
    if not result["stops_by_criterion"]:
        lines.append("| (no stop) | 0 | 0 | - | - |")
    return "\n".join(lines) + "\n"


def render_csv(result: Mapping[str, Any]) -> str:
    """One row per agent."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["agent", "repeats", "trajectories", "dynsteer_mean", "dynsteer_std", "dynsteer_saturation", "native_mean", "native_std",
                "native_saturation", "stop_rate", "mean_saved_progress_on_halted", "judge_calls", "judge_tokens", "judge_cost_usd"])
    for name, a in result["agents"].items():
        d, n = a["dynsteer"], a["native"]
        w.writerow([name, a["repeats"], a["trajectories"], d["mean"], d["std_over_repeats"], d["saturation"], n["mean"], n["std_over_repeats"],
                    n["saturation"], a["stop_rate"], a["mean_saved_progress_on_halted"], a["judge"]["calls"], a["judge"]["tokens"], a["judge"]["cost_usd"]])
    return buf.getvalue()
