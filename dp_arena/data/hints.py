"""Public hints for a schema proposal: what the user knows about a column, free of budget.

A hint states facts the user knows without looking at the private table (a code book, a form,
a previous year's release): a column's ``kind``, its date ``format`` and ``resolution``, its
range (``min``/``max``), its ``values``, its ``bins``, whether it may be missing, and a
``weight`` for the DP budget split. Hints are public by the user's statement: a hinted fact
costs nothing and the proposal never checks it against the private data (that check would
itself spend budget); values outside a hinted domain are counted when the data is loaded
(:mod:`dp_arena.data.conform`) like any value outside a proposed schema.

Where hints come from (one mapping ``{column: hint}``):

- the command line: ``dp-arena-schema DATA --hint 'fare={kind: numeric, min: 0, max: 200}'``
  (a YAML flow mapping per column, repeatable) and ``--hints FILE.yaml`` (a YAML mapping of
  columns to such mappings, optionally under a top-level ``columns:`` key);
  ``--weight company=2`` sets a weight;
- the Python API: ``ProposalSettings(..., hints={"fare": {"kind": "numeric", ...}})``.

What a hint settles (:attr:`ColumnHint.complete`): a ``categorical`` hint with ``values``, a
``numeric`` hint with ``min`` and ``max`` (bins optional: without them the schema's default
equal-width bins), a ``datetime`` hint with a cyclic part resolution, or with ``min`` and
``max``. Such a column is taken from the hint and spends nothing; its share of the budget goes
to the other columns. A partial hint (e.g. ``kind: datetime, format: "%d.%m.%Y"``) skips the
DP type choice (its share goes to the column's values release) and fixes what it names.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import yaml

from dp_arena.data.schema import Column
from dp_arena.errors import ConfigError, DPArenaError

KINDS = ("categorical", "numeric", "datetime")


@dataclass(frozen=True)
class ColumnHint:
    """What the user states about one column (every field optional)."""

    kind: str | None = None
    format: str | None = None
    resolution: str | None = None
    min: Any = None
    max: Any = None
    values: tuple[Any, ...] | None = None
    bins: tuple[Any, ...] | None = None
    allow_missing: bool | None = None
    weight: float = 1.0

    def __post_init__(self) -> None:
        if self.kind is not None and self.kind not in KINDS:
            raise ConfigError(f"hint kind {self.kind!r} is not one of {list(KINDS)}",
                              "write kind: categorical, numeric or datetime")
        if not (isinstance(self.weight, (int, float)) and math.isfinite(self.weight)
                and self.weight > 0):
            raise ConfigError(f"hint weight must be a positive number (got {self.weight!r})",
                              "write e.g. weight: 2 (a column's share of the DP budget)")

    @property
    def complete(self) -> bool:
        """Whether the hint alone defines the column (it then spends nothing)."""
        if self.kind == "categorical":
            return bool(self.values)
        if self.kind == "numeric":
            return self.min is not None and self.max is not None
        if self.kind == "datetime":
            from dp_arena.data.datetimes import PARTS
            return self.resolution in PARTS or (self.min is not None and self.max is not None
                                                and self.resolution is not None)
        return False

    def column(self, name: str, allow_missing: bool = True) -> Column:
        """The schema entry of a complete hint (refused with the fix when it is not one)."""
        missing = self.allow_missing if self.allow_missing is not None else allow_missing
        try:
            if self.kind == "categorical":
                values = tuple(self.values or ())
                dtype = "str" if any(isinstance(v, str) for v in values) else "int64"
                return Column(name, "categorical", dtype, values=values, allow_missing=missing)
            if self.kind == "numeric":
                return Column(name, "numeric", "float",
                              min=float(self.min), max=float(self.max),
                              bins=tuple(float(b) for b in self.bins) if self.bins else None,
                              allow_missing=missing)
            return Column(name, "datetime", "str", resolution=self.resolution,
                          format=self.format, min=self.min, max=self.max,
                          bins=tuple(self.bins) if self.bins else None, allow_missing=missing)
        except DPArenaError as exc:
            raise ConfigError(f"hint for column {name!r}: {exc.problem}",
                              exc.fix or "correct the hint") from None
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"hint for column {name!r} is not usable ({exc})",
                              "write min/max/bins as numbers for a numeric hint") from None


HINT_KEYS = tuple(f.name for f in fields(ColumnHint))


def hint_of(name: str, raw: Any) -> ColumnHint:
    """One column's hint from a mapping (YAML / Python); unknown keys refused."""
    if isinstance(raw, ColumnHint):
        return raw
    if not isinstance(raw, Mapping):
        raise ConfigError(f"the hint for column {name!r} must be a mapping (got "
                          f"{type(raw).__name__})",
                          "write e.g. fare={kind: numeric, min: 0, max: 200}")
    unknown = sorted(set(map(str, raw)) - set(HINT_KEYS))
    if unknown:
        raise ConfigError(f"the hint for column {name!r} has unknown keys {unknown}",
                          f"use only {list(HINT_KEYS)}")
    spec = dict(raw)
    for key in ("values", "bins"):
        if spec.get(key) is not None:
            if isinstance(spec[key], (str, bytes)) or not hasattr(spec[key], "__iter__"):
                raise ConfigError(f"the hint for column {name!r}: {key} must be a list",
                                  f"write {key}: [a, b, c]")
            spec[key] = tuple(spec[key])
    return ColumnHint(**spec)


def hints_of(raw: Mapping[str, Any] | None) -> dict[str, ColumnHint]:
    """Every column's hint (``{column: mapping or ColumnHint}``)."""
    return {str(name): hint_of(str(name), spec) for name, spec in (raw or {}).items()}


def parse_flow(text: str) -> dict[str, Any]:
    """``COLUMN={yaml mapping}`` (the ``--hint`` option) as ``{column: mapping}``."""
    name, sep, spec = text.partition("=")
    if not sep or not name.strip():
        raise ConfigError(f"--hint {text!r} is not COLUMN={{...}}",
                          "write e.g. --hint 'fare={kind: numeric, min: 0, max: 200}'")
    try:
        value = yaml.safe_load(spec)
    except yaml.YAMLError as exc:
        raise ConfigError(f"--hint for {name.strip()!r} is not a YAML mapping ({exc.problem})",
                          "write e.g. --hint 'fare={kind: numeric, min: 0, max: 200}'") from None
    return {name.strip(): value}


def read_hints_file(path: str | Path) -> dict[str, Any]:
    """A YAML file of hints (``{column: mapping}``, optionally under ``columns:``)."""
    path = Path(path).expanduser()
    try:
        raw = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise DPArenaError(f"--hints: cannot read {path} ({exc.strerror or exc})",
                           "pass the path of a YAML file of column hints") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"--hints: {path} is not valid YAML ({exc})",
                          "fix the YAML syntax") from None
    if isinstance(raw, Mapping) and set(raw) == {"columns"}:
        raw = raw["columns"]
    if not isinstance(raw, Mapping):
        raise ConfigError(f"--hints: {path} must be a mapping of columns to hints",
                          "write e.g.\n  fare: {kind: numeric, min: 0, max: 200}")
    return dict(raw)


def parse_weight(text: str) -> dict[str, Any]:
    """``COLUMN=W`` (the ``--weight`` option) as ``{column: {"weight": W}}``."""
    name, sep, value = text.partition("=")
    try:
        weight = float(value)
    except ValueError:
        weight = math.nan
    if not sep or not name.strip() or not (math.isfinite(weight) and weight > 0):
        raise ConfigError(f"--weight {text!r} is not COLUMN=W with W > 0",
                          "write e.g. --weight company=2")
    return {name.strip(): {"weight": weight}}


def merged(*parts: Mapping[str, Any]) -> dict[str, Any]:
    """Hint mappings merged column by column (later parts win, key by key)."""
    out: dict[str, dict[str, Any]] = {}
    for part in parts:
        for name, spec in part.items():
            if not isinstance(spec, Mapping):
                hint_of(name, spec)  # the one message for a non-mapping
            out.setdefault(name, {}).update(spec)
    return out
