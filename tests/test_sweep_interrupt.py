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


@pytest.mark.slow
def test_a_sweep_whose_output_pipe_is_closed_before_it_plans_still_runs(csv_dir):
    """Every write fails from the start (the reader closed its end before the sweep began),
    planning's notes and announcements included: the sweep still plans, runs and closes every
    run. A planning write that raised ended such a sweep with exit 1 before any run, whenever
    ``head -1`` had exited before the plan's notes were printed."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        sweep = subprocess.run([sys.executable, "-m", "dp_arena.cli.main", *CSV,
                                "mechanism=independent,uniform", "privacy.epsilon=1", "trial=0"],
                               cwd=csv_dir, env=PARALLEL, stdout=write_end, stderr=write_end,
                               timeout=600)
    finally:
        os.close(write_end)
    children, parents = runs_of(csv_dir), runs_of(csv_dir, kind="sweep")
    assert len(children) == 2 and all(r.info.status == "FINISHED" for r in children)
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    assert sweep.returncode in (0, 1)  # 1: the summary found the pipe broken (said nowhere)


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_while_the_sweep_is_planned_says_so_and_leaves_nothing(csv_dir, stop):
    """SIGTERM (``kill PID``) and SIGINT while the jobs are checked: one ``dp-arena: stopped.``
    line saying nothing was started, exit 143 / 130, no traceback, no sweep folder, no run."""
    sweep = subprocess.Popen([sys.executable, "-m", "dp_arena.cli.main", *CSV,
                              "mechanism=test_slow_to_plan", "privacy.epsilon=1", "trial=0",
                              *DOUBLES], cwd=csv_dir, env=PARALLEL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not (csv_dir / "planning-now").exists():  # the double's notes are being made
            assert sweep.poll() is None and time.monotonic() < deadline, sweep.communicate()
            time.sleep(0.1)
        sweep.send_signal(stop)
        out, err = sweep.communicate(timeout=60)
    finally:
        if sweep.poll() is None:
            os.killpg(sweep.pid, signal.SIGKILL)
    text = out + err
    assert sweep.returncode == 128 + stop, text
    assert "Traceback" not in text and text.count("dp-arena: stopped.") == 1, text
    assert f"{signal.Signals(stop).name} came before any run started: nothing was started" \
        in text
    assert not (csv_dir / "multirun").exists() and not (csv_dir / "mlruns").exists()
    assert runs_of(csv_dir) == [] and runs_of(csv_dir, kind="sweep") == []


@pytest.mark.slow
def test_a_launch_that_fails_after_the_sweep_opened_leaves_no_run_running(csv_dir):
    """A worker process lost (the double ends its own worker under ``limits.isolate=false``)
    fails Hydra's launch; at exit the sweep marks its runs in flight KILLED, ends its parent
    run FAILED and says so once, exit 1."""
    proc = subprocess.run([sys.executable, "-m", "dp_arena.cli.main", *CSV,
                           "mechanism=test_kills_worker", "limits.isolate=false",
                           "privacy.epsilon=1,2", "trial=0", *DOUBLES], cwd=csv_dir,
                          env=PARALLEL, capture_output=True, text=True, timeout=300)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 1, text
    assert text.count("dp-arena: the sweep's launcher failed (above)") == 1, text
    children, parents = runs_of(csv_dir), runs_of(csv_dir, kind="sweep")
    assert len(parents) == 1 and parents[0].info.status == "FAILED"
    assert children and all(r.info.status == "KILLED" for r in children)
    assert all(r.data.tags.get("stopped_reason") for r in children)
