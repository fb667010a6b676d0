"""A sweep's screen in a terminal is one progress line plus one line per finished
run (the launching process is the only writer; lines clear and redraw the progress line), and
an interrupt's stop message comes out whole. Fast tests drive the console and the monitor on a
fake terminal; slow ones run ``dp-arena`` in a pseudo-terminal and render what it wrote."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import sys
import time
from pathlib import Path

import pytest

from dp_arena.sweep.lines import say
from dp_arena.sweep.progress import Console, ProgressMonitor, RunState, status_text
from dp_arena.sweep.records import SweepPlan, from_json
from tests.sweep_support import CSV, DOUBLES, PARALLEL, runs_of
from tests.terminal_screen import PtyRun, render

STATUS = re.compile(r"^\[[#.]+\] \d+/\d+ runs, \d+ in flight")
STOPPED = re.compile(r"^dp-arena: stopped\. (\d+) of (\d+) runs had finished; (\d+) in flight "
                     r"marked KILLED\. Run the same command again to resume \(finished runs are "
                     r"skipped, stopped ones redone\)\.$")


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_terminal_model_by_hand():
    assert render("abc\rX\x1b[K\nnext") == ["X", "next"]
    assert render("one\ntwo\x1b[A\rONE\x1b[K\n\nthree") == ["ONE", "two", "three"]
    assert render("abcdef", width=4) == ["abcd", "ef"]


def test_lines_clear_and_redraw_the_progress_line():
    term = FakeTerminal()
    console = Console(out=term, err=term)
    console.status("[...] 0/3 runs, 2 in flight")
    console.line("[1/3] done   a")
    console.status("[#..] 1/3 runs, 2 in flight")
    console.status("[#..] 1/3 runs, 2 in flight")  # unchanged: not redrawn
    console.line("[2/3] FAILED b\n  the reason", error=True)
    console.status("[##.] 2/3 runs, 1 in flight")
    console.close()
    console.line("sweep finished")
    assert render(term.getvalue()) == ["[1/3] done   a", "[2/3] FAILED b", "  the reason",
                                       "[##.] 2/3 runs, 1 in flight", "sweep finished"]
    assert term.getvalue().count("[#..] 1/3") == 2  # drawn once, redrawn once under a line


def test_without_a_terminal_lines_are_plain_and_there_is_no_progress_line():
    out, err = io.StringIO(), io.StringIO()
    console = Console(out=out, err=err)
    console.status("[...] 0/3 runs")
    console.line("[1/3] done   a")
    console.line("[2/3] FAILED b", error=True)
    console.close()
    assert out.getvalue() == "[1/3] done   a\n" and err.getvalue() == "[2/3] FAILED b\n"


def test_stdout_to_a_file_keeps_its_lines_plain_while_stderr_shows_progress():
    out, term = io.StringIO(), FakeTerminal()
    console = Console(out=out, err=term)
    console.status("[...] 0/2 runs")
    console.line("[1/2] done   a")
    console.line("[2/2] FAILED b", error=True)
    console.close()
    assert out.getvalue() == "[1/2] done   a\n"
    assert render(term.getvalue()) == ["[2/2] FAILED b", "[...] 0/2 runs"]


def test_a_write_to_a_pipe_whose_reader_has_gone_is_skipped():
    read, write = os.pipe()
    os.close(read)
    stream = os.fdopen(write, "w")
    assert say("lost", stream) is False  # BrokenPipeError caught
    console = Console(out=stream, err=stream)
    console.line("also lost")  # nothing raised, and the stream is not written to again
    console.line("and this", error=True)
    assert say("ok", io.StringIO()) is True
    try:
        stream.close()
    except OSError:
        pass


def test_the_progress_line_fits_the_width():
    runs = [RunState("mst", "done", 3.0), RunState("mst", "running", 1.0),
            RunState("mst", "pending")]
    for width in (200, 80, 40, 12):
        assert len(status_text(runs, 2, width)) <= width - 1
    assert status_text(runs, 2, 80).startswith("[##########" + "." * 20 + "] 1/3 runs, 1 in "
                                               "flight, ETA ")
    unseen = [*runs, RunState("aim", "pending", 0.0, "aim eps=10 trial=0", "aim eps=10")]
    for width in (200, 80, 40, 12):  # a lower bound (aim at epsilon 10 has not run) fits too
        assert len(status_text(unseen, 2, width)) <= width - 1
    # mst 3 s a run: 2 s left in flight, 3 s pending; aim at least the cheapest (3 s): 8 / 2
    assert status_text(unseen, 2, 80).endswith(", ETA >= 4s")


def plan_of(n: int) -> SweepPlan:
    jobs = [{"index": i, "verdict": "run", "mechanism": "independent", "label": f"job{i}"}
            for i in range(n)]
    return from_json(SweepPlan, {"total": n, "jobs": jobs})


def write(path: Path, name: str, record: dict) -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / name).write_text(json.dumps(record))


def test_the_monitor_prints_one_line_per_finished_run_under_one_progress_line(tmp_path):
    term = FakeTerminal()
    monitor = ProgressMonitor(tmp_path, plan_of(3), 2, poll_s=0.02, print_lines=True,
                              console=Console(out=term, err=term)).start()
    now = time.time()
    write(tmp_path / "0", "started.json", {"index": 0, "started": now})
    write(tmp_path / "1", "started.json", {"index": 1, "started": now})
    time.sleep(0.2)
    write(tmp_path / "0", "outcome.json", {"index": 0, "status": "FINISHED", "label": "job0",
                                           "seconds": 1.0, "scores": {"kmarginal/score": 9}})
    time.sleep(0.2)
    write(tmp_path / "1", "outcome.json", {"index": 1, "status": "FAILED", "label": "job1",
                                           "message": "boom", "run_id": "abc"})
    write(tmp_path / "2", "outcome.json", {"index": 2, "status": "FINISHED", "label": "job2"})
    monitor.stop()  # the last run ended after the last look: its line comes before the end
    rows = render(term.getvalue())
    assert rows[0].startswith("[1/3] done   job0  kmarginal/score=9.0  (1.0s)")
    assert rows[1:3] == ["[2/3] FAILED job1", "  boom"] or rows[1].startswith("[2/3] done")
    assert sum(r.startswith(("[1/3] ", "[2/3] ", "[3/3] ")) for r in rows) == 3
    assert [r for r in rows if STATUS.match(r)] == [rows[-1]]
    assert rows[-1].startswith("[" + "#" * 30 + "] 3/3 runs, 0 in flight, 1 failed")


def test_halting_the_monitor_leaves_the_stop_message_whole(tmp_path):
    term = FakeTerminal()
    monitor = ProgressMonitor(tmp_path, plan_of(2), 2, poll_s=0.02, print_lines=True,
                              console=Console(out=term, err=term)).start()
    write(tmp_path / "0", "started.json", {"index": 0, "started": time.time()})
    deadline = time.time() + 10
    while "1 in flight" not in term.getvalue() and time.time() < deadline:
        time.sleep(0.02)
    term.write("^C")  # the terminal's echo of Ctrl-C, after the progress line
    monitor.halt()
    message = "dp-arena: stopped. 0 of 2 runs had finished; 1 in flight marked KILLED."
    say(message, term)
    rows = render(term.getvalue())
    assert STATUS.match(rows[0]) and "^C" not in rows[0]
    assert rows[1:] == [message]


# ----- dp-arena in a pseudo-terminal ------------------------------------------------------------
def dp_arena_in_pty(cwd: Path, *overrides: str) -> PtyRun:
    return PtyRun([sys.executable, "-m", "dp_arena.cli.main", *overrides], cwd,
                  {**PARALLEL, "TERM": "xterm", "COLUMNS": "200"})


@pytest.mark.slow
def test_a_sweep_in_a_terminal_shows_one_progress_line_and_one_line_per_run(csv_dir):
    run = dp_arena_in_pty(csv_dir, *CSV, "mechanism=independent,uniform", "privacy.epsilon=1",
                          "trial=0,1")
    code = run.finish(timeout=600)
    rows = render(run.text(), width=run.cols)
    assert code == 0, "\n".join(rows)
    progress = [r for r in rows if STATUS.match(r)]
    assert len(progress) == 1 and progress[0].startswith(f"[{'#' * 30}] 4/4 runs"), rows
    lines = [r for r in rows if re.match(r"^\[\d/4\] ", r)]
    assert sorted(r[:6] for r in lines) == ["[1/4] ", "[2/4] ", "[3/4] ", "[4/4] "], rows
    assert all(" done   " in r and r.count("/4]") == 1 for r in lines), rows
    assert not [r for r in rows if "in flight" in r and r not in progress + lines], rows
    # the board follows the progress line, which follows the run lines
    assert rows.index(progress[0]) > max(rows.index(r) for r in lines)
    assert rows.index(progress[0]) < next(i for i, r in enumerate(rows)
                                          if r.startswith("sweep finished: 4 of 4"))


@pytest.mark.slow
# SIGTERM's stop path is the same handler; it is driven through a pipe in
# tests/test_sweep_interrupt.py and through a sweep in tests/test_sweep_guard.py (suite time)
@pytest.mark.parametrize("how", ["ctrl-c"])
def test_an_interrupted_sweep_in_a_terminal_prints_its_stop_message_whole(csv_dir, how):
    """Two quick runs, then two that sleep: interrupted with both in flight."""
    run = dp_arena_in_pty(csv_dir, *CSV, "mechanism=test_sleeper", "mechanism.seconds=0,120",
                          "privacy.epsilon=1,2", "trial=0", *DOUBLES)
    ready = run.wait_for(lambda r: any(
        STATUS.match(row) and " 2/4 runs, 2 in flight" in row
        for row in render(r.text(), width=r.cols)), timeout=400)
    assert ready, "\n".join(render(run.text(), width=run.cols))
    # a job is "in flight" once it starts; its MLflow run is created a moment later (on a
    # loaded machine, seconds later): interrupt once both runs exist, so both must end KILLED
    deadline = time.time() + 120
    while time.time() < deadline and len([
            r for r in runs_of(csv_dir) if r.info.status == "RUNNING"]) < 2:
        time.sleep(0.2)
    if how == "ctrl-c":
        run.type(b"\x03")  # the terminal sends SIGINT to its foreground process group
    else:
        os.kill(run.proc.pid, signal.SIGTERM)
    code = run.finish(timeout=120)
    name = "SIGINT" if how == "ctrl-c" else "SIGTERM"
    rows = render(run.text(), width=run.cols)
    assert code == 128 + getattr(signal, name), "\n".join(rows)
    assert len([r for r in rows if STATUS.match(r)]) == 1, rows
    assert len([r for r in rows if re.match(r"^\[\d/4\] done   test_sleeper", r)]) == 2, rows
    assert f"dp-arena: {name} received, stopping every worker ..." in rows, rows
    stopped = [m for r in rows if (m := STOPPED.match(r))]
    assert len(stopped) == 1, rows
    assert stopped[0].groups() == ("2", "4", "2"), rows
    assert rows[-1] == stopped[0].group(0)
    assert not [r for r in runs_of(csv_dir) + runs_of(csv_dir, kind="sweep")
                if r.info.status == "RUNNING"]
