"""The audit's neighbouring pair: D (the configured private data) and D' = D + one canary.

The canary is a person the audit constructs (never a real one): one row per attribute value
vector, repeated ``rows`` times for user-level data, with a fresh id. Strategies:

``rare_cell`` (default)
    In every attribute, the value the private data holds least often (an empty cell when there
    is one; ties: the first value of the domain). Why: a mechanism built from marginals or
    counts releases the canary's cells with the same noise as any other cell, but a cell whose
    true count is 0 (or tiny) makes the canary's +1 the *whole* signal instead of a shift hidden
    under a large count and its sampling noise. For user-level data the canary owns the maximum
    number of rows a person may have (``max_records_per_individual``; the mechanism's clipping
    then keeps ``max_contrib`` of them), so it moves every count by the full sensitivity.
``mode_copy``
    In every attribute, the value the private data holds most often: a "typical" person. Its
    +1 lands on the largest counts, so it is hard to detect; an audit with it measures how much
    a mechanism leaks about an average person (and shows how much the canary choice matters).
    User-level data: maximum rows, as above.

Privacy of the audit's own outputs: the canary's values are read from the private data
(which cells are empty or most frequent), so they are never printed or logged; only
:attr:`Canary.description` (the strategy, the number of attributes and rows) is.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dp_arena.data.datasets import Dataset, count_persons
from dp_arena.data.schema import coerce_dtypes
from dp_arena.errors import ConfigError

CANARY_STRATEGIES: tuple[str, ...] = ("rare_cell", "mode_copy")
#: A private part with fewer persons than this is too small to audit.
MIN_PERSONS = 10


@dataclass(frozen=True)
class Canary:
    """The constructed person: ``codes`` (attribute -> value code; private, never logged),
    ``rows`` (how many identical rows it owns) and its loggable ``description``."""

    strategy: str
    codes: dict[str, int] = field(repr=False)
    rows: int
    description: str


def check_strategy(strategy: str) -> None:
    if strategy not in CANARY_STRATEGIES:
        raise ConfigError(f"audit.canary must be one of {list(CANARY_STRATEGIES)} "
                          f"(got {strategy!r})", "use audit.canary=rare_cell (the default)")


def check_size(data: Dataset) -> None:
    """Refuse a private part too small for a meaningful canary (the message states no count)."""
    if count_persons(data) < MIN_PERSONS:
        raise ConfigError(f"dataset {data.name!r} has fewer than {MIN_PERSONS} persons in its "
                          "private part: too small to audit with a canary",
                          "audit on a larger dataset (e.g. dataset=titanic or the default "
                          "taxi_sim)")


def canary_rows(data: Dataset) -> int:
    """Rows the canary owns: 1 for record-level data, else the most a person may have."""
    if data.unit == "record":
        return 1
    return max(1, int(data.max_records_per_individual or 1))


def pick_codes(data: Dataset, strategy: str) -> dict[str, int]:
    """Per attribute, the least (``rare_cell``) or most (``mode_copy``) frequent value code of
    the private data (ties: the smallest code)."""
    check_strategy(strategy)
    codes = data.schema.encode(data.private)
    out = {}
    for col, size in data.schema.domain().items():
        counts = np.bincount(codes[col].to_numpy(), minlength=size)
        out[col] = int(np.argmin(counts) if strategy == "rare_cell" else np.argmax(counts))
    return out


def build_canary(data: Dataset, strategy: str) -> Canary:
    """The canary of ``strategy`` for ``data`` (checks the data is large enough)."""
    check_size(data)
    codes = pick_codes(data, strategy)
    rows = canary_rows(data)
    what = "least" if strategy == "rare_cell" else "most"
    unit = f"{rows} identical rows (a {data.unit}-level person with the most rows allowed)" \
        if data.unit == "user" else "1 row"
    return Canary(strategy, codes, rows,
                  f"{strategy}: a constructed person holding the {what} frequent value of "
                  f"each of {len(codes)} attributes, {unit}")


def fresh_person_id(data: Dataset) -> int:
    """The smallest id in the id column's range that neither part uses."""
    col = data.schema[str(data.id_column)]
    used = set(data.private[col.name].tolist())
    if data.public is not None and col.name in data.public:
        used |= set(data.public[col.name].tolist())
    lo, hi = int(col.min), int(col.max)  # type: ignore[arg-type]
    for candidate in range(lo, hi + 1):
        if candidate not in used:
            return candidate
    raise ConfigError(f"no free {col.name} value left in [{lo}, {hi}] for the canary",
                      f"widen the range of the id column {col.name!r} in the schema")


def canary_frame(data: Dataset, canary: Canary) -> pd.DataFrame:
    """The canary's rows in the schema's values (numeric values: inside the code's bin, drawn
    with a fixed generator: the canary is constructed, not noise)."""
    codes = pd.DataFrame({c: [v] * canary.rows for c, v in canary.codes.items()})
    rows = data.schema.decode(codes, np.random.default_rng(0))
    if data.schema.id_column is not None:
        rows.insert(0, data.schema.id_column, fresh_person_id(data))
    return coerce_dtypes(data.schema, rows)


def with_canary(data: Dataset, canary: Canary) -> Dataset:
    """D' = D + the canary (public part, schema and unit unchanged)."""
    private = pd.concat([data.private, canary_frame(data, canary)[data.private.columns]],
                        ignore_index=True)
    return Dataset(data.name, data.schema, private, data.public, data.unit, data.id_column,
                   data.max_records_per_individual)
