"""A sweep's progress: runs done / in flight / failed and an ETA weighted by each run's
expected cost, read from the sweep folder (so it works with every launcher that shares it:
joblib, SLURM, Ray), shown by one writer in the launching process.

- Each job writes ``started.json`` into its output folder when it starts and ``outcome.json``
  when it ends (:mod:`dp_arena.sweep.job`; the records are :mod:`dp_arena.sweep.records`);
  :func:`sweep_state` reads both against the plan, :func:`progress_text` is a job's
  ``[k/N]`` and ETA.
- :func:`estimate`, how it estimates: the time left of every run not ended, over the workers
  (and at least the longest run left). A run costs the mean wall time of the finished runs of
  its cost group (:func:`cost_group`: its mechanism and settings; and its epsilon for the
  :data:`EPSILON_DEPENDENT` mechanisms, aim and adaptive_grid, which cost more at a larger
  epsilon). The wall time is the job's own, so a loaded machine's slowness is in it, and
  the workers share the work as the sweep's runs did. A run in flight costs what is left of
  its estimate, and at least a quarter of its estimate (or of what it has run).
  Before a group's first run has finished, its cost is unknown and no prior guesses it (a
  cost table, times a margin, showed 6.2 times the time left at the start of the default
  competition under load and 1.5-2 times until its 50th run): the run counts at a lower
  bound (the cheapest measured group, every run paying the per-run overhead; for an
  epsilon-dependent mechanism at least its runs at a smaller epsilon) and the ETA reads
  ``ETA >= 3m20s``; before any run finished there is no ETA. A skipped run (finished by an
  earlier sweep: a resumed one) cost a look-up: it prices nothing, so a resumed sweep shows
  no ETA until its first run finishes, then one from what this sweep's runs took (a pending
  run that will turn out to be a skip is priced as a run). On a replay of the default
  competition (tests/test_progress.py, benchmarks/eta_replay.py) the ETA is within 2 times
  the time left from the first finished run of every cost group on, fresh and resumed.
  With the cost model (:mod:`dp_arena.sweep.cost_estimate`: each planned run's predicted CPU
  seconds, fitted on the store's finished runs, in the plan), a run of a group none of
  whose runs has finished costs its prediction in this sweep's wall time (overhead + slope x
  prediction, fitted on its finished runs: the job's overhead and the machine's load)
  instead of the lower bound, and a measured group's mean is moved to each run by the
  model's difference (a larger dataset); before any run finished, the model's figures give an ``ETA ~3m20s`` when they
  price every run left. Without predictions (no model, an unknown mechanism) it is as above.
- :class:`Console`: the one writer for the terminal (stdout if it is one, else stderr if it is
  one). The progress line (:func:`status_text`, within the terminal's width) is drawn with
  ``\\r`` and ``ESC [ K``; a line for a terminal stream clears it, is written, and the
  progress line is redrawn below, under one lock, so the screen holds one progress line plus
  one line per finished run, never stale bars or fragments. A line for a stream that is not a
  terminal is a plain line (no carriage returns). Every write is guarded
  (:func:`dp_arena.sweep.lines.say`): a stream whose reader has gone is dropped, never fatal.
- :class:`ProgressMonitor`: a thread in the launching process. In a local (joblib) sweep it
  prints each finished run's ``[k/N]`` line itself, read from the outcome files
  (:func:`monitor_prints_lines`; the workers print nothing to the terminal), so one process
  writes to the terminal. On a terminal it draws the progress line (done / in flight / failed
  / ETA); otherwise a plain ``progress`` line whenever something changed (SLURM, Ray:
  ``echo_changes``) and at most every :data:`HEARTBEAT_S` seconds while runs are in flight
  (so slow runs never leave the console silent). :meth:`ProgressMonitor.stop` prints the
  lines of the runs that ended since its last look and ends the progress line;
  :meth:`ProgressMonitor.halt` (the stop signal's handler) ends it at once, so the stop
  message that follows is whole.
"""

from __future__ import annotations

import os
import re
import statistics
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dp_arena.sweep.lines import is_terminal, job_line, say
from dp_arena.sweep.records import SweepPlan, read_outcomes, read_started

#: Seconds between plain progress lines while nothing finishes.
HEARTBEAT_S = 30.0
#: Mechanisms whose cost grows with epsilon (aim's rounds, adaptive_grid's estimation to
#: convergence: 18 s a run at epsilon 1, 75 s at 10 in a measured quickstart): a run at an
#: epsilon with no finished run is unknown, and costs at least what the mechanism's runs at a
#: smaller epsilon took.
EPSILON_DEPENDENT = frozenset({"aim", "adaptive_grid"})
#: A run in flight has at least this share of its expected (or elapsed) time left: runs of
#: one mechanism vary, and a run near its mean may have a third of it to go.
IN_FLIGHT_FLOOR = 0.25
#: The statuses of runs that ended (a skipped one was finished by an earlier sweep).
ENDED = ("done", "failed", "skipped")


@dataclass(frozen=True)
class RunState:
    """One run of the sweep: ``status`` is ``pending``, ``running``, ``done``, ``failed`` or
    ``skipped`` (finished by an earlier sweep: this one only looked it up); ``seconds`` is the
    wall time it took (ended) or has run so far (running)."""

    mechanism: str
    status: str
    seconds: float = 0.0
    label: str = ""
    group: str = ""
    #: the cost model's CPU seconds for this run (:mod:`dp_arena.sweep.cost_estimate`;
    #: None: the model has no finished run of its mechanism to go by, or no model)
    predicted: float | None = None

    @property
    def key(self) -> str:
        """The runs expected to cost alike: the group, else the mechanism."""
        return self.group or self.mechanism


def run_group(label: str) -> str:
    """A run label without its trial (``mst[quick] eps=10 trial=2`` -> ``mst[quick] eps=10``)."""
    return re.sub(r"\s*\btrial=\S+", "", label).strip()


def run_epsilon(label: str) -> float | None:
    """The epsilon a run label names (``mst eps=10 trial=2`` -> 10.0), else ``None``."""
    found = re.search(r"\beps=([0-9.eE+-]+)", label)
    try:
        return float(found.group(1)) if found else None
    except ValueError:
        return None


def cost_group(run: RunState) -> str:
    """What one finished run prices: its mechanism with its settings (the label without
    epsilon and trial), and its epsilon too for :data:`EPSILON_DEPENDENT` mechanisms."""
    if run.mechanism in EPSILON_DEPENDENT or not run.label:
        return run.key
    return re.sub(r"\s*\beps=\S+", "", run.key).strip() or run.mechanism


@dataclass(frozen=True)
class Eta:
    """Seconds until every run has ended. ``at_least``: a lower bound, since some runs'
    cost is unknown (:attr:`unseen`: their cost groups, none of whose runs has finished)."""

    seconds: float
    unseen: tuple[str, ...] = ()
    #: priced by the cost model alone: no run of this sweep has finished to scale it by
    modelled: bool = False

    @property
    def at_least(self) -> bool:
        return bool(self.unseen)

    def text(self) -> str:
        """``ETA 3m20s``, ``ETA >= 3m20s`` for a lower bound, ``ETA ~3m20s`` for the cost
        model's figure before any run of the sweep finished."""
        mark = ">= " if self.at_least else "~" if self.modelled else ""
        return f"ETA {mark}{duration(self.seconds)}"


def measured_costs(runs: list[RunState]) -> dict[str, float]:
    """Each cost group's mean wall time over its finished (done or failed) runs; a skipped
    run cost only a look-up and prices nothing."""
    seen: dict[str, list[float]] = {}
    for r in runs:
        if r.status in ("done", "failed"):
            seen.setdefault(cost_group(r), []).append(r.seconds)
    return {k: statistics.fmean(v) for k, v in seen.items()}


def least_cost(run: RunState, runs: list[RunState], floor: float) -> float:
    """A lower bound on an unseen run's cost: ``floor`` (the cheapest measured group: every
    run pays the per-run overhead) or, for an epsilon-dependent mechanism, the mean of its
    finished runs at a smaller epsilon, whichever is larger."""
    eps = run_epsilon(run.label)
    below = [r.seconds for r in runs if r.status in ("done", "failed")
             and r.mechanism == run.mechanism and r.key != run.key and eps is not None
             and (run_epsilon(r.label) or eps) < eps]
    return max(floor, statistics.fmean(below) if below else 0.0)


def time_left(run: RunState, cost: float, known: bool) -> float:
    """What is left of a run: all of a pending one; of one in flight, what is left of its
    cost, and at least :data:`IN_FLIGHT_FLOOR` of its cost or elapsed time when its cost is
    measured (a lower bound, nothing, when it is not)."""
    if run.status == "pending":
        return cost
    if not known:
        return max(cost - run.seconds, 0.0)
    return max(cost - run.seconds, IN_FLIGHT_FLOOR * max(cost, run.seconds), 1.0)


#: Finished runs the model priced needed to fit the wall time's slope on the prediction
#: (with fewer, or predictions within a factor :data:`SLOPE_SPREAD` of each other, the slope
#: is 1: a run's CPU seconds are wall seconds on one core).
SLOPE_RUNS = 3
SLOPE_SPREAD = 2.0


@dataclass(frozen=True)
class WallCalibration:
    """This sweep's wall seconds of a run from the model's CPU seconds ``p``:
    ``overhead + slope * p`` (the job's own cost, interpreter, data, MLflow: ``overhead``;
    the machine's load: ``slope``)."""

    overhead: float
    slope: float

    def wall(self, predicted: float) -> float:
        return self.overhead + self.slope * predicted


def wall_calibration(runs: list[RunState]) -> WallCalibration | None:
    """From the finished runs the model priced: wall = overhead + slope x predicted, by
    non-negative least squares when :data:`SLOPE_RUNS` or more spread over a factor
    :data:`SLOPE_SPREAD`; else slope 1 and the median overhead; ``None`` when none has
    finished. A cheap run's wall time is mostly the job's overhead, which a ratio would
    spread over the dear ones (a ratio of 40 from a 0.2 s run priced a 5 s run at 200 s)."""
    pairs = [(r.predicted, r.seconds) for r in runs
             if r.status in ("done", "failed") and r.predicted and r.seconds > 0]
    if not pairs:
        return None
    predicted = [p for p, _ in pairs]
    if len(pairs) >= SLOPE_RUNS and max(predicted) >= SLOPE_SPREAD * min(predicted):
        from scipy.optimize import nnls
        import numpy as np

        (overhead, slope), _ = nnls(np.array([[1.0, p] for p, _ in pairs]),
                                    np.array([w for _, w in pairs]))
        return WallCalibration(float(overhead), float(slope))
    return WallCalibration(max(statistics.median(w - p for p, w in pairs), 0.0), 1.0)


def group_cost(run: RunState, runs: list[RunState], mean: float,
               calibration: WallCalibration | None) -> float:
    """A run of a measured cost group: the group's mean wall time, moved by the model's
    difference between this run and the group's finished runs (its dataset may be larger
    than theirs) at the sweep's slope; the mean alone without a model."""
    seen = [r.predicted for r in runs if r.status in ("done", "failed")
            and cost_group(r) == cost_group(run)]
    if run.predicted is None or calibration is None or not seen or None in seen:
        return mean
    shift = calibration.slope * (run.predicted - statistics.fmean(seen))  # type: ignore[arg-type]
    return max(mean + shift, 0.0)


def estimate(runs: list[RunState], workers: int) -> Eta | None:
    """The time until every run has ended (module docstring): each run left costs the mean
    of its cost group's finished runs (moved by the cost model's difference when it prices
    them: :func:`group_cost`), the sum over ``workers`` and at least the longest run
    left. A run whose group has no finished run costs the cost model's prediction in this
    sweep's wall time (:func:`wall_calibration`) when the model prices it; otherwise it is unknown: it
    counts at its lower bound (:func:`least_cost`) and the ETA is a lower bound. ``None``
    while nothing has finished (no figure to give) with runs left, unless the model prices
    every run left (an ``ETA ~...`` at the model's own scale)."""
    left = [r for r in runs if r.status in ("pending", "running")]
    if not left:
        return Eta(0.0)
    costs = measured_costs(runs)
    if not costs:
        return modelled_estimate(left, workers)
    floor = min(costs.values())
    calibration = wall_calibration(runs)
    unseen: list[str] = []
    times = []
    for r in left:
        group = cost_group(r)
        known = group in costs or (r.predicted is not None and calibration is not None)
        if not known and group not in unseen:
            unseen.append(group)
        cost = (group_cost(r, runs, costs[group], calibration) if group in costs
                else calibration.wall(r.predicted) if known  # type: ignore[union-attr,arg-type]
                else least_cost(r, runs, floor))
        times.append(time_left(r, cost, known))
    return Eta(max(sum(times) / max(workers, 1), max(times)), tuple(unseen))


def modelled_estimate(left: list[RunState], workers: int) -> Eta | None:
    """Before any run finished: the cost model's CPU seconds of every run left over the
    workers (at least the longest), when it prices them all; else ``None``."""
    if any(r.predicted is None for r in left):
        return None
    times = [time_left(r, r.predicted, True) for r in left]  # type: ignore[arg-type]
    return Eta(max(sum(times) / max(workers, 1), max(times)), modelled=True)


def eta_seconds(runs: list[RunState], workers: int) -> float | None:
    """:func:`estimate`'s seconds (a lower bound while some runs' cost is unknown)."""
    eta = estimate(runs, workers)
    return None if eta is None else eta.seconds


def duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


# ----- reading the sweep folder ---------------------------------------------------------------
def sweep_state(sweep_dir: str | Path, plan: SweepPlan, now: float | None = None
                ) -> list[RunState]:
    """Every planned run's state, from the ``started.json`` / ``outcome.json`` files of the
    job folders (a job folder is named by its job number, as Hydra names them)."""
    now = time.time() if now is None else now
    started = {s.index: s for s in read_started(sweep_dir)}
    ended = {}
    for folder, outcome in read_outcomes(sweep_dir):
        if outcome.ran:
            ended[outcome.index if outcome.index >= 0 else f"?{folder}"] = outcome
    runs = []
    for job in plan.of("run"):
        mech = job.mechanism or "?"
        if job.index in ended:
            outcome = ended.pop(job.index)
            status = ("failed" if outcome.failed else
                      "skipped" if outcome.status == "SKIPPED" else "done")
            runs.append(RunState(mech, status, outcome.elapsed, job.label, run_group(job.label),
                                 job.predicted_seconds))
        elif job.index in started:
            runs.append(RunState(mech, "running", max(now - started[job.index].started, 0.0),
                                 job.label, run_group(job.label), job.predicted_seconds))
        else:
            runs.append(RunState(mech, "pending", 0.0, job.label, run_group(job.label),
                                 job.predicted_seconds))
    return runs


def progress_text(sweep_dir: str | Path, plan: SweepPlan | None) -> tuple[str, str]:
    """``("[k/N]", "ETA 1m20s")`` from the started/outcome files written so far (k counts
    runs, not n/a or duplicate jobs; the ETA weighted by each run's expected cost,
    :func:`estimate`); empty strings outside a planned sweep."""
    if not plan or not plan.total or plan.searched:
        return "", ""
    runs = sweep_state(sweep_dir, plan)
    c = counts(runs)
    eta = estimate(runs, plan.workers or 2) if c.done < c.total else None
    flight = f" ({c.running} in flight)" if c.running else ""
    return f"[{c.done}/{c.total}]", (f"{eta.text()}{flight}" if eta is not None else "")


@dataclass(frozen=True)
class Counts:
    done: int
    running: int
    failed: int
    total: int


def counts(runs: list[RunState]) -> Counts:
    return Counts(sum(r.status in ENDED for r in runs),
                  sum(r.status == "running" for r in runs),
                  sum(r.status == "failed" for r in runs), len(runs))


def progress_line(runs: list[RunState], workers: int) -> str:
    """``[12/60] 2 in flight, 1 failed  ETA 3m20s`` (the in-flight runs named when few)."""
    c = counts(runs)
    eta = estimate(runs, workers)
    flight = [r for r in runs if r.status == "running"]
    names = ", ".join(f"{r.label} {duration(r.seconds)}" for r in flight[:3])
    return (f"[{c.done}/{c.total}] {c.running} in flight"
            + (f" ({names}{', ...' if len(flight) > 3 else ''})" if names else "")
            + (f", {c.failed} failed" if c.failed else "")
            + (f"  {eta.text()}" if eta is not None and c.done < c.total else ""))


# ----- one writer for the terminal -----------------------------------------------------------
#: The monitor thread's name (a job running in the launching process finds it there).
MONITOR_THREAD = "dp-arena-progress"
CLEAR_LINE = "\r\x1b[K"


def monitor_prints_lines(launcher: str, plan: SweepPlan | None) -> bool:
    """Whether the launching process's monitor prints each finished run's line (rather than
    the job): a local (joblib) sweep of a known size. SLURM and Ray jobs print to their own
    logs; a search sweep's size is unknown (no monitor)."""
    return ("joblib" in launcher.lower() and plan is not None and bool(plan.total)
            and not plan.searched)


def in_launching_process() -> bool:
    """This process runs the sweep's monitor (a job run in-process, joblib with one job)."""
    return any(t.name == MONITOR_THREAD and t.is_alive() for t in threading.enumerate())


def status_text(runs: list[RunState], workers: int, width: int = 80) -> str:
    """The progress line: ``[#####.....] 12/60 runs, 2 in flight, 1 failed, ETA 3m20s``,
    within ``width - 1`` columns (a terminal wraps a full-width line)."""
    c = counts(runs)
    eta = estimate(runs, workers) if c.done < c.total else None
    tail = (f" {c.done}/{c.total} runs, {c.running} in flight"
            + (f", {c.failed} failed" if c.failed else "")
            + (f", {eta.text()}" if eta is not None else ""))
    size = min(30, width - 1 - len(tail) - 2)
    if size < 5:
        return tail.strip()[:max(width - 1, 1)]
    filled = round(size * c.done / c.total) if c.total else 0
    return f"[{'#' * filled}{'.' * (size - filled)}]{tail}"


class Console:
    """The sweep's one writer for the terminal (module docstring): the terminal is stdout if
    it is one, else stderr if it is one, else there is none. A line for a stream that is a
    terminal clears the progress line, is written on the terminal and the progress line is
    redrawn below it, all under one lock; a line for a stream that is not a terminal is
    written there as a plain line. A stream whose reader has gone is no longer written to."""

    def __init__(self, out: Any = None, err: Any = None):
        self.out = sys.stdout if out is None else out
        self.err = sys.stderr if err is None else err
        self.terminal = (self.out if is_terminal(self.out)
                         else self.err if is_terminal(self.err) else None)
        self._lock = threading.RLock()
        self._status = ""
        self._gone: set[int] = set()

    def width(self) -> int:
        try:
            return os.get_terminal_size(self.terminal.fileno()).columns or 80
        except (AttributeError, OSError, ValueError):
            return 80

    def terminal_width(self, error: bool = False) -> int | None:
        """The terminal's width when stdout (stderr when ``error``) is the terminal, so a
        line for it must fit; None for a pipe or a file, whose lines are whole."""
        stream = self.err if error else self.out
        return self.width() if self.terminal is not None and is_terminal(stream) else None

    def line(self, text: str, error: bool = False) -> None:
        """One line (or several) for stdout, or stderr when ``error``."""
        stream = self.err if error else self.out
        with self._lock:
            if self.terminal is not None and is_terminal(stream):
                self._write(self.terminal, (CLEAR_LINE if self._status else "") + text + "\n"
                            + self._status)
            else:
                self._write(stream, text + "\n")

    def status(self, text: str) -> None:
        """Show ``text`` as the progress line (on a terminal only)."""
        if self.terminal is None:
            return
        with self._lock:
            if text != self._status:
                self._status = text
                self._write(self.terminal, "\r" + text + "\x1b[K")

    def close(self) -> None:
        """Leave the progress line as it stands, ended, so what follows starts a line."""
        with self._lock:
            if self._status and self.terminal is not None:
                self._write(self.terminal, "\r" + self._status + "\x1b[K\n")
            self._status = ""

    def gone_fds(self) -> list[int]:
        """The file descriptors of the streams whose reader has gone."""
        fds = []
        for stream in {id(s): s for s in (self.out, self.err)}.values():
            if id(stream) in self._gone:
                try:
                    fds.append(stream.fileno())
                except (AttributeError, OSError, ValueError):
                    pass
        return fds

    def _write(self, stream: Any, text: str) -> None:
        if id(stream) not in self._gone and not say(text, stream, end=""):
            self._gone.add(id(stream))


# ----- the monitor ----------------------------------------------------------------------------
class ProgressMonitor:
    """Shows a sweep's progress from the launching process (see the module docstring)."""

    def __init__(self, sweep_dir: Path, plan: SweepPlan, workers: int,
                 stream: Any = None, poll_s: float = 1.0, heartbeat_s: float = HEARTBEAT_S,
                 echo_changes: bool = False, print_lines: bool = False,
                 console: Console | None = None):
        """``stream``: where plain progress lines go (default stderr); ``echo_changes``: a
        plain line for every change too (launchers whose workers print elsewhere: SLURM,
        Ray), otherwise only the heartbeat while runs are in flight; ``print_lines``: this
        monitor prints each finished run's line (:func:`monitor_prints_lines`)."""
        self.sweep_dir, self.plan, self.workers = sweep_dir, plan, max(workers, 1)
        self.echo_changes, self.print_lines = echo_changes, print_lines
        self.console = console or Console(err=stream)
        self.poll_s, self.heartbeat_s = poll_s, heartbeat_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=MONITOR_THREAD, daemon=True)
        self._reported: set[str] = set()
        self._last_key: tuple[int, int, int] | None = None
        self._last_time = 0.0

    def start(self) -> ProgressMonitor:
        if self.plan.total:
            self._thread.start()
        return self

    def stop(self) -> None:
        """The sweep ended: the lines of the runs that ended since the last look, then the
        progress line as it ends, ended."""
        started = self._thread.is_alive()
        self._join()
        if started:
            self._poll()
        self.console.close()

    def halt(self) -> None:
        """Stop looking and drawing (a stop signal: the stop message follows, intact)."""
        self._join()
        self.console.close()

    def _join(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=timeout)

    def _loop(self) -> None:
        while not self._stop.wait(self.poll_s):
            self._poll()

    def _poll(self) -> None:
        runs = sweep_state(self.sweep_dir, self.plan)
        if self.print_lines:
            self._print_finished(runs)
        if self.console.terminal is not None:
            self.console.status(status_text(runs, self.workers, self.console.width()))
            return
        c = counts(runs)
        key = (c.done, c.running, c.failed)
        due = c.running and time.time() - self._last_time >= self.heartbeat_s
        changed = key != self._last_key
        if (changed and self.echo_changes and (c.done or c.running)) or due:
            self.console.line(f"progress {progress_line(runs, self.workers)}", error=True)
            self._last_time = time.time()
        if changed:
            self._last_key, self._last_time = key, max(self._last_time, time.time())

    def _print_finished(self, runs: list[RunState]) -> None:
        """The line of each run that ended since the last look, numbered as they are seen."""
        c = counts(runs)
        eta = estimate(runs, self.workers) if c.done < c.total else None
        flight = f" ({c.running} in flight)" if c.running else ""
        for folder, outcome in read_outcomes(self.sweep_dir):
            if folder in self._reported or not outcome.ran:
                continue
            self._reported.add(folder)
            k = min(len(self._reported), c.total)
            progress = (f"[{k}/{c.total}]", (
                f"{eta.text()}{flight}" if eta is not None and k < c.total else ""))
            text, to_stderr = job_line(outcome, progress)
            width = self.console.terminal_width(error=to_stderr)
            if width:  # its stream is the terminal: the line fits it
                text, to_stderr = job_line(outcome, progress, width=width)
            self.console.line(text, error=to_stderr)
