"""Benchmark: the progress ETA replayed on sweep timelines, against the time really left.

    python benchmarks/eta_replay.py          # the default competition, replayed (see below)
    python benchmarks/eta_replay.py FOLDER   # a finished sweep: FOLDER/multirun/<date>/<time>/
                                             # (or that folder itself)

A finished sweep's plan may carry the cost model's per-run figures (a launch with a store of
finished runs: :mod:`dp_arena.sweep.cost_estimate`): it is then replayed with them and
without them, side by side.

At every moment a job ends, the ETA :func:`dp_arena.sweep.progress.estimate` computes from the
runs' states (start times, wall times, skips) over the time the sweep really had left. Without
a folder: the default competition's 60 jobs on 2 workers built from the recorded wall times of
its stored fixture (tests/support/timelines.py), 12 seeds each, in Hydra's order and trial
first, fresh and resumed with its first 20 or all 60 jobs skipped (a load that slows every
run alike leaves every ratio as it is: the wall times measured include it). Prints, per case, the
lowest and highest ratio from the first finished run of every cost group on (while at least
one run's length is left; the goal: within [0.5, 2]), the highest ratio shown before that
(a lower bound, ``ETA >= ...``: the goal is at most 2) and how many moments showed no ETA.
"""
from __future__ import annotations

import glob
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dp_arena.sweep.progress import RunState, estimate  # noqa: E402
from dp_arena.sweep.records import read_outcomes, read_plan, read_started  # noqa: E402
from tests.support.timelines import (  # noqa: E402
    Job,
    before_the_last_run,
    checked,
    default_competition,
    replay,
)


def eta_of(states: list[RunState], workers: int = 2) -> tuple[float, bool] | None:
    eta = estimate(states, workers)
    return None if eta is None else (eta.seconds, eta.at_least)


def folder_jobs(folder: str) -> tuple[list[Job], int]:
    """A finished sweep's jobs (start, end, skipped, the model's figure) from its plan and
    started/outcome files."""
    d = folder if Path(folder, "plan.json").exists() else \
        sorted(glob.glob(folder + "/multirun/*/*/"))[-1]
    plan = read_plan(d)
    starts = {s.index: s.started for s in read_started(d)}
    ended = {o.index: o for _, o in read_outcomes(d) if o.ran}
    jobs = [Job(j.mechanism, j.label, starts[j.index], starts[j.index] + ended[j.index].elapsed,
                ended[j.index].status == "SKIPPED", j.predicted_seconds)
            for j in plan.of("run") if j.index in starts and j.index in ended]
    return jobs, plan.workers or 2


def span(ratios: list[float]) -> str:
    return f"{min(ratios):.2f}-{max(ratios):.2f}" if ratios else "none"


def summary(name: str, cases: list[list[Job]], workers: int = 2) -> None:
    """ETA / time left: from every group's first run on; over every ETA shown (lower bounds
    included); moments with no ETA. Each before the last run (:func:`before_the_last_run`)."""
    seen, shown, blank = [], [], 0
    for jobs in cases:
        moments = before_the_last_run(jobs, replay(jobs, lambda s: eta_of(s, workers)))
        seen += [m.ratio for m in checked(jobs, moments) if m.ratio is not None]
        shown += [m.ratio for m in moments if m.ratio is not None]
        blank += sum(m.eta is None for m in moments)
    print(f"{name:40s} every group seen: {span(seen):11s} any ETA shown: {span(shown):11s} "
          f"no ETA: {blank}")


def main() -> None:
    if len(sys.argv) > 1:
        jobs, workers = folder_jobs(sys.argv[1])
        if any(j.predicted is not None for j in jobs):
            summary("with the cost model", [jobs], workers)
            jobs = [replace(j, predicted=None) for j in jobs]
        summary("measured runs only" if len(sys.argv) > 1 else sys.argv[1], [jobs], workers)
        return
    for trial_first in (False, True):
        for skips in (0, 20, 60):
            cases = [default_competition(seed, skips=skips, trial_first=trial_first)
                     for seed in range(12)]
            order = "trial first" if trial_first else "Hydra's order"
            summary(f"{order}, {skips} skipped", cases)


if __name__ == "__main__":
    main()
