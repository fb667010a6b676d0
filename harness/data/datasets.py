"""Datasets: the private part (scored against, never logged), an optional public part,
the schema and the privacy unit; loaders for the simulated taxi data, CSV files and the
shared benchmark datasets."""

from __future__ import annotations

import hashlib
import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from harness.data.conform import (MAX_LOSS, LoadReport, SchemaSource, conform_counted,
                                  read_source)
from harness.data.schema import RunSpec, Schema, coerce_dtypes
from harness.errors import ConfigError, DPArenaError
from harness.params import refuse_unknown_keys
from harness.redact import read_problem

Unit = Literal["record", "user"]
PROJECT_ROOT = Path(__file__).resolve().parents[2]
DATA_DIR_ENV = "DP_ARENA_DATA"
SHARED_DATASETS = ("adult", "titanic", "nltcs", "msnbc")
CHICAGO_SAMPLE_FILE = "chicago-taxi-sample.csv"


@dataclass
class Dataset:
    """What a mechanism sees.

    ``private`` is the sensitive table: mechanisms may only touch it through noisy releases
    charged to the ledger, and the harness never logs it. ``public`` (optional) is a different
    population or year that mechanisms may use freely. ``unit`` is the privacy unit: ``record``
    (one row per person) or ``user`` (``id_column`` identifies a person who may own many rows,
    at most ``max_records_per_individual``; mechanisms must bound each person's contribution).
    """

    name: str
    schema: Schema
    private: pd.DataFrame
    public: pd.DataFrame | None = None
    unit: Unit = "record"
    id_column: str | None = None
    max_records_per_individual: int | None = None
    #: where the schema came from (a proposal's ``proposal`` block; None: hand-written)
    schema_source: SchemaSource | None = None
    #: what loading changed to fit the data to a proposed schema: one bit per column,
    #: loggable (:attr:`harness.data.conform.LoadReport.notes`)
    notes: tuple[str, ...] = ()
    #: what fitting the private file to a proposed schema cost, counted: exact counts of the
    #: private table, for the operator's console only (never logged; None: no fitting)
    load_report: LoadReport | None = None
    #: the largest share of a column's values (or of the rows) loading may lose before the
    #: sweep refuses (``dataset.max_loss``)
    max_loss: float = MAX_LOSS
    #: held-out persons of the private population (same columns as ``private``), split off
    #: before any mechanism, proposal or tuning step sees the data: **private**, read by
    #: scores only (utility on unseen rows, membership non-members); None: no holdout
    heldout: pd.DataFrame | None = None
    #: the column a utility score predicts (``dataset.target``; None: no prediction task)
    target: str | None = None

    def __post_init__(self) -> None:
        if self.unit not in ("record", "user"):
            raise ConfigError(f"dataset.unit must be 'record' or 'user' (got {self.unit!r})",
                              "set dataset.unit=record or dataset.unit=user")
        if self.unit == "user" and not self.id_column:
            raise ConfigError("user-level privacy needs an id column",
                              "mark the person's id column with kind 'id' in the schema")

    @property
    def runs(self) -> tuple[RunSpec, ...]:
        return self.schema.runs

    @property
    def ledger_unit(self) -> str:
        return "record" if self.unit == "record" else f"user:{self.id_column}"

    def content_digest(self) -> bytes:
        """SHA-256 of the private and public parts' content. **Private**: an unkeyed hash of
        the private table lets anyone test a guessed table against it, so it must never be
        logged; :func:`harness.privacy.secret.keyed_digest` turns it into a loggable
        fingerprint."""
        h = hashlib.sha256()
        for part in (self.private, self.public):
            if part is not None:
                h.update(pd.util.hash_pandas_object(part, index=False).to_numpy().tobytes())
        return h.digest()


# ----- loaders ----------------------------------------------------------------------------
def load_dataset(cfg: dict[str, Any]) -> Dataset:
    """Build the :class:`Dataset` a ``dataset`` config group describes."""
    name = cfg.get("name")
    loader = dataset_loader(name)
    settings = _without(cfg, "name")
    known = [p for p in inspect.signature(loader).parameters if p != "name"]
    refuse_unknown_keys(settings, known, "dataset")
    return loader(name, **settings) if name in SHARED_DATASETS else loader(**settings)


def dataset_loader(name: Any) -> Callable[..., Dataset]:
    """The function that loads dataset ``name`` (its keyword arguments are the settings)."""
    loaders: dict[str, Callable[..., Dataset]] = {
        "taxi_sim": load_taxi_sim, "csv": load_csv_dataset,
        "chicago_sample": load_chicago_sample,
        **{shared: load_shared_dataset for shared in SHARED_DATASETS}}
    if name in loaders:
        return loaders[name]
    raise ConfigError(f"unknown dataset {name!r}",
                      f"use dataset=taxi_sim, dataset=csv, dataset=chicago_sample or one of "
                      f"{list(SHARED_DATASETS)}")


def load_taxi_sim(n_private: int = 50_000, n_public: int = 50_000, seed: int = 0,
                  unit: Unit = "user", scoring_year: str | int = "2016") -> Dataset:
    """The embedded simulated Chicago taxi data (public year 2019 + the private scoring year,
    a preset of :data:`harness.data.taxi_sim.SCORING_YEARS`; the dataset is named
    ``taxi_sim`` for 2016, ``taxi_sim_<year>`` otherwise, so boards never mix years)."""
    from harness.data.sprint3 import MAX_TRIPS_PER_TAXI, taxi_schema
    from harness.data.taxi_sim import DEFAULT_SCORING_YEAR, simulate_years

    for key, n in (("n_private", n_private), ("n_public", n_public)):
        if not isinstance(n, int) or n < 1000:
            raise ConfigError(f"dataset.{key} must be an integer >= 1000 (got {n!r})",
                              f"set dataset.{key} to e.g. 50000")
    private, public = simulate_years(n_private=n_private, n_public=n_public, seed=seed,
                                     scoring_year=str(scoring_year))
    name = "taxi_sim" if str(scoring_year) == DEFAULT_SCORING_YEAR else f"taxi_sim_{scoring_year}"
    return Dataset(name, taxi_schema(), private, public, unit=unit, id_column="taxi_id",
                   max_records_per_individual=MAX_TRIPS_PER_TAXI)


def load_csv_dataset(path: str | None = None, schema: str | None = None,
                     public_path: str | None = None, unit: Unit | None = None,
                     public_fraction: float = 0.0, split_seed: int = 0,
                     max_records_per_individual: int | None = None,
                     label: str | None = None, columns: list[str] | None = None,
                     drop: list[str] | None = None, max_loss: float = MAX_LOSS) -> Dataset:
    """Any CSV plus a ``parameters.json`` / ``domain.json`` schema; ``columns`` / ``drop``
    choose the CSV's columns; a proposed schema (``proposal`` block) fits the data to itself
    (:mod:`harness.data.conform`); ``max_loss``: the share of a column's values (or of the
    rows) that fitting may lose before the sweep refuses."""
    if not path:
        raise ConfigError("dataset=csv needs dataset.path", "pass dataset.path=/path/to/data.csv")
    if not _resolve(path).is_file():
        raise DPArenaError(f"dataset.path: file not found: {path}",
                           "check the path (relative paths are taken from the current folder)")
    if not schema:
        raise ConfigError("dataset=csv needs dataset.schema",
                          "pass dataset.schema=/path/to/parameters.json (or domain.json)")
    sch = Schema.load(_resolve(schema))
    source = read_source(_resolve(schema))
    chosen = chosen_columns(columns, drop)
    private, report = read_raw_table(_resolve(path), sch, "dataset.path", chosen, source)
    public = read_raw_table(_resolve(public_path), sch, "dataset.public_path", chosen,
                            source)[0] if public_path else None
    if public is not None:  # a "public" part that is the private table (or a sample of it)
        from harness.data.overlap import refuse_overlap

        refuse_overlap(public, private, "dataset.public_path", "dataset.path",
                       "point dataset.public_path at data of another population or period, or "
                       "split a disjoint public part off the private table with "
                       "dataset.public_fraction=F instead")
    id_col = sch.id_column
    unit = unit or ("user" if id_col else "record")
    per_person = max_records_per_individual
    if per_person is None and sch.runs:
        per_person = sch.runs[0].max_records_per_individual
    ds = Dataset(label or Path(path).stem, sch, private, public, unit=unit, id_column=id_col,
                 max_records_per_individual=per_person, schema_source=source,
                 notes=report.notes if report else (), load_report=report,
                 max_loss=checked_max_loss(max_loss))
    return with_public_split(ds, public_fraction, split_seed) if public_fraction else ds


#: Datasets of the taxi challenge (every scoring year of ``taxi_sim``, the real sample): their
#: schema and delta are the competition's, not the user's to choose.
CHALLENGE_DATASETS = ("taxi_sim", "chicago_sample")


def is_challenge_dataset(name: str) -> bool:
    """Whether ``name`` is a taxi challenge dataset (``taxi_sim``, ``taxi_sim_<year>``,
    ``chicago_sample``)."""
    return name in CHALLENGE_DATASETS or name.startswith("taxi_sim_")


def load_shared_dataset(name: str, data_dir: str | None = None, public_fraction: float = 0.0,
                        split_seed: int = 0, max_rows: int | None = None) -> Dataset:
    """A benchmark dataset from the shared data folder (``NAME.zip`` + ``NAME-domain.json``)."""
    folder = shared_data_dir(data_dir)
    sch = Schema.load(folder / f"{name}-domain.json")
    private = read_table(folder / f"{name}.zip", sch, f"dataset {name}")
    if max_rows is not None and len(private) > max_rows:
        keep = np.random.default_rng(split_seed).choice(len(private), max_rows, replace=False)
        private = private.iloc[np.sort(keep)].reset_index(drop=True)
    ds = Dataset(name, sch, private, None, unit="record")
    return with_public_split(ds, public_fraction, split_seed) if public_fraction else ds


def load_chicago_sample(data_dir: str | None = None, public_fraction: float = 0.0,
                        split_seed: int = 0, max_rows: int | None = None) -> Dataset:
    """The real Chicago taxi sample (``chicago-taxi-sample.csv`` in the shared data folder)
    prepared in memory as ``dp-arena-prepare chicago`` does (:mod:`harness.data.chicago`).
    It has no taxi id: record-level privacy, no ``taxi_id`` column."""
    from harness.data.chicago import prepare_trips, read_export

    path = shared_data_dir(data_dir) / CHICAGO_SAMPLE_FILE
    if not path.is_file():
        raise DPArenaError(f"dataset chicago_sample: {path} not found",
                           f"put {CHICAGO_SAMPLE_FILE} in the shared data folder (see its "
                           f"README) or set {DATA_DIR_ENV} / dataset.data_dir")
    prepared = prepare_trips(read_export(path))
    private = coerce_dtypes(prepared.schema, prepared.trips)
    if max_rows is not None and len(private) > max_rows:
        keep = np.random.default_rng(split_seed).choice(len(private), max_rows, replace=False)
        private = private.iloc[np.sort(keep)].reset_index(drop=True)
    ds = Dataset("chicago_sample", prepared.schema, private, None, unit="record")
    return with_public_split(ds, public_fraction, split_seed) if public_fraction else ds


def shared_data_dir(data_dir: str | None = None) -> Path:
    """The shared benchmark folder: ``data_dir``, else $DP_ARENA_DATA, else ../shared/data."""
    raw = data_dir or os.environ.get(DATA_DIR_ENV) or str(PROJECT_ROOT.parent / "shared" / "data")
    folder = Path(raw).expanduser()
    if not folder.is_dir():
        raise DPArenaError(
            f"shared data folder not found: {folder}",
            f"set {DATA_DIR_ENV}=/path/to/shared/data or dataset.data_dir=..., "
            "or use the embedded dataset=taxi_sim",
        )
    return folder


def with_public_split(ds: Dataset, fraction: float, seed: int) -> Dataset:
    """Move a seeded random ``fraction`` of the private rows (of whole persons, for user-level
    data) into a disjoint public part. The split is data-independent, so the remaining private
    part keeps its guarantee; the public part is treated as released."""
    if not 0 < fraction < 1:
        raise ConfigError(f"dataset.public_fraction must be in (0, 1) (got {fraction})",
                          "use e.g. dataset.public_fraction=0.5, or 0 for no public split")
    if ds.public is not None:
        raise ConfigError("dataset already has a public part; public_fraction would replace it",
                          "drop dataset.public_fraction or dataset.public_path")
    rng = np.random.default_rng(seed)
    if ds.unit == "user":
        ids = ds.private[ds.id_column].unique()
        public_ids = rng.choice(ids, size=int(round(fraction * len(ids))), replace=False)
        is_public = ds.private[ds.id_column].isin(public_ids).to_numpy()
    else:
        is_public = np.zeros(len(ds.private), dtype=bool)
        is_public[rng.choice(len(ds.private), int(round(fraction * len(ds.private))),
                             replace=False)] = True
    public = ds.private[is_public].reset_index(drop=True)
    private = ds.private[~is_public].reset_index(drop=True)
    if len(private) == 0 or len(public) == 0:
        raise ConfigError(f"public_fraction={fraction} leaves an empty part",
                          "choose a fraction that keeps rows on both sides")
    return Dataset(ds.name, ds.schema, private, public, ds.unit, ds.id_column,
                   ds.max_records_per_individual, ds.schema_source, ds.notes, ds.load_report,
                   ds.max_loss)


def read_table(path: Path | str, schema: Schema, what: str) -> pd.DataFrame:
    """Read a CSV (or zipped CSV), validate it against ``schema`` and cast its dtypes."""
    path = Path(path)
    if not path.is_file():
        raise DPArenaError(f"{what}: file not found: {path}",
                           "check the path (relative paths are taken from the current folder)")
    try:
        df = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DPArenaError(f"{what}: cannot read {path} as CSV: {read_problem(exc)}",
                           "pass a comma-separated file with a header row") from None
    schema.validate(df, where=f"{what} ({path})")
    return coerce_dtypes(schema, df)


def chosen_columns(columns: list[str] | None, drop: list[str] | None):
    """``(columns, drop)`` as lists of names (``dataset.columns`` / ``dataset.drop``)."""
    for key, names in (("columns", columns), ("drop", drop)):
        if names is not None and (isinstance(names, str) or not all(isinstance(n, str)
                                                                     for n in names)):
            raise ConfigError(f"dataset.{key} must be a list of column names",
                              f"write dataset.{key}=[name1,name2]")
    if columns is not None and drop is not None:
        raise ConfigError("dataset.columns and dataset.drop both given",
                          "use one: the columns to keep, or the columns to drop")
    return (list(columns) if columns is not None else None, list(drop or []))


def read_raw_table(path: Path, schema: Schema, what: str, chosen,
                   source: SchemaSource | None) -> tuple[pd.DataFrame, LoadReport | None]:
    """Read a CSV, keep the chosen columns (a proposal's dropped ones go too), fit it to a
    proposed schema, validate and cast (as :func:`read_table`); what the fitting cost
    (:func:`harness.data.conform.conform_counted`; None when the schema is not fitted to)."""
    if not path.is_file():
        raise DPArenaError(f"{what}: file not found: {path}",
                           "check the path (relative paths are taken from the current folder)")
    df = read_csv_file(path, what)
    keep, drop = chosen
    named = (keep or []) + drop
    unknown = [str(n) for n in named if n not in df.columns]
    if unknown:
        raise ConfigError(f"dataset.{'columns' if keep else 'drop'}: {unknown} not among the "
                          f"CSV's {len(df.columns)} columns",
                          f"use names from its header: {[str(c) for c in df.columns][:30]}")
    if keep is not None:
        df = df[keep]
    df = df.drop(columns=drop)
    report: LoadReport | None = None
    if source is not None:
        df = df.drop(columns=[c for c in df.columns if c not in schema.names])
        if source.out_of_domain == "coerce":
            df, report = conform_counted(df, schema)
    schema.validate(df, where=f"{what} ({path})")
    return coerce_dtypes(schema, df), report


def checked_max_loss(value: Any) -> float:
    """``dataset.max_loss``: a share in [0, 1]."""
    from harness.params import Interval

    if not Interval(float, 0, 1).accepts(value):
        raise ConfigError(f"dataset.max_loss must be a share in [0, 1] (got {value!r})",
                          f"e.g. dataset.max_loss=0.05 accepts losing up to 5% of a column's "
                          f"values or of the rows (default {MAX_LOSS:g})")
    return float(value)


def read_csv_file(path: Path, what: str) -> pd.DataFrame:
    try:
        return pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DPArenaError(f"{what}: cannot read {path} as CSV: {read_problem(exc)}",
                           "pass a comma-separated file with a header row") from None


def _resolve(path: str) -> Path:
    return Path(path).expanduser()


def _without(cfg: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in cfg.items() if k not in keys}
