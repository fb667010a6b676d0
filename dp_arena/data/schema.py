"""Column schema: NIST ``parameters.json`` and Private-PGM ``domain.json`` I/O, validation,
and discretization to codes ``0..n-1`` and back.

Column kinds
------------
- ``categorical``: an explicit list of ``values`` (optionally human ``names``); code = index.
- ``numeric``: integer or float values in ``[min, max]``; ``bins`` are the interior cut points
  of left-closed scoring bins, so ``len(bins) + 1`` codes: code 0 is ``[min, bins[0])``,
  code i is ``[bins[i-1], bins[i])``, the last code is ``[bins[-1], max]``.
- ``id``: the privacy unit's identifier (e.g. ``taxi_id``); integer in ``[min, max]``, never
  discretized and never part of a marginal.
- ``datetime``: date/time strings at a ``resolution`` (:mod:`dp_arena.data.datetimes`); at an
  absolute resolution optional ``bins`` (date strings in the column's format) are left-closed
  bins like numeric ones, decoded to a uniformly drawn unit inside the bin.

``allow_missing: true`` (categorical, numeric, datetime) adds one last code, "missing": NaN or
an empty cell encodes to it and it decodes back to NaN (a missing category / a missing bin).

Validation messages name the column, the number of bad values and the allowed domain (from the
schema, which is public), never a bad value nor a row number: those are private when the data
is.
"""

from __future__ import annotations

import json
import functools
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Literal

import numpy as np
import pandas as pd

from dp_arena.data.datetimes import (
    check_datetime_column,
    datetime_codes,
    datetime_problems,
    datetime_size,
    datetime_values,
)
from dp_arena.errors import DPArenaError, SchemaError

Kind = Literal["categorical", "numeric", "id", "datetime"]
_INTEGER_DTYPES = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}
#: Categorical domains with at most this many values (or integer runs) are listed in messages.
_MAX_DOMAIN_ITEMS = 12


@dataclass(frozen=True)
class Column:
    """One column of a schema (see module docstring for the kinds)."""

    name: str
    kind: Kind
    dtype: str = "int64"
    values: tuple[Any, ...] | None = None
    names: tuple[str, ...] | None = None
    min: float | None = None
    max: float | None = None
    bins: tuple[Any, ...] | None = None  # numbers (numeric), date strings (datetime)
    allow_missing: bool = False
    resolution: str | None = None
    format: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("categorical", "numeric", "id", "datetime"):
            raise DPArenaError(
                f"column {self.name!r} has unknown kind {self.kind!r}",
                "use one of: categorical, numeric, id, datetime",
            )
        if not isinstance(self.allow_missing, bool) or (self.allow_missing and self.kind == "id"):
            raise DPArenaError(f"column {self.name!r}: allow_missing must be true or false "
                               "(and an id column cannot be missing)",
                               "set allow_missing to true or false")
        if self.kind == "datetime":
            check_datetime_column(self)
        if self.kind == "categorical" and not self.values:
            raise DPArenaError(f"categorical column {self.name!r} has no 'values'",
                               "list the column's values in the schema")
        if self.kind in ("numeric", "id") and (self.min is None or self.max is None):
            raise DPArenaError(f"{self.kind} column {self.name!r} needs 'min' and 'max'",
                               "add min and max to the schema entry")
        if self.kind == "numeric" and self.bins is not None:
            cuts = np.asarray(self.bins, dtype=float)
            if np.any(np.diff(cuts) <= 0):
                raise DPArenaError(f"numeric column {self.name!r}: bins must be increasing",
                                   "list the interior cut points in increasing order")

    @property
    def is_integer(self) -> bool:
        return self.dtype in _INTEGER_DTYPES

    @property
    def size(self) -> int:
        """Number of discrete codes (domain size), the missing code included."""
        return self.present_size + int(self.allow_missing)

    @property
    def present_size(self) -> int:
        """Number of codes of present values (the missing code, if any, is ``present_size``)."""
        if self.kind == "categorical":
            return len(self.values)  # type: ignore[arg-type]
        if self.kind == "numeric":
            return len(self.cut_points) + 1
        if self.kind == "datetime":
            return datetime_size(self)
        raise DPArenaError(f"id column {self.name!r} has no discrete domain")

    @property
    def cut_points(self) -> np.ndarray:
        """Interior cut points of the scoring bins (default: 10 equal-width bins)."""
        if self.bins is not None:
            return np.asarray(self.bins, dtype=float)
        lo, hi = float(self.min), float(self.max)  # type: ignore[arg-type]
        return np.linspace(lo, hi, 11)[1:-1]

    def bin_bounds(self, code: int) -> tuple[float, float]:
        """Closed-open value range ``[lo, hi)`` of a numeric code (last bin closed at max)."""
        cuts = self.cut_points
        lo = float(self.min) if code == 0 else float(cuts[code - 1])  # type: ignore[arg-type]
        hi = float(self.max) if code == len(cuts) else float(cuts[code])  # type: ignore[arg-type]
        return lo, hi

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"dtype": self.dtype, "kind": self.kind}
        if self.values is not None:
            out["values"] = list(self.values)
        if self.names is not None:
            out["names"] = list(self.names)
        if self.min is not None:
            out["min"] = _plain_number(self.min)
        if self.max is not None:
            out["max"] = _plain_number(self.max)
        if self.bins is not None:
            out["bins"] = [_plain_number(b) for b in self.bins]
        if self.allow_missing:
            out["allow_missing"] = True
        for key in ("resolution", "format"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out

    @classmethod
    def from_json(cls, name: str, spec: dict[str, Any]) -> "Column":
        known = {"dtype", "kind", "values", "names", "min", "max", "bins", "allow_missing",
                 "resolution", "format"}
        unknown = set(spec) - known
        if unknown:
            raise DPArenaError(f"schema entry {name!r} has unknown keys {sorted(unknown)}",
                               f"use only {sorted(known)}")
        if "kind" not in spec:
            raise DPArenaError(f"schema entry {name!r} has no 'kind'",
                               "set kind to categorical, numeric or id")
        return cls(
            name=name,
            kind=spec["kind"],
            dtype=spec.get("dtype", "int64"),
            values=tuple(spec["values"]) if "values" in spec else None,
            names=tuple(spec["names"]) if "names" in spec else None,
            min=spec.get("min"),
            max=spec.get("max"),
            bins=tuple(spec["bins"]) if "bins" in spec else None,
            allow_missing=spec.get("allow_missing", False),
            resolution=spec.get("resolution"),
            format=spec.get("format"),
        )


@dataclass(frozen=True)
class RunSpec:
    """One privacy setting of a competition (a ``runs`` entry of ``parameters.json``)."""

    epsilon: float
    delta: float
    max_records: int | None = None
    max_records_per_individual: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"epsilon": self.epsilon, "delta": self.delta}
        if self.max_records is not None:
            out["max_records"] = self.max_records
        if self.max_records_per_individual is not None:
            out["max_records_per_individual"] = self.max_records_per_individual
        return out


@dataclass(frozen=True)
class Schema:
    """An ordered set of columns plus the competition's privacy settings (``runs``)."""

    columns: tuple[Column, ...]
    runs: tuple[RunSpec, ...] = field(default_factory=tuple)

    # ----- access -------------------------------------------------------------------------
    def __post_init__(self) -> None:
        names = [c.name for c in self.columns]
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise DPArenaError(f"schema lists columns more than once: {dup}",
                               "give every column one entry")
        if not names:
            raise DPArenaError("schema has no columns", "describe at least one column")

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def id_column(self) -> str | None:
        ids = [c.name for c in self.columns if c.kind == "id"]
        return ids[0] if ids else None

    @property
    def attributes(self) -> list[str]:
        """Columns that carry data (everything but the id column)."""
        return [c.name for c in self.columns if c.kind != "id"]

    def __getitem__(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)

    def domain(self) -> dict[str, int]:
        """Private-PGM domain: attribute -> number of codes."""
        return {name: self[name].size for name in self.attributes}

    def drop_id(self) -> "Schema":
        return replace(self, columns=tuple(c for c in self.columns if c.kind != "id"))

    # ----- I/O ----------------------------------------------------------------------------
    @classmethod
    def from_parameters(cls, params: dict[str, Any]) -> "Schema":
        """Build from a NIST challenge ``parameters.json`` dict (``schema`` + ``runs``)."""
        if "schema" not in params:
            raise DPArenaError("parameters.json has no 'schema' section",
                               "use the NIST challenge layout: {'schema': {...}, 'runs': [...]}")
        cols = tuple(Column.from_json(n, s) for n, s in params["schema"].items())
        runs = tuple(
            RunSpec(
                epsilon=float(r["epsilon"]),
                delta=float(r.get("delta", 0.0)),
                max_records=r.get("max_records"),
                max_records_per_individual=r.get("max_records_per_individual"),
            )
            for r in params.get("runs", [])
        )
        return cls(cols, runs)

    def to_parameters(self) -> dict[str, Any]:
        return {
            "runs": [r.to_json() for r in self.runs],
            "schema": {c.name: c.to_json() for c in self.columns},
        }

    @classmethod
    def from_domain(cls, domain: dict[str, int]) -> "Schema":
        """Build from a Private-PGM ``domain.json`` dict: every column has codes ``0..n-1``."""
        cols = []
        for name, size in domain.items():
            if not isinstance(size, int) or size < 1:
                raise DPArenaError(f"domain.json: column {name!r} has size {size!r}",
                                   "every column needs a positive integer domain size")
            cols.append(Column(name=name, kind="categorical", dtype="int64",
                               values=tuple(range(size))))
        return cls(tuple(cols))

    def to_domain(self) -> dict[str, int]:
        return self.domain()

    @classmethod
    def load(cls, path: str | Path) -> "Schema":
        """Read a ``parameters.json`` (has a ``schema`` key) or a ``domain.json``."""
        path = Path(path)
        if not path.is_file():
            raise DPArenaError(f"schema file not found: {path}",
                               "pass the path of a parameters.json or domain.json file")
        try:
            raw = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise DPArenaError(f"schema file {path} is not valid JSON ({exc})",
                               "fix the JSON syntax") from None
        if isinstance(raw, dict) and "schema" in raw:
            return cls.from_parameters(raw)
        if isinstance(raw, dict) and all(isinstance(v, int) for v in raw.values()):
            return cls.from_domain(raw)
        raise DPArenaError(f"{path} is neither a parameters.json nor a domain.json",
                           "use {'schema': ..., 'runs': ...} or {column: domain_size}")

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_parameters(), indent=1))

    # ----- validation ---------------------------------------------------------------------
    def problems(self, df: pd.DataFrame) -> list[str]:
        """Every way ``df`` fails this schema (empty list when valid)."""
        out: list[str] = []
        if not isinstance(df, pd.DataFrame):
            return [f"expected a pandas DataFrame, got {type(df).__name__}"]
        missing = [n for n in self.names if n not in df.columns]
        extra = [str(n) for n in df.columns if n not in self.names]
        if missing:
            out.append(f"missing columns: {missing}")
        if extra:
            out.append(f"unexpected columns: {extra}")
        if len(df) == 0:
            out.append("no rows")
        for col in self.columns:
            if col.name in df.columns:
                out.extend(_column_problems(col, df[col.name]))
        return out

    def validate(self, df: pd.DataFrame, where: str = "data") -> pd.DataFrame:
        """Raise :class:`SchemaError` listing every problem; return ``df`` unchanged if valid."""
        found = self.problems(df)
        if found:
            raise SchemaError(found, where=where,
                              fix="correct the data or the schema so every value is in its domain")
        return df

    # ----- discretization -----------------------------------------------------------------
    def encode(self, df: pd.DataFrame) -> pd.DataFrame:
        """Map every attribute to codes ``0..n-1`` (int64); the id column is dropped."""
        return pd.DataFrame({name: encode_column(self[name], df[name]) for name in self.attributes},
                            index=df.index)

    def decode(self, codes: pd.DataFrame, rng: np.random.Generator,
               reference: pd.DataFrame | None = None) -> pd.DataFrame:
        """Map codes back to schema values. Numeric codes become a value inside their bin:
        drawn from ``reference`` values in that bin when given (public data: no privacy cost),
        else uniformly. The id column is not produced."""
        out = {}
        for name in codes.columns:
            ref = None if reference is None or name not in reference else reference[name]
            out[name] = decode_column(self[name], codes[name].to_numpy(), rng, ref)
        return pd.DataFrame(out, index=codes.index)


def encode_column(col: Column, values: pd.Series) -> np.ndarray:
    """Codes of one column's values (raises if a value is outside the domain)."""
    if col.allow_missing:
        present = values.notna().to_numpy()
        codes = np.full(len(values), col.present_size, dtype=np.int64)
        codes[present] = encode_column(replace(col, allow_missing=False), values[present])
        return codes
    if col.kind == "datetime":
        return datetime_codes(col, values)
    if col.kind == "categorical":
        # the series' own array: pandas matches an Arrow-backed string column against the
        # lookup directly (its object-array copy is 4x slower on a small table)
        codes = category_lookup(tuple(col.values)).get_indexer(values.array)  # type: ignore[arg-type]
        if np.any(codes < 0):
            raise SchemaError([f"{col.name}: {int(np.sum(codes < 0))} value(s) not in the "
                               f"domain; allowed: {domain_description(col)}"])
        return codes.astype(np.int64)
    if col.kind == "numeric":
        return np.searchsorted(col.cut_points, values.to_numpy().astype(float),
                               side="right").astype(np.int64)
    raise DPArenaError(f"id column {col.name!r} cannot be encoded")


@functools.lru_cache(maxsize=256)
def _category_lookup(typed: tuple[tuple[type, Any], ...]) -> pd.Index:
    return pd.Index([value for _kind, value in typed])


def category_lookup(values: tuple) -> pd.Index:
    """The index a categorical column's values are coded by, built once per value list
    (keyed with each value's type: ``(1, 2)`` and ``(1.0, 2.0)`` are equal tuples but other
    indexes). Shared: never change it."""
    return _category_lookup(tuple((type(v), v) for v in values))


def decode_column(col: Column, codes: np.ndarray, rng: np.random.Generator,
                  reference: pd.Series | None = None) -> np.ndarray:
    """Schema values for codes of one column (see :meth:`Schema.decode`)."""
    codes = np.asarray(codes, dtype=np.int64)
    if col.allow_missing:
        return with_missing(col, codes, rng, reference)
    if col.kind == "datetime":
        return datetime_values(col, codes, rng)
    if col.kind == "categorical":
        return np.asarray(col.values, dtype=object if col.dtype == "str" else None)[codes]
    if col.kind != "numeric":
        raise DPArenaError(f"id column {col.name!r} cannot be decoded")
    out = np.empty(len(codes), dtype=np.int64 if col.is_integer else float)
    ref_codes = ref_sorted = None
    if reference is not None and len(reference):
        ref_vals = np.sort(reference.to_numpy().astype(float))
        ref_codes, ref_sorted = encode_column(col, pd.Series(ref_vals)), ref_vals
    for code in np.unique(codes):
        where = np.flatnonzero(codes == code)
        if ref_codes is not None:
            pool = ref_sorted[ref_codes == code]
            if len(pool):
                out[where] = rng.choice(pool, size=len(where))
                continue
        lo, hi = col.bin_bounds(int(code))
        if col.is_integer:
            upper = int(np.floor(hi)) if code == col.size - 1 else int(np.ceil(hi)) - 1
            out[where] = rng.integers(int(np.ceil(lo)), max(upper, int(np.ceil(lo))) + 1,
                                      size=len(where))
        else:
            out[where] = rng.uniform(lo, hi, size=len(where))
    return out


def with_missing(col: Column, codes: np.ndarray, rng: np.random.Generator,
                 reference: pd.Series | None) -> np.ndarray:
    """Decode a column with a missing code: that code becomes NaN, the others decode as in
    the column without it (public reference values: their present ones)."""
    missing = codes == col.present_size
    base = replace(col, allow_missing=False)
    ref = None if reference is None else reference.dropna()
    present = decode_column(base, np.where(missing, 0, codes), rng, ref)
    out = present.astype(float if col.kind == "numeric" else object)
    out[missing] = np.nan
    return out


def _column_problems(col: Column, s: pd.Series) -> list[str]:
    """Problems of one column: each names the column, how many values are bad and the allowed
    domain, never a bad value nor a row (both private when the data is)."""
    out: list[str] = []
    allowed = domain_description(col)
    nan = s.isna()
    if nan.any() and not col.allow_missing:
        out.append(f"{col.name}: {int(nan.sum())} missing value(s) (NaN); allowed: {allowed}")
    vals = s[~nan]
    if not len(vals):
        return out
    if col.kind == "datetime":
        return out + datetime_problems(col, vals)
    numeric_col = col.kind in ("numeric", "id") or all(
        isinstance(v, (int, np.integer)) for v in (col.values or ())
    )
    if numeric_col:
        as_num = pd.to_numeric(vals, errors="coerce")
        not_num = as_num.isna()
        if not_num.any():
            out.append(f"{col.name}: {int(not_num.sum())} non-numeric value(s); "
                       f"allowed: {allowed}")
        as_num = as_num[~not_num].astype(float)
        needs_int = col.kind != "numeric" or col.is_integer
        if needs_int:
            frac = as_num != np.floor(as_num)
            if frac.any():
                out.append(f"{col.name}: {int(frac.sum())} non-integer value(s); "
                           f"allowed: {allowed}")
        if col.kind in ("numeric", "id"):
            low, high = as_num < float(col.min), as_num > float(col.max)  # type: ignore[arg-type]
            if (low | high).any():
                out.append(f"{col.name}: {int((low | high).sum())} value(s) outside "
                           f"[{_plain_number(col.min)}, {_plain_number(col.max)}]")
        else:
            values = pd.Index([float(v) for v in col.values])  # type: ignore[union-attr]
            bad = ~as_num.isin(values)
            if bad.any():
                out.append(f"{col.name}: {int(bad.sum())} value(s) not in the domain; "
                           f"allowed: {allowed}")
    else:
        bad = ~vals.isin(list(col.values))  # type: ignore[arg-type]
        if bad.any():
            out.append(f"{col.name}: {int(bad.sum())} value(s) not in the domain; "
                       f"allowed: {allowed}")
    return out


def domain_description(col: Column) -> str:
    """The allowed values of a column as the schema states them (public): ``[min, max]`` for
    numeric and id columns (``integers in [min, max]`` when integral); for categorical ones the
    values, with runs of consecutive integers written ``a..b``, or their number when long."""
    if col.kind == "datetime":
        return (f"dates ({col.format or 'ISO 8601'}) at resolution {col.resolution}"
                + (f" in [{col.min}, {col.max}]" if col.min is not None else "")
                + (f" in {len(col.bins) + 1} bins" if col.bins is not None else ""))
    if col.kind in ("numeric", "id"):
        bounds = f"[{_plain_number(col.min)}, {_plain_number(col.max)}]"
        return f"integers in {bounds}" if col.kind == "id" or col.is_integer else bounds
    values = list(col.values)  # type: ignore[arg-type]
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values):
        runs = integer_runs(sorted(int(v) for v in values))
        if len(runs) <= _MAX_DOMAIN_ITEMS:
            return ", ".join(str(a) if a == b else f"{a}..{b}" for a, b in runs)
    elif len(values) <= _MAX_DOMAIN_ITEMS:
        return str([_plain_number(v) for v in values])
    return f"{len(values)} values (listed in the schema)"


def integer_runs(values: list[int]) -> list[tuple[int, int]]:
    """Sorted integers as maximal runs ``(first, last)`` of consecutive values."""
    runs: list[tuple[int, int]] = []
    for v in values:
        if runs and v == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], v)
        elif not runs or v != runs[-1][1]:
            runs.append((v, v))
    return runs


def _plain_number(x: Any) -> Any:
    if isinstance(x, (float, np.floating)) and float(x).is_integer():
        return int(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    return x


def coerce_dtypes(schema: Schema, df: pd.DataFrame) -> pd.DataFrame:
    """Cast a *valid* frame's columns to the schema's dtypes (lossless after validation)."""
    out = df[schema.names].copy()
    for col in schema.columns:
        if col.kind == "datetime":
            continue
        if (col.kind == "numeric" and not col.is_integer) or (
                col.allow_missing and col.kind == "numeric"):
            out[col.name] = out[col.name].astype(float)
        elif col.allow_missing:
            continue
        elif col.is_integer or col.kind == "id":
            out[col.name] = out[col.name].astype(np.int64)
    return out


def schema_from_columns(columns: Iterable[Column], runs: Iterable[RunSpec] = ()) -> Schema:
    return Schema(tuple(columns), tuple(runs))
