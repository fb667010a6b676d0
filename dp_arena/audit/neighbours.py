"""The audit's neighbouring pair (``audit.neighbours``).

``canary`` (default)
    D = the configured private data, D' = D + a constructed canary person
    (:mod:`dp_arena.audit.canary`): what a mechanism leaks about one person among real data.
``worst_case``
    A tiny D built inside the schema, and D' = D plus one person
    (Annamalai, Ganev & De Cristofaro 2024; Ganev, Annamalai & Kulynych 2026 use the
    same pair for MST). The extra person holds the last code of every attribute; for
    user-level data it owns the most rows a person may have (``max_records_per_individual``).
    D holds ``persons`` (:data:`WORST_CASE_PERSONS` by default) identical persons:

    - ``extra=differs`` (default): each holds value code 0 of every attribute, one row each,
      so the extra person differs from them wherever the domain has two values or more. Its
      answers to every count query differ between D and D' by the full sensitivity, in cells
      D leaves empty: the pair where an additive-noise mechanism's claim is tightest.
    - ``extra=same``: each is a copy of the extra person (its rows too), so D' adds one more.
      For mechanisms that only measure what passes a noisy threshold (the prefix tree keeps a
      node only if its noisy count does, and measures its children only then), cells D leaves
      empty are suppressed in almost every run and the extra person's releases are never
      seen; with enough copies (well above the thresholds) every node on the person's path
      is kept and measured in both worlds, and each of its ``2 h`` releases moves by the full
      sensitivity.

    The public part, the schema and the unit are those of the configured dataset.

D and D' under ``worst_case`` are made from the schema alone (public): nothing about them is
private, so the audit's cache of such runs is not private either (a ``canary`` cache is).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dp_arena.data.datasets import Dataset
from dp_arena.data.schema import coerce_dtypes
from dp_arena.errors import ConfigError

from .canary import Canary, build_canary, canary_rows, with_canary

NEIGHBOURS: tuple[str, ...] = ("canary", "worst_case")
#: Persons in the worst-case D (default).
WORST_CASE_PERSONS = 10
#: How the worst-case pair's extra person relates to D's persons.
EXTRAS: tuple[str, ...] = ("differs", "same")


@dataclass(frozen=True)
class Pair:
    """D, D' and the extra person (its codes feed the synthetic view's statistic)."""

    without: Dataset
    with_person: Dataset
    person: Canary
    private: bool  # whether D (and so the audit's cache) holds private data


def check_neighbours(name: str, persons: int = WORST_CASE_PERSONS,
                     extra: str = "differs") -> None:
    if name not in NEIGHBOURS:
        raise ConfigError(f"audit.neighbours must be one of {list(NEIGHBOURS)} (got {name!r})",
                          "use audit.neighbours=canary (real data) or worst_case")
    if not isinstance(persons, int) or isinstance(persons, bool) or persons < 1:
        raise ConfigError(f"audit.worst_case_persons must be an integer >= 1 (got {persons!r})",
                          f"e.g. audit.worst_case_persons={WORST_CASE_PERSONS}")
    if extra not in EXTRAS:
        raise ConfigError(f"audit.worst_case_extra must be one of {list(EXTRAS)} "
                          f"(got {extra!r})", "use audit.worst_case_extra=differs (default) or "
                          "same (D' adds one more copy of D's persons)")


def codes_frame(data: Dataset, codes: dict[str, int], rows: int) -> pd.DataFrame:
    """``rows`` identical rows of ``codes`` in the schema's values (numeric values drawn inside
    the code's bin with a fixed generator: constructed, not noise)."""
    frame = pd.DataFrame({c: [v] * rows for c, v in codes.items()})
    return data.schema.decode(frame, np.random.default_rng(0))


def worst_case_pair(data: Dataset, persons: int = WORST_CASE_PERSONS,
                    extra: str = "differs") -> Pair:
    """The ``worst_case`` pair for ``data``'s schema (module docstring)."""
    schema = data.schema
    domain = schema.domain()
    other = {c: size - 1 for c, size in domain.items()}
    if extra == "differs" and all(size < 2 for size in domain.values()):
        raise ConfigError("audit.neighbours=worst_case needs an attribute with two values or "
                          "more", "audit a dataset whose schema has such an attribute")
    rows = canary_rows(data)
    base, base_rows = ({c: 0 for c in domain}, 1) if extra == "differs" else (other, rows)
    d = codes_frame(data, base, persons * base_rows)
    person = codes_frame(data, other, rows)
    if schema.id_column is not None:
        col = schema[schema.id_column]
        lo = int(col.min)  # type: ignore[arg-type]
        if int(col.max) - lo + 1 < persons + 1:  # type: ignore[arg-type]
            raise ConfigError(f"the id column {col.name!r} has too few values for the "
                              f"worst-case pair's {persons + 1} persons",
                              "widen its range in the schema or lower "
                              "audit.worst_case_persons")
        d.insert(0, col.name, np.repeat(np.arange(lo, lo + persons), base_rows))
        person.insert(0, col.name, lo + persons)
    d, person = coerce_dtypes(schema, d), coerce_dtypes(schema, person)
    without = Dataset(data.name, schema, d, data.public, data.unit, data.id_column,
                      data.max_records_per_individual)
    with_person = Dataset(data.name, schema, pd.concat([d, person], ignore_index=True),
                          data.public, data.unit, data.id_column,
                          data.max_records_per_individual)
    unit = f"{rows} identical rows" if data.unit == "user" else "1 row"
    who = (f"{persons} identical persons (code 0 of every attribute), D' adds one person "
           f"differing on each of {len(domain)} attributes ({unit})") if extra == "differs" \
        else (f"{persons} identical persons (the last code of every attribute, {unit} each), "
              "D' adds one more")
    return Pair(without, with_person, Canary("worst_case", other, rows, f"worst_case: D = {who}"),
                private=False)


def neighbouring_pair(data: Dataset, neighbours: str, canary: str,
                      persons: int = WORST_CASE_PERSONS, extra: str = "differs") -> Pair:
    """The pair ``audit.neighbours`` names (``canary``: with strategy ``canary``;
    ``worst_case``: ``persons`` in D, the extra person ``extra``)."""
    check_neighbours(neighbours, persons, extra)
    if neighbours == "worst_case":
        return worst_case_pair(data, persons, extra)
    person = build_canary(data, canary)
    return Pair(data, with_canary(data, person), person, private=True)
