"""Faults while writing: a full disk, a file-size limit, a kill, Ctrl-C, and the modes of written files.

The faults are real where the kernel can make them: a file-size limit (RLIMIT_FSIZE) in a
subprocess makes the kernel cut a write short and then refuse the next one, exactly as a
disk that fills up does; /dev/full refuses every write with ENOSPC; a tmpfs of a few
kilobytes (mounted in a user namespace, skipped where the kernel does not allow one) is a
full disk. To add a fault, add a row to the table of the guarantee it threatens.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from builders import call, family, result, settle_events
from fake_llm import FakeLLMServer, Reply
from test_hostile_files import snapshot

from dynsteer_hook.cli import main
from dynsteer_hook.files.blueprints import save_blueprint
from dynsteer_hook.files.events import EventLog
from dynsteer_hook.files.outputs import JsonlSink, StagedFiles, write_json_atomic, write_text_atomic
from dynsteer_hook.model.events import ToolCall, ToolResult, UserMessage, event_to_record
from dynsteer_hook.model.records import IncompleteLog, ListSink, with_files
from dynsteer_hook.report.markdown import render_markdown
from dynsteer_hook.report.writer import AUDIT_LOG, REPORT_JSON, REPORT_MD, write_report
from dynsteer_hook.runtime.evaluator import Evaluator

ROOT = Path(__file__).resolve().parents[1]
CHAIN = family("chain").blueprint()


def _python(code: str, *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + str(ROOT / "tests") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True, env=env, timeout=300, **kw)


def _idle_trace(path: Path, actions: int) -> Path:
    """A long trace of calls that settle nothing (evaluated with a high --n-stag, it never halts)."""
    with path.open("w", encoding="utf-8") as f:
        for i in range(actions):
            f.write(json.dumps(event_to_record(call(f"i{i}", "op_a", {"x": "wrong"}))) + "\n")
            f.write(json.dumps(event_to_record(result(f"i{i}", "nothing here " * 4))) + "\n")
    return path


def _earlier_run(ws: Path) -> Path:
    """A --report folder holding the files of an earlier, successful evaluate."""
    save_blueprint(CHAIN, ws / "bp.json")
    (ws / "trace.jsonl").write_text("".join(json.dumps(event_to_record(e)) + "\n" for e in settle_events(["a", "b", "c"])), encoding="utf-8")
    assert main(["evaluate", "--blueprint", str(ws / "bp.json"), "--events", str(ws / "trace.jsonl"), "--report", str(ws / "report")]) == 0
    return ws / "report"


def _tmpfs_available() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=16k tmpfs /mnt && echo ok"], capture_output=True, text=True)
    return probe.stdout.strip() == "ok"


TMPFS = pytest.mark.skipif(not _tmpfs_available(), reason="needs a user namespace to mount a small tmpfs (unshare -rm)")


# ---- the audit log never holds a torn record -------------------------------------------------------------------


def test_file_size_limit_cuts_a_write_short_and_the_sink_cuts_it_back(tmp_path: Path) -> None:
    """Under a file-size limit the kernel writes part of a line and refuses the rest: a plain write leaves a torn
    line, the sink leaves the whole records before it, says why it stopped, and counts the records it could not write."""
    proc = _python(
        """
        import json, os, resource, sys
        from dynsteer_hook.files.outputs import JsonlSink
        resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))
        record = {"pad": "x" * 288}  # 300 bytes a line: the fourth line crosses the limit
        line = (json.dumps(record) + "\\n").encode()
        fd = os.open(sys.argv[1] + "/plain.jsonl", os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            for _ in range(5):
                os.write(fd, line)
        except OSError:
            pass
        sink = JsonlSink(sys.argv[1] + "/sink.jsonl")
        for _ in range(5):
            sink.write(record)
        print(json.dumps({"records": sink.records, "error": sink.error, "dropped": sink.dropped, "line": len(line)}))
        """,
        str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert (tmp_path / "plain.jsonl").stat().st_size == 1000  # the kernel did write a part of the fourth line
    assert got == {"records": 3, "error": "File too large", "dropped": 2, "line": 300}
    lines = (tmp_path / "sink.jsonl").read_bytes().split(b"\n")
    assert lines[-1] == b"" and [json.loads(x) for x in lines[:-1]] == [{"pad": "x" * 288}] * 3


def test_sink_on_a_full_device_writes_nothing_and_says_why(tmp_path: Path) -> None:
    """Every write to /dev/full fails with ENOSPC: the sink stops at record 0, keeps the reason, and never raises."""
    (tmp_path / AUDIT_LOG).symlink_to("/dev/full")
    with JsonlSink(tmp_path / AUDIT_LOG) as sink:
        for i in range(3):
            sink.write({"n": i})
    assert (sink.records, sink.dropped, sink.error) == (0, 3, "No space left on device")


@TMPFS
def test_sink_on_a_full_filesystem_keeps_whole_records(tmp_path: Path) -> None:
    """On a small tmpfs the sink writes until the disk is full and leaves only whole lines, as many as it counted."""
    script = tmp_path / "fill.py"
    script.write_text(textwrap.dedent(
        """
        import json, sys
        sys.path.insert(0, sys.argv[2])
        from dynsteer_hook.files.outputs import JsonlSink
        sink = JsonlSink(sys.argv[1] + "/audit.jsonl")
        n = 0
        while sink.error is None:
            sink.write({"n": n, "pad": "y" * (n % 700)})
            n += 1
        data = open(sys.argv[1] + "/audit.jsonl", "rb").read()
        lines = data.split(b"\\n")
        assert lines[-1] == b"", "torn last line"
        assert len(lines) - 1 == sink.records and all(json.loads(x)["n"] == i for i, x in enumerate(lines[:-1]))
        print(sink.records, sink.error)
        """
    ))
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    proc = subprocess.run(["unshare", "-rm", "sh", "-c", f'mount -t tmpfs -o size=24k tmpfs "{mnt}" && "{sys.executable}" "{script}" "{mnt}" "{ROOT}"'],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    records, error = proc.stdout.split(maxsplit=1)
    assert int(records) > 10 and error.strip() == "No space left on device"


# ---- a failing log never stops the evaluator ----------------------------------------------------------------------


def test_evaluator_goes_on_in_memory_when_its_audit_log_fails(tmp_path: Path) -> None:
    """With the audit log on a full device the evaluator decides exactly as with a working log, and the report says
    from which record the log is missing."""
    (tmp_path / AUDIT_LOG).symlink_to("/dev/full")
    good, failing = Evaluator(CHAIN, sink=ListSink()), None
    with JsonlSink(tmp_path / AUDIT_LOG) as sink:
        failing = Evaluator(CHAIN, sink=sink)
        for e in settle_events(["a", "b", "c"]):
            good.observe(e)
            failing.observe(e)
        report = failing.finish()
    assert report == good.finish()
    gap = IncompleteLog(file=AUDIT_LOG, from_record=sink.records, reason=sink.error or "")
    marked = with_files(report, incomplete_logs=(gap,))
    assert marked.incomplete_logs[0].from_record == 0 and marked.outcome == "completed"
    assert "is **incomplete** from record 0 on (No space left on device)" in render_markdown(marked)


def test_event_log_on_a_full_device_never_raises(tmp_path: Path) -> None:
    """The live run's event log behaves as the audit log: writes stop, the reason is kept, nothing is raised."""
    (tmp_path / "events.jsonl").symlink_to("/dev/full")
    log = EventLog(tmp_path / "events.jsonl")
    log.meta(task="t")
    for e in settle_events(["a"]):
        log.write(e)
    log.close()
    assert log.sink.records == 0 and log.sink.error == "No space left on device"


# ---- a failed evaluate leaves the earlier files -----------------------------------------------------------------


@pytest.fixture
def earlier(tmp_path: Path) -> Iterator[tuple[Path, dict[str, bytes | str]]]:
    """A workspace with an earlier evaluate's files in ``report``, a long idle trace, and their snapshot."""
    ws = tmp_path / "ws"
    ws.mkdir()
    report = _earlier_run(ws)
    _idle_trace(ws / "long.jsonl", 400)
    yield report, snapshot(report)


def _evaluate_argv(report: Path) -> list[str]:
    ws = report.parent
    return ["evaluate", "--blueprint", str(ws / "bp.json"), "--events", str(ws / "long.jsonl"), "--report", str(report), "--n-stag", "100000"]


def test_evaluate_under_a_file_size_limit_keeps_the_earlier_files(earlier: tuple[Path, dict[str, bytes | str]]) -> None:
    """When the new reports cannot be written (the kernel refuses to grow a file), evaluate says so in one sentence,
    exits 2, and the earlier run's files are the same bytes, with no temporary file left."""
    report, before = earlier
    proc = _python(
        """
        import resource, sys
        from dynsteer_hook.cli import main
        resource.setrlimit(resource.RLIMIT_FSIZE, (6000, 6000))
        sys.exit(main(sys.argv[1:]))
        """,
        *_evaluate_argv(report),
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == (f"dynsteer: error: the report cannot be written to {report} (File too large); the files already there "
                           "are unchanged; free some space or pass another --report directory\n")
    assert snapshot(report) == before


@TMPFS
def test_evaluate_on_a_full_disk_keeps_the_earlier_files(tmp_path: Path) -> None:
    """On a small tmpfs that fills up during the run: one sentence naming the full disk, exit 2, earlier files intact."""
    long = _idle_trace(tmp_path / "long.jsonl", 4000)  # outside the small disk
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent(
        """
        import hashlib, os, sys
        from pathlib import Path
        sys.path[:0] = [sys.argv[2], sys.argv[2] + "/tests"]
        from dynsteer_hook.cli import main
        from test_faults_io import _earlier_run
        ws = Path(sys.argv[1])
        report = _earlier_run(ws)
        def digest():
            return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(report.iterdir())}
        before = digest()
        code = main(["evaluate", "--blueprint", str(ws / "bp.json"), "--events", sys.argv[3], "--report", str(report), "--n-stag", "100000"])
        assert code == 2, code
        assert digest() == before, "earlier files changed"
        print("ok")
        """
    ))
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    proc = subprocess.run(["unshare", "-rm", "sh", "-c",
                           f'mount -t tmpfs -o size=100k tmpfs "{mnt}" && "{sys.executable}" "{script}" "{mnt}" "{ROOT}" "{long}"'],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stdout + proc.stderr
    err = [x for x in proc.stderr.splitlines() if x]
    assert len(err) == 1 and "No space left on device" in err[0] and "files already there are unchanged" in err[0], proc.stderr


def test_evaluate_with_an_audit_log_that_stops_marks_the_report(earlier: tuple[Path, dict[str, bytes | str]],
                                                                monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """With the audit log's device full after 5 records (simulated) while the reports still fit, the reports are written
    and say from which record the log is missing, the log holds those 5 whole records, and evaluate exits 2 with one sentence."""
    from dynsteer_hook.files import outputs

    real = outputs._write_all
    written: dict[int, int] = {}
    real_init = JsonlSink.__init__

    def init(self: JsonlSink, *a: Any, **kw: Any) -> None:
        real_init(self, *a, **kw)
        assert self._fd is not None
        written[self._fd] = 0

    def write_all(fd: int, data: bytes) -> None:
        if fd in written:  # one call per record: the sixth finds the device full
            if written[fd] == 5:
                raise OSError(28, "No space left on device")
            written[fd] += 1
        real(fd, data)

    real_close = JsonlSink.close

    def close(self: JsonlSink) -> None:
        written.pop(self._fd or -1, None)  # the number may be reused for a report file
        real_close(self)

    monkeypatch.setattr(JsonlSink, "__init__", init)
    monkeypatch.setattr(JsonlSink, "close", close)
    monkeypatch.setattr(outputs, "_write_all", write_all)
    report, _ = earlier
    capsys.readouterr()
    assert main(_evaluate_argv(report)) == 2
    out, err = capsys.readouterr()
    assert err == (f"dynsteer: error: the audit log {report / AUDIT_LOG} misses every record from record 5 on (No space left on device); "
                   "the report says so; free some space and evaluate again\n")
    assert "incomplete" in out
    written = json.loads((report / REPORT_JSON).read_text(encoding="utf-8"))
    assert written["incomplete_logs"] == [{"file": AUDIT_LOG, "from_record": 5, "reason": "No space left on device"}]
    assert "is **incomplete** from record 5 on" in (report / REPORT_MD).read_text(encoding="utf-8")
    assert len((report / AUDIT_LOG).read_text(encoding="utf-8").splitlines()) == 5


# ---- kills and Ctrl-C ----------------------------------------------------------------------------------------------


def _judged_trace(path: Path) -> Path:
    """Events whose weak first stage sends the next one to the LLM judge (tier 2, eq. 9): evaluate asks the judge mid-trace."""
    events: list[Any] = [UserMessage("go")]
    for i, bad in enumerate(("zzz", "yyy", "www"), start=1):
        events += [ToolCall(f"f{i}", "op_a", {"x": bad}), ToolResult(f"f{i}", None, "ValueError: no")]
    for i, node in enumerate("abc", start=1):
        events += [ToolCall(f"c{i}", f"op_{node}", {"x": node}), ToolResult(f"c{i}", "ok")]
    path.write_text("".join(json.dumps(event_to_record(e)) + "\n" for e in events), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("sig", "code", "temp_left"),
    [
        pytest.param(signal.SIGKILL, -signal.SIGKILL, True, id="kill"),
        pytest.param(signal.SIGINT, 130, False, id="ctrl_c"),
        pytest.param(signal.SIGTERM, 143, False, id="sigterm"),
    ],
)
def test_evaluate_stopped_midway_keeps_the_earlier_files(earlier: tuple[Path, dict[str, bytes | str]], llm_server: FakeLLMServer,
                                                         sig: int, code: int, temp_left: bool) -> None:
    """An evaluate killed or interrupted (Ctrl-C, SIGTERM) while it evaluates leaves the earlier run's files as they were; Ctrl-C also
    removes its temporary audit log and says so in one line, a kill leaves it (a readable prefix beside the old log).

    The signal comes while evaluate waits for its LLM judge, which does not answer while the test runs: evaluate is
    then provably in the middle of the trace, its audit log open, however loaded the machine.
    """
    report, before = earlier
    trace = _judged_trace(report.parent / "judged.jsonl")
    llm_server.script(Reply(content="{}", delay=900))
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen(
        [sys.executable, "-m", "dynsteer_hook.cli", "evaluate", "--blueprint", str(report.parent / "bp.json"), "--events", str(trace),
         "--report", str(report), "--judge-model", "openai/local-judge", "--judge-api-base", llm_server.url, "--judge-max-retries", "0",
         "--judge-samples", "1", "--judge-passes", "1", "--judge-timeout", "900"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    try:
        deadline = time.monotonic() + 300
        while llm_server.in_flight < 1:
            assert proc.poll() is None and time.monotonic() < deadline, f"evaluate never asked its judge: {proc.communicate()}"
            time.sleep(0.02)
        assert len(list(report.glob(f".{AUDIT_LOG}.*.tmp"))) == 1  # the new audit log is being written
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == code, err
    leftovers = sorted(p.name for p in report.iterdir() if p.name.endswith(".tmp"))
    assert {k: v for k, v in snapshot(report).items() if not k.endswith(".tmp")} == before
    if temp_left:
        assert len(leftovers) == 1
        lines = (report / leftovers[0]).read_text(encoding="utf-8").split("\n")
        assert len(lines) > 1 and lines[-1] == "" and all(json.loads(x) for x in lines[:-1])
    else:
        by = "" if sig == signal.SIGINT else f" by {signal.Signals(sig).name}"
        assert leftovers == [] and err == f"dynsteer: interrupted{by}; files written so far are kept\n"


_LATE_CTRL_C = """
    import os, signal, sys
    from dynsteer_hook.cli import main
    sys.argv = ["dynsteer", "schema", "events"]
    code = main()
    os.kill(os.getpid(), signal.SIGINT)  # the Ctrl-C lands after the command is over, before the process exits
    sys.exit(code)
"""

_CTRL_C_WHILE_PARSING = """
    import os, signal, sys
    from dynsteer_hook import cli
    real = cli.build_parser
    def build_parser(only=None):
        os.kill(os.getpid(), signal.SIGINT)  # while the command line is read (`run` imports ToolSandbox for it: seconds)
        return real(only)
    cli.build_parser = build_parser
    sys.argv = ["dynsteer", "schema", "events"]
    sys.exit(cli.main())
"""


@pytest.mark.parametrize(
    ("code", "status", "err"),
    [
        pytest.param(_LATE_CTRL_C, 0, "", id="after_the_command"),
        pytest.param(_CTRL_C_WHILE_PARSING, 130, "dynsteer: interrupted; files written so far are kept\n", id="reading_the_command_line"),
        pytest.param(_LATE_CTRL_C.replace("SIGINT", "SIGTERM"), 0, "", id="sigterm_after_the_command"),
        pytest.param(_CTRL_C_WHILE_PARSING.replace("SIGINT", "SIGTERM"), 143,
                     "dynsteer: interrupted by SIGTERM; files written so far are kept\n", id="sigterm_reading_the_command_line"),
        pytest.param(_CTRL_C_WHILE_PARSING.replace("SIGINT", "SIGHUP"), 129,
                     "dynsteer: interrupted by SIGHUP; files written so far are kept\n", id="sighup_reading_the_command_line"),
    ],
)
def test_ctrl_c_outside_the_commands_work_ends_the_documented_way(code: str, status: int, err: str) -> None:
    """The console script (``sys.exit(main())``) lets no Ctrl-C escape as a traceback and a death by SIGINT: one that
    comes while the command line is read ends in exit 130 and one line, one after the command is over changes nothing."""
    proc = _python(code)
    assert (proc.returncode, proc.stderr) == (status, err)
    assert proc.stdout.startswith("{") == (status == 0)


def test_staged_files_land_together_when_ctrl_c_comes_in_between(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C during the renames of a report pair is held back until both are in place, then raised."""
    pair = StagedFiles()
    pair.text(tmp_path / "a.json", "new a\n")
    pair.text(tmp_path / "a.md", "new md\n")
    real_replace = os.replace
    calls: list[str] = []

    def replace(src: Any, dst: Any) -> None:
        calls.append(Path(dst).name)
        real_replace(src, dst)
        if len(calls) == 1:
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(KeyboardInterrupt):
        pair.commit()
    assert calls == ["a.json", "a.md"]
    assert (tmp_path / "a.md").read_text() == "new md\n"


# ---- modes ----------------------------------------------------------------------------------------------------------


WRITERS: list[tuple[str, Callable[[Path], list[Path]]]] = [
    ("write_text_atomic", lambda d: (write_text_atomic(d / "x.txt", "x"), [d / "x.txt"])[1]),
    ("write_json_atomic", lambda d: (write_json_atomic(d / "x.json", {"x": 1}), [d / "x.json"])[1]),
    ("save_blueprint", lambda d: (save_blueprint(CHAIN, d / "bp.json"), [d / "bp.json"])[1]),
    ("write_report", lambda d: list(write_report(Evaluator(CHAIN).finish(), d))),
    ("audit_log", lambda d: (JsonlSink(d / AUDIT_LOG).close(), [d / AUDIT_LOG])[1]),
    ("evaluate", lambda d: (_earlier_run(d), [d / "report" / n for n in (AUDIT_LOG, REPORT_JSON, REPORT_MD)])[1]),
]


@pytest.mark.parametrize("umask", [0o022, 0o027, 0o077], ids=oct)
@pytest.mark.parametrize(("name", "writer"), WRITERS, ids=[n for n, _ in WRITERS])
def test_written_files_get_the_mode_of_any_new_file(name: str, writer: Callable[[Path], list[Path]], umask: int, tmp_path: Path) -> None:
    """Every file the package writes, new or replacing an older one, has the mode open() gives a new file under the umask."""
    old = os.umask(umask)
    try:
        with open(tmp_path / "reference", "w") as f:
            f.write("x")
        expected = stat.S_IMODE((tmp_path / "reference").stat().st_mode)
        for _ in range(2):  # the second round replaces the first round's files
            paths = writer(tmp_path)
            assert paths and {p.name: stat.S_IMODE(p.stat().st_mode) for p in paths} == {p.name: expected for p in paths}
    finally:
        os.umask(old)
    assert expected == 0o666 & ~umask
