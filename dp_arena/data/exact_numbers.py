"""Ranges and quantile bin edges read exactly, for public data (a public sample, or the
``--from-private`` opt-in), in the shape :mod:`dp_arena.data.dp_numbers` releases them by DP.

- :func:`exact_numeric_range`: min, max, the ``i / bins`` quantiles; a value that two or more
  quantiles fall on (a point mass) gets its own bin (edges: it and the next value above);
- :func:`bin_shares`: each bin's share of the values, left-closed bins as the schema codes
  them. Exact: for public data and benchmarks, never for a release of private data.
"""

from __future__ import annotations

import numpy as np

from dp_arena.data.dp_numbers import NumericRange, interior
from dp_arena.errors import ConfigError, DPArenaError


def bin_shares(values: np.ndarray, numeric_range: NumericRange) -> np.ndarray:
    """Each bin's share of ``values`` (clipped into the range, left-closed bins as the
    schema codes them). Exact: for public data and for benchmarks, never for a release."""
    v = np.clip(np.asarray(values, dtype=float), numeric_range.min, numeric_range.max)
    codes = np.searchsorted(np.asarray(numeric_range.edges, dtype=float), v, side="right")
    return np.bincount(codes, minlength=len(numeric_range.edges) + 1) / max(len(v), 1)


def exact_numeric_range(values: np.ndarray, bins: int) -> NumericRange:
    """Min, max and the exact ``i / bins`` quantiles of public ``values``; a value that two
    or more quantiles fall on gets its own bin (edges: it and the next value above it)."""
    v = np.asarray(values, dtype=float).ravel()
    v = np.sort(v[np.isfinite(v)])
    if not len(v):
        raise DPArenaError("the column has no finite values to take a range from",
                           "give its range as a hint, or leave the column out")
    if bins < 2:
        raise ConfigError("bins must be >= 2", "use e.g. bins=10")
    qs = np.quantile(v, np.arange(1, bins) / bins)
    edges = [float(q) for q in qs]
    repeated, counts = np.unique(qs, return_counts=True)
    for q in repeated[counts >= 2]:
        above = v[np.searchsorted(v, q, side="right"):]
        if len(above):
            edges.append(float(above[0]))
    lo, hi = float(v[0]), float(v[-1])
    cut = NumericRange(lo, hi, interior(edges, lo, hi), 1.0)
    return NumericRange(lo, hi, cut.edges, float(bin_shares(v, cut).max()), (lo, hi))
