"""tests/support/forked.py: a command run in a forked child prints and exits as the installed
console script does in a fresh interpreter, and nothing it does reaches the test's process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.forked import SCRIPTS, entry_point, exit_status, run_forked

BIN = Path(sys.executable).parent


def test_every_console_script_has_a_callable_entry_point():
    assert "dp-arena" in SCRIPTS and "dp-arena-audit" in SCRIPTS
    for script in SCRIPTS:
        assert callable(entry_point(script)), script


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


def test_a_child_that_runs_too_long_is_killed(tmp_path):
    # simulating a million trips takes far longer than half a second
    with pytest.raises(subprocess.TimeoutExpired):
        run_forked(("dp-arena-simulate", "--trips", "1000000", "--out", "sim"), tmp_path,
                   dict(os.environ), timeout=0.5)


def test_the_fork_server_has_not_started_jax():
    """JAX's runtime in the process a child is forked from deadlocks the child's JAX code;
    the server only imports. Its child reports what it inherited."""
    from tests.support.forked import fork_server

    queue = fork_server().SimpleQueue()
    child = fork_server().Process(target=report_jax, args=(queue,))
    child.start(), child.join(60)
    assert queue.get() is False


def report_jax(queue) -> None:
    from jax._src import xla_bridge
    queue.put(xla_bridge.backends_are_initialized())
