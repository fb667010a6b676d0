"""A sweep's progress: runs done / in flight / failed and an ETA weighted by each run's
expected cost, read from the sweep folder (so it works with every launcher that shares it:
joblib, SLURM, Ray), shown by one writer in the launching process.

- Each job writes ``started.json`` into its output folder when it starts and ``outcome.json``
  when it ends (:mod:`dp_arena.sweep.job`; the records are :mod:`dp_arena.sweep.records`);
  :func:`sweep_state` reads both against the plan, :func:`progress_text` is a job's
  ``[k/N]`` and ETA.
- :func:`eta_seconds`, how it estimates: the remaining work over the workers (and at least
  the longest remaining run). Runs are grouped by their label without the trial (mechanism,
  settings, epsilon). A pending run costs
  1. the mean wall time of its group's finished runs; else
  2. the mean of its mechanism's finished runs (any group), each scaled to the run's epsilon
     by :data:`EPSILON_EXPONENT` (adaptive_grid's epsilon-10 runs take about 2.9 times its
     epsilon-1 runs; other mechanisms do not depend on epsilon): once a mechanism has one
     finished run, its own measurement prices it, not the prior; else
  3. for a mechanism with no finished run yet, :data:`UNSEEN_MARGIN` times a cost model of
     this sweep (:func:`cost_model`) applied to its shipped relative cost
     (:data:`RELATIVE_COST`, a rough prior from measured default sweeps): a per-run overhead
     (worker start, scoring, logging: the intercept of the finished mechanisms' mean wall
     time against their prior cost, once two mechanisms of different cost have finished)
     plus the prior cost times the largest seconds per unit above that overhead, so the ETA
     of an unseen mechanism errs long rather than short. Before any run finished, the elapsed
     time of the runs in flight per unit of their prior; else
  4. a mechanism the table does not name (a contestant, a plugin) has no prior: no factor is
     guessed for it (a fixed 20 x independent, times the largest seconds per unit, showed
     3h15m on an interrupted 56-column sweep). It costs what this sweep measures:
     :data:`UNSEEN_MARGIN` times the dearest run the sweep can price (finished means, and
     the cost model's prices of the named mechanisms), so on a wide table, where every
     mechanism is slower, its price grows with what the table's runs took, not with a
     guess; with nothing priced yet, its runs in flight.
  Any unseen group (steps 3 and 4) costs at least the longest elapsed time of its runs in
  flight (a lower bound that grows while they run).
  A run in flight costs what is left of its estimate, and at least a quarter of its estimate
  (or of what it has run). The mean over all finished runs, which the fast mechanisms
  dominate because they finish first, is never used. The earlier rule priced a group with no
  finished run at no less than 1.5 x its prior x the largest seconds per unit, its mechanism
  seen or not, with no overhead term: with a few seconds of overhead a run (the held-out
  scores), it showed 3-5 times the time left in the first half of the default competition and
  up to 4 times after every slow mechanism had run; now within about 1.7 times once every slow
  mechanism has a finished run (tests/test_progress.py, a simulated default competition).
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
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dp_arena.sweep.lines import is_terminal, job_line, say
from dp_arena.sweep.records import SweepPlan, read_outcomes, read_started

#: Seconds between plain progress lines while nothing finishes.
HEARTBEAT_S = 30.0
#: Relative cost of a run per mechanism (1 = independent) at epsilon 1, a prior for mechanisms
#: with no finished run yet in this sweep: the mean wall time of a run (worker start, fit,
#: scoring, logging) over independent's, measured on the default sweep of 2026-11-26 (taxi_sim
#: 50k, 2 cores, after mst, aim and adaptive_grid moved to NumPy estimation): archetype 3.0,
#: prefix_tree 1.8, mst 1.5, aim 1.6, adaptive_grid 4.5 at epsilon 1 (13 at epsilon 10:
#: :data:`EPSILON_EXPONENT`); rdt from an earlier sweep. Only the ETA uses it.
RELATIVE_COST = {"independent": 1.0, "uniform": 1.0, "public_only": 1.0, "resample": 1.0,
                 "archetype": 3.0, "prefix_tree": 2.0, "rdt": 8.0, "adaptive_grid": 4.5,
                 "mst": 2.0, "aim": 2.0}
#: A mechanism whose cost grows with epsilon: cost ~ epsilon ** exponent (adaptive_grid: 4.5
#: at epsilon 1, 13 at epsilon 10, so log10(13 / 4.5) = 0.46); the others' cost does not
#: depend on epsilon.
EPSILON_EXPONENT = {"adaptive_grid": 0.46}
#: Relative cost of a mechanism the table does not name, for :func:`prior_cost` only (the
#: ETA does not use it: an unnamed mechanism is priced by what the sweep measures,
#: :func:`expected_seconds`).
DEFAULT_COST = 20.0
#: A run in flight has at least this share of its expected (or elapsed) time left: runs of
#: one mechanism vary, and a run near its mean may have a third of it to go.
IN_FLIGHT_FLOOR = 0.25
#: A mechanism with no finished run counts this many times its calibrated prior (the prior
#: can be off by a factor of two either way between mechanisms; the ETA errs long).
UNSEEN_MARGIN = 1.5


@dataclass(frozen=True)
class RunState:
    """One run of the sweep: ``status`` is ``pending``, ``running``, ``done`` or ``failed``;
    ``seconds`` is the wall time it took (done/failed) or has run so far (running)."""

    mechanism: str
    status: str
    seconds: float = 0.0
    label: str = ""
    group: str = ""

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


def epsilon_factor(mechanism: str, source: float | None, target: float | None) -> float:
    """How much longer a run of ``mechanism`` takes at epsilon ``target`` than at ``source``
    (:data:`EPSILON_EXPONENT`; 1 when either is unknown)."""
    exponent = EPSILON_EXPONENT.get(mechanism, 0.0)
    if not exponent or not source or not target or source <= 0 or target <= 0:
        return 1.0
    return (target / source) ** exponent


def prior_cost(mechanism: str, prior: Mapping[str, float] = RELATIVE_COST,
               epsilon: float | None = None) -> float:
    """A run's relative cost by the prior, at ``epsilon`` (epsilon 1 when unknown)."""
    return float(prior.get(mechanism, DEFAULT_COST)) * epsilon_factor(mechanism, 1.0, epsilon)


@dataclass(frozen=True)
class CostModel:
    """A run's wall time by the prior: ``overhead + units * per_unit`` seconds."""

    overhead: float
    per_unit: float

    def seconds(self, units: float) -> float:
        return self.overhead + units * self.per_unit


def cost_model(runs: list[RunState], prior: Mapping[str, float]) -> CostModel | None:
    """The sweep's own seconds per unit of prior cost, from its finished mechanisms (each a
    point: prior cost, mean wall time). The overhead every run pays (worker start, scoring,
    logging) is the least-squares intercept over two or more mechanisms of different prior
    cost, clamped to [0, the cheapest mechanism's mean]; the seconds per unit above it is the
    largest over the mechanisms (so an unseen mechanism's ETA errs long rather than short).
    With no finished run: the runs in flight, a lower bound; else unknown."""
    finished: dict[str, list[tuple[float, float]]] = {}
    runs = [r for r in runs if r.mechanism in prior]  # an unnamed mechanism has no prior
    for r in runs:
        if r.status in ("done", "failed"):
            finished.setdefault(r.mechanism, []).append(
                (prior_cost(r.mechanism, prior, run_epsilon(r.label)), r.seconds))
    if not finished:
        running = [r.seconds / prior_cost(r.mechanism, prior, run_epsilon(r.label))
                   for r in runs if r.status == "running"]
        return CostModel(0.0, max(running)) if running and max(running) > 0 else None
    points = [(statistics.fmean(u for u, _ in v), statistics.fmean(s for _, s in v))
              for v in finished.values()]
    overhead = 0.0
    if len({u for u, _ in points}) > 1:
        _, intercept = statistics.linear_regression([u for u, _ in points],
                                                        [s for _, s in points])
        overhead = min(max(intercept, 0.0), min(s for _, s in points))
    per_unit = max(max(s - overhead, 0.0) / u for u, s in points)
    return CostModel(overhead, per_unit)


def expected_seconds(runs: list[RunState], prior: Mapping[str, float] = RELATIVE_COST
                     ) -> dict[str, float] | None:
    """Each group's expected wall time per run (see the module docstring), keyed by
    :attr:`RunState.key`: the mean of its finished runs; else the mean of its mechanism's
    finished runs, each scaled to the group's epsilon (:func:`epsilon_factor`); else, for a
    mechanism ``prior`` names, the calibrated prior times :data:`UNSEEN_MARGIN`; else (an
    unnamed mechanism, or no named one measured) :data:`UNSEEN_MARGIN` times the dearest run
    priced so far. An unseen
    group costs at least the longest elapsed time of its runs in flight. ``None`` while some
    group cannot be priced."""
    model = cost_model(runs, prior)
    finished = [r for r in runs if r.status in ("done", "failed")]
    in_flight: dict[str, float] = {}
    for r in runs:
        if r.status == "running":
            in_flight[r.key] = max(in_flight.get(r.key, 0.0), r.seconds)
    out: dict[str, float] = {}
    unnamed: list[str] = []
    for r in runs:
        if r.key in out or r.key in unnamed:
            continue
        eps = run_epsilon(r.label)
        same_group = [f.seconds for f in finished if f.key == r.key]
        same_mechanism = [f.seconds * epsilon_factor(r.mechanism, run_epsilon(f.label), eps)
                          for f in finished if f.mechanism == r.mechanism]
        if same_group or same_mechanism:
            out[r.key] = statistics.fmean(same_group or same_mechanism)
        elif r.mechanism in prior and model is not None:
            out[r.key] = max(UNSEEN_MARGIN * model.seconds(prior_cost(r.mechanism, prior, eps)),
                             in_flight.get(r.key, 0.0))
        else:  # unnamed, or named with no measured mechanism to calibrate its prior by
            unnamed.append(r.key)
    dearest = max(out.values(), default=0.0)
    for key in unnamed:
        out[key] = max(UNSEEN_MARGIN * dearest, in_flight.get(key, 0.0))
        if out[key] <= 0:
            return None  # nothing measured anywhere yet
    return out


def eta_seconds(runs: list[RunState], workers: int,
                prior: Mapping[str, float] = RELATIVE_COST) -> float | None:
    """Seconds until every run is done: the remaining expected work over ``workers``, and at
    least the longest remaining run; ``None`` before anything can be estimated."""
    costs = expected_seconds(runs, prior)
    if costs is None:
        return None
    left = []
    for r in runs:
        if r.status == "pending":
            left.append(costs[r.key])
        elif r.status == "running":
            left.append(max(costs[r.key] - r.seconds,
                            IN_FLIGHT_FLOOR * max(costs[r.key], r.seconds), 1.0))
    if not left:
        return 0.0
    return max(sum(left) / max(workers, 1), max(left))


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
            runs.append(RunState(mech, "failed" if outcome.failed else "done", outcome.elapsed,
                                 job.label, run_group(job.label)))
        elif job.index in started:
            runs.append(RunState(mech, "running", max(now - started[job.index].started, 0.0),
                                 job.label, run_group(job.label)))
        else:
            runs.append(RunState(mech, "pending", 0.0, job.label, run_group(job.label)))
    return runs


def progress_text(sweep_dir: str | Path, plan: SweepPlan | None) -> tuple[str, str]:
    """``("[k/N]", "ETA 1m20s")`` from the started/outcome files written so far (k counts
    runs, not n/a or duplicate jobs; the ETA weighted by each run's expected cost,
    :func:`eta_seconds`); empty strings outside a planned sweep."""
    if not plan or not plan.total or plan.searched:
        return "", ""
    runs = sweep_state(sweep_dir, plan)
    c = counts(runs)
    eta = eta_seconds(runs, plan.workers or 2) if c.done < c.total else None
    flight = f" ({c.running} in flight)" if c.running else ""
    return f"[{c.done}/{c.total}]", (f"ETA {duration(eta)}{flight}" if eta is not None else "")


@dataclass(frozen=True)
class Counts:
    done: int
    running: int
    failed: int
    total: int


def counts(runs: list[RunState]) -> Counts:
    return Counts(sum(r.status in ("done", "failed") for r in runs),
                  sum(r.status == "running" for r in runs),
                  sum(r.status == "failed" for r in runs), len(runs))


def progress_line(runs: list[RunState], workers: int) -> str:
    """``[12/60] 2 in flight, 1 failed  ETA 3m20s`` (the in-flight runs named when few)."""
    c = counts(runs)
    eta = eta_seconds(runs, workers)
    flight = [r for r in runs if r.status == "running"]
    names = ", ".join(f"{r.label} {duration(r.seconds)}" for r in flight[:3])
    return (f"[{c.done}/{c.total}] {c.running} in flight"
            + (f" ({names}{', ...' if len(flight) > 3 else ''})" if names else "")
            + (f", {c.failed} failed" if c.failed else "")
            + (f"  ETA {duration(eta)}" if eta is not None and c.done < c.total else ""))


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
    eta = eta_seconds(runs, workers) if c.done < c.total else None
    tail = (f" {c.done}/{c.total} runs, {c.running} in flight"
            + (f", {c.failed} failed" if c.failed else "")
            + (f", ETA {duration(eta)}" if eta is not None else ""))
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
        eta = eta_seconds(runs, self.workers) if c.done < c.total else None
        flight = f" ({c.running} in flight)" if c.running else ""
        for folder, outcome in read_outcomes(self.sweep_dir):
            if folder in self._reported or not outcome.ran:
                continue
            self._reported.add(folder)
            k = min(len(self._reported), c.total)
            progress = (f"[{k}/{c.total}]", (
                f"ETA {duration(eta)}{flight}" if eta is not None and k < c.total else ""))
            text, to_stderr = job_line(outcome, progress)
            width = self.console.terminal_width(error=to_stderr)
            if width:  # its stream is the terminal: the line fits it
                text, to_stderr = job_line(outcome, progress, width=width)
            self.console.line(text, error=to_stderr)
