"""Every example in README.md and docs/ stays true.

* The README starts in one screen: under 250 lines, and every page it or docs/ links to exists.
* The Python example runs as written, in the process and in a fresh interpreter started in another
  directory, where it prints what it prints and not one line more.
* Every shell example names only flags its command has, modules that exist and, outside the
  checkout commands (``bash scripts/...``, ``python scripts/...``), no path of the repository, so it
  works from any directory; the cheap ones are run from another directory.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from builders import call, family, settle_events

from dynsteer_hook.cli import build_parser
from dynsteer_hook.files.blueprints import save_blueprint
from dynsteer_hook.model.events import Event, event_to_record
from dynsteer_hook.model.records import Report

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
REPO_PATHS = ("dynsteer_hook/", "blueprints/", "tests/", "docs/", "scripts/", "./")
CHECKOUT_COMMANDS = ("bash scripts/", "python scripts/")  # run from a checkout, and the text says so


def _blocks(page: Path, lang: str) -> list[str]:
    """The fenced blocks of ``page`` opened with ```` ```lang ````, each as its text."""
    blocks: list[str] = []
    opened: list[str] | None = None
    fence = ""
    for line in page.read_text(encoding="utf-8").splitlines():
        if opened is None and line.startswith("```"):
            opened, fence = [], line[3:].strip()
        elif opened is not None and line.strip() == "```":
            if fence == lang:
                blocks.append("\n".join(opened) + "\n")
            opened = None
        elif opened is not None:
            opened.append(line)
    assert opened is None, f"{page.name} has a fence that is never closed"
    return blocks


def _example() -> str:
    [code] = [b for page in PAGES for b in _blocks(page, "python") if "evaluator.observe(event)" in b]
    return code


def _commands(block: str) -> Iterator[str]:
    """The commands of a shell block: continuation lines joined, comments dropped, split at ``&&``, ``;``, ``|`` and ``&``."""
    for line in block.replace("\\\n", " ").splitlines():
        line = line.split(" # ")[0].strip()
        if line.startswith("#") or not line:
            continue
        for part in re.split(r"\s*(?:&&|;|\||&(?=\s|$))\s*", line):
            words = shlex.split(part)
            while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):  # environment assignments before a command
                words.pop(0)
            if words:
                yield shlex.join(words)


def _shell_commands() -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        assert not _blocks(page, ""), f"{page.name}: a fence without a language (bash, python or text) is tested by no one"
        for block in _blocks(page, "bash"):
            found += [(page.relative_to(ROOT).as_posix(), c) for c in _commands(block)]
    return found


COMMANDS = _shell_commands()


def test_the_readme_starts_in_one_screen_and_its_links_resolve() -> None:
    """README.md is under 250 lines, links the screenshot of the run page and every docs page; every page linked exists."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 250
    assert "](docs/images/run-page.png)" in text
    for page in PAGES[1:]:
        assert f"](docs/{page.name})" in text, f"the README links no {page.name}"
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            assert (page.parent / target).is_file(), f"{page.name} links {target}, which does not exist"


def _run(blueprint_family: str, events: list[Event], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    save_blueprint(family(blueprint_family).blueprint(), tmp_path / "BP.json")
    monkeypatch.chdir(tmp_path)

    def my_agent_loop_events() -> Iterator[Event]:
        yield from events

    namespace: dict[str, object] = {"my_agent_loop_events": my_agent_loop_events}
    exec(compile(_example(), str(README), "exec"), namespace)
    return namespace


def test_readme_example_evaluates_a_completed_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Every event is observed, nothing halts, and ``finish`` gives the completed report."""
    namespace = _run("chain", settle_events(["a", "b", "c"]), tmp_path, monkeypatch)
    report = namespace["report"]
    assert isinstance(report, Report)
    assert report.outcome == "completed" and report.settled == ["a", "b", "c"] and not report.halted
    assert capsys.readouterr().out == ""


def test_readme_example_catches_the_halt_before_a_fatal_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A fatal call raises ``Halt`` out of ``observe``; the example prints the stop and still gets the report."""
    namespace = _run("minefield_off_path", [call("1", "delete_all")], tmp_path, monkeypatch)
    assert capsys.readouterr().out == "fatal_minefield 1 1\n"  # the stop names the action of the fatal call
    report = namespace["report"]
    assert isinstance(report, Report) and report.outcome == "halted" and report.stop is not None


_HARNESS = """
import sys
from dynsteer_hook import read_events

def my_agent_loop_events():
    yield from read_events("TRACE.jsonl")

exec(compile(open(sys.argv[1], encoding="utf-8").read(), "README.md", "exec"))
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def test_readme_example_prints_nothing_unasked_in_a_fresh_interpreter_elsewhere(tmp_path: Path) -> None:
    """Run by a program of its own in another directory, the example prints its one line and the package logs nothing
    (structlog left unconfigured used to print the halt on stdout)."""
    save_blueprint(family("minefield_off_path").blueprint(), tmp_path / "BP.json")
    (tmp_path / "TRACE.jsonl").write_text(json.dumps(event_to_record(call("1", "delete_all"))) + "\n")
    (tmp_path / "example.py").write_text(_example())
    done = subprocess.run([sys.executable, "-c", _HARNESS, "example.py"], cwd=tmp_path, env=_env(), capture_output=True,
                          text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (0, "fatal_minefield 1 1\n", "")


def _words(command: str) -> list[str]:
    return shlex.split(command)


@pytest.mark.parametrize(("page", "command"), COMMANDS, ids=[f"{p}: {c[:60]}" for p, c in COMMANDS])
def test_every_shell_example_names_what_exists_and_no_repository_path(page: str, command: str) -> None:
    """A ``dynsteer`` example parses with its command's own flags; ``python -m`` names a module that exists; a checkout
    script exists and has the flags used; no other example reaches into the repository by a relative path."""
    words = _words(command)
    if command.startswith(CHECKOUT_COMMANDS):
        script = ROOT / words[1]
        assert script.is_file(), f"{page}: {words[1]} does not exist"
        source = script.read_text(encoding="utf-8")
        for flag in (w.split("=")[0] for w in words[2:] if w.startswith("--")):
            assert f'"{flag}"' in source or flag in source, f"{page}: {words[1]} has no flag {flag}"
        return
    bad = [w for w in words[1:] if w.startswith(REPO_PATHS) and "=" not in w]
    assert not bad, f"{page}: {command!r} reaches into the repository ({bad}): it works from its root only"
    if words[0] == "dynsteer":
        parser = build_parser(next((w for w in words[1:] if not w.startswith("-")), ""))
        try:
            parser.parse_args(words[1:])
        except SystemExit as exc:
            pytest.fail(f"{page}: {command!r} does not parse (exit {exc.code})")
    elif words[0] == "python" and words[1:2] == ["-m"]:
        assert importlib.util.find_spec(words[2]) is not None, f"{page}: no module {words[2]}"
    else:
        assert words[0] in {"pip", "export", "echo", "python", "bash"}, f"{page}: unknown command in {command!r}"


def test_shell_examples_were_found() -> None:
    """The collection above sees the examples (a change of fences would otherwise test nothing)."""
    found = {c.split()[0] + " " + c.split()[1] for _, c in COMMANDS}
    assert {"dynsteer run", "dynsteer evaluate", "dynsteer explain", "dynsteer compile", "bash scripts/demo.sh",
            "bash scripts/test.sh", "python -m"} <= found


def _example_command(prefix: str) -> list[str]:
    """The one example command starting with ``prefix``, as words, ``dynsteer`` run as ``python -m dynsteer_hook.cli``."""
    [command] = sorted({c for _, c in COMMANDS if c.startswith(prefix)})
    words = _words(command)
    return [sys.executable, "-m", "dynsteer_hook.cli", *words[1:]] if words[0] == "dynsteer" else words


def _elsewhere(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=600)


def test_explain_and_evaluate_examples_run_from_another_directory(tmp_path: Path) -> None:
    """``dynsteer explain <scenario>`` and ``dynsteer evaluate --blueprint cellular_off`` find the shipped blueprint from
    a directory that holds nothing of the repository."""
    done = _elsewhere(_example_command("dynsteer explain "), tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("blueprint send_message_with_contact_content_cellular_off:"), done.stderr
    (tmp_path / "TRACE.jsonl").write_text(json.dumps(event_to_record(call("1", "set_cellular_service_status", {"on": False}))) + "\n")
    done = _elsewhere(_example_command("dynsteer evaluate --blueprint cellular_off "), tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("cellular_off: ") and (tmp_path / "OUT_DIR" / "dynsteer_report.json").is_file()


@pytest.mark.toolsandbox
def test_the_scripted_run_example_runs_from_another_directory(tmp_path: Path) -> None:
    """docs/running.md's scripted run (``--script looping_agent``) plays the shipped script from another directory,
    halts the looping agent, writes its run under ``-o data`` there and exits 0: a halt is a result."""
    done = _elsewhere(_example_command("dynsteer run --agent Scripted --user Scripted --script looping_agent"), tmp_path)
    assert done.returncode == 0, done.stderr
    assert "send_message_with_contact_content_cellular_off: HALTED" in done.stdout
    [run] = list((tmp_path / "data").iterdir())
    assert (run / "dynsteer_summary.json").is_file()
