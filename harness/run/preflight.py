"""Checking one run before it starts (in the worker, and for every job of a sweep in the
launching process, :mod:`harness.sweep.plan`, before any job folder or MLflow run exists).

- :func:`check_run`: what a run needs beyond its config: the data view the mechanism sees
  (the public view for ``tuning.view=public``), the mechanism applies to it
  (:meth:`Mechanism.check_applicable`: privacy unit, public part, data shape), which metrics
  apply (the others are ``n/a`` with a reason), and a delta below 1/(number of persons);
- :func:`check_data_size`: a data file larger than ``limits.memory_limit_mb`` is refused
  before it is loaded (the launcher and the worker load the data outside the run's child).
- :func:`with_default_delta`: the delta for data that is not a taxi competition's when the
  command sets none (:func:`default_delta`, from public figures only).

Only public facts leave these checks: the schema, the unit, whether a public part exists, and
the one bit of the delta check (documented at :func:`check_delta`).
"""

from __future__ import annotations

import math
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mechanisms import Mechanism
from metrics import Metric

from harness.data.datasets import Dataset, is_challenge_dataset
from harness.errors import ConfigError
from harness.run.config import RunConfig
from harness.run.tuning import public_view


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


def rule_delta(delta: float, data: Dataset, delta_given: bool) -> tuple[float | None, str]:
    """The delta the default rule chooses (and the note), when the command set no delta, the
    data is not a taxi competition's and the preset delta (``delta``) is in force; else
    ``(None, "")``."""
    if delta_given or is_challenge_dataset(data.name) or \
            not math.isclose(float(delta or 0), CHALLENGE_DELTA):
        return None, ""
    return default_delta(data)


def with_default_delta(cfg: RunConfig | Mapping[str, Any], data: Dataset, delta_given: bool
                       ) -> tuple[Any, str]:
    """``cfg`` (a run config, or a config dict) with the default delta rule applied
    (:func:`rule_delta`) and the note; else ``cfg`` unchanged and ""."""
    if isinstance(cfg, RunConfig):
        delta, note = rule_delta(cfg.budget.delta, data, delta_given)
        if delta is None:
            return cfg, ""
        return cfg.replaced(privacy=replace(cfg.settings.privacy, delta=delta)), note
    privacy = cfg.get("privacy") or {}
    delta, note = rule_delta(privacy.get("delta"), data, delta_given)
    if delta is None:
        return cfg, ""
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
    mechanism.check_applicable(view)
    reasons = {name: m.not_applicable_reason(view) for name, m in metrics.items()}
    applicable = {name: m for name, m in metrics.items() if reasons[name] is None}
    if not applicable:
        raise ConfigError(f"none of the metrics {sorted(metrics)} applies to dataset {data.name!r}"
                          f" ({'; '.join(r for r in reasons.values() if r)})",
                          "add a generic metric, e.g. metrics=kmarginal")
    check_delta(rc, data)
    return CheckedRun(view, applicable, {n: r for n, r in reasons.items() if r})
