"""A sweep's cost before it starts: predicted CPU seconds and peak memory per (mechanism,
dataset) and in total, from the cost model (:mod:`dp_arena.sweep.cost_model`) fitted on the
finished runs of the tracking store (:mod:`dp_arena.sweep.cost_history`).

- :func:`price_plan`: every run of a plan priced (:class:`PlanCost`); a mechanism (with its
  setting) with no finished run in the store is *unknown*, said with the command that would
  price it, never guessed;
- :func:`estimate_lines`: the table ``dp-arena --dry-run`` prints (and its one-line summary
  on a launch's first screen, :func:`summary_line`);
- :func:`with_predictions`: the plan with each run's predicted CPU seconds, which the ETA
  reads (:func:`dp_arena.sweep.progress.estimate`).

Inputs: the schema's columns and domain sizes, a public or declared row figure (never the
private table's count: :mod:`dp_arena.run.cost_inputs`), epsilon, and the stored runs'
``cpu_seconds`` and ``peak_memory_mb``. The estimate is printed on the owner's console and
goes into the sweep's ``plan.json`` (public inputs and stored run figures only); nothing of it
is written to the tracking store.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from dp_arena.run.cost_inputs import CostInputs
from dp_arena.sweep.cost_history import History, cost_key, sizes_of
from dp_arena.sweep.cost_model import (
    LEVEL,
    CostModel,
    Prediction,
    Total,
    fit_cost_model,
    total_interval,
)
from dp_arena.sweep.progress import duration
from dp_arena.sweep.records import JobPlan, SweepPlan


@dataclass(frozen=True)
class Models:
    """The CPU-seconds and the peak-memory models, and the history they were fitted on."""

    cpu: CostModel
    memory: CostModel
    history: History

    @classmethod
    def of(cls, history: History) -> Models:
        return cls(fit_cost_model(history.cpu), fit_cost_model(history.memory), history)


@dataclass(frozen=True)
class GroupCost:
    """The runs of one cost key on one dataset: their number, total CPU (``None``: unknown),
    the largest predicted peak memory (``None``: unknown), the terms extrapolated, an
    example job (to name the command that would price an unknown one)."""

    key: str
    dataset: str
    runs: int
    cpu: Total | None
    peak: Prediction | None
    history_runs: int
    unmodelled: tuple[str, ...]
    example: JobPlan


@dataclass(frozen=True)
class PlanCost:
    groups: tuple[GroupCost, ...]
    total: Total
    unknown_runs: int
    rows_sources: tuple[str, ...]

    @property
    def known_runs(self) -> int:
        return sum(g.runs for g in self.groups if g.cpu is not None)


def job_key(job: JobPlan) -> str:
    return cost_key(job.mechanism, job.setting)


def job_sizes(job: JobPlan):  # -> Sizes | None
    """A planned run's public sizes and epsilon (``None`` for a plan without them)."""
    try:
        inputs = CostInputs(int(job.sizes["rows"]), str(job.sizes.get("rows_source", "")),
                            int(job.sizes["columns"]), int(job.sizes["cells"]))
    except (KeyError, TypeError, ValueError):
        return None
    return sizes_of(inputs, job.epsilon) if job.epsilon else None


def predict_job(model: CostModel, job: JobPlan) -> Prediction | None:
    sizes = job_sizes(job)
    return None if sizes is None else model.predict(job_key(job), sizes)


def price_plan(plan: SweepPlan, models: Models) -> PlanCost:
    """Every run of ``plan`` priced, grouped by (cost key, dataset) in plan order."""
    grouped: dict[tuple[str, str], list[JobPlan]] = {}
    for job in plan.of("run"):
        grouped.setdefault((job_key(job), job.dataset), []).append(job)
    groups, parts, unknown = [], [], 0
    for (key, dataset), jobs in grouped.items():
        cpu = [predict_job(models.cpu, j) for j in jobs]
        mem = [predict_job(models.memory, j) for j in jobs]
        if any(p is None for p in cpu):
            unknown += len(jobs)
            groups.append(GroupCost(key, dataset, len(jobs), None, None, 0, (), jobs[0]))
            continue
        mine = [(key, p, 1) for p in cpu]
        parts += mine
        peak = max((p for p in mem if p is not None), key=lambda p: p.median, default=None)
        extrapolated = tuple(sorted({t for p in cpu for t in p.unmodelled}))
        groups.append(GroupCost(key, dataset, len(jobs), total_interval(mine), peak,
                                cpu[0].runs, extrapolated, jobs[0]))  # type: ignore[union-attr]
    sources = tuple(sorted({str(j.sizes.get("rows_source", "")) for j in plan.of("run")} - {""}))
    return PlanCost(tuple(groups), total_interval(parts), unknown, sources)


def with_predictions(plan: SweepPlan, models: Models) -> SweepPlan:
    """``plan`` with each run's predicted CPU seconds (the model's mean; ``None`` unknown)."""
    def priced(job: JobPlan) -> JobPlan:
        if job.verdict != "run":
            return job
        p = predict_job(models.cpu, job)
        return replace(job, predicted_seconds=None if p is None else p.mean)

    return replace(plan, jobs=tuple(priced(j) for j in plan.jobs))


# ----- the screen -----------------------------------------------------------------------------
def seconds_text(seconds: float) -> str:
    return f"{seconds:.1f}s" if seconds < 60 else duration(seconds)


def interval_text(total: Total) -> str:
    """``1m20s (55s-2m10s)``; the interval ``(spread unknown)`` when it is."""
    if total.low is None or total.high is None:
        return f"{seconds_text(total.mean)} (spread unknown: too few runs)"
    return f"{seconds_text(total.mean)} ({seconds_text(total.low)}-{seconds_text(total.high)})"


def memory_text(p: Prediction | None) -> str:
    if p is None:
        return "unknown"
    if p.low is None or p.high is None:
        return f"{p.median:.0f} MB"
    return f"{p.median:.0f} MB ({p.low:.0f}-{p.high:.0f})"


def unknown_hint(group: GroupCost) -> str:
    """What prices an unknown group: one run of it (its job's overrides, trial 0)."""
    command = " ".join(o.replace("\\", "") for o in group.example.overrides
                       if not o.startswith("trial="))
    return (f"unknown: no finished run of {group.key} in the store; run one to price it "
            f"(`dp-arena {command} trial=0`), then dry-run again" if command else
            f"unknown: no finished run of {group.key} in the store; run one to price it")


def estimate_lines(cost: PlanCost, models: Models, workers: int, store: str) -> list[str]:
    """The dry run's table (module docstring)."""
    history = models.history
    used = len(history.cpu)
    head = (f"cost estimate from {used} finished run{'s' if used != 1 else ''} in {store}"
            + (f" ({history.without_sizes} older runs without cost figures left out)"
               if history.without_sizes else "")
            + f"; CPU seconds of fit + scoring, {LEVEL:.0%} intervals:")
    rows = [("mechanism", "dataset", "runs", "CPU (total)", "peak memory (one run)")]
    notes, hinted = [], set()
    for g in cost.groups:
        if g.cpu is None:
            rows.append((g.key, g.dataset, str(g.runs), "unknown", "unknown"))
            if g.key not in hinted:  # one line per mechanism: one run of it prices them all
                hinted.add(g.key)
                notes.append(f"  {g.key}: {unknown_hint(g)}")
            continue
        rows.append((g.key, g.dataset, str(g.runs), interval_text(g.cpu), memory_text(g.peak)))
        if g.unmodelled:
            notes.append(f"  {g.key} on {g.dataset}: extrapolated in {', '.join(g.unmodelled)} "
                         "(no stored run varied it: taken as no effect)")
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    table = ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    total = cost.total
    known = cost.known_runs
    lines = [head, *table,
             f"total: {known} of {known + cost.unknown_runs} runs priced: CPU "
             + interval_text(total)
             + (f", plus {cost.unknown_runs} runs of unknown cost" if cost.unknown_runs else "")
             if known else f"total: no run priced ({cost.unknown_runs} of unknown cost)"]
    if known and total.low is not None and total.high is not None:
        lines.append(f"  at {workers} runs at once: about {seconds_text(total.mean / workers)} "
                     f"({seconds_text(total.low / workers)}-{seconds_text(total.high / workers)}"
                     ") of computing, more on a loaded machine and with each job's overhead")
    peaks = sorted((g.peak.median for g in cost.groups if g.peak is not None), reverse=True)
    if peaks:
        lines.append(f"  peak memory: {peaks[0]:.0f} MB for the largest run; {workers} at once: "
                     f"up to about {sum(peaks[:workers]):.0f} MB")
    lines += notes
    if cost.rows_sources:
        lines.append("  inputs: the schema's columns and domain sizes, epsilon and a public row "
                     f"figure ({'; '.join(cost.rows_sources)}), never the private row count")
    return lines


def summary_line(cost: PlanCost) -> str:
    """One line for a launch's first screen."""
    total, known = cost.total, cost.known_runs
    if not known:
        return ("cost estimate: unknown (no finished run of these mechanisms in the store); "
                "`dp-arena --dry-run ...` says how to price them")
    unknown = f", {cost.unknown_runs} runs unknown" if cost.unknown_runs else ""
    return (f"cost estimate: CPU {interval_text(total)} for {known} runs{unknown} "
            "(`--dry-run` shows it per mechanism and dataset)")

