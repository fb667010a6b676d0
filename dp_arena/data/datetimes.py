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

Two format names are not :func:`time.strftime` patterns (:func:`parse`):

- ``ISO8601``: ``YYYY-MM-DD[(T| )HH:MM[:SS[.fff]]][Z|+-HH:MM]`` (pandas' ISO parser); a value
  with ``Z`` or an offset is converted to UTC and the zone dropped, so every value compares with
  naive ``min``/``max``.
- ``mixed``: every value in one of the date formats of :data:`MIXED_FORMATS` (month first:
  ``12/10/2016`` is December 10), each parsed with the first of those formats whose shape
  (:data:`SHAPES`) it has and that parses it, so exactly the values type inference puts in a
  date class; time of day alone (``10:00``) is not a date and does not parse. (pandas'
  ``format="mixed"`` would read any value dateutil can, ``10:00`` as today at ten.)

A column in one of these two is written (decoded) in a fixed ISO form (:data:`ISO_WRITE`), and
its ``min``, ``max`` and ``bins`` are ISO strings.

**Bins** (absolute resolutions only): ``bins`` lists interior cut points, strings in the
column's format, whose units (floored to the resolution) increase strictly and lie strictly
between ``min``'s and ``max``'s. Then there are ``len(bins) + 1`` codes, left-closed like
numeric bins: code 0 is ``[min, bins[0])``, code i is ``[bins[i-1], bins[i])``, the last is
``[bins[-1], max]``. Decoding a code draws a unit uniformly at random inside its bin (from the
generator given) and writes the unit's start.

Missing values (NaN / empty) are handled by the schema's ``allow_missing`` (one extra code).
Messages count unparseable values; they never show one.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import pandas as pd

from dp_arena.errors import DPArenaError, SchemaError


class DatetimeColumn(Protocol):
    """What this module reads of a schema column (:class:`dp_arena.data.schema.Column` has it;
    the schema imports this module, never the other way round)."""

    name: str
    resolution: str | None
    format: str | None
    min: object
    max: object
    bins: tuple | None

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
#: Format names that are not strftime patterns (module docstring).
ISO8601, MIXED = "ISO8601", "mixed"
#: The formats a ``mixed`` column's values may take, tried in this order.
MIXED_FORMATS = ("%Y-%m-%d", ISO8601, "%m/%d/%Y", "%b %d %Y", "%b-%Y", "%Y-%m", "%B %Y")
#: The shape (regular expression on stripped text) of a value in each date/time format that
#: type inference (:mod:`dp_arena.data.infer`) recognises; ``ISO8601`` here is a date-time
#: ``YYYY-MM-DD(T| )HH:MM[:SS[.fff]][Z|+-HH[:]MM]`` (plain ISO dates have the first shape).
SHAPES: dict[str, str] = {
    "%Y-%m-%d": r"^\d{4}-\d{1,2}-\d{1,2}$",
    ISO8601: r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$",
    "%m/%d/%Y": r"^\d{1,2}/\d{1,2}/\d{4}$",
    "%b %d %Y": r"^[A-Za-z]{3} \d{1,2} \d{4}$",
    "%b-%Y": r"^[A-Za-z]{3}-\d{4}$",
    "%Y-%m": r"^\d{4}-\d{1,2}$",
    "%B %Y": r"^[A-Za-z]{3,9} \d{4}$",
    "%H:%M": r"^\d{1,2}:\d{2}$",
    "%H:%M:%S": r"^\d{1,2}:\d{2}:\d{2}$",
}
#: Writing format of ``ISO8601`` and ``mixed`` columns at each resolution (re-parses with both).
ISO_WRITE = {"year": "%Y-%m-%d", "month": "%Y-%m-%d", "day": "%Y-%m-%d",
             "hour": "%Y-%m-%dT%H:%M:%S", "minute": "%Y-%m-%dT%H:%M:%S",
             "hour_of_day": "%Y-%m-%dT%H:%M:%S", "day_of_week": "%Y-%m-%d",
             "month_of_year": "%Y-%m-%d", "day_of_week_hour": "%Y-%m-%dT%H:%M:%S"}


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
    if col.bins is not None:
        check_bins(col)


def check_bins(col: DatetimeColumn) -> None:
    """Refuse datetime ``bins`` that cannot define left-closed bins inside ``[min, max]``."""
    fix = ("list the interior cut points as dates in the column's format, increasing and "
           "strictly between min and max, one per unit at most")
    if col.resolution not in ABSOLUTE:
        raise DPArenaError(f"datetime column {col.name!r}: bins need an absolute resolution "
                           f"({', '.join(ABSOLUTE)}), not {col.resolution!r}",
                           "remove bins or set an absolute resolution with min and max")
    if isinstance(col.bins, (str, bytes)) or not len(col.bins):  # type: ignore[arg-type]
        raise DPArenaError(f"datetime column {col.name!r}: bins must be a non-empty list", fix)
    stamps = parse(pd.Series([str(b) for b in col.bins]), col.format)  # type: ignore[union-attr]
    if stamps.isna().any():
        raise DPArenaError(f"datetime column {col.name!r}: {int(stamps.isna().sum())} bin "
                           f"cut point(s) do not parse with format {col.format or 'ISO 8601'!r}",
                           fix)
    cuts = absolute_units(col, stamps)
    lo, hi = absolute_units(col, pd.Series([bound_of(col, "min"), bound_of(col, "max")]))
    if np.any(np.diff(cuts) <= 0):
        raise DPArenaError(f"datetime column {col.name!r}: bins must increase strictly (at "
                           f"resolution {col.resolution})", fix)
    if cuts[0] <= lo or cuts[-1] >= hi:
        raise DPArenaError(f"datetime column {col.name!r}: bins must lie strictly between "
                           f"min and max (at resolution {col.resolution})", fix)


def parse(values: pd.Series, fmt: str | None) -> pd.Series:
    """Timestamps of ``values`` (NaT where a value is missing or does not parse); surrounding
    blanks are ignored. ``fmt`` is a strftime pattern, ``ISO8601`` (also for None) or
    ``mixed`` (module docstring)."""
    text = values.astype("string").str.strip()
    if fmt == MIXED:
        return parse_mixed(text)
    return parse_format(text, fmt or ISO8601)


def parse_format(text: pd.Series, fmt: str) -> pd.Series:
    """Naive timestamps of strings in one format (``ISO8601``: converted to UTC first)."""
    if fmt == ISO8601:
        stamps = pd.to_datetime(text, format=ISO8601, errors="coerce", utc=True)
        return stamps.dt.tz_localize(None)
    return pd.to_datetime(text, format=fmt, errors="coerce")


def parse_mixed(text: pd.Series) -> pd.Series:
    """Each value parsed with the first format of :data:`MIXED_FORMATS` whose shape
    (:data:`SHAPES`) it has and that parses it."""
    out = np.full(len(text), np.datetime64("NaT"), dtype="datetime64[ns]")
    todo = text.notna().to_numpy(dtype=bool, copy=True)
    for fmt in MIXED_FORMATS:
        if not todo.any():
            break
        shaped = todo & text.str.match(SHAPES[fmt]).fillna(False).to_numpy(dtype=bool)
        if not shaped.any():
            continue
        stamps = parse_format(text[shaped], fmt).to_numpy(dtype="datetime64[ns]")
        where = np.flatnonzero(shaped)[~np.isnat(stamps)]
        out[where] = stamps[~np.isnat(stamps)]
        todo[where] = False
    return pd.Series(out, index=text.index)


def strftime_pattern(fmt: str | None, resolution: str) -> str:
    """The strftime pattern values of a column with format ``fmt`` at ``resolution`` are
    written in (its ``min``, ``max``, ``bins`` and decoded values): ``fmt`` itself, the fixed
    ISO form of :data:`ISO_WRITE` for ``ISO8601`` and ``mixed``, :data:`DEFAULT_FORMAT` when
    there is no format."""
    if fmt in (ISO8601, MIXED):
        return ISO_WRITE[resolution]
    return fmt or DEFAULT_FORMAT[resolution]


def writing_format(col: DatetimeColumn) -> str:
    """The strftime pattern decoded values are written in (module docstring)."""
    return strftime_pattern(col.format, col.resolution)  # type: ignore[arg-type]


def bound_of(col: DatetimeColumn, which: str) -> pd.Timestamp:
    return parse(pd.Series([str(getattr(col, which))]), col.format).iloc[0]


def anchor(col: DatetimeColumn) -> pd.Timestamp:
    return bound_of(col, "min") if col.min is not None else DEFAULT_ANCHOR


def datetime_size(col: DatetimeColumn) -> int:
    """Number of codes (without the missing code)."""
    if col.resolution in PARTS:
        return PARTS[col.resolution]  # type: ignore[index]
    if col.bins is not None:
        return len(col.bins) + 1  # type: ignore[arg-type]
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
    if col.bins is not None:
        return np.searchsorted(bin_units(col), absolute_units(col, stamps),
                               side="right").astype(np.int64)
    origin = absolute_units(col, pd.Series([bound_of(col, "min")]))[0]
    return (absolute_units(col, stamps) - origin).astype(np.int64)


def bin_units(col: DatetimeColumn) -> np.ndarray:
    """The cut points of a binned column as whole units since the epoch."""
    cuts = pd.Series([str(b) for b in col.bins])  # type: ignore[union-attr]
    return absolute_units(col, parse(cuts, col.format))


def bin_unit_bounds(col: DatetimeColumn) -> tuple[np.ndarray, np.ndarray]:
    """Per code of a binned column, its units ``[lo, hi)`` (the last ends after ``max``)."""
    lo, hi = absolute_units(col, pd.Series([bound_of(col, "min"), bound_of(col, "max")]))
    cuts = bin_units(col)
    return np.concatenate([[lo], cuts]), np.concatenate([cuts, [hi + 1]])


def datetime_values(col: DatetimeColumn, codes: np.ndarray,
                    rng: np.random.Generator | None = None) -> np.ndarray:
    """Strings (in :func:`writing_format`) of codes: the unit's start, or a representative;
    with bins, the start of a unit drawn uniformly inside each code's bin (``rng`` needed)."""
    codes = np.asarray(codes, dtype=np.int64)
    fmt = writing_format(col)
    if col.bins is not None:
        if rng is None:
            raise DPArenaError(f"datetime column {col.name!r} has bins: decoding draws a date "
                               "inside each bin", "pass a numpy Generator as rng")
        unit = ABSOLUTE[col.resolution]  # type: ignore[index]
        lo, hi = bin_unit_bounds(col)
        units = rng.integers(lo[codes], hi[codes]) if len(codes) else codes
        stamps = pd.Series(np.asarray(units, dtype=np.int64).astype(f"datetime64[{unit}]")
                           .astype("datetime64[ns]"))
        return stamps.dt.strftime(fmt).to_numpy(dtype=object)
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
