"""Replayed sweep timelines for the progress ETA: the default competition (60 runs on two
workers) built from the recorded per-run wall times of its stored fixture, fresh or resumed
(its first jobs skipped), and the ETA / true time left at every moment a job ends.

A run's job costs the per-job overhead (worker, compose, data memo, store lookup: about 3.5 s
a job in a recorded 16-run sweep, 2026-12-07, whose first job took 5 s more) plus the run's
recorded wall time, times the machine's load, times uniform(1 - jitter, 1 + jitter); a
skipped job costs the overhead alone. Jobs are dispatched greedily in Hydra's order
(mechanism, then epsilon, then trial) to the first free worker; a worker's first job pays the
warm-up.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dp_arena.sweep.progress import RunState, cost_group, run_group

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "default_board_runs.json"
#: The default competition's mechanism options in Hydra's order, as (mechanism, label prefix,
#: the fixture's hyperparameters tag).
OPTIONS = [("independent", "independent", "-"), ("archetype", "archetype", "-"),
           ("prefix_tree", "prefix_tree", "-"), ("mst", "mst[quick]", "[quick]"),
           ("aim", "aim[quick]", "[quick]"), ("adaptive_grid", "adaptive_grid", "-"),
           ("adaptive_grid", "adaptive_grid accountant=zcdp", "accountant=zcdp"),
           ("resample", "resample", "-"), ("public_only", "public_only", "-"),
           ("uniform", "uniform", "-")]
OVERHEAD_S = 3.5
WARMUP_S = 5.0


@dataclass(frozen=True)
class Job:
    mechanism: str
    label: str
    start: float
    end: float
    skipped: bool = False
    #: the cost model's CPU seconds for the run (None: no model)
    predicted: float | None = None


def recorded_seconds() -> dict[tuple[str, str, float], float]:
    """(mechanism, hyperparameters tag, epsilon) -> the fixture run's wall seconds."""
    runs = json.loads(FIXTURE.read_text())["runs"]
    return {(r["tags"]["mechanism"], r["tags"].get("hyperparameters", "-"),
             float(r["tags"]["epsilon"])): float(r["metrics"]["wall_seconds"]) for r in runs}


def job_order(trial_first: bool = False) -> list[tuple[int, float, int]]:
    """(option, epsilon, trial) in Hydra's order: mechanism, epsilon, trial (the default
    competition's), or trial first (a sweep whose ``trial`` comes first: every mechanism
    runs in the first third)."""
    cells = [(o, eps, t) for o in range(len(OPTIONS)) for eps in (1.0, 10.0) for t in range(3)]
    return sorted(cells, key=lambda c: (c[2], c[0], c[1])) if trial_first else cells


def default_competition(seed: int = 0, workers: int = 2, load: float = 1.0,
                        jitter: float = 0.3, skips: int = 0,
                        trial_first: bool = False) -> list[Job]:
    """The 60 jobs of the default competition on ``workers``; the first ``skips`` jobs
    already finished earlier (a resumed sweep)."""
    rng = np.random.default_rng(seed)
    work = recorded_seconds()
    free = [(0.0, w, True) for w in range(workers)]
    jobs: list[Job] = []
    for option, eps, trial in job_order(trial_first):
        mech, name, tag = OPTIONS[option]
        start, w, first = heapq.heappop(free)
        skipped = len(jobs) < skips
        own = OVERHEAD_S + (0.0 if skipped else work[(mech, tag, eps)])
        cost = (own + (WARMUP_S if first else 0.0)) * load * float(
            rng.uniform(1 - jitter, 1 + jitter))
        jobs.append(Job(mech, f"{name} eps={eps:g} trial={trial}", start, start + cost,
                        skipped))
        heapq.heappush(free, (start + cost, w, False))
    return jobs


def states_at(jobs: list[Job], now: float, skipped: str = "skipped") -> list[RunState]:
    """Every run's state at ``now``; a skipped job that ended has status ``skipped`` (the
    earlier estimator read it as ``done``: pass ``skipped="done"``)."""
    def state(j: Job) -> RunState:
        if j.end <= now:
            status, secs = (skipped if j.skipped else "done"), j.end - j.start
        elif j.start <= now:
            status, secs = "running", now - j.start
        else:
            status, secs = "pending", 0.0
        return RunState(j.mechanism, status, secs, j.label, run_group(j.label), j.predicted)
    return [state(j) for j in jobs]


def all_groups_seen_at(jobs: list[Job]) -> float | None:
    """When every cost group of the sweep's runs (skips are no runs) has a finished run:
    the latest of their first ends (``None`` when every job is a skip)."""
    first: dict[str, float] = {}
    for j in jobs:
        if not j.skipped:
            key = cost_group(RunState(j.mechanism, "done", 0.0, j.label, run_group(j.label)))
            first[key] = min(first.get(key, j.end), j.end)
    return max(first.values()) if first else None


@dataclass(frozen=True)
class Moment:
    time: float
    eta: float | None
    at_least: bool
    left: float

    @property
    def ratio(self) -> float | None:
        return None if self.eta is None else self.eta / self.left


def replay(jobs: list[Job], estimate: Callable[[list[RunState]], tuple[float, bool] | None],
           skipped: str = "skipped") -> list[Moment]:
    """The ETA at every moment a job ends (but the last): ``estimate(states)`` returns
    ``(seconds, at_least)`` or ``None``."""
    end = max(j.end for j in jobs)
    out = []
    for t in sorted(j.end for j in jobs)[:-1]:
        got = estimate(states_at(jobs, t + 1e-9, skipped))
        out.append(Moment(t, None if got is None else got[0],
                          bool(got and got[1]), end - t))
    return out


def before_the_last_run(jobs: list[Job], moments: list[Moment]) -> list[Moment]:
    """The moments while at least the longest run's length is left: in the last one, the
    ratio measures one run's own spread around its group's mean (0.4 s left of a 5 s run
    estimated at 1.5 s is 3.8 times), not the estimator."""
    longest = max(j.end - j.start for j in jobs)
    return [m for m in moments if m.left >= longest]


def checked(jobs: list[Job], moments: list[Moment]) -> list[Moment]:
    """The moments the 2x claim covers: from the first finished run of every cost group on
    (:func:`all_groups_seen_at`), before the last run (:func:`before_the_last_run`)."""
    seen = all_groups_seen_at(jobs)
    return [m for m in before_the_last_run(jobs, moments)
            if seen is not None and m.time >= seen]
