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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from dynsteer_hook.files.inputs import load_json_input
from dynsteer_hook.files.names import NameBook
from dynsteer_hook.model.errors import DynsteerError
from dynsteer_hook.report.compare_page import markdown_rows, md_row, replay_href, scenario_table
from dynsteer_hook.toolsandbox.offline.metaeval import (
    PairKey,
    PairTest,
    all_pairs,
    discriminability,
    kendall_tau,
    repeat_spread,
    saturation,
    stop_table,
)
from dynsteer_hook.toolsandbox.offline.replay import ReplayOptions, _is_run, replay_runs

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
        _, data = load_json_input(manifest, "manifest", 'write {"agents": {NAME: [RUN_DIR, ...]}}', DynsteerError)
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
    requests: dict[str, int] = {}
    tokens, cost = 0, 0.0
    for r in rows:
        u = r["judge_usage"]
        for tier, n in u["calls_by_tier"].items():
            calls[tier] = calls.get(tier, 0) + n
        for tier, n in u.get("llm_requests_by_tier", {}).items():
            requests[tier] = requests.get(tier, 0) + n
        tokens += u["tokens"]
        cost += u["cost_usd"]
    return {"calls_by_tier": dict(sorted(calls.items())), "calls": sum(calls.values()),
            "llm_requests_by_tier": dict(sorted(requests.items())), "llm_requests": sum(requests.values()),
            "tokens": tokens, "cost_usd": round(cost, 6)}


def compare(agents: Sequence[AgentRuns], options: ReplayOptions, out: Path, *, processes: int = 1, eps: float = 0.01,
            alpha: float = 0.01, progress: bool = False, engine: str = "local", ray_address: str | None = None,
            against_all_tier3: bool = False) -> dict[str, Any]:
    """Replay every agent's repeats into ``out/replays`` and compute the comparison.

    With ``against_all_tier3`` every repeat is replayed a second time with every stage forced to Tier 3
    (``min_tier`` 3, into ``out/all_tier3``), and ``routing`` says what the adaptive ladder spent
    against it per agent and the Kendall tau between the two rankings of the agents.

    Raises:
        DynsteerError: An agent has nothing to replay, or the all-Tier-3 baseline is asked for without Tier 3 judges.
    """
    if against_all_tier3 and (options.config.max_tier < 3 or options.config.min_tier >= 3):
        raise DynsteerError("the all-Tier-3 baseline needs the adaptive ladder up to Tier 3: pass --judge-model (and no --max-tier "
                            "below 3 or --min-tier 3)")
    scores: dict[str, dict[str, dict[PairKey, float]]] = {e: {} for e in EVALUATORS}
    per_agent: dict[str, dict[str, Any]] = {}
    stops: list[dict[str, Any]] = []
    cells: list[dict[str, Any]] = []
    book = NameBook()
    for agent in agents:
        rows: list[dict[str, Any]] = []
        repeat_means: dict[str, list[float]] = {e: [] for e in EVALUATORS}
        skipped = 0
        # The name is any text (a manifest key): its folder is its safe form, the name itself stays in compare.json.
        home = book.claim(agent.name)
        for r, folder in enumerate(agent.repeats):
            summary = replay_runs([folder], options, out / "replays" / home / f"repeat_{r}", processes, progress,
                                  engine=engine, ray_address=ray_address, label=f"dynsteer compare: {home[:40]} repeat {r}")
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
                cells.append({"agent": agent.name, "repeat": r, "scenario": x["scenario"], "score": x["score"], "native": x["native_similarity"],
                              "stop": x["stop"]["reason"] if x["virtual_stop"] is not None else None,
                              "href": replay_href(home, r, x["folder"])})
                if x["virtual_stop"] is not None:
                    stops.append({"agent": agent.name, "task": x["scenario"], "reason": x["stop"]["reason"], **x["virtual_stop"]})
        if not rows:
            raise DynsteerError(f"agent {agent.name!r}: no scenario could be replayed (see the skipped reasons under {out / 'replays' / home})")
        entry: dict[str, Any] = {"repeats": len(agent.repeats), "trajectories": len(rows), "skipped": skipped, "folder": home}
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
    result["per_scenario"] = scenario_table(cells, list(per_agent), eps)
    result["distributions"] = {
        a: {**{e: sorted(scores[e].get(a, {}).values()) for e in EVALUATORS},
            "stop_progress": sorted(s["stop_progress"] for s in stops if s["agent"] == a)}
        for a in per_agent
    }
    if against_all_tier3:
        forced = replace(options, config=options.config.with_overrides(min_tier=3, max_tier=3))
        baseline = compare(agents, forced, out / "all_tier3", processes=processes, eps=eps, alpha=alpha, progress=progress,
                           engine=engine, ray_address=ray_address)
        result["routing"] = routing_saving(result, baseline)
    return result


def _share(part: float, whole: float) -> float | None:
    return round(part / whole, 6) if whole else None


def routing_saving(adaptive: Mapping[str, Any], forced: Mapping[str, Any]) -> dict[str, Any]:
    """The adaptive ladder against every stage at Tier 3: judge calls, tokens and cost per agent and in all (with the
    adaptive share of each), the Kendall tau between the agents' DynSTEER rankings, and both DS(eps)."""
    keys = ("llm_requests", "tokens", "cost_usd")
    agents: dict[str, Any] = {}
    for name, a in adaptive["agents"].items():
        ja, jf = a["judge"], forced["agents"][name]["judge"]
        agents[name] = {"adaptive": {k: ja[k] for k in keys}, "all_tier3": {k: jf[k] for k in keys},
                        "call_share": _share(ja["llm_requests"], jf["llm_requests"]), "token_share": _share(ja["tokens"], jf["tokens"]),
                        "dynsteer_mean": {"adaptive": a["dynsteer"]["mean"], "all_tier3": forced["agents"][name]["dynsteer"]["mean"]}}
    total = {side: {k: sum(v[side][k] for v in agents.values()) for k in keys} for side in ("adaptive", "all_tier3")}
    for side in total:
        total[side]["cost_usd"] = round(total[side]["cost_usd"], 6)
    tau = kendall_tau({n: v["dynsteer_mean"]["adaptive"] for n, v in agents.items()}, {n: v["dynsteer_mean"]["all_tier3"] for n, v in agents.items()})
    return {
        "agents": agents, **total,
        "call_share": _share(total["adaptive"]["llm_requests"], total["all_tier3"]["llm_requests"]),
        "token_share": _share(total["adaptive"]["tokens"], total["all_tier3"]["tokens"]),
        "cost_share": _share(total["adaptive"]["cost_usd"], total["all_tier3"]["cost_usd"]),
        "kendall_tau": None if tau is None else round(tau, 6),
        "ds": {"adaptive": adaptive["evaluators"]["dynsteer"]["discriminability"]["ds"],
               "all_tier3": forced["evaluators"]["dynsteer"]["discriminability"]["ds"]},
    }


def _pair(t: PairTest) -> dict[str, Any]:
    return {"a": t.a, "b": t.b, "mean_a": round(t.mean_a, 6), "mean_b": round(t.mean_b, 6), "paired": t.paired,
            "p_value": None if t.p_value is None else float(f"{t.p_value:.6g}"), "beyond_margin": t.beyond_margin, "significant": t.significant}


def render_markdown(result: Mapping[str, Any], *, per_scenario: bool = True) -> str:
    """Tables 1 and 3, the pair tests and (``per_scenario``) the per-scenario table as Markdown, every cell escaped."""
    eps, alpha = result["epsilon"], result["alpha"]
    lines = ["# DynSTEER comparison", "", f"Margin eps = {eps}, significance alpha = {alpha} (paired Wilcoxon signed-rank).", "",
             "## Table 1: scores per agent", "",
             "| agent | repeats | trajectories | DynSTEER mean | std | native mean | std | replay stop rate | saturation DS / native | judge calls | tokens | cost USD |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, a in result["agents"].items():
        d, n = a["dynsteer"], a["native"]
        lines.append(md_row([name, a["repeats"], a["trajectories"], f"{d['mean']:.4f}", f"{d['std_over_repeats']:.4f}", f"{n['mean']:.4f}",
                             f"{n['std_over_repeats']:.4f}", f"{a['stop_rate']:.2%}", f"{d['saturation']:.2%} / {n['saturation']:.2%}",
                             a["judge"]["calls"], a["judge"]["tokens"], f"{a['judge']['cost_usd']:.6f}"]))
    lines += ["", "## Discriminability (eq. 10)", "", "| evaluator | mu | sigma_pop | CV | pairs beyond eps | significant pairs | DS(eps) | saturation |",
              "|---|---|---|---|---|---|---|---|"]
    for e, v in result["evaluators"].items():
        ds = v["discriminability"]
        lines.append(md_row([e, f"{ds['mu']:.4f}", f"{ds['sigma_pop']:.4f}", f"{ds['cv']:.4f}", f"{ds['beyond_margin']}/{ds['pairs']}",
                             f"{ds['significant']}/{ds['pairs']}", f"{ds['ds']:.4f}", f"{v['saturation']:.2%}"]))
    lines += ["", "## Agent pairs", "", "| evaluator | pair | means | paired n | p | separated |", "|---|---|---|---|---|---|"]
    for e, v in result["evaluators"].items():
        for p in v["pairs"]:
            pv = "-" if p["p_value"] is None else f"{p['p_value']:.3g}"
            lines.append(md_row([e, f"{p['a']} vs {p['b']}", f"{p['mean_a']:.4f} / {p['mean_b']:.4f}", p["paired"], pv,
                                 "yes" if p["significant"] else "no"]))
    lines += ["", "## Table 3: virtual stops per criterion", "", "| criterion | halted runs | unique tasks | mean stop progress | mean saved progress |",
              "|---|---|---|---|---|"]
    for reason, s in result["stops_by_criterion"].items():
        lines.append(md_row([reason, s["halted_runs"], s["unique_tasks"], f"{s['mean_stop_progress']:.4f}", f"{s['mean_saved_progress']:.4f}"]))
    if not result["stops_by_criterion"]:
        lines.append("| (no stop) | 0 | 0 | - | - |")
    lines += _routing_lines(result.get("routing"))
    if per_scenario and result.get("per_scenario"):
        lines += ["", "## Per scenario", "", "Scenarios where the evaluators rank two agents in opposite orders (beyond eps) first; "
                  "each report link is one repeat's replayed report.", ""]
        lines += markdown_rows(result["per_scenario"], list(result["agents"]))
    return "\n".join(lines) + "\n"


def _routing_lines(routing: Mapping[str, Any] | None) -> list[str]:
    """The section on the adaptive ladder against every stage at Tier 3 (none without the baseline)."""
    if not routing:
        return []

    def pct(v: float | None) -> str:
        return "-" if v is None else f"{v:.1%}"

    tau = "-" if routing["kendall_tau"] is None else f"{routing['kendall_tau']:.3f}"
    lines = ["", "## Adaptive ladder against all stages at Tier 3", "",
             f"LLM judge requests {routing['adaptive']['llm_requests']} against {routing['all_tier3']['llm_requests']} "
             f"({pct(routing['call_share'])}), "
             f"tokens {pct(routing['token_share'])}, cost {pct(routing['cost_share'])}; Kendall tau between the agent rankings {tau}; "
             f"DS(eps) {routing['ds']['adaptive']:.4f} adaptive, {routing['ds']['all_tier3']:.4f} all Tier 3.", "",
             "| agent | LLM requests adaptive | all Tier 3 | share | tokens adaptive | tokens all Tier 3 | cost adaptive | cost all Tier 3 | "
             "DynSTEER mean adaptive | all Tier 3 |", "|---|---|---|---|---|---|---|---|---|---|"]
    for name, v in routing["agents"].items():
        a, f = v["adaptive"], v["all_tier3"]
        lines.append(md_row([name, a["llm_requests"], f["llm_requests"], pct(v["call_share"]), a["tokens"], f["tokens"], f"{a['cost_usd']:.6f}",
                             f"{f['cost_usd']:.6f}", f"{v['dynsteer_mean']['adaptive']:.4f}", f"{v['dynsteer_mean']['all_tier3']:.4f}"]))
    return lines


def render_csv(result: Mapping[str, Any]) -> str:
    """One row per agent."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["agent", "repeats", "trajectories", "dynsteer_mean", "dynsteer_std", "dynsteer_saturation", "native_mean", "native_std",
                "native_saturation", "stop_rate", "mean_saved_progress_on_halted", "judge_calls", "judge_tokens", "judge_cost_usd",
                "judge_llm_requests"])
    for name, a in result["agents"].items():
        d, n = a["dynsteer"], a["native"]
        w.writerow([name, a["repeats"], a["trajectories"], d["mean"], d["std_over_repeats"], d["saturation"], n["mean"], n["std_over_repeats"],
                    n["saturation"], a["stop_rate"], a["mean_saved_progress_on_halted"], a["judge"]["calls"], a["judge"]["tokens"], a["judge"]["cost_usd"],
                    a["judge"]["llm_requests"]])
    return buf.getvalue()
