"""A sweep whose output is a pipe whose reader has exited (``dp-arena ... 2>&1 |
head -1``) still closes every run when it is interrupted (Ctrl-C to the process group, or
SIGTERM to the sweep), and still finishes normally when it is not: writes to the broken pipe
are skipped, never fatal."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.sweep_support import CSV, DOUBLES, PARALLEL, runs_of


def running_children(cwd: Path) -> int:
    if not list(cwd.glob("multirun/*/*/plan.json")):
        return 0
    try:
        return sum(r.info.status == "RUNNING" for r in runs_of(cwd))
    except Exception:  # noqa: BLE001 - the store is being written
        return 0


def sweep_into_head(cwd: Path, *overrides: str) -> tuple[subprocess.Popen, subprocess.Popen]:
    """``dp-arena <overrides> 2>&1 | head -1``, the sweep in a process group of its own (head
    has exited by the time a test signals the group); returns (sweep, head)."""
    sweep = subprocess.Popen([sys.executable, "-m", "dp_arena.cli.main", *overrides], cwd=cwd,
                             env=PARALLEL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             start_new_session=True)
    head = subprocess.Popen(["head", "-1"], stdin=sweep.stdout, stdout=subprocess.PIPE)
    sweep.stdout.close()  # only head reads it
    return sweep, head


@pytest.mark.slow
@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_an_interrupted_sweep_piped_into_a_reader_that_exited_closes_every_run(csv_dir, how):
    sweep, head = sweep_into_head(csv_dir, *CSV, "mechanism=test_sleeper",
                                  "mechanism.seconds=120", "privacy.epsilon=1,2,3", "trial=0",
                                  *DOUBLES)
    try:
        first_line = head.communicate(timeout=300)[0]  # head exits after one line
        assert first_line, "the sweep printed nothing"
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and running_children(csv_dir) < 2:
            assert sweep.poll() is None, f"the sweep ended early: {sweep.returncode}"
            time.sleep(0.2)
        assert running_children(csv_dir) >= 2
        time.sleep(1.5)  # the monitor has written to the broken pipe since
        if how == "ctrl-c":  # what a terminal does: SIGINT to the whole foreground group
            os.killpg(sweep.pid, signal.SIGINT)
        else:
            sweep.send_signal(signal.SIGTERM)
        code = sweep.wait(timeout=120)
    finally:
        if sweep.poll() is None:
            os.killpg(sweep.pid, signal.SIGKILL)
    assert code == 128 + (signal.SIGINT if how == "ctrl-c" else signal.SIGTERM)
    children, parents = runs_of(csv_dir), runs_of(csv_dir, kind="sweep")
    assert len(parents) == 1 and parents[0].info.status == "KILLED"
    assert children and not [r for r in children if r.info.status == "RUNNING"]
    killed = [r for r in children if r.info.status == "KILLED"]
    assert len(killed) >= 2 and all(r.data.tags.get("stopped_reason") for r in killed)


@pytest.mark.slow
def test_a_sweep_piped_into_a_reader_that_exited_still_finishes_its_runs(csv_dir):
    """Not interrupted: every run finishes, the board is written and the parent run ends
    FINISHED, exit 0 (what would have been printed is dropped)."""
    sweep, head = sweep_into_head(csv_dir, *CSV, "mechanism=independent,uniform",
                                  "privacy.epsilon=1", "trial=0")
    head.communicate(timeout=300)
    code = sweep.wait(timeout=600)
    children, parents = runs_of(csv_dir), runs_of(csv_dir, kind="sweep")
    assert code == 0
    assert len(children) == 2 and all(r.info.status == "FINISHED" for r in children)
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    assert list(csv_dir.glob("multirun/*/*/leaderboard/leaderboard.csv"))
