"""Checking runs before they start: one job (in the worker) and a whole sweep (in the
launching process, before any job folder or MLflow run exists).

- :func:`check_run`: what a run needs beyond its config: the data view the mechanism sees
  (the public view for ``tuning.view=public``), the mechanism applies to it
  (:meth:`Mechanism.check_applicable`: privacy unit, public part, data shape), which metrics
  apply (the others are ``n/a`` with a reason), and a delta below 1/(number of persons);
- :func:`check_data_size`: a data file larger than ``limits.memory_limit_mb`` is refused
  before it is loaded (the launcher and the worker load the data outside the run's child).
- :func:`plan_sweep`: every job of a sweep through :func:`parse_run_config`,
  :func:`build_components` and :func:`check_run`, loading each distinct dataset once. Each job
  gets a verdict: ``run``, ``n/a`` (the mechanism does not apply to the dataset: listed with the
  reason, shown on the board, not a failure), ``duplicate`` (the same configuration as an
  earlier job, e.g. ``adaptive_grid`` and ``adaptive_grid_zcdp`` under ``privacy=zcdp``: run
  once) or ``invalid``. Invalid jobs are grouped by their message, so a bad value swept over 20
  jobs is one problem, reported once, before anything starts.

Only public facts leave these checks: the schema, the unit, whether a public part exists, and
the one bit of the delta check (documented at :func:`check_delta`).
"""

from __future__ import annotations

import json
import math
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal

from mechanisms import Mechanism, hyperparameter_label
from metrics import Metric

from harness.data.datasets import Dataset, is_challenge_dataset, load_dataset
from harness.data.guards import dataset_warnings
from harness.errors import ConfigError, DPArenaError, NotApplicable
from harness.redact import scrubbed_reason
from harness.run.config import RunConfig, build_components, label_preset, parse_run_config
from harness.run.tuning import public_view

Verdict = Literal["run", "n/a", "duplicate", "invalid"]


@dataclass(frozen=True)
class CheckedRun:
    """What :func:`check_run` hands the runner."""

    view: Dataset
    metrics: dict[str, Metric]
    #: metric name -> why it does not apply (an ``n/a`` cell, not a silent gap)
    metrics_na: dict[str, str] = field(default_factory=dict)


def count_persons(data: Dataset) -> int:
    """Number of persons in the private part (rows, or distinct ids for user-level data)."""
    if data.unit == "user":
        return int(data.private[data.id_column].nunique())
    return len(data.private)


def check_delta(rc: RunConfig, data: Dataset) -> None:
    """Refuse delta >= 1/(number of persons) unless ``privacy.allow_large_delta=true``: such a
    delta admits releasing one person's data outright. The refusal reveals one bit about the
    private size (whether it is below 1/delta), only to the operator's console, before any
    release; the message states no count."""
    delta = rc.budget.delta
    if delta <= 0 or rc.allow_large_delta or not data.private.shape[0]:
        return
    if delta * count_persons(data) >= 1:
        raise ConfigError(
            f"privacy.delta={delta:g} is at or above 1/(number of persons in dataset "
            f"{data.name!r}): a mechanism could publish one person's data outright",
            "use a delta well below 1/n, e.g. privacy.delta=1e-9 (or set "
            "privacy.allow_large_delta=true to run anyway; such runs are labelled and unranked)")


#: The taxi challenge's delta (1/200^2), the preset of conf/privacy/*.yaml.
CHALLENGE_DELTA = 2.5e-5
#: Persons assumed when no public figure bounds them (a billion: delta 1e-10 at most).
PERSONS_WITHOUT_A_BOUND = 10**9


def persons_bound(data: Dataset) -> tuple[int, str]:
    """A public upper bound on the number of persons, and where it comes from: the schema's
    ``max_records`` (the competition's published cap; persons <= records), else 10 x the
    public part's persons, else :data:`PERSONS_WITHOUT_A_BOUND`. Never the private count."""
    caps = [int(r.max_records) for r in data.runs if r.max_records]
    if caps:
        return max(caps), "the schema's max_records"
    if data.public is not None and len(data.public):
        people = data.public[data.id_column].nunique() if data.unit == "user" \
            else len(data.public)
        return 10 * int(people), "10 x the public part's persons"
    return PERSONS_WITHOUT_A_BOUND, "no public figure: a billion persons"


def default_delta(data: Dataset) -> tuple[float, str]:
    """The delta for data that is not a taxi competition's when the command sets none:
    ``1/(10 N)`` rounded down to a power of ten, ``N`` the public bound on persons
    (:func:`persons_bound`); and the sentence that says so (printed once per sweep)."""
    bound, source = persons_bound(data)
    delta = 10.0 ** math.floor(math.log10(1.0 / (10.0 * bound)))
    return delta, (f"privacy.delta is not set for dataset {data.name!r}: using delta={delta:g} "
                   f"= 1/(10 N) rounded down to a power of ten, N = {bound:,} ({source}); set "
                   "privacy.delta=... to choose (the taxi challenge's 2.5e-5 is for taxi data)")


def with_default_delta(cfg: dict[str, Any], data: Dataset, delta_given: bool
                       ) -> tuple[dict[str, Any], str]:
    """``cfg`` with the default delta rule applied (and the note), when the command set no
    delta, the data is not a taxi competition's and the preset delta is in force; else
    ``cfg`` unchanged and ""."""
    privacy = cfg.get("privacy") or {}
    if delta_given or is_challenge_dataset(data.name) or \
            not math.isclose(float(privacy.get("delta") or 0), CHALLENGE_DELTA):
        return cfg, ""
    delta, note = default_delta(data)
    return {**cfg, "privacy": {**privacy, "delta": delta}}, note


def data_files(dataset: dict[str, Any]) -> dict[str, Path]:
    """The files a dataset config reads (``dataset.path`` / ``public_path`` of ``csv``)."""
    if dataset.get("name") != "csv":
        return {}
    return {f"dataset.{key}": Path(str(dataset[key])).expanduser()
            for key in ("path", "public_path") if dataset.get(key)}


def loaded_bytes_at_least(path: Path) -> int:
    """A lower bound on the memory a table file takes once loaded: its (uncompressed) size.
    Every value of a CSV becomes at least as many bytes in pandas as its text (a one-digit
    number and its comma become an 8-byte integer)."""
    if path.suffix == ".zip" and zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            return sum(info.file_size for info in archive.infolist())
    return path.stat().st_size


def check_data_size(rc: RunConfig) -> None:
    """Refuse, before loading, a data file that cannot fit in ``limits.memory_limit_mb``: the
    launcher and the worker load the data outside the run's child process, so a file larger
    than the limit would exceed it there. Reveals one bit (whether the file is larger than the
    limit), to the operator's console; the message states no size."""
    limit = rc.limits.memory_limit_mb
    if not limit:
        return
    for key, path in data_files(rc.dataset).items():
        if path.is_file() and loaded_bytes_at_least(path) > limit * 2**20:
            raise ConfigError(f"{key}: the file is larger than limits.memory_limit_mb="
                              f"{limit:g} MB, so loading it would exceed the memory limit",
                              "raise limits.memory_limit_mb (at least a few times the file's "
                              "size), or use a smaller file")


def check_run(rc: RunConfig, mechanism: Mechanism, metrics: dict[str, Metric],
              data: Dataset) -> CheckedRun:
    """The data view, the metrics that apply (and why the others do not); raises
    :class:`NotApplicable` when the mechanism cannot run on the data, :class:`ConfigError`
    for any other problem."""
    view = public_view(data, rc.tuning.public_fraction, rc.tuning.split_seed) \
        if rc.tuning.view == "public" else data
    if rc.tuning.mode == "dp_select" and data.public is None:
        public_view(data, rc.tuning.public_fraction, rc.tuning.split_seed)  # raises the reason
    mechanism.check_applicable(view)
    reasons = {name: m.not_applicable_reason(view) for name, m in metrics.items()}
    applicable = {name: m for name, m in metrics.items() if reasons[name] is None}
    if not applicable:
        raise ConfigError(f"none of the metrics {sorted(metrics)} applies to dataset {data.name!r}"
                          f" ({'; '.join(r for r in reasons.values() if r)})",
                          "add a generic metric, e.g. metrics=kmarginal")
    check_delta(rc, data)
    return CheckedRun(view, applicable, {n: r for n, r in reasons.items() if r})


# ----- a whole sweep ----------------------------------------------------------------------
@dataclass(frozen=True)
class JobPlan:
    """One job's verdict. ``reason``: why n/a / invalid; ``same_as``: the job a duplicate
    repeats. ``row`` identifies an n/a job on the board (mechanism, settings, budget, data)."""

    index: int
    verdict: Verdict
    label: str
    reason: str = ""
    same_as: int | None = None
    experiment: str = ""
    row: dict[str, Any] = field(default_factory=dict)
    #: the delta the default rule chose (:func:`with_default_delta`); None: the config's
    delta: float | None = None


@dataclass(frozen=True)
class SweepPlan:
    jobs: tuple[JobPlan, ...]
    #: metric name -> why it does not apply (per dataset), to say once up front
    metrics_na: dict[str, str] = field(default_factory=dict)
    #: "<job label's mechanism> on <dataset>: <note>" -> number of jobs, to say once up front
    notes: dict[str, int] = field(default_factory=dict)

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


def plan_sweep(configs: list[dict[str, Any]], labels: list[str] | None = None,
               on_job: Callable[[int, int], None] | None = None,
               delta_given: list[bool] | None = None) -> SweepPlan:
    """A verdict for every job config (resolved, without the ``hydra`` node); see the module
    docstring. ``labels``: how to name each job in messages (default: its index);
    ``on_job(k, n)``: called before job ``k`` of ``n`` is checked (progress);
    ``delta_given``: per job, whether its command set the delta (default: all did); a job
    that did not gets :func:`with_default_delta` (its plan entry carries the delta)."""
    from harness.run.runner import experiment_for  # the runner imports this module

    datasets: dict[str, Dataset | DPArenaError] = {}
    seen: dict[str, int] = {}
    jobs: list[JobPlan] = []
    metrics_na: dict[str, str] = {}
    notes: dict[str, int] = {}
    for index, cfg in enumerate(configs):
        if on_job is not None:
            on_job(index, len(configs))
        label = labels[index] if labels else f"job {index}"
        try:
            rc = parse_run_config(cfg)
            mechanism, metrics = build_components(rc)
            check_data_size(rc)
            data = cached_dataset(datasets, rc.dataset)
            given = delta_given[index] if delta_given is not None else True
            cfg, delta_note = with_default_delta(cfg, data, given)
            if delta_note:
                rc = parse_run_config(cfg)
                notes[delta_note] = 1
            checked = check_run(rc, mechanism, metrics, data)
        except NotApplicable as exc:
            jobs.append(JobPlan(index, "n/a", label, exc.problem,
                                row=na_row(rc, data)))  # type: ignore[possibly-undefined]
            continue
        except DPArenaError as exc:
            jobs.append(JobPlan(index, "invalid", label, str(exc)))
            continue
        except Exception as exc:  # noqa: BLE001 - a bug or library error: still one message
            jobs.append(JobPlan(index, "invalid", label, scrubbed_reason(exc)))
            continue
        metrics_na.update({f"{n} on {data.name}": r for n, r in checked.metrics_na.items()})
        for warning in dataset_warnings(data):  # once per sweep (a dict key), not per job
            notes[f"warning: {warning}"] = 1
        preset = label_preset(rc.preset, rc.accountant)
        who = f"{mechanism.name}{f'[{preset}]' if preset else ''} on {data.name}"
        for note in mechanism.notes(checked.view):  # once per job here, never in the run
            notes[f"{who}: {note}"] = notes.get(f"{who}: {note}", 0) + 1
        key = content_key(rc)
        if key in seen:
            jobs.append(JobPlan(index, "duplicate", label, same_as=seen[key]))
            continue
        seen[key] = index
        jobs.append(JobPlan(index, "run", label, experiment=experiment_for(rc, data),
                            delta=rc.budget.delta if delta_note else None))
    return SweepPlan(tuple(jobs), metrics_na, notes)


def cached_dataset(cache: dict[str, Dataset | DPArenaError], cfg: dict[str, Any]) -> Dataset:
    """Each distinct dataset config is loaded once per sweep (and a failure reported once)."""
    key = json.dumps(cfg, sort_keys=True, default=str)
    if key not in cache:
        try:
            cache[key] = load_dataset(cfg)
        except DPArenaError as exc:
            cache[key] = exc
    found = cache[key]
    if isinstance(found, DPArenaError):
        raise found
    return found


def content_key(rc: RunConfig) -> str:
    """Everything that makes two jobs different computations (the run key without the data
    fingerprint and code, which are the same within one sweep)."""
    return json.dumps({"mechanism": rc.mechanism, "params": rc.mechanism_params,
                       "budget": [rc.budget.epsilon, rc.budget.delta],
                       "accountant": rc.accountant, "dataset": rc.dataset, "seed": rc.seed,
                       "trial": rc.trial, "metrics": rc.metrics, "noise": rc.noise,
                       "sampler": rc.sampler,
                       "tuning": rc.raw.get("tuning"), "experiment": rc.experiment,
                       "competition": rc.competition, "uri": rc.tracking_uri},
                      sort_keys=True, default=str)


def na_row(rc: RunConfig, data: Dataset) -> dict[str, Any]:
    """How an n/a job appears on the board (public facts only)."""
    return {"mechanism": rc.mechanism,
            "hyperparameters": hyperparameter_label(rc.mechanism, rc.mechanism_params),
            "epsilon": rc.budget.epsilon, "delta": rc.budget.delta,
            "accountant": rc.accountant, "dataset": data.name, "privacy_unit": data.ledger_unit,
            "trial": rc.trial}
