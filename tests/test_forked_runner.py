"""tests/support/forked.py: a command run in a forked child prints and exits as the installed
console script does in a fresh interpreter, and nothing it does reaches the test's process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from tests.support.forked import SCRIPTS, exit_status, run_forked

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def test_the_scripts_are_pyprojects():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert SCRIPTS == scripts


def test_exit_status_as_the_interpreter_gives_it(capsys):
    assert [exit_status(None), exit_status(0), exit_status(2), exit_status(256 + 3)] == [0, 0, 2, 3]
    assert exit_status("boom") == 1 and "boom" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ("dp-arena-schema", "--help"),                                      # exit 0, stdout
    ("dp-arena-schema", "missing.csv", "--out", "p.json", "--from-private"),  # exit 2, stderr
    ("dp-arena-board", "--alpha", "2"),                                 # argparse's error
], ids=["help", "refusal", "argparse"])
def test_forked_and_installed_script_print_and_exit_alike(argv, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"} | {"COLUMNS": "100"}
    fresh = subprocess.run([str(BIN / argv[0]), *argv[1:]], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=300, check=False)
    forked = run_forked(argv, tmp_path, env)
    assert (forked.returncode, forked.stdout, forked.stderr) == \
        (fresh.returncode, fresh.stdout, fresh.stderr)
    assert fresh.returncode == (0 if "--help" in argv else 2)


def test_the_child_changes_nothing_here(tmp_path):
    cwd, env, argv = os.getcwd(), dict(os.environ), list(sys.argv)
    proc = run_forked(("dp-arena-simulate", "--trips", "1000", "--out", "sim"), tmp_path,
                      {**env, "DP_ARENA_FORKED_PROBE": "1"})
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "sim" / "private.csv").is_file()  # the child worked in its folder
    assert (os.getcwd(), dict(os.environ), sys.argv) == (cwd, env, argv)
    assert not Path(cwd, "sim").exists()  # nothing written where the test runs


def sleep_a_minute() -> None:
    time.sleep(60)


def test_a_child_that_runs_too_long_is_killed(tmp_path, monkeypatch):
    monkeypatch.setitem(SCRIPTS, "sleeper", f"{__name__}:sleep_a_minute")
    with pytest.raises(subprocess.TimeoutExpired):
        run_forked(("sleeper",), tmp_path, dict(os.environ), timeout=0.5)
