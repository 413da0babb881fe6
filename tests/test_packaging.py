"""The package as a user installs it: a wheel built from this source, installed into a folder of its
own, finds the shipped blueprints as package data (no source checkout beside it)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCENARIO = "send_message_with_contact_content_cellular_off"


def test_installed_wheel_finds_a_shipped_blueprint(tmp_path: Path) -> None:
    """``default_blueprint_dir`` of the installed copy lies inside the install folder and holds loadable blueprints."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (REPO / name).exists():
            shutil.copy2(REPO / name, src / name)
    shutil.copytree(REPO / "dynsteer_hook", src / "dynsteer_hook", symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "blueprints", src / "blueprints")
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels), str(src)],
                   check=True, capture_output=True, cwd=tmp_path, timeout=300)
    [wheel] = wheels.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert f"dynsteer_hook/blueprints/toolsandbox/{SCENARIO}.json" in names
    shipped = {n.rsplit("/", 1)[1] for n in names if n.startswith("dynsteer_hook/report/templates/")}
    assert shipped == {p.name for p in (REPO / "dynsteer_hook" / "report" / "templates").iterdir()}, shipped
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                   check=True, capture_output=True, cwd=tmp_path, timeout=300)
    probe = (
        "import dynsteer_hook, sys\n"
        "from dynsteer_hook.toolsandbox.live.preflight import default_blueprint_dir, blueprint_path\n"
        "from dynsteer_hook.files.blueprints import load_valid_blueprint\n"
        "from dynsteer_hook.report.run_page import render_run_page\n"
        "assert 'id=\"run-data\"' in render_run_page('t', []), 'the run page template is not in the wheel'\n"
        "d = default_blueprint_dir()\n"
        f"bp = load_valid_blueprint(blueprint_path(d, {SCENARIO!r}))\n"
        "from dynsteer_hook.report.scenario_page import environment\n"
        "assert environment().get_template('scenario.html.j2').filename.startswith(dynsteer_hook.__file__.rsplit('/', 1)[0])\n"
        "print(dynsteer_hook.__file__); print(d); print(bp.task); print(len(list(d.glob('*.json'))))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(target)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    module, directory, task, count = done.stdout.strip().splitlines()[-4:]
    assert Path(module).is_relative_to(target) and Path(directory).is_relative_to(target)
    assert task == SCENARIO
    assert int(count) == len(list((REPO / "blueprints" / "toolsandbox").glob("*.json")))
