"""``kmarginal``: total variation distance between k-way marginals, for any schema.

For every set of ``k`` attributes (all of them when there are at most ``max_marginals`` sets,
otherwise a seeded sample of ``max_marginals``), both tables are discretized with the schema
(numeric columns through their bins), the k-way histograms normalised, and
``TVD = 0.5 * sum |p - q|`` taken. ``score = 1000 * (1 - mean TVD)`` (1000 = identical
marginals, 0 = disjoint support), like the challenge's 0..1000 scale.

Outputs: the scores are computed on the private data; the table ``kmarginal_k<k>`` (TVD per
marginal) is private: each TVD is a function of a private marginal. No output is public.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from dp_arena.data.datasets import Dataset
from dp_arena.errors import ConfigError

from .base import Metric, MetricResult


@dataclass
class KMarginal(Metric):
    k: int = 2
    max_marginals: int = 100
    seed: int = 0
    name: ClassVar[str] = "kmarginal"
    headline: ClassVar[str] = "score"
    other_direction: ClassVar[tuple[str, ...]] = ("*_tvd",)  # distances: lower is better
    public_outputs: ClassVar[frozenset[str]] = frozenset()  # the TVD table is private

    def score(self, data: Dataset, synthetic: pd.DataFrame) -> MetricResult:
        schema = data.schema
        attrs = schema.attributes
        if not 1 <= self.k <= len(attrs):
            raise ConfigError(f"metrics.kmarginal.k must be in 1..{len(attrs)} (got {self.k})",
                              "choose k no larger than the number of attributes")
        sets = choose_marginals(attrs, self.k, self.max_marginals, self.seed)
        real, synth = schema.encode(data.private), schema.encode(synthetic)
        domain = schema.domain()
        tvds = [marginal_tvd(real, synth, cols, domain) for cols in sets]
        table = pd.DataFrame({"marginal": [" x ".join(c) for c in sets], "tvd": tvds})
        mean_tvd = float(np.mean(tvds))
        return MetricResult(scores={"score": 1000.0 * (1.0 - mean_tvd), "mean_tvd": mean_tvd,
                                    "max_tvd": float(np.max(tvds))},
                            tables={f"kmarginal_k{self.k}": table})


def choose_marginals(attrs: list[str], k: int, max_marginals: int,
                     seed: int) -> list[tuple[str, ...]]:
    """All k-subsets of ``attrs`` if there are at most ``max_marginals``, else a seeded sample."""
    total = math.comb(len(attrs), k)
    if total <= max_marginals:
        return list(itertools.combinations(attrs, k))
    rng = np.random.default_rng(seed)
    chosen: set[tuple[str, ...]] = set()
    while len(chosen) < max_marginals:
        idx = np.sort(rng.choice(len(attrs), size=k, replace=False))
        chosen.add(tuple(attrs[i] for i in idx))
    return sorted(chosen)


def marginal_counts(codes: pd.DataFrame, cols: tuple[str, ...],
                    domain: dict[str, int]) -> np.ndarray:
    """Flattened histogram of the joint codes of ``cols`` (cells in row-major order)."""
    sizes = [domain[c] for c in cols]
    keys = np.ravel_multi_index([codes[c].to_numpy() for c in cols], sizes)
    return np.bincount(keys, minlength=int(np.prod(sizes)))


def marginal_tvd(real: pd.DataFrame, synth: pd.DataFrame, cols: tuple[str, ...],
                 domain: dict[str, int]) -> float:
    """Total variation distance between the normalised ``cols`` marginals (1 if one is empty)."""
    p, q = marginal_counts(real, cols, domain), marginal_counts(synth, cols, domain)
    if p.sum() == 0 or q.sum() == 0:
        return 1.0
    return 0.5 * float(np.abs(p / p.sum() - q / q.sum()).sum())
