"""Warnings about a dataset, said once per sweep before it starts (warnings, not refusals).

- **few persons**: fewer than :data:`MIN_PERSONS` persons: at any useful epsilon the noise
  swamps every statistic, so the ranks say little;
- **huge domain**: a column whose every 2-way marginal exceeds :data:`MAX_PAIR_CELLS` cells
  (adaptive_grid's default ``max_cells``; AIM and MST size their marginals against similar
  memory caps), so the mechanisms' caps trim its marginals away;
- **one bin**: a numeric column that puts more than :data:`ONE_BIN_SHARE` of the rows in one
  bin: its marginals are nearly constant and say little (e.g. equal-width bins over a range
  stretched by outliers). Not for the taxi challenge's datasets, whose bins the competition
  fixes (its tips and miles bins hold most trips in one bin by design; the fix would not apply);
- **mostly missing**: a categorical or datetime column of a *proposed* schema (one with a
  ``proposal`` block) that leaves more than :data:`ONE_BIN_SHARE` of the rows in its missing
  code: the proposal kept almost nothing of it (few categories above the DP threshold, the
  rest set missing; a text column typed as a date). A column whose values are skewed (93% "no",
  7% "yes") is the data, not the schema, so it is not warned about.

Each fix names what would change the schema for the better (a public hint of the column's
range or categories, a public sample, a larger proposal epsilon, more categories, editing its
``bins``), never the command that made the schema again.

The size, one-bin and one-code checks read the private data and tell the operator's console
one bit each (as ``check_delta`` does); the messages name the column and the fix, never a count
of private rows or a value. A bit is still a fact of the private table (one person can set it),
so these warnings and what loading changed (``Dataset.notes``) are :func:`private_warnings`:
printed on the operator's console, labelled :data:`PRIVATE_VIEW` (the data owner's private
view), and never written to the sweep's plan file, MLflow or the board. The domain check uses
the schema only (public, or a DP proposal's release): :func:`public_warnings` may be written.
"""

from __future__ import annotations

import numpy as np

from dp_arena.data.datasets import Dataset, count_persons, is_challenge_dataset
from dp_arena.data.schema import encode_column

MIN_PERSONS = 100
MAX_PAIR_CELLS = 10_000
ONE_BIN_SHARE = 0.9
#: Said with every warning computed on the private table (module docstring).
PRIVATE_VIEW = ("computed on the private table: the data owner's private view, shown on this "
                "console only, never written")


def few_persons(data: Dataset) -> list[str]:
    if count_persons(data) >= MIN_PERSONS:
        return []
    return [(f"dataset {data.name!r} has fewer than {MIN_PERSONS} persons: DP noise will "
             "swamp its statistics and the ranks mean little (fix: use more data, or read the "
             "board as a smoke test only)")]


def huge_domains(data: Dataset) -> list[str]:
    domain = data.schema.domain()
    out = []
    for name, size in domain.items():
        others = [s for n, s in domain.items() if n != name]
        # the column is the cause when it alone is past sqrt(cap) (not its small partners)
        if others and size * min(others) > MAX_PAIR_CELLS and size ** 2 > MAX_PAIR_CELLS:
            out.append(f"column {name!r} has {size:,} codes: every 2-way marginal with it "
                       f"exceeds {MAX_PAIR_CELLS:,} cells, so the mechanisms' memory caps trim "
                       "it (fix: coarsen it: fewer values or bins, a coarser datetime "
                       f"resolution, or dataset.drop=[{name}])")
    return out


def one_bin_columns(data: Dataset) -> list[str]:
    if is_challenge_dataset(data.name):
        return []
    out = []
    for col in data.schema.columns:
        if col.kind != "numeric" or not len(data.private):
            continue
        codes = encode_column(col, data.private[col.name])
        if np.bincount(codes).max() > ONE_BIN_SHARE * len(codes):
            out.append(f"numeric column {col.name!r} puts more than {ONE_BIN_SHARE:.0%} of the "
                       "rows in one bin, so its marginals say little (fix: quantile bin edges: "
                       "edit its 'bins' in the schema, or propose it again with its range as a "
                       f"public hint (dp-arena-schema DATA --hint '{col.name}={{kind: numeric, "
                       "min: A, max: B}'), from a public sample (--public FILE), or with a "
                       "larger --epsilon)")
    return out


def one_code_columns(data: Dataset) -> list[str]:
    if data.schema_source is None or is_challenge_dataset(data.name) or not len(data.private):
        return []
    out = []
    for col in data.schema.columns:
        if col.kind not in ("categorical", "datetime") or col.name not in data.private:
            continue
        codes = encode_column(col, data.private[col.name])
        if not col.allow_missing or \
                np.sum(codes == col.present_size) <= ONE_BIN_SHARE * len(codes):
            continue
        if col.kind == "categorical":
            fix = ("more categories (dp-arena-schema --max-categories N, or a larger --epsilon: "
                   "the threshold for keeping a category falls as epsilon grows), its "
                   f"categories as a public hint (--hint '{col.name}={{values: [...]}}'), or a "
                   "public sample (--public FILE)")
        else:
            fix = (f"its kind, date format or range as a public hint (--hint '{col.name}="
                   "{kind: datetime, format: ..., min: ..., max: ...}', or kind: categorical "
                   "for text), or a public sample (--public FILE)")
        out.append(f"{col.kind} column {col.name!r} of the proposed schema leaves more than "
                   f"{ONE_BIN_SHARE:.0%} of the rows missing in it (values the schema does not "
                   "hold are set missing when the data is loaded), so it keeps almost nothing "
                   f"of the column (fix: {fix}; or dataset.drop=[{col.name}])")
    return out


def dataset_warnings(data: Dataset) -> list[str]:
    """Every warning for ``data`` (module docstring), then what loading changed."""
    return [*public_warnings(data), *private_warnings(data)]


def public_warnings(data: Dataset) -> list[str]:
    """The warnings from the schema alone: they may be written (the plan's notes)."""
    return huge_domains(data)


def private_warnings(data: Dataset) -> list[str]:
    """The warnings that read the private table, and what loading changed: for the owner's
    console only (:data:`PRIVATE_VIEW`)."""
    return [*few_persons(data), *one_bin_columns(data), *one_code_columns(data), *data.notes]
