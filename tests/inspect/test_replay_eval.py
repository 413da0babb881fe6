"""``dynsteer replay`` over Inspect ``.eval`` logs: the same stops as live, virtual stops on native logs, the same reports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.event import ModelEvent
from inspect_ai.log import read_eval_log_samples
from inspect_ai.model import ModelUsage, get_model

from dynsteer_hook.cli import main
from dynsteer_hook.inspect import STOP_KEY, DynSteer
from dynsteer_hook.inspect import example as ex
from dynsteer_hook.inspect.replay import turn_costs, virtual_stop


def record(tmp_path: Path, steer: DynSteer | None, names: tuple[str, ...] = ("clean", "fatal", "loop")) -> Path:
    logs = tmp_path / ("live" if steer else "native")
    [log] = inspect_eval(ex.address_book(steer, names), model=ex.scripted_model(), display="none", log_level="error", log_dir=str(logs))
    assert log.status == "success"
    [path] = logs.glob("*.eval")
    return path


def replay(*args: str | Path, out: Path) -> dict[str, dict]:
    assert main(["replay", *map(str, args), "-o", str(out), "--no-progress"]) == 0
    summary = json.loads((out / "replay_summary.json").read_text())
    return {r["scenario"]: r for r in summary["per_scenario"]} | {"_summary": summary}


def test_a_live_log_replays_to_the_same_stops(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The blueprint the live run stored in each sample is used; each halt falls at the live stop's k and t."""
    log = record(tmp_path, DynSteer(ex.blueprint()))
    got = replay(log, out=tmp_path / "out")
    assert got["_summary"]["replayed"] == 3 and got["_summary"]["skipped"] == 0
    assert got["clean_1"]["outcome"] == "completed" and got["clean_1"]["score"] == 1.0
    for name, reason in (("fatal_1", "fatal_minefield"), ("loop_1", "repeated_failure")):
        r = got[name]
        live = r["recorded_live_stop"]
        assert r["stop"]["reason"] == reason == live["reason"]
        assert (r["stop"]["k"], r["stop"]["t"]) == (live["k"], live["t"])
    folder = tmp_path / "out" / log.stem / "trajectories" / "loop_1"
    report = json.loads((folder / "dynsteer_report.json").read_text())
    assert report["stop"]["reason"] == "repeated_failure"
    assert (folder / "dynsteer_report.md").is_file() and (folder / "dynsteer_audit.jsonl").is_file()
    assert "VIRTUAL STOP repeated_failure" in capsys.readouterr().out


def test_a_native_log_gets_virtual_stops_on_its_agent_turns(tmp_path: Path) -> None:
    """A log of the task without DynSTEER ran the loop to its end; with --blueprints the replay stops it a few
    turns in, and says how much of the sample the stop would have saved. The fatal call had run (natively)."""
    log = record(tmp_path, None)
    assert ex.DELETED == ["Alice"]
    blueprints = tmp_path / "bp" / "address_book"
    blueprints.mkdir(parents=True)
    for name in ("clean", "fatal", "loop"):
        (blueprints / f"{name}.json").write_text(ex.blueprint().to_json())
    assert main(["replay", str(log), "-o", str(tmp_path / "out"), "--blueprints", str(tmp_path / "bp"), "--no-progress"]) == 0
    summary = json.loads((tmp_path / "out" / "replay_summary.json").read_text())
    got = {r["scenario"]: r for r in summary["per_scenario"]}
    loop = got["loop_1"]
    assert loop["stop"]["reason"] == "repeated_failure" and loop["recorded_live_stop"] is None
    v = loop["virtual_stop"]
    assert v["b_full"] == 13 and 2 <= v["b_stop"] <= 4 and v["saved_progress"] > 0.6
    assert got["fatal_1"]["stop"]["reason"] == "fatal_minefield" and got["fatal_1"]["virtual_stop"]["b_stop"] == 2
    assert got["clean_1"]["virtual_stop"] is None and got["clean_1"]["native_similarity"] == 1.0
    assert summary["stops_by_reason"]["repeated_failure"]["halted_runs"] == 1
    assert json.loads((tmp_path / "out" / log.stem / "replay_summary.json").read_text())["replayed"] == 3


def test_a_virtual_stop_says_the_seconds_and_tokens_of_the_turns_it_saves(tmp_path: Path) -> None:
    """Each agent turn of the native loop costs 100 + its number tokens: the virtual stop saves exactly the tokens of the
    turns after it, and the seconds those turns' model and tool calls took (known, so not None)."""
    def priced(messages: list[Any], *args: Any) -> Any:
        output = ex.scripted_output(messages, *args)
        turn = sum(m.role == "assistant" for m in messages)
        output.usage = ModelUsage(input_tokens=100, output_tokens=turn, total_tokens=100 + turn)
        return output

    logs = tmp_path / "native"
    [log] = inspect_eval(ex.address_book(None, ("loop",)), model=get_model("mockllm/model", custom_outputs=priced), display="none",
                         log_level="error", log_dir=str(logs))
    assert log.status == "success"
    (tmp_path / "bp").mkdir()
    (tmp_path / "bp" / "loop.json").write_text(ex.blueprint().to_json())
    [path] = logs.glob("*.eval")
    got = replay(path, "--blueprints", tmp_path / "bp", out=tmp_path / "out")
    v = got["loop_1"]["virtual_stop"]
    assert v["b_full"] == 13 and v["tokens_saved"] == sum(100 + turn for turn in range(v["b_stop"], 13))
    assert v["seconds_saved"] is not None and v["seconds_saved"] >= 0
    # A log is input like any other: a time no clock gives and a negative count make those figures unknown, never NaN.
    [sample] = read_eval_log_samples(str(path))
    models = [e for e in sample.events if isinstance(e, ModelEvent)]
    models[-1].working_time = float("nan")
    models[-2].output.usage.total_tokens = -5  # type: ignore[union-attr]
    hostile = virtual_stop(v["b_stop"], 13, turn_costs(sample))
    assert hostile["seconds_saved"] is None and hostile["tokens_saved"] is None
    assert json.loads(json.dumps(hostile, allow_nan=False)) == hostile


def test_a_native_log_without_blueprints_skips_its_samples_with_the_reason(tmp_path: Path) -> None:
    """No blueprint file and none stored in the log: each sample is skipped saying where a blueprint would be looked for."""
    log = record(tmp_path, None, ("clean",))
    got = replay(log, out=tmp_path / "out")
    [skipped] = got["_summary"]["skipped_scenarios"]
    assert got["_summary"]["replayed"] == 0 and "has no blueprint" in skipped["reason"]


def test_a_broken_log_is_skipped_and_the_others_replayed(tmp_path: Path) -> None:
    """A file named .eval that is no log is skipped with one sentence; the good log beside it is replayed."""
    log = record(tmp_path, DynSteer(ex.blueprint()), ("clean",))
    bad = log.parent / "broken.eval"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    got = replay(log.parent, out=tmp_path / "out")
    assert got["_summary"]["replayed"] == 1
    [skipped] = got["_summary"]["skipped_scenarios"]
    assert "broken.eval could not be read as an Inspect log" in skipped["reason"]


def test_a_path_that_is_no_log_and_no_run_is_one_sentence(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An empty folder is neither: the command fails with one sentence, no traceback."""
    (tmp_path / "empty").mkdir()
    assert main(["replay", str(tmp_path / "empty"), "-o", str(tmp_path / "out"), "--no-progress"]) != 0
    err = capsys.readouterr().err
    assert "holds no recorded run" in err and "Traceback" not in err


def test_the_stop_is_kept_in_the_sample_store(tmp_path: Path) -> None:
    """The live stop recorded in the sample is what the replay compares with."""
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(record(tmp_path, DynSteer(ex.blueprint()), ("loop",))))
    assert log.samples is not None and log.samples[0].store[STOP_KEY]["reason"] == "repeated_failure"


# -- one damaged sample, one log -------------------------------------------------------------------------------------

BOMB = 2**31 - 2**24  # what one member inflates to: about 2 GiB of zeros (the most a zip without Zip64 holds), 2 MB compressed


def _rezip(log: Path, target: Path, member: str, how: str) -> None:
    """A copy of ``log`` at ``target`` with one member changed: cut short (``truncated``), its compressed bytes flipped
    (``flipped``; ``flipped-zstd`` in the member as Inspect compressed it), or replaced by about 2 GiB of zeros declaring that
    size (``bomb``) or 100 bytes (``forged-bomb``)."""
    import shutil

    if how == "flipped-zstd":  # Inspect's own member, Zstandard-compressed as Inspect wrote it
        shutil.copy(log, target)
    else:
        _copy_changed(log, target, member, how)
    _patch(target, member, how)


def _copy_changed(log: Path, target: Path, member: str, how: str) -> None:
    import zipfile

    with zipfile.ZipFile(log) as src, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename != member:
                dst.writestr(info.filename, data)
            elif how == "truncated":
                dst.writestr(info.filename, data[: len(data) // 2])
            elif how in ("bomb", "forged-bomb"):
                with dst.open(info.filename, "w") as out:
                    for _ in range(BOMB // 2**24):
                        out.write(bytes(2**24))
            else:
                dst.writestr(info.filename, data)


def _patch(target: Path, member: str, how: str) -> None:
    import zipfile

    if how in ("flipped", "flipped-zstd", "forged-bomb"):
        raw = bytearray(target.read_bytes())
        with zipfile.ZipFile(target) as z:
            info = z.getinfo(member)
        if how.startswith("flipped"):
            at = info.header_offset
            start = at + 30 + int.from_bytes(raw[at + 26: at + 28], "little") + int.from_bytes(raw[at + 28: at + 30], "little")
            raw[start + info.compress_size // 2: start + info.compress_size // 2 + 8] = b"\xff" * 8
        else:  # the central directory and the local header say 100 bytes
            raw[info.header_offset + 22: info.header_offset + 26] = (100).to_bytes(4, "little")
            central = raw.index(b"PK\x01\x02")
            while raw[central + 46: central + 46 + len(info.filename)] != info.filename.encode():
                central = raw.index(b"PK\x01\x02", central + 4)
            raw[central + 24: central + 28] = (100).to_bytes(4, "little")
        target.write_bytes(bytes(raw))


def _sample_member(log: Path, sample: str) -> str:
    import zipfile

    with zipfile.ZipFile(log) as z:
        return next(n for n in z.namelist() if n.startswith(f"samples/{sample}_epoch_"))


def replay_apart(tmp_path: Path, *args: str | Path) -> tuple[int, str, int]:
    """``dynsteer replay`` in a process of its own, within two minutes: its exit status, stderr and peak memory in kB."""
    import os
    import subprocess
    import sys

    code = ("import resource, sys; from dynsteer_hook.cli import main; code = main(sys.argv[1:]); "
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr); sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", code, "replay", *map(str, args), "--no-progress"], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "XDG_DATA_HOME": str(tmp_path / "xdg")})
    err = done.stderr.strip().splitlines()
    return done.returncode, done.stderr, int(err[-1]) if err and err[-1].isdigit() else -1


@pytest.mark.parametrize("how", ["truncated", "flipped", "flipped-zstd", "bomb", "forged-bomb"])
def test_one_damaged_sample_is_skipped_with_its_reason_and_the_others_replayed(tmp_path: Path, how: str) -> None:
    """A sample cut short, with damaged compressed bytes, or inflating to 2 GiB (declared, or hidden behind a declared
    100 bytes) is skipped with one sentence naming the log, the sample and what is wrong; the two other samples of the
    log are replayed, and the replay stays under 1 GB of memory (it runs in a process of its own to measure it)."""
    log = record(tmp_path, DynSteer(ex.blueprint()))
    bad = tmp_path / "bad" / log.name
    bad.parent.mkdir()
    _rezip(log, bad, _sample_member(log, "loop"), how)
    code, err, peak = replay_apart(tmp_path, bad, "-o", tmp_path / "out")
    assert code == 0 and "Traceback" not in err, err[-2000:]
    assert 0 < peak < 1_000_000  # kilobytes
    summary = json.loads((tmp_path / "out" / "replay_summary.json").read_text())
    assert sorted(r["scenario"] for r in summary["per_scenario"]) == ["clean_1", "fatal_1"]
    [skip] = summary["skipped_scenarios"]
    assert skip["scenario"] == "loop_1" and str(bad) in skip["reason"] and "\n" not in skip["reason"]
    if how.endswith("bomb"):
        assert "declares" in skip["reason"]


def test_a_log_whose_header_inflates_to_gigabytes_is_skipped_in_one_sentence(tmp_path: Path) -> None:
    """The log's own header is no sample: the whole log is skipped, saying which member and why; a good log beside it is replayed."""
    good = record(tmp_path, DynSteer(ex.blueprint()), ("clean",))
    bad = good.parent / "bomb.eval"
    _rezip(good, bad, "header.json", "bomb")
    got = replay(good.parent, out=tmp_path / "out")
    assert got["_summary"]["replayed"] == 1
    [skip] = got["_summary"]["skipped_scenarios"]
    assert skip["scenario"] is None and "bomb.eval" in skip["reason"] and "header.json" in skip["reason"] and "declares" in skip["reason"]


def test_a_pipe_named_like_a_log_is_skipped_without_waiting(tmp_path: Path) -> None:
    """A FIFO named ``x.eval`` in a replayed folder is never opened for a blocking read: it is skipped in one sentence
    and the log beside it replayed (before, the command waited forever for a writer)."""
    import os

    log = record(tmp_path, DynSteer(ex.blueprint()), ("clean",))
    os.mkfifo(log.parent / "pipe.eval")
    code, err, _ = replay_apart(tmp_path, log.parent, "-o", tmp_path / "out")
    assert code == 0 and "Traceback" not in err, err[-2000:]
    summary = json.loads((tmp_path / "out" / "replay_summary.json").read_text())
    [skip] = summary["skipped_scenarios"]
    assert summary["replayed"] == 1 and "pipe.eval could not be read as an Inspect log: it is a pipe" in skip["reason"]


def test_a_link_planted_at_a_sample_folder_is_never_written_through(tmp_path: Path) -> None:
    """``O/<log>/trajectories/<sample>`` linked to another folder: that sample is skipped saying so, the link's target gets
    nothing, the other samples are replayed; a link at ``O/<log>`` itself stops the replay in one sentence before it writes."""
    log = record(tmp_path, DynSteer(ex.blueprint()), ("clean", "loop"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    sample_dir = tmp_path / "out" / log.stem / "trajectories" / "loop_1"
    sample_dir.parent.mkdir(parents=True)
    sample_dir.symlink_to(elsewhere, target_is_directory=True)
    got = replay(log, out=tmp_path / "out")
    [skip] = got["_summary"]["skipped_scenarios"]
    assert skip["scenario"] == "loop_1" and "symbolic link" in skip["reason"] and list(elsewhere.iterdir()) == []
    assert got["clean_1"]["outcome"] == "completed"
    (tmp_path / "out2").mkdir()
    (tmp_path / "out2" / log.stem).symlink_to(elsewhere, target_is_directory=True)
    assert main(["replay", str(log), "-o", str(tmp_path / "out2"), "--no-progress"]) == 2
    assert list(elsewhere.iterdir()) == []
