"""No line of a sweep's console output wraps at the terminal's width: a run's ``done`` and
``skip`` lines fit it (the ranking score alone, single spaces, then folded onto two lines),
keeping mechanism, epsilon, trial, score, time and progress. By hand, on random lines, and
through the progress monitor writing to a pseudo-terminal 60 columns wide."""

from __future__ import annotations

import fcntl
import io
import json
import os
import select
import struct
import termios
import time

import numpy as np
import pytest

from dp_arena.sweep.lines import cut_label, job_line
from dp_arena.sweep.progress import Console, ProgressMonitor
from dp_arena.sweep.records import Outcome, SweepPlan, from_json
from tests.terminal_screen import render

SCORES = {"challenge/overall": 673.4, "kmarginal/score": 917.7}
LABEL = "adaptive_grid accountant=zcdp eps=10 trial=2"
PROGRESS = ("[10/60]", "ETA 12m30s (2 in flight)")


def done(label: str = LABEL, scores=None, seconds: float = 17.6, status: str = "FINISHED",
         run_id: str = "") -> Outcome:
    return from_json(Outcome, {"index": 9, "status": status, "label": label,
                               "seconds": seconds, "run_id": run_id,
                               "scores": SCORES if scores is None else scores})


def lines_at(width: int | None, outcome: Outcome | None = None) -> list[str]:
    text, to_stderr = job_line(outcome or done(), PROGRESS, width=width)
    assert not to_stderr
    return text.split("\n")


def test_the_line_by_hand_at_each_width():
    full = ("[10/60] done   adaptive_grid accountant=zcdp eps=10 trial=2  "
            "challenge/overall=673.4  kmarginal/score=917.7  (17.6s)  ETA 12m30s (2 in flight)")
    assert lines_at(None) == [full] and lines_at(200) == [full]  # a pipe, a wide terminal
    assert len(full) == 142
    assert lines_at(120) == ["[10/60] done   adaptive_grid accountant=zcdp eps=10 trial=2  "
                             "challenge/overall=673.4  (17.6s)  ETA 12m30s"]
    assert lines_at(90) == ["[10/60] done adaptive_grid accountant=zcdp eps=10 trial=2 "
                            "overall=673.4 (17.6s) ETA 12m30s"]
    folded = ["[10/60] done adaptive_grid accountant=zcdp eps=10 trial=2",
              "  overall=673.4 (17.6s) ETA 12m30s"]
    assert lines_at(89) == folded and lines_at(60) == folded
    # narrower than the label: its settings are cut, epsilon and trial stay
    assert lines_at(40) == ["[10/60] done adaptive_gr… eps=10 trial=2",
                            "  overall=673.4 (17.6s) ETA 12m30s"]


def test_a_skip_line_fits_too():
    outcome = done(status="SKIPPED", run_id="0123456789abcdef")
    assert lines_at(None, outcome)[0] == (
        "[10/60] skip   adaptive_grid accountant=zcdp eps=10 trial=2  already finished (run "
        "01234567): challenge/overall=673.4  kmarginal/score=917.7  ETA 12m30s (2 in flight)")
    assert lines_at(90, outcome) == ["[10/60] skip adaptive_grid accountant=zcdp eps=10 trial=2 "
                                     "overall=673.4 ETA 12m30s"]  # 82 characters
    assert lines_at(80, outcome) == ["[10/60] skip adaptive_grid accountant=zcdp eps=10 trial=2",
                                     "  overall=673.4 ETA 12m30s"]


def test_cut_label_keeps_epsilon_and_trial():
    assert cut_label("mst eps=1 trial=0", 40) == "mst eps=1 trial=0"
    assert cut_label("m" * 30 + " eps=1 trial=0", 20) == "mmmmm… eps=1 trial=0"
    assert cut_label("m" * 30 + " eps=1 trial=0", 10) == "mmmmmmmmm…"  # no room: the end goes


def test_random_lines_fit_every_width_and_keep_what_matters():
    rng = np.random.default_rng(58)
    for _ in range(500):
        mech = "m" * int(rng.integers(1, 40))
        settings = " ".join(f"k{i}={'v' * int(rng.integers(1, 30))}"
                            for i in range(int(rng.integers(0, 4))))
        eps, trial = f"{rng.choice([0.1, 1, 10, 100]):g}", int(rng.integers(0, 100))
        label = " ".join(p for p in (mech, settings, f"eps={eps} trial={trial}") if p)
        scores = {k: float(rng.uniform(0, 1000)) for k in SCORES if rng.random() < 0.7}
        total = int(rng.choice([9, 60, 999]))
        bound = ">= " if rng.random() < 0.3 else ""  # a lower bound: some costs unknown
        eta = "" if rng.random() < 0.2 else f"ETA {bound}{int(rng.integers(1, 99))}m{0:02d}s"
        eta += f" ({int(rng.integers(1, 9))} in flight)" if eta and rng.random() < 0.5 else ""
        progress = (f"[{int(rng.integers(1, total + 1))}/{total}]", eta)
        status = "SKIPPED" if rng.random() < 0.2 else "FINISHED"
        width = int(rng.integers(60, 201))
        text, _ = job_line(done(label, scores, float(rng.uniform(0, 5000)), status, "r" * 16),
                           progress, width=width)
        lines = text.split("\n")
        assert max(map(len, lines)) <= width, (text, width)
        assert len(lines) <= 2
        assert lines[0].startswith(progress[0]) and f"eps={eps} trial={trial}" in lines[0]
        if eta:
            assert eta.split(" (")[0] in text
        if "challenge/overall" in scores:
            assert f"overall={scores['challenge/overall']:.1f}" in text


def test_the_monitor_fits_its_lines_to_a_terminal_60_columns_wide(tmp_path):
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 60, 0, 0))
    term = open(slave, "w", encoding="utf-8")  # noqa: SIM115 - closed below
    try:
        console = Console(out=term, err=term)
        assert console.terminal_width() == 60
        plan = from_json(SweepPlan, {"total": 2, "jobs": [
            {"index": i, "verdict": "run", "mechanism": "adaptive_grid", "label": LABEL}
            for i in range(2)]})
        monitor = ProgressMonitor(tmp_path, plan, 2, poll_s=0.02, print_lines=True,
                                  console=console).start()
        for i in range(2):
            (tmp_path / str(i)).mkdir()
            (tmp_path / str(i) / "started.json").write_text(json.dumps(
                {"index": i, "started": time.time()}))
        time.sleep(0.2)
        (tmp_path / "0" / "outcome.json").write_text(json.dumps(
            {"index": 0, "status": "FINISHED", "label": LABEL, "seconds": 17.6,
             "scores": SCORES}))
        time.sleep(0.3)
        (tmp_path / "1" / "outcome.json").write_text(json.dumps(
            {"index": 1, "status": "FINISHED", "label": LABEL, "seconds": 2.0,
             "scores": SCORES}))
        monitor.stop()
        term.flush()
        out = b""
        while True:
            ready, _, _ = select.select([master], [], [], 0.3)
            if not ready:
                break
            out += os.read(master, 65536)
    finally:
        term.close()
        os.close(master)
    text = out.decode()
    written = [line for chunk in text.replace("\r\n", "\n").split("\n")
               for line in chunk.split("\r") if line]
    rows = render(text, width=60)
    assert rows[0] == "[1/2] done adaptive_grid accountant=zcdp eps=10 trial=2", rows
    assert rows[1].startswith("  overall=673.4 (17.6s)"), rows  # ETA: when the 2nd is not seen yet
    assert any(r.startswith("[2/2] done adaptive_grid") for r in rows), rows
    # nothing the terminal wrapped: every row on the screen is a line the monitor wrote
    assert max(len(line.replace("\x1b[K", "")) for line in written) <= 60, written
    assert all(len(r) <= 60 for r in rows) and len(rows) == 5, rows


@pytest.mark.parametrize("width", [60, 80])
def test_the_default_sweeps_lines_fit(width):
    """Every done line of a default sweep's mechanisms (labels as the sweep writes them)."""
    labels = [f"{m} eps={e} trial={t}" for m in (
        "independent", "archetype", "prefix_tree", "mst [quick]", "aim [quick]", "adaptive_grid",
        "adaptive_grid accountant=zcdp", "resample", "public_only", "uniform")
        for e in (1, 10) for t in range(3)]
    for k, label in enumerate(labels, start=1):
        text, _ = job_line(done(label), (f"[{k}/60]", "ETA 1h02m (2 in flight)"), width=width)
        assert max(map(len, text.split("\n"))) <= width, text
        assert "overall=673.4" in text and "(17.6s)" in text and "ETA 1h02m" in text


def test_a_failed_runs_lines_are_folded_at_spaces_and_keep_every_word():
    message = ("time limit of 3600 s exceeded (stopped after 3600.1 s), the run was killed "
               "and its process tree too\n  fix: raise limits.time_limit_s or narrow the sweep")
    outcome = from_json(Outcome, {"index": 2, "status": "FAILED", "label": LABEL,
                                  "message": message, "run_id": "abc"})
    whole, to_stderr = job_line(outcome, ("[3/60]", ""))
    assert to_stderr and max(map(len, whole.split("\n"))) > 60
    text, _ = job_line(outcome, ("[3/60]", ""), width=60)
    assert text.split("\n") == [
        "[3/60] FAILED adaptive_grid accountant=zcdp eps=10 trial=2",
        "  time limit of 3600 s exceeded (stopped after 3600.1 s),",
        "    the run was killed and its process tree too",
        "    fix: raise limits.time_limit_s or narrow the sweep"]
    assert text.split() == whole.split()  # every word, in order


def test_a_pipe_gets_whole_lines_while_the_terminal_is_the_other_stream(tmp_path):
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    pipe = io.StringIO()
    console = Console(out=pipe, err=Terminal())
    assert console.terminal_width() is None and console.terminal_width(error=True) == 80
    plan = from_json(SweepPlan, {"total": 1, "jobs": [
        {"index": 0, "verdict": "run", "mechanism": "adaptive_grid", "label": LABEL}]})
    (tmp_path / "0").mkdir()
    (tmp_path / "0" / "outcome.json").write_text(json.dumps(
        {"index": 0, "status": "FINISHED", "label": LABEL, "seconds": 17.6, "scores": SCORES}))
    ProgressMonitor(tmp_path, plan, 1, poll_s=0.02, print_lines=True,
                    console=console).start().stop()
    assert pipe.getvalue() == ("[1/1] done   adaptive_grid accountant=zcdp eps=10 trial=2  "
                               "challenge/overall=673.4  kmarginal/score=917.7  (17.6s)\n")


def test_a_failed_run_on_a_piped_stderr_stays_whole_while_stdout_is_the_terminal(tmp_path):
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    pipe, term = io.StringIO(), Terminal()
    message = "x " * 60 + "end"
    plan = from_json(SweepPlan, {"total": 1, "jobs": [
        {"index": 0, "verdict": "run", "mechanism": "mst", "label": "mst eps=1 trial=0"}]})
    (tmp_path / "0").mkdir()
    (tmp_path / "0" / "outcome.json").write_text(json.dumps(
        {"index": 0, "status": "FAILED", "label": "mst eps=1 trial=0", "message": message,
         "run_id": "abc"}))
    ProgressMonitor(tmp_path, plan, 1, poll_s=0.02, print_lines=True,
                    console=Console(out=term, err=pipe)).start().stop()
    assert pipe.getvalue() == f"[1/1] FAILED mst eps=1 trial=0\n  {message}\n"
