"""The audit's neighbouring pair (``audit.neighbours``).

``canary`` (default)
    D = the configured private data, D' = D + a constructed canary person
    (:mod:`harness.audit.canary`): what a mechanism leaks about one person among real data.
``worst_case``
    A tiny D built inside the schema, and D' = D plus one person who differs from it on every
    attribute (Annamalai, Ganev & De Cristofaro 2024; Ganev, Annamalai & Kulynych 2026 use the
    same pair for MST): D holds :data:`WORST_CASE_PERSONS` identical persons, each holding value
    code 0 of every attribute; the extra person holds the last code of every attribute (so it
    differs wherever the domain has two values or more). For user-level data the extra person
    owns the most rows a person may have (``max_records_per_individual``) and each person of D
    one row. The public part, the schema and the unit are those of the configured dataset. Its
    answers to every count query differ between D and D' by the full sensitivity, in cells D
    leaves empty: the pair where a mechanism's claim is tightest.

D and D' under ``worst_case`` are made from the schema alone (public): nothing about them is
private, so the audit's cache of such runs is not private either (a ``canary`` cache is).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.data.datasets import Dataset
from harness.data.schema import coerce_dtypes
from harness.errors import ConfigError

from .canary import Canary, build_canary, canary_rows, with_canary

NEIGHBOURS: tuple[str, ...] = ("canary", "worst_case")
#: Persons in the worst-case D.
WORST_CASE_PERSONS = 10


@dataclass(frozen=True)
class Pair:
    """D, D' and the extra person (its codes feed the synthetic view's statistic)."""

    without: Dataset
    with_person: Dataset
    person: Canary
    private: bool  # whether D (and so the audit's cache) holds private data


def check_neighbours(name: str) -> None:
    if name not in NEIGHBOURS:
        raise ConfigError(f"audit.neighbours must be one of {list(NEIGHBOURS)} (got {name!r})",
                          "use audit.neighbours=canary (real data) or worst_case")


def codes_frame(data: Dataset, codes: dict[str, int], rows: int) -> pd.DataFrame:
    """``rows`` identical rows of ``codes`` in the schema's values (numeric values drawn inside
    the code's bin with a fixed generator: constructed, not noise)."""
    frame = pd.DataFrame({c: [v] * rows for c, v in codes.items()})
    return data.schema.decode(frame, np.random.default_rng(0))


def worst_case_pair(data: Dataset) -> Pair:
    """The ``worst_case`` pair for ``data``'s schema (module docstring)."""
    schema = data.schema
    domain = schema.domain()
    base = {c: 0 for c in domain}
    other = {c: size - 1 for c, size in domain.items()}
    if all(size < 2 for size in domain.values()):
        raise ConfigError("audit.neighbours=worst_case needs an attribute with two values or "
                          "more", "audit a dataset whose schema has such an attribute")
    rows = canary_rows(data)
    d = codes_frame(data, base, WORST_CASE_PERSONS)
    extra = codes_frame(data, other, rows)
    if schema.id_column is not None:
        col = schema[schema.id_column]
        lo = int(col.min)  # type: ignore[arg-type]
        if int(col.max) - lo + 1 < WORST_CASE_PERSONS + 1:  # type: ignore[arg-type]
            raise ConfigError(f"the id column {col.name!r} has too few values for the "
                              "worst-case pair", "widen its range in the schema")
        d.insert(0, col.name, np.arange(lo, lo + WORST_CASE_PERSONS))
        extra.insert(0, col.name, lo + WORST_CASE_PERSONS)
    d, extra = coerce_dtypes(schema, d), coerce_dtypes(schema, extra)
    without = Dataset(data.name, schema, d, data.public, data.unit, data.id_column,
                      data.max_records_per_individual)
    with_person = Dataset(data.name, schema, pd.concat([d, extra], ignore_index=True),
                          data.public, data.unit, data.id_column,
                          data.max_records_per_individual)
    unit = f"{rows} identical rows" if data.unit == "user" else "1 row"
    person = Canary("worst_case", other, rows,
                    f"worst_case: D = {WORST_CASE_PERSONS} identical persons (code 0 of every "
                    f"attribute), D' adds one person differing on each of {len(domain)} "
                    f"attributes ({unit})")
    return Pair(without, with_person, person, private=False)


def neighbouring_pair(data: Dataset, neighbours: str, canary: str) -> Pair:
    """The pair ``audit.neighbours`` names (``canary``: with strategy ``canary``)."""
    check_neighbours(neighbours)
    if neighbours == "worst_case":
        return worst_case_pair(data)
    person = build_canary(data, canary)
    return Pair(data, with_canary(data, person), person, private=True)
