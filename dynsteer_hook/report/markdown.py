"""The Markdown rendering of one run's report, safe to show whatever the agent, the user or a tool wrote."""

from __future__ import annotations

from dynsteer_hook.model.records import Report
from dynsteer_hook.model.untrusted import for_markdown as md


def _fmt(x: float) -> str:
    return f"{x:.3f}"


def _ids(ids: list[str], limit: int = 40) -> str:
    shown = ", ".join(md(i, 120) for i in ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def _run_notes(report: Report) -> list[str]:
    """How the run ended and what its files miss, beyond the evaluator's outcome."""
    notes = []
    if report.crash:
        notes.append(f"- Crash: {md(report.crash, 300)}")
    if report.outcome == "interrupted":
        notes.append("- Interrupted (Ctrl-C) before the rollout ended; the stages below are those seen until then")
    if report.blueprint_stale:
        notes.append("- Blueprint is **stale**: compiled from another version of this task's public view")
    for log in report.incomplete_logs:
        notes.append(f"- Log {md(log.file, 200)} is **incomplete** from record {log.from_record} on ({md(log.reason, 200)})")
    return notes


def render_markdown(report: Report) -> str:
    """A readable Markdown rendering of a report.

    Every text field may carry what an agent, a user or a tool wrote (tool names, argument
    values in details and rationales, exception text), so each goes through ``md``: one
    line, clipped, with Markdown punctuation escaped. Nothing in it can end a table cell,
    start a heading, list or code block, or make a link, image or HTML.
    """
    lines = [f"# DynSTEER report: {md(report.task, 200) if report.task else '(unnamed task)'}", ""]
    lines.append(f"- Outcome: **{md(report.outcome)}**; score {_fmt(report.score)}; k={report.k} raw events, t={report.t} closed actions")
    lines += _run_notes(report)
    lines.append(f"- Settled: {_ids(report.settled) or 'none'}")
    lines.append(f"- Unsettled: {_ids(report.unsettled) or 'none'}")
    if report.stop:
        s = report.stop
        lines.append(
            f"- Stop: **{md(s.reason, 80)}** at k={s.k}, t={s.t}; anchor {md(s.anchor, 120)}; causal dimension {md(s.dimension, 40)}; "
            f"frontier {_ids(s.frontier) or 'empty'}"
        )
        lines.append(f"  - {md(s.detail, 400)}")
    if report.first_error:
        f = report.first_error
        how = f", {md(f.cause, 40)}" if f.cause else ""
        lines.append(f"- First error: k={f.k}, t={f.t} (stage {md(f.stage, 120) if f.stage else '-'}, {md(f.dimension, 40)}{how}): "
                     f"{md(f.detail, 400)}")
    if report.stage_error and report.stage_error != report.first_error:
        f = report.stage_error
        lines.append(f"- First step of the failing stage or the stop: k={f.k}, t={f.t} (stage {md(f.stage, 120) if f.stage else '-'}, "
                     f"{md(f.dimension, 40)}): {md(f.detail, 400)}")
    if report.tail:
        lines.append(f"- Tail (actions outside every stage window): t={report.tail.steps}; composite {_fmt(report.tail.composite)}, "
                     f"penalty {_fmt(report.tail.penalty)}: {md(report.tail.rationale, 300)}")
    if report.pending_calls:
        lines.append(f"- Calls without a result: {_ids(report.pending_calls)}")
    lines += _stages(report) + _faults(report) + _steps(report) + _trace_faults(report)
    return "\n".join(lines) + "\n"


def _stages(report: Report) -> list[str]:
    """The stages' table and their rationale."""
    lines = ["", "## Stages", ""]
    if not report.stages:
        lines.append("No milestone settled.")
    else:
        lines.append("| t | milestone | window t | window k | S_t | correctness | efficiency | safety | tool_compliance | tiers |")
        lines.append("|---|---|---|---|---|---|---|---|---|---|")
        for st in report.stages:
            dims = [st.scores.get(d) for d in ("correctness", "efficiency", "safety", "tool_compliance")]
            tiers = ",".join(f"{md(d[:4])}:{u.used}" for d, u in st.tiers.items())
            lines.append(
                f"| {st.t} | {md(st.milestone, 120)} | [{st.window.t_start},{st.window.t_end}] | [{st.window.k_start},{st.window.k_end}] "
                f"| {_fmt(st.composite)} | " + " | ".join("-" if v is None else _fmt(v) for v in dims) + f" | {tiers} |"
            )
        lines += ["", "### Rationale", ""]
        for st in report.stages:
            lines.append(f"- **{md(st.milestone, 120)}** (t={st.t}, anchor {md(st.window.anchor, 120)})")
            for d, text in st.rationale.items():
                lines.append(f"  - {md(d, 40)}: {md(text, 400)}")
    return lines


def _faults(report: Report) -> list[str]:
    """The faulty steps, when there are any."""
    lines: list[str] = []
    if report.faults:
        lines += ["", "## Faulty steps", "", f"{report.fault_count} faulty call(s) or step(s), in order.", ""]
        lines.append("| k | t | tool | dimension | cause | stage | recovered | detail |")
        lines.append("|---|---|---|---|---|---|---|---|")
        for fr in report.faults:
            lines.append(
                f"| {fr.k} | {fr.t} | {md(fr.tool, 80) if fr.tool else '-'} | {md(fr.dimension, 40)} | {md(fr.cause, 40)} "
                f"| {md(fr.stage, 120) if fr.stage else '-'} | {'yes' if fr.recovered else 'no'} | {md(fr.detail, 300)} |"
            )
    return lines


def _steps(report: Report) -> list[str]:
    """One row per closed action."""
    lines = ["", "## Steps", "", "| t | k | kind | tools | settled | notes |", "|---|---|---|---|---|---|"]
    for sp in report.steps:
        notes = []
        if sp.failed:
            notes.append(f"{sp.failed} failed")
        if sp.structural:
            notes.append(f"{sp.structural} malformed")
        if sp.out_of_order:
            notes.append("out of order: " + _ids(sp.out_of_order))
        if sp.ungrounded:
            notes.append("never shown to the agent: " + ", ".join(md(v, 120) for v in sp.ungrounded[:5]))
        tools = ", ".join(md(t, 80) for t in sp.tools[:10]) + (f" and {len(sp.tools) - 10} more" if len(sp.tools) > 10 else "")
        lines.append(
            f"| {sp.t} | {sp.k_start}-{sp.k_end} | {md(sp.kind, 20)} | {tools or '-'} | {_ids(sp.settled) or '-'} | {'; '.join(notes) or '-'} |"
        )
    return lines


def _trace_faults(report: Report) -> list[str]:
    """The calls and results that did not pair up, when there are any."""
    lines: list[str] = []
    if report.trace_faults:
        lines += ["", "## Trace faults", "", f"{report.trace_fault_count} call/result pairing fault(s); evaluation went on.", ""]
        lines.append("| k | kind | call | detail |")
        lines.append("|---|---|---|---|")
        for tf in report.trace_faults:
            lines.append(f"| {tf.k} | {md(tf.kind, 40)} | {md(tf.call_id, 80)} | {md(tf.detail, 300)} |")
    return lines
