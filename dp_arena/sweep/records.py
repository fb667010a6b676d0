"""The sweep's records, typed, and their one JSON form.

The launching process and the jobs talk through the sweep folder, so a sweep works with every
launcher that shares it (joblib, SLURM, Ray):

- :class:`SweepPlan` of :class:`JobPlan`: every job's verdict, written once before any job
  starts (``<sweep>/plan.json``) and read by every job;
- :class:`Started`: a job in flight (``<sweep>/<job>/started.json``);
- :class:`Outcome`: what a job did (``<sweep>/<job>/outcome.json``), read by the progress
  display and the summary.

Each record is frozen. Its JSON form is written by :func:`to_json` and read by
:func:`from_json` here and nowhere else: the rest of the sweep reads attributes. Reading is
lenient (a missing field takes its default), since the files of an older sweep or a partly
written file may be read back.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from dp_arena.report.leaderboard import NotApplicableRow

PLAN_FILE = "plan.json"
STARTED_FILE = "started.json"
OUTCOME_FILE = "outcome.json"

Verdict = Literal["run", "n/a", "duplicate", "invalid"]
#: Outcome statuses of jobs that did not run (not counted as runs).
NOT_RUN = ("N/A", "DUPLICATE")
R = TypeVar("R")


@dataclass(frozen=True)
class JobPlan:
    """One job's verdict. ``reason``: why n/a / invalid; ``same_as``: the job a duplicate
    repeats; ``row``: an n/a job as the board shows it; ``delta``: the delta the default rule
    chose (:func:`dp_arena.run.preflight.with_default_delta`; None: the config's)."""

    index: int
    verdict: Verdict
    label: str = ""
    reason: str = ""
    same_as: int | None = None
    experiment: str = ""
    row: NotApplicableRow | None = None
    delta: float | None = None
    #: the job's command-line overrides (how Hydra names it); the mechanism it runs
    overrides: tuple[str, ...] = ()
    mechanism: str = ""
    #: what the cost model prices (a run's): its setting label, epsilon, dataset, the
    #: dataset's public sizes (:mod:`dp_arena.run.cost_inputs`) and its predicted CPU
    #: seconds (:mod:`dp_arena.sweep.cost_estimate`; None: no finished run to go by)
    setting: str = ""
    epsilon: float | None = None
    dataset: str = ""
    sizes: Mapping[str, Any] = field(default_factory=dict)
    predicted_seconds: float | None = None


@dataclass(frozen=True)
class SweepPlan:
    """Every job's verdict and what the sweep says once up front; ``total`` is the number of
    runs (``None`` for a search sweep, whose jobs the plan cannot know: ``searched``)."""

    jobs: tuple[JobPlan, ...] = ()
    #: metric name on dataset -> why it does not apply, to say once up front
    metrics_na: Mapping[str, str] = field(default_factory=dict)
    #: note -> number of jobs it concerns, to say once up front
    notes: Mapping[str, int] = field(default_factory=dict)
    started: float = 0.0
    searched: bool = False
    total: int | None = None
    workers: int = 2
    tracking_uri: str | None = None
    #: the sweep's parent run per experiment
    parents: Mapping[str, str] = field(default_factory=dict)

    def of(self, verdict: Verdict) -> list[JobPlan]:
        return [j for j in self.jobs if j.verdict == verdict]

    def problems(self) -> dict[str, list[JobPlan]]:
        """Invalid jobs grouped by message (one problem, however many jobs share it)."""
        out: dict[str, list[JobPlan]] = {}
        for job in self.of("invalid"):
            out.setdefault(job.reason, []).append(job)
        return out

    @property
    def experiments(self) -> list[str]:
        return sorted({j.experiment for j in self.jobs if j.verdict == "run" and j.experiment})

    def entry(self, num: int, overrides: list[str]) -> JobPlan | None:
        """Job ``num``'s verdict, when the plan knows it (same number, same overrides)."""
        if self.searched or not 0 <= num < len(self.jobs):
            return None
        job = self.jobs[num]
        return job if sorted(job.overrides) == sorted(overrides) else None


@dataclass(frozen=True)
class Started:
    """A job in flight: its number, when it started (epoch seconds), its label."""

    index: int = -1
    started: float = 0.0
    label: str = ""


@dataclass(frozen=True)
class Outcome:
    """What one job did. ``status``: ``FINISHED``, ``SKIPPED`` (already finished), ``FAILED``,
    ``N/A`` or ``DUPLICATE`` (not runs). ``objective``: the score a tuning search maximizes;
    ``setting``: the hyperparameters the job's overrides set; ``user_error``: refused as bad
    input (explained once, by the summary); ``wall_seconds``: the job's whole time."""

    status: str
    label: str = ""
    index: int = -1
    message: str = ""
    run_id: str | None = None
    experiment: str = ""
    tracking_uri: str | None = None
    seconds: float = 0.0
    wall_seconds: float | None = None
    scores: Mapping[str, float] = field(default_factory=dict)
    objective: float | None = None
    setting: Mapping[str, Any] = field(default_factory=dict)
    redone: str = ""
    metrics_na: Mapping[str, str] = field(default_factory=dict)
    user_error: bool = False
    hint: str = ""
    same_as: int | None = None
    row: NotApplicableRow | None = None

    @property
    def ran(self) -> bool:
        """A run (not an n/a or duplicate job)."""
        return self.status not in NOT_RUN

    @property
    def failed(self) -> bool:
        return self.status == "FAILED"

    @property
    def elapsed(self) -> float:
        """The job's wall time (its run's seconds when the job's own was not recorded)."""
        return float(self.wall_seconds or self.seconds or 0.0)

    def with_(self, **changes: Any) -> Outcome:
        return dataclasses.replace(self, **changes)


# ----- the one JSON form ----------------------------------------------------------------------
def to_json(record: Any) -> Any:
    """A record (and what it holds) as JSON-able containers; an absent row is ``{}``."""
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        out = {f.name: to_json(getattr(record, f.name)) for f in dataclasses.fields(record)}
        if "row" in out and out["row"] is None:
            out["row"] = {}
        return out
    if isinstance(record, Mapping):
        return {str(k): to_json(v) for k, v in record.items()}
    if isinstance(record, (list, tuple)):
        return [to_json(v) for v in record]
    return record


def from_json(cls: type[R], data: Mapping[str, Any]) -> R:
    """The record ``cls`` from its JSON form (unknown keys ignored, missing ones defaulted)."""
    hints = typing.get_type_hints(cls)
    values = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name in data:
            values[f.name] = field_value(hints[f.name], data[f.name])
    return cls(**values)


def field_value(hint: Any, value: Any) -> Any:
    """A JSON value as the field's type: nested records, tuples of records, tuples."""
    if value is None:
        return None
    if hint in (NotApplicableRow | None, NotApplicableRow):
        return NotApplicableRow.of(value) if value else None
    if hint == tuple[JobPlan, ...]:
        return tuple(from_json(JobPlan, v) for v in value)
    if typing.get_origin(hint) is tuple:
        return tuple(value)
    return value


def write_json(path: Path, record: Any) -> None:
    """Write a record's JSON form atomically (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(to_json(record), default=str))
    tmp.replace(path)


def read_json(path: Path) -> Any:
    """A JSON file's content, or ``None`` when it is absent or unreadable (being written)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


# ----- the files ------------------------------------------------------------------------------
def write_plan(sweep_dir: Path, plan: SweepPlan) -> None:
    write_json(Path(sweep_dir) / PLAN_FILE, plan)


def read_plan(sweep_dir: str | Path) -> SweepPlan | None:
    data = read_json(Path(sweep_dir) / PLAN_FILE)
    return from_json(SweepPlan, data) if isinstance(data, Mapping) else None


def write_started(job_dir: str | Path, started: Started) -> None:
    write_json(Path(job_dir) / STARTED_FILE, started)


def read_started(sweep_dir: str | Path) -> list[Started]:
    """Every job folder's ``started.json`` that can be read."""
    found = (read_json(p) for p in Path(sweep_dir).glob(f"*/{STARTED_FILE}"))
    return [from_json(Started, d) for d in found if isinstance(d, Mapping)]


def write_outcome(job_dir: str | Path, outcome: Outcome) -> None:
    write_json(Path(job_dir) / OUTCOME_FILE, outcome)


def read_outcomes(sweep_dir: str | Path) -> list[tuple[str, Outcome]]:
    """Every job folder's outcome that can be read, with the folder's name, in folder order."""
    out = []
    for path in sorted(Path(sweep_dir).glob(f"*/{OUTCOME_FILE}")):
        data = read_json(path)
        if isinstance(data, Mapping):
            out.append((path.parent.name, from_json(Outcome, data)))
    return out


def write_outcomes(path: Path, outcomes: list[Outcome]) -> None:
    """A list of outcomes as one indented JSON file (the final tuning stage's runs)."""
    path.write_text(json.dumps([to_json(o) for o in outcomes], indent=1, default=str))
