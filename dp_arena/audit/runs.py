"""Many runs of one mechanism on the two worlds, with fresh noise, isolated, cached, resumable.

- **one run** (:func:`audit_run`): exactly what the runner does for a run's release: a fresh
  :class:`~dp_arena.privacy.accounting.Ledger` for the configured budget and accountant,
  ``mechanism.fit_sample(world, budget, ledger, rng)`` with ``rng`` from
  :func:`dp_arena.privacy.noise.fresh_rng` (128 bits of OS entropy per run: no two runs share
  noise), the runner's schema check of the output (:func:`dp_arena.run.runner.check_synthetic`)
  and a check that the ledger stayed within the budget; then the statistic's features of the
  synthetic table. The table itself never leaves the child process.
- **batches**: runs go in batches, each computed in a forked child under the configured
  limits (:func:`dp_arena.run.isolation.call_isolated`; a batch of ``b`` runs gets ``b`` times
  the per-run time limit, the memory limit as it is). The batch size adapts so a batch takes
  about ``batch_seconds``: per-process costs (the fork, a JAX mechanism's first compilation)
  are paid once per batch; a mechanism slower than that goes one run per child. ``jobs`` batches run at a time, each in a worker process (forked before any
  thread exists; it forks the isolated child); batches alternate between the worlds, so a
  stopped audit has both halves.
- **cache**: each finished batch appends one JSON line per run (``{"i": index, "x":
  [features]}``) to ``<folder>/<world>.jsonl``; a re-run reads them and computes only the
  missing indices (a torn last line from a kill is ignored).
- **progress**: a line with done/total, runs per second and the ETA, at most once a second.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dp_arena.data.datasets import Dataset
from dp_arena.errors import DPArenaError
from dp_arena.privacy.accounting import Ledger
from dp_arena.privacy.noise import fresh_rng
from dp_arena.privacy.release import Releaser, make_sampler
from dp_arena.run.isolation import call_isolated, can_fork
from dp_arena.run.config import RunConfig
from dp_arena.run.runner import check_synthetic, spent_budget
from dp_arena.run.settings import Limits
from dp_arena.mechanisms import Mechanism

from .releases import release_features
from .statistic import features

WORLDS: tuple[str, ...] = ("without", "with")  # D, D' = D + canary
MAX_BATCH = 500


@dataclass(frozen=True)
class World:
    """One side of the neighbouring pair and what a run on it needs."""

    name: str
    data: Dataset


@dataclass(frozen=True)
class Job:
    world: str
    indices: tuple[int, ...]


def check_ledger(mechanism: Mechanism, ledger: Ledger, rc: RunConfig) -> None:
    """The ledger must not report more than the budget (it refuses over-budget charges
    already; this catches a mechanism that bypassed it)."""
    eps, delta = spent_budget(mechanism, ledger)
    if eps > rc.budget.epsilon * (1 + 1e-9) or delta > rc.budget.delta * (1 + 1e-9) + 1e-300:
        raise DPArenaError(f"mechanism {rc.mechanism!r} spent ({eps:g}, {delta:g}), over its "
                           f"budget ({rc.budget.epsilon:g}, {rc.budget.delta:g})",
                           "fix the mechanism's calibration")


def audit_run(mechanism: Mechanism, data: Dataset, rc: RunConfig, canary: dict[str, int],
              statistic: str) -> np.ndarray:
    """One run on one world with fresh noise: the statistic's features of its synthetic
    table (the synthetic view)."""
    noise, rng = fresh_rng().spawn(2)
    ledger = Ledger(rc.budget, rc.accountant, unit=data.ledger_unit)  # type: ignore[arg-type]
    synthetic = mechanism.fit_sample(data, rc.budget,
                                     Releaser(ledger, make_sampler(rc.sampler, noise)), rng)
    synthetic = check_synthetic(synthetic, data, rc)
    check_ledger(mechanism, ledger, rc)
    return features(synthetic, data.schema, canary, statistic)


def cache_path(folder: Path, world: str) -> Path:
    return folder / f"{world}.jsonl"


def load_cached(folder: Path, world: str) -> dict[int, list[float]]:
    """Cached features of ``world`` by run index (a torn or foreign line is skipped)."""
    path = cache_path(folder, world)
    out: dict[int, list[float]] = {}
    if not path.is_file():
        return out
    for line in path.read_text().splitlines():
        try:
            item = json.loads(line)
            out[int(item["i"])] = [float(v) for v in item["x"]]
        except (ValueError, KeyError, TypeError):
            continue
    return out


def private_folder(folder: Path) -> None:
    """Create ``folder`` (and its parents) readable by the owner only (0700)."""
    folder.mkdir(parents=True, exist_ok=True)
    for part in (folder, *folder.parents[:1]):
        os.chmod(part, 0o700)


def append_cached(folder: Path, world: str, results: list[tuple[int, list[float]]]) -> None:
    """Append runs' features; the file is created 0600: features are functions of DP releases
    of the private data, but averaged over thousands of runs they estimate its exact counts
    (e.g. a canary cell's true count), so the cache is private data."""
    path = cache_path(folder, world)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.chmod(path, 0o600)
    with os.fdopen(fd, "a") as fh:
        fh.write("".join(json.dumps({"i": i, "x": x}) + "\n" for i, x in results))


def eta_text(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    seconds = round(seconds)
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m" if h else (f"{m}m{s:02d}s" if m else f"{s}s")


class Scheduler:
    """Hands out batches (alternating worlds), sized from the measured seconds per run, and
    prints progress. Used from the parent's main thread only."""

    def __init__(self, pending: dict[str, list[int]], total: int, done: int,
                 batch_seconds: float, echo: Callable[[str], None]):
        self.pending = {w: list(v) for w, v in pending.items()}
        self.total, self.done, self.start_done = total, done, done
        self.batch_seconds, self.echo = batch_seconds, echo
        self.started = time.monotonic()
        self.busy_seconds, self.busy_runs = 0.0, 0
        self.turn = 0
        self.last_print = 0.0

    def batch_size(self) -> int:
        if self.busy_runs == 0:
            return 1
        per_run = self.busy_seconds / self.busy_runs
        return int(min(MAX_BATCH, max(1, self.batch_seconds / max(per_run, 1e-6))))

    def next_job(self) -> Job | None:
        for _ in WORLDS:
            world = WORLDS[self.turn % len(WORLDS)]
            self.turn += 1
            if self.pending[world]:
                size = self.batch_size()
                take, self.pending[world] = (self.pending[world][:size],
                                             self.pending[world][size:])
                return Job(world, tuple(take))
        return None

    def finished(self, job: Job, seconds: float) -> None:
        self.done += len(job.indices)
        self.busy_seconds += seconds
        self.busy_runs += len(job.indices)
        now = time.monotonic()
        if now - self.last_print >= 1.0 or self.done == self.total:
            self.last_print = now
            rate = (self.done - self.start_done) / max(now - self.started, 1e-9)
            eta = (self.total - self.done) / rate if rate > 0 else math.inf
            self.echo(f"audit: {self.done}/{self.total} runs "
                      f"({100 * self.done / max(self.total, 1):.0f}%)  {rate:.1f} runs/s  "
                      f"ETA {eta_text(eta)}")


def batch_limits(limits: Limits, n: int) -> Limits:
    if limits.time_limit_s is None:
        return limits
    return dataclasses.replace(limits, time_limit_s=limits.time_limit_s * n)


@dataclass(frozen=True)
class BatchTask:
    """Everything a worker process needs for one batch (pickled to it)."""

    mechanism: Mechanism
    data: Dataset
    rc: RunConfig
    canary: dict[str, int]
    statistic: str
    job: Job
    #: the release view: the other world (for the replay); ``None``: the synthetic view
    other: Dataset | None = None


def one_run(task: BatchTask) -> np.ndarray:
    """One run's features in the task's view."""
    if task.other is None:
        return audit_run(task.mechanism, task.data, task.rc, task.canary, task.statistic)
    return release_features(task.mechanism, task.data, task.other, task.rc,
                            world_is_prime=task.job.world == WORLDS[1])


def run_batch(task: BatchTask) -> tuple[list[tuple[int, list[float]]], float]:
    """In a worker process: the batch's runs in one isolated child under the run limits;
    returns (index, features) per run and the child's seconds."""
    def work() -> list[tuple[int, list[float]]]:
        return [(i, one_run(task).tolist()) for i in task.job.indices]

    results, report = call_isolated(work, batch_limits(task.rc.limits, len(task.job.indices)))
    return results, report.seconds


def collect(mechanism: Mechanism, worlds: dict[str, World], rc: RunConfig,
            canary: dict[str, int], statistic: str, runs: int, folder: Path, jobs: int = 2,
            batch_seconds: float = 2.0, echo: Callable[[str], None] = print,
            view: str = "synthetic") -> dict[str, np.ndarray]:
    """Features of runs ``0..runs-1`` on each world (``runs x k`` arrays), computing only what
    ``folder``'s cache lacks. Batches run in ``jobs`` worker processes started by fork before
    anything else runs (each worker is single-threaded, so its own fork of the isolated child
    is safe; forking from a multi-threaded parent can copy a held import lock into the
    child)."""
    import multiprocessing

    private_folder(folder)
    cached = {w: load_cached(folder, w) for w in WORLDS}
    pending = {w: [i for i in range(runs) if i not in cached[w]] for w in WORLDS}
    total = 2 * runs
    done = total - sum(len(v) for v in pending.values())
    if done:
        echo(f"audit: {done}/{total} runs already in the cache ({folder})")
    sched = Scheduler(pending, total, done, batch_seconds, echo)
    if done < total:
        context = multiprocessing.get_context("fork" if can_fork() else "spawn")
        with context.Pool(processes=max(1, jobs)) as pool:
            in_flight: dict[Any, Job] = {}
            while True:
                while len(in_flight) < max(1, jobs) and (job := sched.next_job()) is not None:
                    other = worlds[WORLDS[1 - WORLDS.index(job.world)]].data
                    task = BatchTask(mechanism, worlds[job.world].data, rc, canary, statistic,
                                     job, other if view == "releases" else None)
                    in_flight[pool.apply_async(run_batch, (task,))] = job
                if not in_flight:
                    break
                ready = [r for r in in_flight if r.ready()]
                if not ready:
                    time.sleep(0.01)
                    continue
                for handle in ready:
                    job = in_flight.pop(handle)
                    results, seconds = handle.get()  # re-raises the batch's failure
                    append_cached(folder, job.world, results)
                    cached[job.world].update(dict(results))
                    sched.finished(job, seconds)
    return {w: np.array([cached[w][i] for i in range(runs)], dtype=float) for w in WORLDS}
