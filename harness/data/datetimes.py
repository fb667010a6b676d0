"""The ``datetime`` column kind: date/time strings <-> ordinal codes at a resolution.

A datetime column keeps its values as strings in the table (as the CSV has them, in the
column's ``format``, a :func:`time.strftime` pattern; default ISO). Its ``resolution`` fixes
the codes:

- **absolute** (``year``, ``month``, ``day``, ``hour``, ``minute``): code = number of whole
  units between ``min`` floored to the unit and the value floored to the unit; the domain is
  ``min..max`` (both required, strings in ``format``), so ``units(max) - units(min) + 1`` codes.
  Decoding gives the start of the unit (``2016-03-07 14:25`` at ``hour`` -> ``2016-03-07 14:00``).
- **parts** (``hour_of_day`` 24 codes, ``day_of_week`` 7 (Monday = 0), ``month_of_year`` 12,
  ``day_of_week_hour`` 168 = day * 24 + hour): a cyclic part of the value; ``min``/``max`` are
  optional. Decoding gives a representative: the first instant at or after the anchor (``min``,
  else Monday 2001-01-01) that has that part, written in ``format`` (``HH:MM`` times decode to
  ``HH:00``).

Missing values (NaN / empty) are handled by the schema's ``allow_missing`` (one extra code).
Messages count unparseable values; they never show one.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import pandas as pd

from harness.errors import DPArenaError, SchemaError


class DatetimeColumn(Protocol):
    """What this module reads of a schema column (:class:`harness.data.schema.Column` has it;
    the schema imports this module, never the other way round)."""

    name: str
    resolution: str | None
    format: str | None
    min: object
    max: object

#: numpy datetime unit of each absolute resolution
ABSOLUTE = {"year": "Y", "month": "M", "day": "D", "hour": "h", "minute": "m"}
#: number of codes of each cyclic part
PARTS = {"hour_of_day": 24, "day_of_week": 7, "month_of_year": 12, "day_of_week_hour": 168}
RESOLUTIONS = (*ABSOLUTE, *PARTS)
DEFAULT_FORMAT = {"year": "%Y", "month": "%Y-%m", "day": "%Y-%m-%d", "hour": "%Y-%m-%d %H:%M",
                  "minute": "%Y-%m-%d %H:%M", "hour_of_day": "%Y-%m-%d %H:%M",
                  "day_of_week": "%Y-%m-%d", "month_of_year": "%Y-%m-%d",
                  "day_of_week_hour": "%Y-%m-%d %H:%M"}
DEFAULT_ANCHOR = pd.Timestamp("2001-01-01")  # a Monday


def check_datetime_column(col: DatetimeColumn) -> None:
    """Refuse a datetime schema entry that cannot define codes (public facts only)."""
    if col.resolution not in RESOLUTIONS:
        raise DPArenaError(f"datetime column {col.name!r} has resolution {col.resolution!r}",
                           f"set resolution to one of {list(RESOLUTIONS)}")
    if col.resolution in ABSOLUTE and (col.min is None or col.max is None):
        raise DPArenaError(f"datetime column {col.name!r} at resolution {col.resolution!r} "
                           "needs 'min' and 'max'", "add min and max (dates in the column's "
                           "format) to the schema entry")
    for bound in ("min", "max"):
        raw = getattr(col, bound)
        if raw is not None and pd.isna(parse(pd.Series([str(raw)]), col.format)).any():
            raise DPArenaError(f"datetime column {col.name!r}: {bound} does not parse with "
                               f"format {col.format or 'ISO 8601'!r}",
                               "write min and max in the column's format")
    if col.min is not None and col.max is not None and bound_of(col, "min") > bound_of(col, "max"):
        raise DPArenaError(f"datetime column {col.name!r}: min is after max",
                           "swap min and max")


def parse(values: pd.Series, fmt: str | None) -> pd.Series:
    """Timestamps of ``values`` (NaT where a value is missing or does not parse)."""
    text = values.astype("string")
    if fmt:
        return pd.to_datetime(text, format=fmt, errors="coerce")
    return pd.to_datetime(text, format="ISO8601", errors="coerce")


def bound_of(col: DatetimeColumn, which: str) -> pd.Timestamp:
    return parse(pd.Series([str(getattr(col, which))]), col.format).iloc[0]


def anchor(col: DatetimeColumn) -> pd.Timestamp:
    return bound_of(col, "min") if col.min is not None else DEFAULT_ANCHOR


def datetime_size(col: DatetimeColumn) -> int:
    """Number of codes (without the missing code)."""
    if col.resolution in PARTS:
        return PARTS[col.resolution]  # type: ignore[index]
    lo, hi = absolute_units(col, pd.Series([bound_of(col, "min"), bound_of(col, "max")]))
    return int(hi - lo) + 1


def absolute_units(col: DatetimeColumn, stamps: pd.Series) -> np.ndarray:
    """Whole units since the epoch at the column's absolute resolution."""
    unit = ABSOLUTE[col.resolution]  # type: ignore[index]
    return stamps.to_numpy(dtype="datetime64[ns]").astype(f"datetime64[{unit}]").astype(np.int64)


def part_codes(resolution: str, stamps: pd.Series) -> np.ndarray:
    """The cyclic part of each timestamp."""
    dt = stamps.dt
    if resolution == "hour_of_day":
        return dt.hour.to_numpy(dtype=np.int64)
    if resolution == "day_of_week":
        return dt.dayofweek.to_numpy(dtype=np.int64)
    if resolution == "month_of_year":
        return dt.month.to_numpy(dtype=np.int64) - 1
    return dt.dayofweek.to_numpy(dtype=np.int64) * 24 + dt.hour.to_numpy(dtype=np.int64)


def datetime_codes(col: DatetimeColumn, values: pd.Series) -> np.ndarray:
    """Codes of present values; raises (with a count, never a value) if some do not parse or
    fall outside ``[min, max]``."""
    problems = datetime_problems(col, values)
    if problems:
        raise SchemaError(problems)
    stamps = parse(values, col.format)
    if col.resolution in PARTS:
        return part_codes(col.resolution, stamps)  # type: ignore[arg-type]
    origin = absolute_units(col, pd.Series([bound_of(col, "min")]))[0]
    return (absolute_units(col, stamps) - origin).astype(np.int64)


def datetime_values(col: DatetimeColumn, codes: np.ndarray) -> np.ndarray:
    """Strings (in the column's format) of codes: the unit's start, or a representative."""
    codes = np.asarray(codes, dtype=np.int64)
    fmt = col.format or DEFAULT_FORMAT[col.resolution]  # type: ignore[index]
    if col.resolution in ABSOLUTE:
        unit = ABSOLUTE[col.resolution]  # type: ignore[index]
        origin = np.datetime64(bound_of(col, "min").to_datetime64(), unit)
        stamps = pd.Series((origin + codes.astype(f"timedelta64[{unit}]"))
                           .astype("datetime64[ns]"))
    else:
        stamps = pd.Series(representatives(col.resolution, anchor(col), codes))  # type: ignore[arg-type]
    return stamps.dt.strftime(fmt).to_numpy(dtype=object)


def representatives(resolution: str, start: pd.Timestamp, codes: np.ndarray) -> np.ndarray:
    """First instant at or after ``start`` (floored to its day or month) with each part."""
    day = start.floor("D")
    if resolution == "month_of_year":
        months = (codes - (day.month - 1)) % 12
        first = day.replace(day=1)
        return np.array([first + pd.DateOffset(months=int(m)) for m in months],
                        dtype="datetime64[ns]")
    if resolution == "hour_of_day":
        offsets = pd.to_timedelta(codes, unit="h")
    elif resolution == "day_of_week":
        offsets = pd.to_timedelta((codes - day.dayofweek) % 7, unit="D")
    else:
        days = (codes // 24 - day.dayofweek) % 7
        offsets = pd.to_timedelta(days * 24 + codes % 24, unit="h")
    return (day + offsets).to_numpy(dtype="datetime64[ns]")


def datetime_problems(col: DatetimeColumn, values: pd.Series) -> list[str]:
    """Problems of present (non-missing) values: unparseable, or outside ``[min, max]`` at an
    absolute resolution. Counts only."""
    stamps = parse(values, col.format)
    bad = int(stamps.isna().sum())
    out = []
    if bad:
        out.append(f"{col.name}: {bad} value(s) do not parse as dates with format "
                   f"{col.format or 'ISO 8601'!r}")
    if col.resolution in ABSOLUTE and col.min is not None and col.max is not None:
        ok = stamps.dropna()
        units = absolute_units(col, ok)
        lo, hi = absolute_units(col, pd.Series([bound_of(col, "min"), bound_of(col, "max")]))
        outside = int(((units < lo) | (units > hi)).sum())
        if outside:
            out.append(f"{col.name}: {outside} value(s) outside [{col.min}, {col.max}]")
    return out
