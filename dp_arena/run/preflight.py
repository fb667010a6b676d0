"""Checking one run before it starts (in the worker, and for every job of a sweep in the
launching process, :mod:`dp_arena.sweep.plan`, before any job folder or MLflow run exists).

- :func:`check_run`: what a run needs beyond its config: the data view the mechanism sees
  (the public view for ``tuning.view=public``), the mechanism applies to it
  (:meth:`Mechanism.check_applicable`: privacy unit, public part, data shape; a mechanism's
  ``check_settings(data)`` when it has one, e.g. ``rdt``'s attributes), metric sizes
  the table allows (:func:`check_metric_sizes`), which metrics apply (the others are ``n/a``
  with a reason), and a delta below 1/(number of persons);
- :func:`check_data_size`: a data file larger than ``limits.memory_limit_mb``, or whose
  loading is estimated to need more (:func:`estimated_loaded_bytes`: its first rows read with
  pandas, scaled to its size, times the parser's peak), is refused before it is loaded (the
  launcher and the worker load the data outside the run's child).
- :func:`with_default_delta`: the delta for data that is not a taxi competition's when the
  command sets none (:func:`default_delta`, from public figures only).

Only public facts leave these checks: the schema, the unit, whether a public part exists, and
the one bit of the delta check (documented at :func:`check_delta`).
"""

from __future__ import annotations

import io
import math
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dp_arena.data.datasets import (
    Dataset,
    count_persons,
    is_challenge_dataset,
    persons_in,
)
from dp_arena.errors import ConfigError
from dp_arena.run.config import RunConfig
from dp_arena.run.tuning import public_view
from dp_arena.mechanisms import Mechanism
from dp_arena.metrics import Metric


@dataclass(frozen=True)
class CheckedRun:
    """What :func:`check_run` hands the runner."""

    view: Dataset
    metrics: dict[str, Metric]
    #: metric name -> why it does not apply (an ``n/a`` cell, not a silent gap)
    metrics_na: dict[str, str] = field(default_factory=dict)


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


#: The taxi challenge's delta (1/200^2), the preset of dp_arena/conf/privacy/*.yaml.
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
        return 10 * persons_in(data.public, data), "10 x the public part's persons"
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


#: Rows (at most) and bytes (at most) of a file's beginning read to estimate its loaded size.
SAMPLE_ROWS = 10_000
SAMPLE_BYTES = 4 * 2**20
#: ``pandas.read_csv`` parses in chunks and concatenates them: at its peak it holds about
#: twice the finished frame ...
PEAK_PER_LOADED = 2.0
#: ... plus the text and the tokenizer's buffers, about this many bytes per byte of text.
PARSER_PER_TEXT_BYTE = 2.0
#: Compressed files whose loaded size is not estimated (the size check only).
COMPRESSED = (".gz", ".bz2", ".xz", ".zst", ".tar")


def text_beginning(path: Path) -> tuple[bytes, int]:
    """The file's first lines (at most :data:`SAMPLE_ROWS` + the header, at most
    :data:`SAMPLE_BYTES`, ending at a line end) and its (uncompressed) size in bytes; a zip's
    first member. Compressed files other than zip: ``(b"", size)``."""
    total = loaded_bytes_at_least(path)
    if path.suffix == ".zip" and zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
            if not members:
                return b"", total
            with archive.open(members[0]) as handle:
                head = handle.read(SAMPLE_BYTES)
    elif path.suffix in COMPRESSED:
        return b"", total
    else:
        with open(path, "rb") as handle:
            head = handle.read(SAMPLE_BYTES)
    if len(head) < total:  # cut at a line end, after at most SAMPLE_ROWS rows
        ends = np.flatnonzero(np.frombuffer(head, dtype=np.uint8) == ord("\n"))
        head = head[: int(ends[min(SAMPLE_ROWS, len(ends) - 1)]) + 1] if len(ends) else b""
    return head, total


def estimated_loaded_bytes(path: Path) -> int:
    """The memory loading a CSV takes at its peak, estimated before reading it whole: the
    file's first rows (:func:`text_beginning`) are read with pandas, their
    ``memory_usage(deep=True)`` per byte of text is scaled to the file's (uncompressed) size,
    times :data:`PEAK_PER_LOADED`, plus :data:`PARSER_PER_TEXT_BYTE` per byte of text.
    Measured on 30-40 MB CSVs (pandas 3.1; one-digit integers, floats, short text, a taxi-like
    mix) the peak resident growth while loading was 9.2, 2.9, 3.9 and 3.7 bytes per byte of
    text, this estimate 10.0, 3.7, 5.8 and 5.4 (the safety margin: 9% or more). The later steps
    of loading (fitting to the schema, casting) copy the finished frame, below that peak. When
    the beginning does not parse on its own (a quoted field across the cut) or the file is
    compressed otherwise than zip, the estimate is :func:`loaded_bytes_at_least`."""
    head, total = text_beginning(path)
    if not head:
        return total
    try:
        frame = pd.read_csv(io.BytesIO(head))
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError):
        return total
    per_byte = float(frame.memory_usage(deep=True).sum()) / len(head)
    return math.ceil(total * (PEAK_PER_LOADED * per_byte + PARSER_PER_TEXT_BYTE))


def check_file_fits(key: str, path: Path, limit_mb: float,
                    setting: str = "limits.memory_limit_mb") -> None:
    """Refuse a data file that cannot be loaded within ``limit_mb``: larger than the limit
    (:func:`loaded_bytes_at_least`), or estimated to need more while loading
    (:func:`estimated_loaded_bytes`, which reads only its first rows). One message for both:
    it reveals one bit (whether loading fits), to the operator's console, and no size."""
    if not path.is_file():
        return
    limit = limit_mb * 2**20
    if loaded_bytes_at_least(path) > limit or estimated_loaded_bytes(path) > limit:
        raise ConfigError(f"{key}: the file, loaded, would be larger than {setting}="
                          f"{limit_mb:g} MB (estimated before reading it whole: the file's "
                          "size, and what its first rows take in pandas scaled to that size "
                          "with the parser's peak)",
                          f"raise {setting} (to several times the file's size), or use a "
                          "smaller file (fewer rows or columns)")


def check_data_size(rc: RunConfig) -> None:
    """Refuse, before loading, a data file that cannot fit in ``limits.memory_limit_mb``
    (:func:`check_file_fits`): the launcher and the worker load the data outside the run's
    child process, so a file larger than the limit would exceed it there. Reveals one bit
    (whether loading fits), to the operator's console; the message states no size."""
    limit = rc.limits.memory_limit_mb
    if not limit:
        return
    for key, path in data_files(rc.dataset).items():
        check_file_fits(key, path, limit)


def check_metric_sizes(metrics: Mapping[str, Metric], data: Dataset, name: str) -> None:
    """Refuse a metric setting larger than the table allows, before any run: ``kmarginal``'s
    ``k`` above the number of attributes (a one-column table under the default ``k=2``
    failed in every run after it started). Uses the schema only (public)."""
    kmarginal = metrics.get("kmarginal")
    k = getattr(kmarginal, "k", None)
    attributes = len(data.schema.attributes)
    if isinstance(k, int) and attributes and not 1 <= k <= attributes:
        raise ConfigError(
            f"metrics.kmarginal.k={k} scores {k}-way marginals, but dataset {name!r} has "
            f"{attributes} attribute{'s' if attributes != 1 else ''}",
            f"set metrics.kmarginal.k={min(max(k, 1), attributes)} (or give the table more "
            "columns)")


#: Resident memory (MB) of a run's process before its mechanism allocates anything: the
#: interpreter, numpy/scipy/pandas/mlflow and a small table (a run's peak with MST on a
#: 10,000-row, 55-column table was 332-346 MB; benchmarks/bench_wide_tables.py).
RUNTIME_MB = 400


def check_memory_caps(rc: RunConfig, mechanism: Mechanism, data: Dataset) -> None:
    """Refuse, before the run, a mechanism whose own memory caps
    (:meth:`~dp_arena.mechanisms.base.Mechanism.memory_mb`) plus :data:`RUNTIME_MB` exceed
    ``limits.memory_limit_mb``: such a run could be killed at the limit after spending
    minutes. The schema and the settings only (public); the loaded data is not counted."""
    limit = rc.limits.memory_limit_mb
    stated = mechanism.memory_mb(data) if limit else None
    if stated is None or RUNTIME_MB + stated[0] <= limit:
        return
    bound, how = stated
    raise ConfigError(
        f"{mechanism.name}'s memory caps allow about {RUNTIME_MB + bound:,.0f} MB on dataset "
        f"{data.name!r} ({how}, + {RUNTIME_MB} MB for the runtime), over "
        f"limits.memory_limit_mb={limit:g}",
        "lower the mechanism's caps named above, or raise limits.memory_limit_mb")


def check_run(rc: RunConfig, mechanism: Mechanism, metrics: dict[str, Metric],
              data: Dataset) -> CheckedRun:
    """The data view, the metrics that apply (and why the others do not); raises
    :class:`NotApplicable` when the mechanism cannot run on the data, :class:`ConfigError`
    for any other problem."""
    view = public_view(data, rc.tuning.public_fraction, rc.tuning.split_seed) \
        if rc.tuning.view == "public" else data
    mechanism.check_applicable(view.training_view())  # held-out persons: scores only
    check_memory_caps(rc, mechanism, view.training_view())
    sandbox = getattr(mechanism, "sandbox", None)
    if callable(sandbox):  # an external contestant: refused without its sandbox
        sandbox()
    settings_check = getattr(mechanism, "check_settings", None)
    if callable(settings_check):  # settings against the schema (rdt's), else at run time
        settings_check(view.training_view())
    check_metric_sizes(metrics, view, data.name)
    reasons = {name: m.not_applicable_reason(view) for name, m in metrics.items()}
    applicable = {name: m for name, m in metrics.items() if reasons[name] is None}
    if not applicable:
        raise ConfigError(f"none of the metrics {sorted(metrics)} applies to dataset {data.name!r}"
                          f" ({'; '.join(r for r in reasons.values() if r)})",
                          "add a generic metric, e.g. metrics=kmarginal")
    check_delta(rc, data.training_view())
    check_objective(rc, metrics)
    return CheckedRun(view, applicable, {n: r for n, r in reasons.items() if r})


def check_objective(rc: RunConfig, metrics: dict[str, Metric]) -> None:
    """A tuning objective must be a score the store gets: a held-out score stays on the
    owner's side (:mod:`dp_arena.run.heldout`), and a setting chosen by it would carry it to the
    store, unless ``tracking.log_heldout_scores=true`` logs it anyway."""
    wanted = rc.tuning.objective
    metric = metrics.get(wanted.split("/", 1)[0]) if wanted else None
    if metric is not None and type(metric).reads_heldout and not rc.log_heldout_scores:
        raise ConfigError(f"tuning.objective={wanted} is a score of held-out persons, kept on "
                          "the data owner's side: a setting chosen by it would tell them",
                          "tune by a training-side score (e.g. kmarginal/score), or, for a "
                          "store only the owner reads, tracking.log_heldout_scores=true")
