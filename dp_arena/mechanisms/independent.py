"""``independent``: noisy 1-way marginals, sampled independently (a DP baseline).

Privacy argument
----------------
Private: every attribute of ``data.private``. Each person contributes at most ``b`` rows:
``b = 1`` for record-level data; for user-level data each person's rows are clipped to
``b = max_contrib`` rows chosen at random (default: the dataset's
``max_records_per_individual``). Adding or removing one person then changes each 1-way
histogram by at most ``b`` in L1 and in L2 norm.

Releases: one noisy histogram per attribute (``d`` releases, all bins including zeros).
- ``noise=gaussian`` (default when delta > 0): sigma is calibrated so the ``d`` Gaussian
  releases of L2 sensitivity ``b`` compose to the budget (a hair below, never above) under the
  run's accountant.
- ``noise=laplace`` (default when delta = 0): each histogram gets epsilon/d, scale ``b d / eps``.
Everything after the releases (clamping, normalising, the row count, sampling, decoding
numeric bins with public values, person ids from the public trips-per-person distribution)
is post-processing.

The synthetic row count is the mean over attributes of the noisy histogram totals (an
unbiased estimate of the clipped row count), or a public figure when that estimate's noise
(known from the calibration) is large next to it, clipped to public bounds
(:mod:`dp_arena.mechanisms.row_count`: at least 1,000 rows, at most the schema's ``max_records`` or
1,000,000), so it is never read from the private data and a tiny epsilon yields neither a
one-row table nor a million rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np
import pandas as pd

from dp_arena.data.datasets import Dataset
from dp_arena.errors import ConfigError
from dp_arena.params import Constraint, OneOf
from dp_arena.privacy.accounting import Budget, gaussian_sigma, laplace_scale
from dp_arena.privacy.release import Releaser

from .base import Mechanism, bounded_private, contribution_bound, finish
from .row_count import bounded_row_count


@dataclass
class Independent(Mechanism):
    max_contrib: int | None = None
    noise: Literal["auto", "gaussian", "laplace"] = "auto"
    name: ClassVar[str] = "independent"
    parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "noise": [OneOf("auto", "gaussian", "laplace")]}

    def fit_sample(self, data: Dataset, budget: Budget, release: Releaser,
                   rng: np.random.Generator) -> pd.DataFrame:
        schema = data.schema
        bound = contribution_bound(data, self.max_contrib)
        private = bounded_private(data, bound, rng)
        codes = schema.encode(private)
        kind = self._noise_kind(budget)
        noisy = measure_one_way(codes, schema.domain(), bound, kind, budget, release)
        release.done()
        scale = noise_scale(len(noisy), bound, kind, budget, release.accountant)
        n_rows = bounded_row_count(float(np.mean([h.sum() for h in noisy.values()])), data,
                                   budget.epsilon, std=mean_total_std(schema.domain(), scale,
                                                                      kind))
        return sample_independent(noisy, n_rows, data, rng)

    def _noise_kind(self, budget: Budget) -> str:
        if self.noise == "auto":
            return "gaussian" if budget.delta > 0 else "laplace"
        if self.noise == "gaussian" and budget.delta == 0:
            raise ConfigError("gaussian noise needs delta > 0",
                              "set privacy.delta > 0 or mechanism.noise=laplace")
        return self.noise


def measure_one_way(codes: pd.DataFrame, domain: dict[str, int], sensitivity: float,
                    kind: str, budget: Budget, release: Releaser) -> dict[str, np.ndarray]:
    """Noisy histogram of every column of ``codes``, each one release (Gaussian or Laplace)."""
    scale = noise_scale(len(domain), sensitivity, kind, budget, release.accountant)
    noisy = {}
    for col, size in domain.items():
        counts = np.bincount(codes[col].to_numpy(), minlength=size).astype(float)
        draw = release.gaussian if kind == "gaussian" else release.laplace
        noisy[col] = draw(f"1-way marginal {col}", counts, sensitivity, scale,
                          query=f"marginal {col}", note=f"{size} bins")
    return noisy


def noise_scale(d: int, sensitivity: float, kind: str, budget: Budget, accountant: str) -> float:
    """The noise scale of each of ``d`` one-way histograms: Gaussian sigma so the ``d``
    releases compose to the budget under ``accountant``, or the Laplace scale of epsilon/d."""
    if kind == "gaussian":
        return gaussian_sigma(d, sensitivity, budget, accountant)  # type: ignore[arg-type]
    return laplace_scale(budget.epsilon / d, sensitivity)


def mean_total_std(domain: dict[str, int], scale: float, kind: str) -> float:
    """Standard deviation of the noise in the mean over attributes of the noisy histogram
    totals (each total sums ``size`` cells of variance ``scale^2``, ``2 scale^2`` for Laplace).
    Public: the calibrated scale and the domain sizes."""
    per_cell = scale**2 * (1.0 if kind == "gaussian" else 2.0)
    return math.sqrt(per_cell * sum(domain.values())) / len(domain)


def sample_independent(noisy: dict[str, np.ndarray], n_rows: int, data: Dataset,
                       rng: np.random.Generator) -> pd.DataFrame:
    """``n_rows`` synthetic rows, each column drawn independently from its noisy histogram,
    decoded to the schema's values (numeric bins with public values), with person ids from
    the public trips-per-person distribution where the data has an id column."""
    return finish(data, pd.DataFrame({c: sample_codes(h, n_rows, rng)
                                      for c, h in noisy.items()}), rng)


def sample_codes(noisy_counts: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """Codes drawn from a noisy histogram, clamped at 0 (uniform if nothing is left)."""
    p = np.clip(noisy_counts, 0, None)
    p = p / p.sum() if p.sum() > 0 else np.full(len(p), 1 / len(p))
    return rng.choice(len(p), size=n, p=p)
