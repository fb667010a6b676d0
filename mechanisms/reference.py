"""Non-private reference points every leaderboard needs.

- ``resample``: the ceiling. Draws private rows with replacement. NOT differentially private
  (epsilon = inf); its synthetic data *is* private data, so the runner does not log it unless
  the user opts in.
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

from harness.data import Dataset
from harness.errors import ConfigError
from harness.privacy import Budget, Ledger

from .base import Mechanism, Reference, assign_ids


@dataclass
class Resample(Mechanism):
    """Private rows drawn with replacement (``n_rows`` default: as many as the private part)."""

    n_rows: int | None = None
    name: ClassVar[str] = "resample"
    reference: ClassVar[Reference | None] = "ceiling"

    def fit_sample(self, data: Dataset, budget: Budget, ledger: Ledger,
                   rng: np.random.Generator) -> pd.DataFrame:
        n = self.n_rows or len(data.private)
        rows = rng.integers(0, len(data.private), size=n)
        return data.private.iloc[rows].reset_index(drop=True)


@dataclass
class PublicOnly(Mechanism):
    """The public part (or ``n_rows`` of it, drawn without replacement when fewer)."""

    n_rows: int | None = None
    name: ClassVar[str] = "public_only"
    reference: ClassVar[Reference | None] = "public"

    def fit_sample(self, data: Dataset, budget: Budget, ledger: Ledger,
                   rng: np.random.Generator) -> pd.DataFrame:
        if data.public is None:
            raise ConfigError(f"public_only needs a public part, and dataset {data.name!r} "
                              "has none", "set dataset.public_fraction (e.g. 0.5) or "
                              "dataset.public_path, or drop public_only from the sweep")
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

    def fit_sample(self, data: Dataset, budget: Budget, ledger: Ledger,
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
