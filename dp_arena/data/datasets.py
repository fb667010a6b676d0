"""Datasets: the private part (scored against, never logged), an optional public part,
an optional held-out part (private, read by scores only), the schema, the privacy unit and
the target column; loaders for the simulated taxi data, CSV files and the shared benchmark
datasets.

Order of the splits (every loader): the private table is read (``max_rows`` subsamples it,
shared datasets and ``chicago_sample``), then ``holdout_fraction`` moves a seeded share of its
persons into ``heldout`` (:func:`dp_arena.data.holdout.holdout_mask`; for a CSV, on the raw
file's rows before any column choice or fitting to a proposed schema, so that
``dp-arena-schema --holdout-fraction`` splits the same rows), then ``public_fraction`` moves a
seeded share of the *training* persons into a public part. A public part is thus never drawn
from held-out persons (or is its own file / year). ``taxi_sim`` simulates its held-out taxis
instead (``n_heldout``), leaving the private year as it was.

Mechanisms, proposals, tuning and the ledger see :meth:`Dataset.training_view` (no held-out
part); scores see the whole :class:`Dataset`.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from dp_arena.data.conform import (
    MAX_LOSS,
    LoadReport,
    SchemaSource,
    conform_counted,
    read_source,
)
from dp_arena.data.csv_format import (
    HEAD_BYTES,
    check_csv_format,
    delimiter_name,
    encoding_fix,
    encoding_label,
    separator,
)
from dp_arena.data.own_table import chosen_holdout, chosen_target, setup_notes
from dp_arena.data.holdout import (
    checked_fraction,
    checked_seed,
    holdout_unit,
    simulated_heldout_taxis,
    split_holdout,
)
from dp_arena.data.schema import RunSpec, Schema, coerce_dtypes
from dp_arena.errors import ConfigError, DPArenaError
from dp_arena.params import refuse_unknown_keys
from dp_arena.redact import read_problem

Unit = Literal["record", "user"]
PROJECT_ROOT = Path(__file__).resolve().parents[2]
DATA_DIR_ENV = "DP_ARENA_DATA"
SHARED_DATASETS = ("adult", "titanic", "nltcs", "msnbc")
CHICAGO_SAMPLE_FILE = "chicago-taxi-sample.csv"
#: the target column of each shared dataset (``dataset.target``'s default; absent: none):
#: adult predicts income above $50K, titanic survival
SHARED_TARGETS = {"adult": "income>50K", "titanic": "Survived"}
#: the taxi datasets' target: whether a trip is paid in cash or by card (or other) is what a
#: fare analyst predicts from when, where and how far (``payment_type``)
TAXI_TARGET = "payment_type"
#: ``target`` argument meaning "the dataset's documented default"
DEFAULT_TARGET = "default"
#: ``taxi_sim``'s held-out trips by default, so the default competition has held-out taxis
DEFAULT_N_HELDOUT = 10_000


@dataclass
class Dataset:
    """What a mechanism sees.

    ``private`` is the sensitive table: mechanisms may only touch it through noisy releases
    charged to the ledger, and the harness never logs it. ``public`` (optional) is a different
    population or year that mechanisms may use freely. ``unit`` is the privacy unit: ``record``
    (one row per person) or ``user`` (``id_column`` identifies a person who may own many rows,
    at most ``max_records_per_individual``; mechanisms must bound each person's contribution).
    ``heldout`` (optional) holds private persons kept from mechanisms: they receive
    :meth:`training_view`, scores the whole dataset.
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
    #: what loading changed to fit the data to a proposed schema: one bit per column
    #: (:attr:`dp_arena.data.conform.LoadReport.notes`), facts of the private table for the
    #: owner's console only (never written: :func:`dp_arena.data.guards.private_warnings`)
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
    #: what the own-table path chose for the user (held-out share, inferred target): public
    #: facts said on the console as the plan's notes (:mod:`dp_arena.data.own_table`)
    setup_notes: tuple[str, ...] = ()

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

    def training_view(self) -> Dataset:
        """The dataset as mechanisms, schema proposals, tuning steps and the ledger see it:
        the same object's parts without the held-out persons (``heldout=None``). Scores read
        the full dataset."""
        return replace(self, heldout=None) if self.heldout is not None else self

    def content_digest(self) -> bytes:
        """SHA-256 of the private and public parts' content. **Private**: an unkeyed hash of
        the private table lets anyone test a guessed table against it, so it must never be
        logged; :func:`dp_arena.privacy.secret.keyed_digest` turns it into a loggable
        fingerprint. The held-out part is left out, so a dataset without a holdout keeps the
        digest (and fingerprint) it had before holdouts existed."""
        h = hashlib.sha256()
        for part in (self.private, self.public):
            if part is not None:
                h.update(pd.util.hash_pandas_object(part, index=False).to_numpy().tobytes())
        return h.digest()


def persons_in(frame: pd.DataFrame, data: Dataset) -> int:
    """Persons in ``frame``, a part of ``data`` (its rows, or its distinct ids for
    user-level data). Private when ``frame`` is the private or held-out part."""
    if data.unit == "user":
        return int(frame[data.id_column].nunique())
    return len(frame)


def count_persons(data: Dataset) -> int:
    """**Private**: the number of persons in the private part (:func:`persons_in`). For
    checks that tell the operator one bit (never the count itself) and for releases that add
    noise to it."""
    return persons_in(data.private, data)


# ----- loaders ----------------------------------------------------------------------------
def load_dataset(cfg: dict[str, Any]) -> Dataset:
    """Build the :class:`Dataset` a ``dataset`` config group describes."""
    name = cfg.get("name")
    loader = dataset_loader(name)
    settings = _without(cfg, "name")
    known = [p for p in inspect.signature(loader).parameters if p != "name"]
    refuse_unknown_keys(settings, known, "dataset")
    return loader(name, **settings) if name in SHARED_DATASETS else loader(**settings)


def check_dataset_config(cfg: dict[str, Any]) -> None:
    """What :func:`load_dataset` refuses before it reads or simulates anything (an unknown
    dataset or setting, a size out of range), without loading: a sweep checks this on its
    first job before composing the others."""
    loader = dataset_loader(cfg.get("name"))
    settings = _without(cfg, "name")
    refuse_unknown_keys(settings, [p for p in inspect.signature(loader).parameters
                                   if p != "name"], "dataset")
    if loader is load_taxi_sim:
        check_taxi_sim_sizes(**{k: settings[k] for k in ("n_private", "n_public", "n_heldout")
                                if k in settings})


def check_taxi_sim_sizes(n_private: Any = 50_000, n_public: Any = 50_000,
                         n_heldout: Any = DEFAULT_N_HELDOUT) -> None:
    """``taxi_sim``'s trip counts: at least 1000 private and public trips, held-out >= 0."""
    for key, n in (("n_private", n_private), ("n_public", n_public)):
        if isinstance(n, bool) or not isinstance(n, int) or n < 1000:
            raise ConfigError(f"dataset.{key} must be an integer >= 1000 (got {n!r})",
                              f"set dataset.{key} to e.g. 50000")
    if isinstance(n_heldout, bool) or not isinstance(n_heldout, int) or n_heldout < 0:
        raise ConfigError(f"dataset.n_heldout must be an integer >= 0 (got {n_heldout!r})",
                          f"set dataset.n_heldout to e.g. {DEFAULT_N_HELDOUT}, or 0 for no "
                          "held-out taxis")


def dataset_loader(name: Any) -> Callable[..., Dataset]:
    """The function that loads dataset ``name`` (its keyword arguments are the settings)."""
    loaders: dict[str, Callable[..., Dataset]] = {
        "taxi_sim": load_taxi_sim, "csv": load_csv_dataset,
        "chicago_sample": load_chicago_sample, "acs": load_acs,
        **{shared: load_shared_dataset for shared in SHARED_DATASETS}}
    if name in loaders:
        return loaders[name]
    raise ConfigError(f"unknown dataset {name!r}",
                      f"use dataset=taxi_sim, dataset=csv, dataset=chicago_sample, dataset=acs or "
                      f"one of "
                      f"{list(SHARED_DATASETS)}")


def load_taxi_sim(n_private: int = 50_000, n_public: int = 50_000, seed: int = 0,
                  unit: Unit = "user", scoring_year: str | int = "2016",
                  n_heldout: int = DEFAULT_N_HELDOUT,
                  target: str | None = DEFAULT_TARGET, drift: float = 1.0) -> Dataset:
    """The embedded simulated Chicago taxi data (public year 2019 + the private scoring year,
    a preset of :data:`dp_arena.data.taxi.sim.SCORING_YEARS`; the dataset is named
    ``taxi_sim`` for 2016, ``taxi_sim_<year>`` otherwise, so boards never mix years; a drift
    size other than 1 (:mod:`dp_arena.data.taxi.drift`) adds ``_drift<d>`` to the name).

    Holdout: ``n_heldout`` more trips of the scoring year (0: none), simulated from their own
    seed stream with taxi ids no private taxi holds
    (:func:`dp_arena.data.holdout.simulated_heldout_taxis`); the private and public years are
    exactly those without a holdout. Target: ``payment_type`` by default (:data:`TAXI_TARGET`)."""
    from dp_arena.data.taxi.sim import DEFAULT_SCORING_YEAR, simulate_years
    from dp_arena.data.taxi.sprint3 import MAX_TRIPS_PER_TAXI, taxi_schema

    check_taxi_sim_sizes(n_private, n_public, n_heldout)
    schema = taxi_schema()
    chosen = checked_target(TAXI_TARGET if target == DEFAULT_TARGET else target, schema)
    private, public = simulate_years(n_private=n_private, n_public=n_public, seed=seed,
                                     scoring_year=str(scoring_year), drift=drift)
    heldout = simulated_heldout_taxis(n_heldout, seed, str(scoring_year),
                                      private["taxi_id"].unique(), drift) if n_heldout else None
    name = "taxi_sim" if str(scoring_year) == DEFAULT_SCORING_YEAR else f"taxi_sim_{scoring_year}"
    if float(drift) != 1.0:
        name += f"_drift{float(drift):g}"
    return Dataset(name, schema, private, public, unit=unit, id_column="taxi_id",
                   max_records_per_individual=MAX_TRIPS_PER_TAXI, heldout=heldout,
                   target=chosen)


def load_csv_dataset(path: str | None = None, schema: str | None = None,
                     public_path: str | None = None, unit: Unit | None = None,
                     public_fraction: float = 0.0, split_seed: int = 0,
                     max_records_per_individual: int | None = None,
                     label: str | None = None, columns: list[str] | None = None,
                     drop: list[str] | None = None, max_loss: float = MAX_LOSS,
                     holdout_fraction: float | None = None, target: str | None = None,
                     sep: str = "comma", encoding: str = "utf-8") -> Dataset:
    """Any CSV plus a ``parameters.json`` / ``domain.json`` schema; ``columns`` / ``drop``
    choose the CSV's columns; a proposed schema (``proposal`` block) fits the data to itself
    (:mod:`dp_arena.data.conform`); ``max_loss``: the share of a column's values (or of the
    rows) that fitting may lose before the sweep refuses.

    Holdout: ``holdout_fraction`` of the persons (rows; whole ids at user level) of the raw
    file, seeded by ``split_seed``, go to ``heldout`` before the columns are chosen and the
    table is fitted to the schema (each part is fitted on its own; the load report counts the
    training part), and before ``public_fraction`` splits the training part. A schema that
    ``dp-arena-schema`` proposed from this file (``--epsilon`` / ``--from-private``) must have
    been proposed with the same holdout (``--holdout-fraction`` / ``--split-seed``), else the
    load is refused (:func:`check_proposal_holdout`). Unset, the holdout and the target are
    chosen as :mod:`dp_arena.data.own_table` says (a 20% holdout, an inferred target), and
    said in ``setup_notes``. ``sep`` (``comma``, ``tab``, ``semicolon``, ``pipe``) and
    ``encoding`` say how the CSVs are written (:mod:`dp_arena.data.csv_format` refuses a file
    they would misread, naming the setting that reads it)."""
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
    sch = chosen_schema(sch, chosen)
    recorded = (proposed_holdout(_resolve(schema))[0]
                if source is not None and source.source in ("dp", "private") else None)
    fraction, held_note = chosen_holdout(holdout_fraction, recorded)
    fraction, seed = checked_fraction(fraction), checked_seed(split_seed)
    unit = unit or ("user" if sch.id_column else "record")
    split_by = sch.id_column if unit == "user" else None
    if source is not None and source.source in ("dp", "private"):
        check_proposal_holdout(_resolve(schema), fraction, seed, split_by)
    target, target_note = chosen_target(target, sch)
    target = checked_target(target, sch)
    written = (separator(sep), encoding)
    raw_train, raw_heldout = split_holdout(read_csv_file(_resolve(path), "dataset.path",
                                                         *written), fraction, seed, split_by)
    private, report = fitted_table(raw_train, _resolve(path), sch, "dataset.path", chosen,
                                   source)
    heldout = fitted_table(raw_heldout, _resolve(path), sch, "dataset.path (held-out part)",
                           chosen, source)[0] if raw_heldout is not None else None
    public = read_raw_table(_resolve(public_path), sch, "dataset.public_path", chosen,
                            source, written)[0] if public_path else None
    if public is not None:  # a "public" part that is the private table (or a sample of it)
        from dp_arena.data.overlap import refuse_overlap

        whole = private if heldout is None else pd.concat([private, heldout],
                                                          ignore_index=True)
        refuse_overlap(public, whole, "dataset.public_path", "dataset.path",
                       "point dataset.public_path at data of another population or period, or "
                       "split a disjoint public part off the private table with "
                       "dataset.public_fraction=F instead")
    id_col = sch.id_column
    per_person = max_records_per_individual
    if per_person is None and sch.runs:
        per_person = sch.runs[0].max_records_per_individual
    ds = Dataset(label or Path(path).stem, sch, private, public, unit=unit, id_column=id_col,
                 max_records_per_individual=per_person, schema_source=source,
                 notes=report.notes if report else (), load_report=report,
                 max_loss=checked_max_loss(max_loss), heldout=heldout, target=target,
                 setup_notes=setup_notes(label or Path(path).stem, held_note, target_note))
    return with_public_split(ds, public_fraction, split_seed) if public_fraction else ds


def proposed_holdout(schema_path: Path) -> tuple[float, int, str]:
    """``(fraction, split_seed, unit)`` a proposed schema's ``proposal.holdout`` block recorded
    (``dp-arena-schema --holdout-fraction``); ``(0.0, 0, "record")`` when it recorded none."""
    try:
        block = json.loads(Path(schema_path).read_text()).get("proposal") or {}
    except (OSError, json.JSONDecodeError, AttributeError):
        block = {}
    held = block.get("holdout") if isinstance(block, dict) else None
    if not isinstance(held, dict):
        return 0.0, 0, "record"
    return (float(held.get("fraction", 0.0)), int(held.get("split_seed", 0)),
            str(held.get("unit", "record")))


def check_proposal_holdout(schema_path: Path, fraction: float, seed: int,
                           id_column: str | None) -> None:
    """Refuse a holdout other than the one the schema's proposal split off: the proposal read
    the private file, and under any other split it read rows that are now held out (or holds
    out rows the run trains on). Settings only, no data, in the message."""
    rec_fraction, rec_seed, rec_unit = proposed_holdout(schema_path)
    wanted = (fraction, seed if fraction else 0, holdout_unit(id_column) if fraction else "")
    recorded = (rec_fraction, rec_seed if rec_fraction else 0, rec_unit if rec_fraction else "")
    if math.isclose(wanted[0], recorded[0]) and wanted[1:] == recorded[1:]:
        return
    said = (f"holdout_fraction={rec_fraction:g}, split_seed={rec_seed}, unit {rec_unit}"
            if rec_fraction else "no holdout")
    raise ConfigError(
        f"the schema {schema_path.name} was proposed from the private file with {said}, but "
        f"this run holds out with holdout_fraction={fraction:g}, split_seed={seed}"
        f"{f', unit {holdout_unit(id_column)}' if fraction else ''}: the proposal saw rows "
        "this split holds out (or the split differs from the one it was proposed on)",
        f"use the proposal's settings (dataset.holdout_fraction={rec_fraction:g} "
        f"dataset.split_seed={rec_seed}), or propose again with dp-arena-schema DATA --out "
        f"{schema_path.name} --holdout-fraction {fraction:g} --split-seed {seed}")


def checked_target(target: str | None, schema: Schema) -> str | None:
    """``dataset.target``: None, or a column of ``schema`` that is not the person id."""
    if target is None:
        return None
    if not isinstance(target, str) or target not in schema.names:
        raise ConfigError(f"dataset.target {target!r} is not a column of the schema",
                          f"use one of {list(schema.names)[:30]}, or dataset.target=null for "
                          "no prediction task")
    if target == schema.id_column:
        raise ConfigError(f"dataset.target {target!r} is the person id column",
                          "name a column a model can predict (not the id)")
    return target


#: Datasets of the taxi challenge (every scoring year of ``taxi_sim``, the real sample): their
#: schema and delta are the competition's, not the user's to choose.
CHALLENGE_DATASETS = ("taxi_sim", "chicago_sample")


def is_challenge_dataset(name: str) -> bool:
    """Whether ``name`` is a taxi challenge dataset (``taxi_sim``, ``taxi_sim_<year>``,
    ``chicago_sample``)."""
    return name in CHALLENGE_DATASETS or name.startswith("taxi_sim_")


def load_shared_dataset(name: str, data_dir: str | None = None, public_fraction: float = 0.0,
                        split_seed: int = 0, max_rows: int | None = None,
                        holdout_fraction: float = 0.0,
                        target: str | None = DEFAULT_TARGET) -> Dataset:
    """A benchmark dataset from the shared data folder (``NAME.zip`` + ``NAME-domain.json``).
    Record-level. ``max_rows`` subsamples the table, then ``holdout_fraction`` of its rows
    (seeded by ``split_seed``) go to ``heldout``, then ``public_fraction`` of the rest to a
    public part. Target by default :data:`SHARED_TARGETS` (adult ``income>50K``, titanic
    ``Survived``; nltcs and msnbc none)."""
    folder = shared_data_dir(data_dir)
    sch = Schema.load(folder / f"{name}-domain.json")
    chosen = checked_target(SHARED_TARGETS.get(name) if target == DEFAULT_TARGET else target,
                            sch)
    private = read_table(folder / f"{name}.zip", sch, f"dataset {name}")
    if max_rows is not None and len(private) > max_rows:
        keep = np.random.default_rng(split_seed).choice(len(private), max_rows, replace=False)
        private = private.iloc[np.sort(keep)].reset_index(drop=True)
    private, heldout = split_holdout(private, holdout_fraction, split_seed)
    ds = Dataset(name, sch, private, None, unit="record", heldout=heldout, target=chosen)
    return with_public_split(ds, public_fraction, split_seed) if public_fraction else ds


def load_chicago_sample(data_dir: str | None = None, public_fraction: float = 0.0,
                        split_seed: int = 0, max_rows: int | None = None,
                        holdout_fraction: float = 0.0,
                        target: str | None = DEFAULT_TARGET) -> Dataset:
    """The real Chicago taxi sample (``chicago-taxi-sample.csv`` in the shared data folder)
    prepared in memory as ``dp-arena-prepare chicago`` does (:mod:`dp_arena.data.taxi.chicago`).
    It has no taxi id: record-level privacy, no ``taxi_id`` column. ``max_rows`` subsamples,
    then ``holdout_fraction`` of the trips (seeded by ``split_seed``) go to ``heldout``, then
    ``public_fraction`` of the rest to a public part. Target: ``payment_type`` by default."""
    from dp_arena.data.taxi.chicago import prepare_trips, read_export

    path = shared_data_dir(data_dir) / CHICAGO_SAMPLE_FILE
    if not path.is_file():
        raise DPArenaError(f"dataset chicago_sample: {path} not found",
                           f"put {CHICAGO_SAMPLE_FILE} in the shared data folder (see its "
                           f"README) or set {DATA_DIR_ENV} / dataset.data_dir")
    prepared = prepare_trips(read_export(path))
    chosen = checked_target(TAXI_TARGET if target == DEFAULT_TARGET else target,
                            prepared.schema)
    private = coerce_dtypes(prepared.schema, prepared.trips)
    if max_rows is not None and len(private) > max_rows:
        keep = np.random.default_rng(split_seed).choice(len(private), max_rows, replace=False)
        private = private.iloc[np.sort(keep)].reset_index(drop=True)
    private, heldout = split_holdout(private, holdout_fraction, split_seed)
    ds = Dataset("chicago_sample", prepared.schema, private, None, unit="record",
                 heldout=heldout, target=chosen)
    return with_public_split(ds, public_fraction, split_seed) if public_fraction else ds


def load_acs(features: Any = "demographic", data_dir: str | None = None,
             public_fraction: float = 0.0, split_seed: int = 0, max_rows: int | None = None,
             holdout_fraction: float = 0.0, target: str | None = None) -> Dataset:
    """NIST's ACS national2019 excerpt (:mod:`dp_arena.data.acs`), the columns of ``features``
    (a NIST feature set or a list), schema from the public data dictionary. Record-level;
    ``max_rows``, ``holdout_fraction`` and ``public_fraction`` as for the shared datasets.
    Named ``acs_<set>`` (``acs_custom`` for a list), so boards never mix feature sets."""
    from dp_arena.data.acs import load_acs_parts

    schema, private = load_acs_parts(shared_data_dir(data_dir), features)
    chosen = checked_target(target, schema)
    if max_rows is not None and len(private) > max_rows:
        keep = np.random.default_rng(split_seed).choice(len(private), max_rows, replace=False)
        private = private.iloc[np.sort(keep)].reset_index(drop=True)
    private, heldout = split_holdout(private, holdout_fraction, split_seed)
    name = f"acs_{features}" if isinstance(features, str) else "acs_custom"
    ds = Dataset(name, schema, private, None, unit="record", heldout=heldout, target=chosen)
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
    part keeps its guarantee; the public part is treated as released. It splits the training
    part only: the held-out part and the target are carried over unchanged."""
    if not 0 < fraction < 1:
        raise ConfigError(f"dataset.public_fraction must be in (0, 1) (got {fraction})",
                          "use e.g. dataset.public_fraction=0.5, or 0 for no public split")
    if ds.public is not None:
        raise ConfigError("dataset already has a public part; public_fraction would replace it",
                          "drop dataset.public_fraction or dataset.public_path")
    rng = np.random.default_rng(seed)
    if ds.unit == "user":
        ids = ds.private[ds.id_column].unique()
        public_ids = rng.choice(ids, size=round(fraction * len(ids)), replace=False)
        is_public = ds.private[ds.id_column].isin(public_ids).to_numpy()
    else:
        is_public = np.zeros(len(ds.private), dtype=bool)
        is_public[rng.choice(len(ds.private), round(fraction * len(ds.private)),
                             replace=False)] = True
    public = ds.private[is_public].reset_index(drop=True)
    private = ds.private[~is_public].reset_index(drop=True)
    if len(private) == 0 or len(public) == 0:
        raise ConfigError(f"public_fraction={fraction} leaves an empty part",
                          "choose a fraction that keeps rows on both sides")
    return replace(ds, private=private, public=public)


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


def chosen_schema(schema: Schema, chosen: tuple[list[str] | None, list[str]]) -> Schema:
    """The schema's columns the chosen columns keep (:func:`chosen_columns`): a column left
    out with ``dataset.columns`` / ``dataset.drop`` leaves the schema as well as the data (the
    fix a loading refusal suggests, ``dataset.drop=[col]``, then loads)."""
    keep, drop = chosen
    return replace(schema, columns=tuple(
        c for c in schema.columns if c.name not in drop and (keep is None or c.name in keep)))


def read_raw_table(path: Path, schema: Schema, what: str, chosen,
                   source: SchemaSource | None, written: tuple[str, str] = (",", "utf-8"),
                   ) -> tuple[pd.DataFrame, LoadReport | None]:
    """Read a CSV, keep the chosen columns (a proposal's dropped ones go too), fit it to a
    proposed schema, validate and cast (as :func:`read_table`); what the fitting cost
    (:func:`dp_arena.data.conform.conform_counted`; None when the schema is not fitted to)."""
    if not path.is_file():
        raise DPArenaError(f"{what}: file not found: {path}",
                           "check the path (relative paths are taken from the current folder)")
    return fitted_table(read_csv_file(path, what, *written), path, schema, what, chosen,
                        source)


def fitted_table(df: pd.DataFrame, path: Path, schema: Schema, what: str, chosen,
                 source: SchemaSource | None) -> tuple[pd.DataFrame, LoadReport | None]:
    """A table read from ``path``: the chosen columns, fitted to a proposed schema, validated
    and cast (:func:`read_raw_table` after reading)."""
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
    if source is not None and len(df) == 0 and what.endswith("(held-out part)"):
        raise ConfigError(f"{what}: no held-out row fits the proposed schema {path.name}",
                          "propose the schema with a public sample or hints that cover the "
                          "data, or choose another dataset.split_seed / holdout_fraction")
    schema.validate(df, where=f"{what} ({path})")
    return coerce_dtypes(schema, df), report


def checked_max_loss(value: Any) -> float:
    """``dataset.max_loss``: a share in [0, 1]."""
    from dp_arena.params import Interval

    if not Interval(float, 0, 1).accepts(value):
        raise ConfigError(f"dataset.max_loss must be a share in [0, 1] (got {value!r})",
                          f"e.g. dataset.max_loss=0.05 accepts losing up to 5% of a column's "
                          f"values or of the rows (default {MAX_LOSS:g})")
    return float(value)


def read_csv_file(path: Path, what: str, sep: str = ",", encoding: str = "utf-8",
                  options: tuple[str, str] = ("dataset.sep", "dataset.encoding")) -> pd.DataFrame:
    """A CSV read with ``sep`` and ``encoding``, after :func:`check_csv_format` found its
    beginning readable so (``options``: how the command names those settings)."""
    check_csv_format(path, what, sep, encoding, options)
    try:
        return pd.read_csv(path, sep=sep, encoding="utf-8-sig" if encoding.lower() in
                           ("utf-8", "utf8") else encoding)
    except UnicodeDecodeError as exc:  # past the beginning the check read
        problem = f"it is not {encoding_label(exc.encoding)} text"
        raise DPArenaError(f"{what}: cannot read {path} as CSV: {problem} (after its first "
                           f"{HEAD_BYTES // 1024} KB)", encoding_fix(problem, path, options[1])) \
            from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise DPArenaError(f"{what}: cannot read {path} as CSV: {read_problem(exc)}",
                           f"pass a {delimiter_name(sep)}-separated file with a header row "
                           f"(or set {options[0]})") from None


def _resolve(path: str) -> Path:
    return Path(path).expanduser()


def _without(cfg: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in cfg.items() if k not in keys}
