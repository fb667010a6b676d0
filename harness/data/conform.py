"""Fit a raw table to a proposed schema, and read the schema's provenance.

A proposed schema (:mod:`harness.data.propose`) saw a public sample or a DP view of the data,
so the private table may hold values it left out. Its ``parameters.json`` carries a
``proposal`` block (``source``: ``public`` / ``dp`` / ``private``; the spend; the ledger file;
``out_of_domain: "coerce"``) which :func:`conform` applies when the data is loaded, row by row
(a per-row map, so it changes no sensitivity):

- categorical / datetime: a value outside the domain (or not parsing) becomes missing;
- numeric: a non-number becomes missing, a number is clipped into ``[min, max]`` (rounded for
  integer columns);
- a missing value in a column without ``allow_missing``: the row is dropped.

Notes name the columns that were changed and what was done to them, never a value, a row or
a count: a count of private rows is a statistic of the private data, and the notes are printed
and written into the sweep's plan. What a column holds outside the proposal is one bit per
column, as the other pre-sweep warnings (:mod:`harness.data.guards`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from harness.data.datetimes import datetime_problems, parse
from harness.data.infer import present
from harness.data.schema import Column, Schema
from harness.errors import DPArenaError

SOURCES = ("public", "dp", "private")
PRIVATE_NOTE = "schema from private data (not DP)"


@dataclass(frozen=True)
class SchemaSource:
    """Where a schema came from (the ``proposal`` block of its parameters.json)."""

    source: str
    epsilon: float = 0.0
    delta: float = 0.0
    ledger: str | None = None
    out_of_domain: str = "refuse"

    @property
    def tag(self) -> str:
        return {"private": "private (not DP)", "dp": "dp", "public": "public"}[self.source]


def read_source(path: str | Path) -> SchemaSource | None:
    """The ``proposal`` block of a parameters.json (None when the schema was hand-written)."""
    try:
        raw = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError):
        return None  # Schema.load reports these
    block = raw.get("proposal") if isinstance(raw, dict) else None
    if block is None:
        return None
    if not isinstance(block, dict) or block.get("source") not in SOURCES:
        raise DPArenaError(f"{path}: the 'proposal' block is invalid (source must be one of "
                           f"{list(SOURCES)})", "re-run dp-arena-schema, or delete the block")
    eps = float(block.get("epsilon_spent", math.inf if block["source"] == "private" else 0.0))
    return SchemaSource(block["source"], eps, float(block.get("delta_spent", 0.0)),
                        block.get("ledger"), block.get("out_of_domain", "refuse"))


def conform(df: pd.DataFrame, schema: Schema) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """``df`` fitted to ``schema`` (module docstring) and a note per column changed."""
    out = df.copy()
    notes: list[str] = []
    for col in schema.columns:
        if col.name not in out or col.kind == "id":
            continue
        fitted, changed = conform_column(col, out[col.name])
        out[col.name] = fitted
        if changed:
            notes.append(f"{col.name}: values outside the proposed schema "
                         + ("set missing" if col.kind != "numeric" else "clipped or set missing"))
    required = [c.name for c in schema.columns if not c.allow_missing and c.name in out]
    gone = out[required].isna().any(axis=1)
    if gone.any():
        notes.append("rows dropped: missing where the schema allows none (columns "
                     + ", ".join(c for c in required if out[c].isna().any()) + ")")
        out = out[~gone].reset_index(drop=True)
    return out, tuple(notes)


def conform_column(col: Column, values: pd.Series) -> tuple[pd.Series, int]:
    """One column fitted to its schema entry, and how many present values changed."""
    was = present(values).index
    s = values.where(values.notna() & values.index.isin(was))
    if col.kind == "categorical":
        domain = list(col.values)  # type: ignore[arg-type]
        if col.dtype == "str":
            s = s.astype(object).where(s.isna(), s.astype(str).str.strip())
            ok = s.isin(domain)
        else:
            nums = pd.to_numeric(s, errors="coerce")
            ok = nums.isin([float(v) for v in domain])
            s = nums
        fitted = s.where(ok)
    elif col.kind == "numeric":
        nums = pd.to_numeric(s, errors="coerce")
        clipped = nums.clip(float(col.min), float(col.max))  # type: ignore[arg-type]
        if col.is_integer:
            clipped = clipped.round()
        fitted = clipped
    else:
        stamps = parse(s, col.format)
        fitted = s.where(stamps.notna())
        keep = fitted.dropna()
        if col.min is not None and col.max is not None and len(keep) \
                and datetime_problems(col, keep):
            lo, hi = parse(pd.Series([col.min, col.max]), col.format)
            fitted = fitted.where((stamps >= lo) & (stamps < hi + unit_step(col)))
    changed = int((fitted.isna() & s.notna()).sum()
                  + ((fitted != pd.to_numeric(s, errors="coerce")) & fitted.notna()).sum()
                  if col.kind == "numeric" else (fitted.isna() & s.notna()).sum())
    return fitted, changed


def unit_step(col: Column) -> pd.Timedelta:
    unit = {"year": "366D", "month": "31D", "day": "1D", "hour": "1h", "minute": "1min"}
    return pd.Timedelta(unit.get(col.resolution or "", "0D"))


def proposal_block(source: str, spent: tuple[float, float], ledger: str | None) -> dict[str, Any]:
    """The ``proposal`` block a proposal writes into its parameters.json."""
    block: dict[str, Any] = {"source": source, "out_of_domain": "coerce"}
    if source == "dp":
        block.update(epsilon_spent=spent[0], delta_spent=spent[1], ledger=ledger)
    elif source == "private":
        block["note"] = (f"{PRIVATE_NOTE}: values and ranges were read exactly from the "
                         "private file (--from-private); runs using it are tagged and marked")
    else:
        block["note"] = "proposed from a public sample: no privacy cost"
    return block




def schema_tags(source: SchemaSource | None) -> dict[str, str]:
    """Run tags saying where the schema came from and which epsilon the run reports."""
    if source is None:
        return {}
    tags = {"schema_source": source.source}
    if source.source == "dp":
        tags["epsilon_reported"] = (
            f"epsilon_spent: the mechanism's; schema_epsilon={source.epsilon:.6g}, "
            f"schema_delta={source.delta:.3g}: the schema proposal's; epsilon_total, "
            "delta_total: both added (basic sequential composition)")
    elif source.source == "private":
        tags["schema_note"] = PRIVATE_NOTE
        tags["epsilon_reported"] = ("epsilon_spent: the mechanism's only; the schema was read "
                                    "from the private data (epsilon_total = inf)")
    return tags


def schema_numbers(source: SchemaSource | None, epsilon: float,
                   delta: float) -> dict[str, float]:
    """The schema's spend and the run's total (schema + mechanism, basic composition)."""
    if source is None or source.source == "public":
        return {}
    return {"schema_epsilon": source.epsilon, "schema_delta": source.delta,
            "epsilon_total": epsilon + source.epsilon, "delta_total": delta + source.delta}
