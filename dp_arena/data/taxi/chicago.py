"""City of Chicago "Taxi Trips" exports -> the NIST Sprint 3 schema, the way the challenge
prepared its ground truth (``dp-arena-prepare chicago`` and ``dataset=chicago_sample``).

Input: one row a trip, either with the data portal's column names ("Trip ID", "Taxi ID",
"Trip Start Timestamp", "Trip Seconds", "Trip Miles", "Pickup Community Area", "Fare", "Tips",
"Trip Total", "Payment Type", "Company", ...) or the public BigQuery table's snake_case names
(``taxi_id``, ``trip_start_timestamp``, ``trip_seconds``, ...). Extra columns are ignored.

Steps (:func:`prepare_trips`)
-----------------------------
1. **Column names**: stripped, lower-cased, every run of non-alphanumerics -> ``_``; the portal's
   "Trip Start Timestamp" becomes the BigQuery ``trip_start_timestamp``, so one mapping serves
   both. Required: :data:`REQUIRED_COLUMNS`; optional: ``taxi_id`` (absent: record-level data,
   no taxi-week) and ``trip_total`` (absent: -1, unknown).
2. **Start time** (:func:`parse_start_times`): the portal's ``MM/DD/YYYY hh:mm:ss AM/PM``,
   ISO ``YYYY-MM-DD HH:MM:SS`` (BigQuery exports, a trailing ``UTC`` label allowed) or Unix
   seconds (the shared sample). The values are taken as Chicago wall-clock time and never
   converted between zones: the BigQuery table labels local times UTC (the shared sample's
   ``trip_start_hour`` and ``trip_start_day`` agree with its Unix seconds read that way).
   Any missing or unparsable start time is an error that gives their number only.
3. **Day, hour, shift**: ``trip_day_of_week`` 0 = Monday .. 6 = Sunday (the export's own
   ``trip_start_day`` counts 1 = Sunday and is not used), ``trip_hour_of_day`` 0..23,
   ``shift = day * 3 + hour // 8`` (the week's 21 eight-hour blocks, 0 = Monday 00:00-07:59).
4. **Taxi-week** (:func:`taxi_week_ids`): the challenge's ``taxi_id`` is a taxi in one week;
   weeks start Monday 00:00 (:func:`week_index`), so a taxi's shifts 0..20 fall in one
   taxi-week. Distinct (taxi, week) pairs, sorted, get ids 1,000,000, 1,000,001, ...
   Trips without a taxi id are dropped (counted).
5. **Cap** (:func:`trips_over_cap`): at most :data:`MAX_TRIPS_PER_TAXI` (200) trips per
   taxi-week, as the challenge's data preparation did (its ``parameters.json`` says 1,000,000,
   but no taxi_id of its data had more than 200): a taxi-week's earliest 200 trips are kept,
   the rest dropped and counted.
6. **Community areas** (:func:`area_codes`): 1..77; empty, 0 or anything else -> -1 (unknown,
   outside the city).
7. **Companies** (:func:`company_codes`): the schema's ``company_id`` 0..100; 0 = unknown
   (empty) or not among the coded companies. Company names get 1..100 in alphabetical order
   (so a code says nothing about a company's size); when more than 100 companies occur, the
   100 with the most trips are coded and the others become 0 (counted). The name -> code map
   is returned (it is derived from the private data: keep it with the data).
8. **Payment** (:func:`payment_codes`): the export's text ("Cash", "Credit Card", ...) -> the
   schema's codes (:data:`dp_arena.data.taxi.sprint3.PAYMENT_NAMES`, case-insensitive); anything
   else, or empty, -> -1 (Unknown).
9. **Integers** (:func:`whole_units`): fare, tips, trip_total (dollars; a ``$`` sign and
   thousands commas allowed), trip_seconds and trip_miles rounded to whole units, half up
   (12.50 -> 13); missing or negative -> -1 (unknown); above the schema's maximum -> the
   maximum (counted).

The output has the schema's columns in its order; record-level data (no taxi id) has no
``taxi_id`` column and its schema no id column, so ``dataset=csv`` infers record-level privacy.
Notes (what was dropped, clipped or coded as unknown) give counts only, never a value or a row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from dp_arena.data.schema import RunSpec, Schema
from dp_arena.data.taxi.sprint3 import (
    MAX_TRIPS_PER_TAXI,
    NUMERIC_MAX,
    PAYMENT_NAMES,
    PAYMENT_VALUES,
    taxi_schema,
)
from dp_arena.errors import DPArenaError

REQUIRED_COLUMNS: tuple[str, ...] = (
    "trip_start_timestamp", "trip_seconds", "trip_miles", "pickup_community_area",
    "dropoff_community_area", "fare", "tips", "payment_type", "company",
)
OPTIONAL_COLUMNS: tuple[str, ...] = ("taxi_id", "trip_total")
#: The portal's names of the columns read (for messages).
PORTAL_NAMES: dict[str, str] = {
    "taxi_id": "Taxi ID", "trip_start_timestamp": "Trip Start Timestamp",
    "trip_seconds": "Trip Seconds", "trip_miles": "Trip Miles",
    "pickup_community_area": "Pickup Community Area",
    "dropoff_community_area": "Dropoff Community Area", "fare": "Fare", "tips": "Tips",
    "trip_total": "Trip Total", "payment_type": "Payment Type", "company": "Company",
}
FIRST_TAXI_ID = 1_000_000
MAX_COMPANY_CODES = 100
N_AREAS = 77
PORTAL_TIME_FORMAT = "%m/%d/%Y %I:%M:%S %p"
_UNIX_SECONDS = re.compile(r"^-?\d+(\.0*)?$")
_MONEY_NOISE = re.compile(r"[$,\s]")


class ChicagoExportError(DPArenaError):
    """A Chicago taxi export that cannot be prepared (missing columns, bad timestamps, empty)."""


@dataclass(frozen=True)
class Prepared:
    """A prepared table: ``trips`` in the schema's columns, its ``schema`` (the Sprint 3 one;
    without ``taxi_id`` when ``unit`` is ``record``), ``notes`` (counts of what was dropped,
    clipped or unknown; no values) and the private ``companies`` name -> code map."""

    trips: pd.DataFrame
    schema: Schema
    unit: str
    notes: tuple[str, ...]
    companies: dict[str, int]
    dropped_over_cap: int = 0


# ----- columns ----------------------------------------------------------------------------
def normalise_column_name(name: str) -> str:
    """Portal or BigQuery column name -> the snake_case name (``"Trip Miles"`` -> ``trip_miles``)."""
    return re.sub(r"[^0-9a-z]+", "_", str(name).strip().lower()).strip("_")


def standardise_columns(raw: pd.DataFrame) -> pd.DataFrame:
    """The columns this module reads, under their snake_case names; raises
    :class:`ChicagoExportError` naming every missing required column."""
    renamed = {c: normalise_column_name(c) for c in raw.columns}
    frame = raw.rename(columns=renamed)
    frame = frame.loc[:, ~frame.columns.duplicated()]
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        expected = ", ".join(f"{c} ({PORTAL_NAMES[c]!r})" for c in REQUIRED_COLUMNS)
        raise ChicagoExportError(
            f"the export lacks {len(missing)} required column(s): {missing}",
            f"export these columns (BigQuery name, portal name in quotes): {expected}; "
            "optional: taxi_id ('Taxi ID'; without it the data is record-level), "
            "trip_total ('Trip Total')")
    keep = [c for c in (*REQUIRED_COLUMNS, *OPTIONAL_COLUMNS) if c in frame.columns]
    return frame[keep].reset_index(drop=True)


# ----- time -------------------------------------------------------------------------------
def parse_start_times(values: pd.Series) -> pd.Series:
    """Start times as naive datetimes (Chicago wall clock; see the module docstring).
    Raises :class:`ChicagoExportError` with the number of missing or unparsable ones."""
    text = values.astype("string").str.strip()
    text = text.mask(text == "")
    present = text.notna()
    if present.any() and text[present].str.fullmatch(_UNIX_SECONDS).all():
        parsed = pd.to_datetime(pd.to_numeric(text, errors="coerce"), unit="s", errors="coerce")
    else:
        parsed = pd.to_datetime(text, format=PORTAL_TIME_FORMAT, errors="coerce")
        rest = parsed.isna() & present
        if rest.any():
            iso = text[rest].str.replace(r"\s*UTC$", "", regex=True)
            parsed[rest] = pd.to_datetime(iso, format="ISO8601", errors="coerce",
                                          utc=True).dt.tz_localize(None)
    parsed = pd.Series(pd.to_datetime(parsed), index=values.index)
    bad = int(parsed.isna().sum())
    if bad:
        raise ChicagoExportError(
            f"{bad:,} of {len(values):,} trip start timestamps are missing or unparsable",
            f"use the data portal's format ({PORTAL_TIME_FORMAT!r}, e.g. "
            "'01/31/2016 11:45:00 PM'), ISO 'YYYY-MM-DD HH:MM:SS' (BigQuery, 'UTC' label "
            "allowed) or Unix seconds, and drop trips without a start time")
    return parsed


def shift_index(day: np.ndarray, hour: np.ndarray) -> np.ndarray:
    """The challenge's shift: 8-hour block of the week, ``day * 3 + hour // 8`` (0..20)."""
    return np.asarray(day, dtype=np.int64) * 3 + np.asarray(hour, dtype=np.int64) // 8


def week_index(times: pd.Series) -> np.ndarray:
    """Week number of each time, weeks starting Monday 00:00 (week 0 holds 1970-01-01)."""
    days = times.to_numpy().astype("datetime64[D]").astype(np.int64)
    return (days + 3) // 7  # 1970-01-01 was a Thursday (weekday 3 with Monday = 0)


# ----- taxi-weeks -------------------------------------------------------------------------
def taxi_week_ids(taxi: pd.Series, week: np.ndarray) -> np.ndarray:
    """``FIRST_TAXI_ID + rank`` of each trip's (taxi, week) pair among the sorted distinct pairs."""
    pairs = pd.DataFrame({"taxi": taxi.astype(str).to_numpy(), "week": week})
    codes = pairs.groupby(["taxi", "week"], sort=True).ngroup().to_numpy()
    if codes.size and codes.max() + FIRST_TAXI_ID > taxi_schema()["taxi_id"].max:
        raise ChicagoExportError(f"{codes.max() + 1:,} taxi-weeks exceed the schema's id range",
                                 "prepare the export in parts (e.g. one year at a time)")
    return FIRST_TAXI_ID + codes.astype(np.int64)


def trips_over_cap(taxi_ids: np.ndarray, times: pd.Series, cap: int) -> np.ndarray:
    """Mask of the trips beyond each taxi-week's earliest ``cap`` (ties in input order)."""
    order = pd.DataFrame({"id": taxi_ids, "t": times.to_numpy()})
    rank = order.sort_values(["id", "t"], kind="stable").groupby("id").cumcount()
    return (rank.sort_index().to_numpy() >= cap)


# ----- codes ------------------------------------------------------------------------------
def area_codes(values: pd.Series) -> np.ndarray:
    """Community areas 1..77; anything else (empty, 0, out of range) -> -1."""
    numbers = pd.to_numeric(values.astype("string").str.strip(), errors="coerce")
    numbers = numbers.to_numpy(dtype=float, na_value=np.nan)
    ok = np.isfinite(numbers) & (numbers == np.floor(numbers)) & (numbers >= 1) & (
        numbers <= N_AREAS)
    return np.where(ok, np.nan_to_num(numbers), -1).astype(np.int64)


def company_codes(values: pd.Series,
                  max_codes: int = MAX_COMPANY_CODES) -> tuple[np.ndarray, dict[str, int], int]:
    """``(codes, name -> code, trips of uncoded companies)``: names 1..n alphabetically,
    the ``max_codes`` most frequent when more occur; empty and uncoded -> 0."""
    names = values.astype("string").str.strip()
    names = names.mask(names == "")
    counts = names.value_counts()
    if len(counts) > max_codes:
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:max_codes]
        kept = sorted(name for name, _ in ranked)
    else:
        kept = sorted(counts.index)
    book = {str(name): code for code, name in enumerate(kept, start=1)}
    codes = names.map(book).fillna(0).to_numpy(dtype=np.int64)
    uncoded = int((names.notna() & (codes == 0)).sum())
    return codes, book, uncoded


def payment_codes(values: pd.Series) -> np.ndarray:
    """Payment text -> schema code (case-insensitive); unknown or empty -> -1."""
    lookup = {name.lower(): code for name, code in zip(PAYMENT_NAMES, PAYMENT_VALUES)}
    text = values.astype("string").str.strip().str.lower()
    return text.map(lookup).fillna(-1).to_numpy(dtype=np.int64)


def whole_units(values: pd.Series, maximum: int) -> tuple[np.ndarray, int]:
    """``(integers, number clipped to maximum)``: round half up; missing/negative -> -1."""
    text = values.astype("string").str.replace(_MONEY_NOISE, "", regex=True)
    numbers = pd.to_numeric(text, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    unknown = ~np.isfinite(numbers) | (numbers < 0)
    rounded = np.floor(np.where(unknown, 0.0, numbers) + 0.5)
    clipped = int(np.sum(~unknown & (rounded > maximum)))
    return np.where(unknown, -1, np.minimum(rounded, maximum)).astype(np.int64), clipped


# ----- schema -----------------------------------------------------------------------------
def prepared_schema(record_level: bool, cap: int = MAX_TRIPS_PER_TAXI) -> Schema:
    """The Sprint 3 schema with the cap as ``max_records_per_individual``; record-level data:
    no id column and no per-person bound (one trip is one record)."""
    schema = taxi_schema(max_records_per_individual=cap)
    if not record_level:
        return schema
    runs = tuple(RunSpec(r.epsilon, r.delta, r.max_records) for r in schema.runs)
    return replace(schema.drop_id(), runs=runs)


# ----- together ---------------------------------------------------------------------------
def prepare_trips(raw: pd.DataFrame, cap: int = MAX_TRIPS_PER_TAXI) -> Prepared:
    """A raw export (portal or BigQuery names) -> the Sprint 3 table (steps 1-9 above)."""
    frame = standardise_columns(raw)
    if len(frame) == 0:
        raise ChicagoExportError("the export has no trips (a header only)",
                                 "export at least one trip below the header row")
    notes: list[str] = []
    record_level = "taxi_id" not in frame.columns
    if not record_level:
        taxi = frame["taxi_id"].astype("string").str.strip()
        no_taxi = (taxi.isna() | (taxi == "")).to_numpy()
        if no_taxi.all():
            raise ChicagoExportError("every trip's taxi id is empty",
                                     "export the 'Taxi ID' column with its values, or drop "
                                     "it to prepare record-level data")
        if no_taxi.any():
            notes.append(f"dropped {int(no_taxi.sum()):,} trips without a taxi id")
            frame = frame[~no_taxi].reset_index(drop=True)
    times = parse_start_times(frame["trip_start_timestamp"])
    out: dict[str, np.ndarray] = {}
    dropped = 0
    if record_level:
        notes.append("no taxi id column: record-level data (one trip = one record; no "
                     "taxi_id column, no taxi-week cap); challenge metrics that need taxis "
                     "(HOC) cannot be scored")
    else:
        out["taxi_id"] = taxi_week_ids(frame["taxi_id"], week_index(times))
        over = trips_over_cap(out["taxi_id"], times, cap)
        dropped = int(over.sum())
        if dropped:
            n_weeks = len(np.unique(out["taxi_id"][over]))
            notes.append(f"dropped {dropped:,} trips over the cap of {cap} trips per taxi-week "
                         f"(from {n_weeks:,} taxi-week(s))")
            frame, times = frame[~over].reset_index(drop=True), times[~over].reset_index(drop=True)
            out["taxi_id"] = out["taxi_id"][~over]
    day = times.dt.weekday.to_numpy().astype(np.int64)
    hour = times.dt.hour.to_numpy().astype(np.int64)
    out["shift"] = shift_index(day, hour)
    out["company_id"], companies, uncoded = company_codes(frame["company"])
    if uncoded:
        notes.append(f"{uncoded:,} trips of companies beyond the {MAX_COMPANY_CODES} most "
                     "frequent coded as company 0 (unknown/other)")
    out["pickup_community_area"] = area_codes(frame["pickup_community_area"])
    out["dropoff_community_area"] = area_codes(frame["dropoff_community_area"])
    out["payment_type"] = payment_codes(frame["payment_type"])
    out["trip_day_of_week"], out["trip_hour_of_day"] = day, hour
    for name in ("fare", "tips", "trip_total", "trip_seconds", "trip_miles"):
        if name not in frame.columns:
            out[name] = np.full(len(frame), -1, dtype=np.int64)
            notes.append(f"no {name} column: every {name} is -1 (unknown)")
            continue
        out[name], clipped = whole_units(frame[name], NUMERIC_MAX[name])
        if clipped:
            notes.append(f"{clipped:,} {name} value(s) above the schema's maximum "
                         f"{NUMERIC_MAX[name]} set to it")
    schema = prepared_schema(record_level, cap)
    trips = pd.DataFrame({name: out[name] for name in schema.names})
    schema.validate(trips, where="prepared Chicago trips")
    return Prepared(trips, schema, "record" if record_level else "user", tuple(notes),
                    companies, dropped)


def read_export(path: Path | str) -> pd.DataFrame:
    """The columns :func:`prepare_trips` reads from an export CSV, as text (no parsing)."""
    path = Path(path)
    if not path.is_file():
        raise ChicagoExportError(f"export file not found: {path}", "check the path")
    wanted = set(REQUIRED_COLUMNS) | set(OPTIONAL_COLUMNS)
    try:
        return pd.read_csv(path, dtype=str, keep_default_na=False,
                           usecols=lambda c: normalise_column_name(c) in wanted)
    except pd.errors.EmptyDataError:
        raise ChicagoExportError(f"the export {path} is empty",
                                 "export the trips as CSV with a header row") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise ChicagoExportError(f"cannot read {path} as CSV ({type(exc).__name__})",
                                 "export the trips as comma-separated CSV with a header row"
                                 ) from None
