"""Non-private reference points every leaderboard needs.

- ``resample``: the ceiling. Draws private rows (persons, for user-level data) with replacement.
  NOT differentially private
  (epsilon = inf); its synthetic data *is* private data, so the runner does not log it unless
  the user opts in.
- ``subsample``: a ``fraction`` of the private rows (persons) drawn without replacement, NOT
  differentially private either: the field's "as good as a k% sample" yardstick (NIST's SDNist
  reports score 1% .. 50% subsamples beside every deidentified table).
- ``public_only``: releases a sample of the public part. Spends nothing (epsilon = 0): the
  public part is, by definition, already released.
- ``uniform``: the floor. Every attribute uniform over its domain, independent of any data.
  Its row count comes from the public part; without one it reads the private row count, a
  (small) non-private fact the runner records in the run's tags.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from dp_arena.data.datasets import Dataset
from dp_arena.errors import ConfigError, NotApplicable
from dp_arena.privacy.accounting import Budget
from dp_arena.privacy.release import Releaser

from .base import Mechanism, Reference, assign_ids

#: The tag a sample row's runs carry: its share of the private rows (the board reads it as
#: :data:`dp_arena.report.record.SAMPLE_FRACTION_TAG`, the same name; a test holds them equal).
SAMPLE_FRACTION_TAG = "sample_fraction"


@dataclass
class Resample(Mechanism):
    """Private data drawn with replacement: rows for record-level data; whole persons (all
    their rows, so each person's sequence stays intact) for user-level data, a repeated
    person getting a fresh id. ``n_rows`` (default: the private size) caps the rows."""

    n_rows: int | None = None
    name: ClassVar[str] = "resample"
    reference: ClassVar[Reference | None] = "ceiling"

    def fit_sample(self, data: Dataset, budget: Budget, release: Releaser,
                   rng: np.random.Generator) -> pd.DataFrame:
        n = self.n_rows or len(data.private)
        if data.unit == "record":
            return data.private.iloc[rng.integers(0, len(data.private), size=n)].reset_index(drop=True)
        return resample_persons(data, n, rng)


@dataclass
class Subsample(Mechanism):
    """``fraction`` of the private rows (of the persons, with all their rows, for user-level
    data) drawn without replacement, in their original order."""

    fraction: float = 0.1
    name: ClassVar[str] = "subsample"
    reference: ClassVar[Reference | None] = "ceiling"

    def fit_sample(self, data: Dataset, budget: Budget, release: Releaser,
                   rng: np.random.Generator) -> pd.DataFrame:
        return subsample(data, float(self.fraction), rng)

    def setting_tags(self) -> dict[str, str]:
        """The fraction, read by the board's "as good as a k% sample" column."""
        return {SAMPLE_FRACTION_TAG: f"{float(self.fraction):g}"}


def subsample(data: Dataset, fraction: float, rng: np.random.Generator) -> pd.DataFrame:
    """``round(fraction * n)`` of the ``n`` private persons (at least one), all their rows."""
    if not 0 < fraction <= 1:
        raise ConfigError(f"mechanism.fraction must be in (0, 1] (got {fraction})",
                          "use e.g. mechanism.fraction=0.1 for a 10% sample")
    private = data.private
    if data.unit == "record":
        keep = rng.choice(len(private), max(1, round(fraction * len(private))), replace=False)
        return private.iloc[np.sort(keep)].reset_index(drop=True)
    ids = private[data.id_column].unique()
    chosen = rng.choice(ids, max(1, round(fraction * len(ids))), replace=False)
    return private[private[data.id_column].isin(chosen)].reset_index(drop=True)


def resample_persons(data: Dataset, n_rows: int, rng: np.random.Generator) -> pd.DataFrame:
    """Persons drawn with replacement until ``n_rows`` rows; repeats get unused ids."""
    id_col = data.id_column
    private = data.private
    codes, ids = pd.factorize(private[id_col])
    order = np.argsort(codes, kind="stable")
    starts = np.searchsorted(codes[order], np.arange(len(ids)))
    sizes = np.bincount(codes, minlength=len(ids))
    draws = rng.integers(0, len(ids), size=len(ids))
    while sizes[draws].sum() < n_rows:
        draws = np.concatenate([draws, rng.integers(0, len(ids), size=len(ids))])
    draws = draws[: int(np.searchsorted(np.cumsum(sizes[draws]), n_rows)) + 1]
    rows = np.concatenate([order[starts[d]: starts[d] + sizes[d]] for d in draws])
    out = private.iloc[rows].reset_index(drop=True)
    first = ~pd.Series(draws).duplicated().to_numpy()
    col = data.schema[id_col]  # type: ignore[index]
    taken = set(ids.tolist())
    fresh_needed = int((~first).sum())
    pool = np.setdiff1d(rng.choice(np.arange(int(col.min), int(col.max) + 1),  # type: ignore[arg-type]
                                   size=min(2 * fresh_needed + len(taken), int(col.max - col.min + 1)),
                                   replace=False), list(taken))[:fresh_needed]
    new_ids = ids.to_numpy()[draws].copy()
    new_ids[~first] = pool
    out[id_col] = np.repeat(new_ids, sizes[draws])
    return out.iloc[:n_rows]


@dataclass
class PublicOnly(Mechanism):
    """The public part (or ``n_rows`` of it, drawn without replacement when fewer)."""

    n_rows: int | None = None
    name: ClassVar[str] = "public_only"
    reference: ClassVar[Reference | None] = "public"

    def check_applicable(self, data: Dataset) -> None:
        super().check_applicable(data)
        if data.public is None or len(data.public) == 0:
            raise NotApplicable(f"public_only needs a public part, and dataset {data.name!r} "
                                "has none", "set dataset.public_fraction (e.g. 0.5) or "
                                "dataset.public_path, or drop public_only from the sweep")

    def fit_sample(self, data: Dataset, budget: Budget, release: Releaser,
                   rng: np.random.Generator) -> pd.DataFrame:
        self.check_applicable(data)
        assert data.public is not None
        n = self.n_rows or len(data.public)
        rows = rng.choice(len(data.public), size=n, replace=n > len(data.public))
        return data.public.iloc[np.sort(rows)][data.schema.names].reset_index(drop=True)


@dataclass
class Uniform(Mechanism):
    """Every attribute drawn uniformly from its domain, independently of any data."""

    n_rows: int | None = None
    name: ClassVar[str] = "uniform"
    reference: ClassVar[Reference | None] = "floor"

    def row_count(self, data: Dataset) -> int:
        if self.n_rows:
            return int(self.n_rows)
        return len(data.public) if data.public is not None else len(data.private)

    def fit_sample(self, data: Dataset, budget: Budget, release: Releaser,
                   rng: np.random.Generator) -> pd.DataFrame:
        n = self.row_count(data)
        schema = data.schema
        codes = pd.DataFrame({c: rng.integers(0, schema[c].size, size=n)
                              for c in schema.attributes})
        out = schema.decode(codes, rng)
        ids = assign_ids(n, data, rng)
        if ids is not None:
            out.insert(0, schema.id_column, ids)  # type: ignore[arg-type]
        return out[schema.names]
