"""The Markdown rendering of one run's report, safe to show whatever the agent, the user or a tool wrote."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dynsteer_hook.model.records import Report, TranscriptCall
from dynsteer_hook.model.untrusted import clip
from dynsteer_hook.model.untrusted import for_markdown as md
from dynsteer_hook.report.story import cost_line, headline, similarity_line

PIECE = 400
"""Characters of one message, argument list, result or error the Markdown transcript shows (the HTML page shows more)."""


def _fmt(x: float) -> str:
    return f"{x:.3f}"


def cell(value: Any, limit: int = 300) -> str:
    """One table cell: every cell of every table goes through here. The value (any text, an agent's or a tool's too) on one
    line, clipped, with ``|``, HTML tags, and all other Markdown punctuation escaped; an empty value is ``-``."""
    if value is None or value == "" or value == []:
        return "-"
    return md(value if not isinstance(value, (list, tuple)) else ", ".join(str(v) for v in value), limit)


def row(*cells: Any, limit: int = 300) -> str:
    """One table row of raw values, each escaped by ``cell``."""
    return "| " + " | ".join(cell(c, limit) for c in cells) + " |"


def _list(ids: Sequence[str], limit: int = 40) -> str:
    """Raw text of a list of names (escaped later, by ``cell``)."""
    return ", ".join(ids[:limit]) + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


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
    lines += [" ".join(md(sentence, 600) for sentence in headline(report)), ""]
    lines.append(f"- Outcome: **{md(report.outcome)}**; score {_fmt(report.score)}; k={report.k} raw events, t={report.t} closed actions")
    lines.append(f"- ToolSandbox similarity: {md(similarity_line(report), 300)}")
    cost = cost_line(report)
    if cost is not None:
        lines.append(f"- Cost: {md(cost, 600)}")
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
    lines += _task(report) + _stages(report) + _faults(report) + _steps(report) + _trace_faults(report) + _transcript(report)
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
            dims = ["-" if st.scores.get(d) is None else _fmt(st.scores[d]) for d in ("correctness", "efficiency", "safety", "tool_compliance")]
            tiers = ",".join(f"{d[:4]}:{u.used}" for d, u in st.tiers.items())
            lines.append(row(st.t, st.milestone, f"[{st.window.t_start},{st.window.t_end}]", f"[{st.window.k_start},{st.window.k_end}]",
                             _fmt(st.composite), *dims, tiers))
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
            lines.append(row(fr.k, fr.t, fr.tool, fr.dimension, fr.cause, fr.stage, "yes" if fr.recovered else "no", fr.detail))
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
            notes.append("out of order: " + _list(sp.out_of_order))
        if sp.ungrounded:
            notes.append("never shown to the agent: " + ", ".join(v[:120] for v in sp.ungrounded[:5]))
        lines.append(row(sp.t, f"{sp.k_start}-{sp.k_end}", sp.kind, _list(sp.tools, 10), _list(sp.settled), "; ".join(notes), limit=600))
    s = report.stop
    if s is not None and s.reason == "fatal_minefield":
        lines.append(row(s.t, s.k, "blocked", s.tool, "", f"blocked before it executed (never ran): {s.minefield}"))
    return lines


def _trace_faults(report: Report) -> list[str]:
    """The calls and results that did not pair up, when there are any."""
    lines: list[str] = []
    if report.trace_faults:
        lines += ["", "## Trace faults", "", f"{report.trace_fault_count} call/result pairing fault(s); evaluation went on.", ""]
        lines.append("| k | kind | call | detail |")
        lines.append("|---|---|---|---|")
        for tf in report.trace_faults:
            lines.append(row(tf.k, tf.kind, tf.call_id[:80], tf.detail))
    return lines


def _task(report: Report) -> list[str]:
    """What the user asked and the tools the agent was offered."""
    tr = report.transcript
    if tr is None:
        return []
    lines = ["", "## Task", "", f"The user asked: {md(tr.request, PIECE) if tr.request is not None else '(no user message)'}", ""]
    if tr.tools:
        lines += ["| tool offered to the agent | description |", "|---|---|"] + [row(t.name, t.description) for t in tr.tools]
    return lines


def _faults_text(faults: Sequence[str]) -> str:
    return "; ".join(clip(f, PIECE) for f in faults[:5]) + (f" and {len(faults) - 5} more" if len(faults) > 5 else "")


def _call_text(c: TranscriptCall) -> str:
    what = f"{clip(c.tool, 120)}({clip(c.arguments, PIECE)})"
    if c.status == "blocked":
        return f"{what} BLOCKED before it executed (never ran), stopped by {clip(c.rule or '', PIECE)}"
    if c.status == "rejected":
        return f"{what} refused: {clip(c.rule or '', PIECE)}"
    if c.error is not None:
        return f"{what} → error: {clip(c.error, PIECE)}"
    return f"{what} → {clip(c.result, PIECE)}" if c.result is not None else f"{what} → no result"


def _transcript(report: Report) -> list[str]:
    """Every message and call in order, with its clocks, the stage it closed and its faults; parallel calls share their t."""
    tr = report.transcript
    if tr is None:
        return []
    lines = ["", "## Transcript", ""]
    if tr.entry_count > len(tr.entries):
        lines += [f"The first {len(tr.entries)} of {tr.entry_count} entries.", ""]
    lines += ["| k | t | who | what | closed stage | faults |", "|---|---|---|---|---|---|"]
    who = {"user": "user", "agent": "agent", "system": "system", "action": "agent", "user_call": "user", "orphan_result": "result"}
    for e in tr.entries:
        t = "-" if e.t is None else e.t
        if e.text is not None:
            text = clip(e.text, PIECE)
            lines.append(row(e.k, t, who[e.kind], text if e.kind != "orphan_result" else f"result without a call: {text}",
                             _list(e.stages) if not e.calls else "", _faults_text(e.faults) if not e.calls else "", limit=1600))
        n = len(e.calls)
        for i, c in enumerate(e.calls):
            tag = f"call {i + 1} of {n} in parallel: " if n > 1 else "call: "
            last = i == n - 1
            lines.append(row(c.k, t, who[e.kind], tag + _call_text(c), _list(e.stages) if last else "",
                             _faults_text(c.faults + (e.faults if last else [])), limit=1600))
    return lines
