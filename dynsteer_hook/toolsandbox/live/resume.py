"""Resuming a run in its own folder (``dynsteer run --resume RUN_DIR``).

A run writes, before its first rollout, a manifest (``dynsteer_run.json``) of everything that
changes its results: the roles and their models, the evaluator, the evaluator's thresholds, the
judges, the rollout limits, the scenarios chosen, and the content of each blueprint and of the
script. Each scenario that finishes writes its result record (``dynsteer_result.json``: its entry
of ``per_scenario_results``) beside its report, atomically and after every other file of the
scenario, so a record on disk means a scenario whose files are all written.

Resuming compares the manifest with the command's own, refusing the first flag that differs in
one sentence; keeps each scenario whose record is whole (parsed and validated, of that scenario,
neither crashed nor interrupted, its reports in place); and moves the folder of every other one
that was started (crashed, interrupted or cut by a kill) to ``superseded/<scenario>.<n>`` before
it is played again, so nothing written is lost and no new log is appended to an old one. A folder
made before manifests existed is refused: the flags it was made with cannot be known.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from dynsteer_hook import __version__
from dynsteer_hook.files.cache import EntryRefusedError, read_entry
from dynsteer_hook.files.outputs import check_below, json_text, reason, write_json_atomic, write_text_atomic
from dynsteer_hook.llm.settings import ModelSettings
from dynsteer_hook.model.errors import DynsteerError, OutputError
from dynsteer_hook.model.json_text import JsonTextError, loads
from dynsteer_hook.model.records import Report
from dynsteer_hook.report.scenario_page import REPORT_HTML
from dynsteer_hook.report.writer import REPORT_JSON, REPORT_MD
from dynsteer_hook.toolsandbox.live.playing import RunOptions
from dynsteer_hook.toolsandbox.live.preflight import blueprint_path, default_blueprint_dir
from dynsteer_hook.toolsandbox.live.progress import outcome_of
from dynsteer_hook.toolsandbox.live.results import ScenarioResult
from dynsteer_hook.toolsandbox.roles.named import SCRIPTED
from dynsteer_hook.toolsandbox.similarity import INTERRUPTED as SIMILARITY_CUT

MANIFEST = "dynsteer_run.json"
RESULT_FILE = "dynsteer_result.json"
SUPERSEDED = "superseded"
MANIFEST_FORMAT = "dynsteer run manifest 1"
FLAG = "--resume"
MAX_RECORD_BYTES = 64 * 1024 * 1024  # a result record holds a traceback and mappings: megabytes at most
MAX_MANIFEST_BYTES = 64 * 1024 * 1024  # a manifest lists every scenario and a digest of its blueprint
# The model settings that change what a role answers. Timeouts, retries and backoff only change whether a call fails, which
# a resume after an outage may well want to raise; the name of the key's variable changes no answer.
_MODEL_FIELDS = ("model", "api_base", "temperature", "max_tokens", "json_mode", "tool_choice")


def _digest(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def _model(settings: ModelSettings | None, prefix: str) -> dict[str, Any]:
    if settings is None:
        return {}
    return {f"--{prefix}-{name.replace('_', '-')}": getattr(settings, name) for name in _MODEL_FIELDS}


def run_manifest(options: RunOptions, names: Iterable[str] | None) -> dict[str, Any]:
    """What a run's results depend on, keyed by the flag that sets it: the manifest written before its first rollout
    (``names`` None: the flags alone, to check before ToolSandbox's scenarios are loaded)."""
    chosen = None if names is None else sorted(names)
    flags: dict[str, Any] = {"--evaluator": options.evaluator, "--agent": options.agent, "--user": options.user}
    flags |= _model(options.agent_model, "agent") | _model(options.user_model, "user")
    scripted = SCRIPTED in (options.agent, options.user) and options.script is not None
    flags["--script"] = _digest(options.script) if scripted and options.script is not None else None
    flags["--no-events"] = not options.write_events
    flags["--max-parallel-calls"] = options.limits.max_parallel_calls
    flags["--rollout-deadline"] = options.limits.deadline
    flags["--max-cost"] = options.limits.max_cost_usd
    flags["--max-tokens-per-rollout"] = options.limits.max_tokens
    flags["--similarity-budget"] = options.similarity.budget
    blueprints: dict[str, str] = {}
    if options.evaluator == "dynsteer":
        flags["--allow-stale-blueprints"] = options.allow_stale
        config = options.config.model_dump(mode="json")
        numbers = {name for name, f in type(options.config).model_fields.items() if f.annotation in (int, float)}
        for key in sorted(config):
            flags[f"--{key.replace('_', '-')}" if key in numbers else f"--set {key}"] = config[key]
        flags |= _model(options.judges.model, "judge") if options.judges.model.model else {"--judge-model": None}
        if options.judges.model.model:
            flags |= {"--judge-samples": options.judges.samples, "--judge-passes": options.judges.passes}
        folder = options.blueprint_dir or default_blueprint_dir()
        blueprints = {name: _digest(blueprint_path(folder, name)) for name in chosen or ()}
    return {"format": MANIFEST_FORMAT, "command": "run", "dynsteer_version": __version__, "flags": flags,
            "scenarios": chosen, "blueprints": blueprints}


def write_manifest(run_dir: Path, manifest: Mapping[str, Any]) -> None:
    """Write the manifest into a new run's folder, synced to the disk, before its first rollout."""
    try:
        write_json_atomic(run_dir / MANIFEST, manifest)
    except OSError as exc:
        raise OutputError(f"the run's manifest cannot be written to {run_dir / MANIFEST} ({reason(exc)}); free some space or "
                          "pass another -o/--output_dir") from None


def _shown(value: Any, limit: int = 80) -> str:
    text = "(not given)" if value is None else value if isinstance(value, str) else json_text(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _stored_manifest(run_dir: Path) -> dict[str, Any]:
    path = run_dir / MANIFEST
    try:
        data, _ = read_entry(path, MAX_MANIFEST_BYTES)
    except FileNotFoundError:
        raise DynsteerError(f"{FLAG} {run_dir} holds no {MANIFEST}: it was made by a dynsteer older than --resume, or is no run "
                            "folder, so the flags it was made with are unknown; start a new run without --resume") from None
    except EntryRefusedError:
        raise DynsteerError(f"{FLAG} {run_dir}: its {MANIFEST} is a link, a pipe, a folder or too large, where the run wrote a file; "
                            "remove what was put there or start a new run without --resume") from None
    except OSError as exc:
        raise DynsteerError(f"{FLAG} {run_dir}: its {MANIFEST} cannot be read ({reason(exc)}); start a new run without "
                            "--resume") from None
    try:
        stored = loads(data)
    except JsonTextError as exc:
        raise DynsteerError(f"{FLAG} {run_dir}: its {MANIFEST} {exc}; it was damaged, so start a new run without --resume") from None
    if not (isinstance(stored, dict) and stored.get("format") == MANIFEST_FORMAT and isinstance(stored.get("flags"), dict)
            and isinstance(stored.get("scenarios"), list) and isinstance(stored.get("blueprints"), dict)):
        raise DynsteerError(f"{FLAG} {run_dir}: its {MANIFEST} is no run manifest this dynsteer reads ({MANIFEST_FORMAT}); start a "
                            "new run without --resume")
    return stored


def check_resumable(run_dir: Path, manifest: Mapping[str, Any]) -> None:
    """Refuse, in one sentence naming the first flag that differs, a folder made with other flags than ``manifest``'s
    (its scenarios and blueprints too, unless it holds the flags alone: see ``run_manifest``).

    Raises:
        DynsteerError: No run folder, no manifest (an older dynsteer), another command, or a flag, a scenario or a
            blueprint that differs.
    """
    if not run_dir.is_dir():
        raise DynsteerError(f"{FLAG} {run_dir} is not a folder; pass the folder of the run to resume (agent_..._user_..._<time>)")
    stored = _stored_manifest(run_dir)
    fix = f"resume it with the flags it was made with (its {MANIFEST} lists them), or start a new run without --resume"
    if stored.get("command") != manifest["command"]:
        raise DynsteerError(f"{FLAG} {run_dir} was made by dynsteer {stored.get('command')}, not {manifest['command']}; {fix}")
    old, new = stored["flags"], manifest["flags"]
    for flag in [*new, *(k for k in old if k not in new)]:
        if old.get(flag) != new.get(flag):
            if flag == "--script":
                raise DynsteerError(f"{FLAG} {run_dir} was made with another --script (its content differs); {fix}")
            raise DynsteerError(f"{FLAG} {run_dir} was made with {flag} {_shown(old.get(flag))}, not {_shown(new.get(flag))}; {fix}")
    if manifest["scenarios"] is None:
        return
    was, now = set(map(str, stored["scenarios"])), set(manifest["scenarios"])
    if was != now:
        odd = sorted(now - was)
        which = f"{odd[0]} is not among them" if odd else f"it leaves out {sorted(was - now)[0]}"
        raise DynsteerError(f"{FLAG} {run_dir} was made with other scenarios (-s/--scenarios, -t): {len(was)} of them, where this "
                            f"command selects {len(now)} ({which}); {fix}")
    for name, digest in manifest["blueprints"].items():
        if stored["blueprints"].get(name) != digest:
            raise DynsteerError(f"{FLAG} {run_dir} was made with another blueprint of {name} (--blueprints: its content differs); {fix}")


def check_places(run_dir: Path, names: Iterable[str], trajectories: str = "trajectories") -> None:
    """Refuse a link (or anything but a folder) planted where the resumed run reads or writes below ``run_dir``."""
    for folder in (run_dir / trajectories, run_dir / SUPERSEDED):
        check_below(run_dir, folder, FLAG)
    for name in names:
        check_below(run_dir, run_dir / trajectories / name, FLAG)


def record_result(trajectory: Path, record: Mapping[str, Any]) -> None:
    """Write a finished scenario's result record beside its report, last of its files (not synced: see ``StagedFiles``).

    A record that cannot be written (a full disk) costs only the scenario's keeping: a resume plays it again.
    """
    if record.get("interrupted"):
        return
    try:
        trajectory.mkdir(parents=True, exist_ok=True)
        write_text_atomic(trajectory / RESULT_FILE, json_text(record, indent=1, ensure_ascii=False) + "\n", durable=False)
    except OSError:
        pass


def whole_result(trajectory: Path, name: str, reports: bool) -> dict[str, Any] | None:
    """The kept record of scenario ``name`` when it finished and every one of its files is whole, else None (play it again).

    Whole: the record parses, validates as a ``ScenarioResult`` of ``name``, is neither crashed nor interrupted (nor cut
    while ToolSandbox computed its similarity: the run that never stopped would have it) and, when
    the run writes reports (``reports``), its JSON report validates and its Markdown and HTML renderings are there.
    """
    try:
        record = loads(read_entry(trajectory / RESULT_FILE, MAX_RECORD_BYTES)[0])
        result = ScenarioResult.model_validate(record)
    except (OSError, JsonTextError, ValidationError):
        return None
    if result.name != name or outcome_of(record) in ("crashed", "interrupted") or result.similarity_unknown == SIMILARITY_CUT:
        return None
    if reports and record.get("dynsteer") is not None:
        try:
            Report.model_validate_json(read_entry(trajectory / REPORT_JSON, MAX_RECORD_BYTES)[0])
            if not all(stat.S_ISREG(os.lstat(trajectory / rendering).st_mode) for rendering in (REPORT_MD, REPORT_HTML)):
                return None
        except (OSError, ValidationError):
            return None
    return dict(record)


@dataclass(frozen=True)
class Resumption:
    """What a resumed run keeps and what it plays again."""

    kept: list[dict[str, Any]]
    to_play: list[str]
    superseded: list[str]


def resume(run_dir: Path, names: Iterable[str], reports: bool, trajectories: str = "trajectories") -> Resumption:
    """Sort the scenarios of a resumed run into kept records and scenarios to play, moving the folder of each scenario to
    play that was started to ``superseded/<name>.<n>``.

    Raises:
        OutputError: A folder cannot be moved aside (one sentence).
    """
    kept: list[dict[str, Any]] = []
    to_play: list[str] = []
    moved: list[str] = []
    for name in sorted(names):
        folder = run_dir / trajectories / name
        record = whole_result(folder, name, reports) if folder.is_dir() else None
        if record is not None:
            kept.append(record)
            continue
        to_play.append(name)
        if os.path.lexists(folder):
            moved.append(_set_aside(run_dir, folder, name))
    return Resumption(kept, to_play, moved)


def _set_aside(run_dir: Path, folder: Path, name: str) -> str:
    aside = run_dir / SUPERSEDED
    try:
        aside.mkdir(exist_ok=True)
        for n in range(1, 10_000):
            target = aside / f"{name}.{n}"
            if not os.path.lexists(target):
                os.rename(folder, target)
                return str(target.relative_to(run_dir))
    except OSError as exc:
        raise OutputError(f"{FLAG} {run_dir}: the unfinished scenario's folder {folder} cannot be moved to {aside} ({reason(exc)}); "
                          "free some space or check the folder's permissions") from None
    raise OutputError(f"{FLAG} {run_dir}: {aside} already holds 9,999 earlier tries of {name}; move them elsewhere")
