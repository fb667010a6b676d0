"""A sweep's progress: runs done / in flight / failed and an ETA weighted by each run's
expected cost, read from the sweep folder (so it works with every launcher that shares it:
joblib, SLURM, Ray).

- Each job writes ``started.json`` into its output folder when it starts and ``outcome.json``
  when it ends (:mod:`harness.sweep.job`; the records are :mod:`harness.sweep.records`);
  :func:`sweep_state` reads both against the plan, :func:`progress_text` is a job's
  ``[k/N]`` and ETA.
- :func:`eta_seconds`: remaining work / workers. A pending run costs the mean wall time of the
  finished runs of its group (mechanism, settings and epsilon: the run's label without its
  trial; adaptive_grid's epsilon-10 runs take five times its epsilon-1 runs); a group with none
  finished costs the longest finished run of its mechanism (another epsilon or setting) or its
  unseen cost below, whichever is larger (the quickstart's adaptive_grid runs at epsilon 10,
  priced at its epsilon-1 runs, showed 0.43 of the time left); a mechanism with none finished
  yet costs its shipped relative
  cost (:data:`RELATIVE_COST`, a rough prior from measured default sweeps) times the sweep's
  own seconds-per-unit, calibrated on the mechanisms that did finish (the largest ratio, so the
  ETA errs long rather than short; before any finished, the elapsed time of the runs in
  flight), times :data:`UNSEEN_MARGIN`. A run in flight costs what is left of its estimate,
  and at least a quarter of its estimate (or of what it has run). The mean over finished runs,
  which the fast mechanisms dominate because they finish first, is never used.
- :class:`ProgressMonitor`: a thread in the launching process. On a terminal, a ``tqdm`` bar
  (done / in flight / failed / ETA) on stderr; otherwise a plain line whenever something
  changed and at most every :data:`HEARTBEAT_S` seconds while runs are in flight (so slow runs
  never leave the console silent, and SLURM/Ray sweeps, whose workers print elsewhere, show
  progress).
"""

from __future__ import annotations

import re
import statistics
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.sweep.records import SweepPlan, read_outcomes, read_started

#: Seconds between plain progress lines while nothing finishes.
HEARTBEAT_S = 30.0
#: Relative cost of a run per mechanism (1 = independent), a prior for mechanisms with no
#: finished run yet in this sweep: the mean wall time of a run (worker start, fit, scoring,
#: logging) over independent's, measured on the default sweep of 2026-11-26 (taxi_sim 50k, 2
#: cores, after mst, aim and adaptive_grid moved to NumPy estimation): archetype 3.0,
#: prefix_tree 1.8, mst 1.5, aim 1.6, adaptive_grid 4.5 at epsilon 1 and 13 at epsilon 10
#: (the larger is used); rdt from an earlier sweep. Only the ETA uses it.
RELATIVE_COST = {"independent": 1.0, "uniform": 1.0, "public_only": 1.0, "resample": 1.0,
                 "archetype": 3.0, "prefix_tree": 2.0, "rdt": 8.0, "adaptive_grid": 13.0,
                 "mst": 2.0, "aim": 2.0}
#: Relative cost of a mechanism the table does not name.
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


def prior_cost(mechanism: str, prior: Mapping[str, float] = RELATIVE_COST) -> float:
    return float(prior.get(mechanism, DEFAULT_COST))


def seconds_per_unit(runs: list[RunState], prior: Mapping[str, float]) -> float | None:
    """Seconds per unit of prior cost: the largest over finished mechanisms of their mean wall
    time / prior cost; else from the runs in flight (a lower bound); else unknown."""
    finished: dict[str, list[float]] = {}
    for r in runs:
        if r.status in ("done", "failed"):
            finished.setdefault(r.mechanism, []).append(r.seconds)
    if finished:  # the largest ratio: an ETA that errs long rather than short
        return max(statistics.fmean(v) / prior_cost(m, prior) for m, v in finished.items())
    running = [r.seconds / prior_cost(r.mechanism, prior) for r in runs if r.status == "running"]
    return max(running) if running and max(running) > 0 else None


def expected_seconds(runs: list[RunState], prior: Mapping[str, float] = RELATIVE_COST
                     ) -> dict[str, float] | None:
    """Each group's expected wall time per run (see the module docstring), keyed by
    :attr:`RunState.key`."""
    unit = seconds_per_unit(runs, prior)
    if unit is None:
        return None
    finished = [r for r in runs if r.status in ("done", "failed")]
    out: dict[str, float] = {}
    for r in runs:
        if r.key in out:
            continue
        same_group = [f.seconds for f in finished if f.key == r.key]
        same_mechanism = [f.seconds for f in finished if f.mechanism == r.mechanism]
        unseen = UNSEEN_MARGIN * prior_cost(r.mechanism, prior) * unit
        out[r.key] = (statistics.fmean(same_group) if same_group
                      else max(max(same_mechanism), unseen) if same_mechanism
                      else unseen)
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
    seconds = int(round(seconds))
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


# ----- the monitor ----------------------------------------------------------------------------
class ProgressMonitor:
    """Shows a sweep's progress from the launching process (see the module docstring)."""

    def __init__(self, sweep_dir: Path, plan: SweepPlan, workers: int,
                 stream: Any = None, poll_s: float = 1.0, heartbeat_s: float = HEARTBEAT_S,
                 echo_changes: bool = False):
        """``echo_changes``: a plain line for every finished run too (launchers whose workers
        print elsewhere: SLURM, Ray); otherwise only the heartbeat while runs are in flight."""
        self.sweep_dir, self.plan, self.workers = sweep_dir, plan, max(workers, 1)
        self.echo_changes = echo_changes
        self.stream = stream or sys.stderr
        self.poll_s, self.heartbeat_s = poll_s, heartbeat_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="dp-arena-progress", daemon=True)
        self._bar = None

    def start(self) -> "ProgressMonitor":
        if self.plan.total:
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        if self._bar is not None:
            self._bar.close()

    def _loop(self) -> None:
        tty = getattr(self.stream, "isatty", lambda: False)()
        last_text, last_time = "", 0.0
        while not self._stop.wait(self.poll_s):
            runs = sweep_state(self.sweep_dir, self.plan)
            if tty:
                self._draw(runs)
                continue
            c = counts(runs)
            key = (c.done, c.running, c.failed)
            text = progress_line(runs, self.workers)
            due = c.running and time.time() - last_time >= self.heartbeat_s
            changed = key != last_text
            if (changed and self.echo_changes and (c.done or c.running)) or due:
                print(f"progress {text}", file=self.stream, flush=True)
                last_time = time.time()
            if changed:
                last_text, last_time = key, max(last_time, time.time())

    def _draw(self, runs: list[RunState]) -> None:
        from tqdm import tqdm

        c = counts(runs)
        if self._bar is None:
            self._bar = tqdm(total=c.total, file=self.stream, unit="run", dynamic_ncols=True,
                             bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} {postfix}")
        self._bar.n = c.done
        eta = eta_seconds(runs, self.workers)
        self._bar.set_postfix_str(f"{c.running} in flight, {c.failed} failed"
                                  + (f", ETA {duration(eta)}" if eta is not None else ""),
                                  refresh=False)
        self._bar.refresh()
