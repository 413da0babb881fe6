"""What happened in a run, in a few plain sentences: the scenario page and the Markdown report both open with them.

Plain text (each rendering escapes it its own way). Pure.
"""

from __future__ import annotations

from dynsteer_hook.model.records import Report, RoleCost
from dynsteer_hook.model.untrusted import clip


def cost_line(report: Report) -> str | None:
    """What the rollout's models cost, per role and in all, in words (None: a report without a cost record)."""
    c = report.cost
    if c is None:
        return None

    def said(x: RoleCost) -> str:
        calls = "unknown calls" if x.calls is None else f"{x.calls} call(s)"
        tokens = ("tokens unknown" if x.prompt_tokens is None or x.completion_tokens is None
                  else f"{x.prompt_tokens} prompt + {x.completion_tokens} completion tokens")
        dollars = "cost unknown" if x.cost_usd is None else f"${x.cost_usd:.6f}"
        return f"{calls}, {tokens}, {dollars}"

    roles = "; ".join(f"{role}{f' ({x.model})' if x.model else ''}: {said(x)}" for role, x in c.roles.items())
    return f"{said(c.total)} in all" + (f" ({roles})" if roles else " (no model was called)")


def similarity_line(report: Report) -> str:
    """ToolSandbox's similarity in words, saying when it is that of a cut trajectory."""
    n = report.native
    if n is not None and n.unknown is not None:
        return f"unknown ({n.unknown})"
    if n is None or n.similarity is None:
        return "not evaluated by ToolSandbox"
    parts = [f"{n.similarity:.3f}"]
    if n.milestone_similarity is not None or n.minefield_similarity is not None:
        ms = "-" if n.milestone_similarity is None else f"{n.milestone_similarity:.3f}"
        mf = "-" if n.minefield_similarity is None else f"{n.minefield_similarity:.3f}"
        parts.append(f"(milestones {ms}, minefields {mf})")
    if n.cut:
        parts.append("of the cut trajectory: the run was halted, so ToolSandbox scored only what was played")
    return " ".join(parts)


def headline(report: Report) -> list[str]:
    """What happened, in a few plain sentences (texts the template escapes)."""
    out: list[str] = []
    calls = sum(len(s.tools) for s in report.steps)
    failed = sum(s.failed for s in report.steps)
    n = len(report.settled) + len(report.unsettled)
    out.append(f"{report.outcome.capitalize()}: {len(report.settled)} of {n} milestone(s) settled in {report.t} action(s) "
               f"({calls} call(s), {failed} failed); dynsteer score {report.score:.3f}, ToolSandbox similarity {similarity_line(report)}.")
    if report.crash:
        out.append(f"The rollout crashed: {clip(report.crash, 300)}")
    s = report.stop
    if s is not None:
        if s.reason == "fatal_minefield":
            out.append(f"The call of {s.tool} at k={s.k}, t={s.t} was blocked before it executed (it never ran): {clip(s.detail, 300)}")
        else:
            out.append(f"Stopped by {s.reason} at k={s.k}, t={s.t} ({s.dimension}): {clip(s.detail, 300)}")
    for r in report.transcript.repeats if report.transcript else []:
        what = "settling nothing" if not r.settled else "after it had settled its milestone"
        out.append(f"The agent made the same call {r.count} times in a row (t={r.t_first} to {r.t_last}), {what}: "
                   f"{r.tool}({clip(r.arguments, 120)}).")
    if not report.stages:
        todo = ", ".join(report.unsettled[:6]) + (" and more" if len(report.unsettled) > 6 else "")
        out.append(f"No milestone settled; still to do: {todo or 'nothing'}." + (f" First error at k={report.first_error.k}, "
                   f"t={report.first_error.t}: {clip(report.first_error.detail, 200)}" if report.first_error else ""))
    return out
