"""``range_query``: relative error of random conjunctive range queries over ordinal columns.

Algorithms
----------
- **Ordinal columns** (:func:`ordinal_columns`): numeric and datetime columns by their scoring
  bin codes, and categorical columns whose values are all integers (their codes follow the
  order the schema lists them in); text categoricals and the id column are skipped. A column's
  missing code (``allow_missing``) is never inside a range: a row with a missing value matches
  no range over that column.
- **Workload** (:func:`make_range_workload`, public randomness): ``n_queries`` queries, each
  over ``1..max_attributes`` distinct ordinal columns (size uniform, columns a uniform subset),
  each column restricted to a contiguous code interval ``[lo, hi]`` whose ends are two codes
  drawn uniformly (with replacement) from its present codes and sorted. Drawn from the schema
  and ``seed`` only, so every mechanism faces the same queries.
- **Answers** (:func:`answer_range_queries`), vectorised over queries: per column, the
  cumulative bit sets ``le[v]`` = the rows whose code is ``<= v`` (prefix unions over the
  codes, a cumulative sum in bit-set form); the rows of an interval are
  ``le[hi] & ~le[lo - 1]``, a query's rows the AND of its intervals' rows and its answer their
  popcount, for a block of queries at a time. (Dense joint prefix-sum tables would need up to
  the product of three domain sizes cells per attribute triple; the bit sets need
  ``sum of domain sizes x rows / 8`` bytes once.)
- **Error**: the synthetic answer is scaled to the real table's size
  (``Q(D~) * |D| / |D~|``, :func:`dp_arena.metrics.count_query.rescaled_counts`) and the relative
  error is ``|Q(D~) - Q(D)| / max(Q(D), s)`` with ``s = sanity_fraction * |D|``, the small-count
  rule of ``count_query`` (:func:`dp_arena.metrics.count_query.relative_errors`).

Scores: ``mean_rel_error`` (headline, lower is better), ``median_rel_error``,
``p90_rel_error``.

Privacy: the scores are computed on the private training part (``data.private``) without
noise, like every score of the harness; they are logged as scores, not released by a
mechanism. The workload depends on public facts only (schema, settings). No table or figure is
returned, so nothing is declared public; messages name columns and settings, never a count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from dp_arena.data.datasets import Dataset
from dp_arena.data.schema import Column, Schema
from dp_arena.data.taxi.sequences import pack_bits, words_for
from dp_arena.params import Constraint, Interval

from .base import MetricResult, SharedReference
from .count_query import CELLS_PER_STEP, popcount, relative_errors, rescaled_counts

PAD = -1


def is_ordinal(column: Column) -> bool:
    """Whether a column's codes are ordered: numeric and datetime (bins), and categorical
    columns whose every value is an integer (not a bool)."""
    if column.kind in ("numeric", "datetime"):
        return True
    if column.kind != "categorical":
        return False
    return all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
               for v in column.values or ())


def ordinal_columns(schema: Schema) -> list[str]:
    """The attributes range queries run over (:func:`is_ordinal`), in schema order."""
    return [name for name in schema.attributes if is_ordinal(schema[name])]


@dataclass(frozen=True)
class RangeWorkload:
    """Query ``q`` is the conjunction of ``lo[q, j] <= code of column attributes[q, j] <=
    hi[q, j]`` for ``j < sizes[q]`` (``-1`` after that); attributes index the ordinal columns."""

    attributes: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    sizes: np.ndarray

    def __len__(self) -> int:
        return len(self.sizes)


def make_range_workload(n_queries: int, max_attributes: int, present_sizes: list[int],
                        seed: int) -> RangeWorkload:
    """Seeded random range queries over columns with ``present_sizes[a]`` ordered codes (see
    the module docstring); ``max_attributes`` is capped at the number of columns."""
    n_columns = len(present_sizes)
    width = max(1, min(max_attributes, n_columns))
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, width + 1, size=n_queries).astype(np.int64)
    keys = rng.random((n_queries, n_columns))
    attributes = np.argsort(keys, axis=1)[:, :width].astype(np.int64)
    domain = np.asarray(present_sizes, dtype=np.int64)[attributes]
    ends = np.floor(rng.random((n_queries, width, 2)) * domain[..., None]).astype(np.int64)
    lo, hi = ends.min(axis=2), ends.max(axis=2)
    unused = np.arange(width)[None, :] >= sizes[:, None]
    return RangeWorkload(np.where(unused, PAD, attributes), np.where(unused, PAD, lo),
                         np.where(unused, PAD, hi), sizes)


def cumulative_bitsets(codes: np.ndarray, present_sizes: list[int]) -> tuple[np.ndarray,
                                                                             np.ndarray]:
    """``(table, offsets)``: row ``offsets[a] + v + 1`` of ``table`` is the bit set over the
    rows of ``codes`` (``n x n_columns``) whose column-``a`` code is ``<= v`` and row
    ``offsets[a]`` the empty set; the last row of ``table`` holds every row."""
    n = codes.shape[0]
    offsets = np.concatenate([[0], np.cumsum(np.asarray(present_sizes) + 1)]).astype(np.int64)
    table = np.zeros((int(offsets[-1]) + 1, words_for(n)), dtype=np.uint64)
    for a, size in enumerate(present_sizes):
        below = codes[:, a][None, :] <= np.arange(size)[:, None]
        table[offsets[a] + 1: offsets[a] + 1 + size] = pack_bits(below)
    table[-1] = pack_bits(np.ones((1, n), dtype=bool))[0]
    return table, offsets[:-1]


def answer_range_queries(codes: np.ndarray, present_sizes: list[int],
                         queries: RangeWorkload) -> np.ndarray:
    """For every query, the number of rows of ``codes`` (``n x n_columns`` codes of the
    ordinal columns) inside all its intervals."""
    codes = np.asarray(codes, dtype=np.int64).reshape(len(codes), len(present_sizes))
    table, offsets = cumulative_bitsets(codes, present_sizes)
    used = queries.attributes >= 0
    base = offsets[np.where(used, queries.attributes, 0)]
    upper = np.where(used, base + queries.hi + 1, len(table) - 1)  # pad: every row
    lower = np.where(used, base + queries.lo, 0)  # pad: the empty set (offsets[0] = 0)
    out = np.zeros(len(queries), dtype=np.int64)
    step = max(1, CELLS_PER_STEP // max(table.shape[1], 1))
    for start in range(0, len(queries), step):
        stop = min(start + step, len(queries))
        acc = table[upper[start:stop, 0]] & ~table[lower[start:stop, 0]]
        for j in range(1, upper.shape[1]):
            acc &= table[upper[start:stop, j]] & ~table[lower[start:stop, j]]
        out[start:stop] = popcount(acc).sum(axis=1)
    return out


def range_errors(real_codes: np.ndarray, synthetic_codes: np.ndarray, present_sizes: list[int],
                 queries: RangeWorkload, sanity_fraction: float) -> np.ndarray:
    """Relative error of every query: synthetic answers scaled to the real table's size,
    ``|Q(D~) - Q(D)| / max(Q(D), sanity_fraction * |D|)``."""
    true = answer_range_queries(real_codes, present_sizes, queries)
    return errors_against(true, len(real_codes), synthetic_codes, present_sizes, queries,
                          sanity_fraction)


def errors_against(true: np.ndarray, n_real: int, synthetic_codes: np.ndarray,
                   present_sizes: list[int], queries: RangeWorkload,
                   sanity_fraction: float) -> np.ndarray:
    """:func:`range_errors` given the real answers ``true`` of a table of ``n_real`` rows."""
    noisy = rescaled_counts(answer_range_queries(synthetic_codes, present_sizes, queries),
                            len(synthetic_codes), n_real)
    return relative_errors(true, noisy, sanity_fraction * n_real)


@dataclass(frozen=True)
class RealAnswers:
    """The real side of the range queries: the ordinal columns, their present sizes, the
    workload, the real table's answers and its row count (private, like the scores)."""

    columns: tuple[str, ...]
    present_sizes: list[int]
    queries: RangeWorkload
    answers: np.ndarray
    n_real: int


@dataclass
class RangeQuery(SharedReference):
    """Random conjunctive range queries (module docstring). Settings: ``n_queries`` (1000),
    ``max_attributes`` (3), ``sanity_fraction`` (0.001 of the real rows, as count_query),
    ``seed`` (0)."""

    n_queries: int = 1000
    max_attributes: int = 3
    sanity_fraction: float = 0.001
    seed: int = 0
    name: ClassVar[str] = "range_query"
    headline: ClassVar[str] = "mean_rel_error"
    lower_is_better: ClassVar[bool] = True
    requires: ClassVar[str] = ("an ordinal column (numeric, datetime, or categorical with "
                               "integer values)")
    public_outputs: ClassVar[frozenset[str]] = frozenset()
    parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "n_queries": [Interval(int, 1)], "max_attributes": [Interval(int, 1)],
        "sanity_fraction": [Interval(float, 0, closed="neither")], "seed": [Interval(int, 0)]}

    def applies_to(self, data: Dataset) -> bool:
        return bool(ordinal_columns(data.schema))

    def reference(self, data: Dataset) -> RealAnswers:
        """The workload and the real table's answers (the same for every synthetic table)."""
        columns = ordinal_columns(data.schema)
        present = [data.schema[c].present_size for c in columns]
        queries = make_range_workload(self.n_queries, self.max_attributes, present, self.seed)
        real = data.schema.encode(data.private)[columns].to_numpy()
        return RealAnswers(tuple(columns), present, queries,
                           answer_range_queries(real, present, queries), len(real))

    def score_with(self, reference: RealAnswers, data: Dataset,
                   synthetic: pd.DataFrame) -> MetricResult:
        columns, present = list(reference.columns), reference.present_sizes
        fake = data.schema.encode(synthetic)[columns].to_numpy() if len(synthetic) else \
            np.zeros((0, len(columns)), dtype=np.int64)
        errors = errors_against(reference.answers, reference.n_real, fake, present,
                                reference.queries, self.sanity_fraction)
        return MetricResult(scores={"mean_rel_error": float(np.mean(errors)),
                                    "median_rel_error": float(np.median(errors)),
                                    "p90_rel_error": float(np.quantile(errors, 0.9))})
