"""The Duke report's n_B study: how many records a leaf needs for its noisy proportion to be
useful (section 5 of the report, its Figures 1-2). Pure functions of public settings; no data.

Model
-----
A leaf holds ``n`` records, each with label ``i`` with probability ``p`` (the report's
``p_i0``), so its true count is ``X ~ Binomial(n, p)``; the release is ``Y = X + L`` with
``L ~ Laplace(scale)`` (the report's ``lambda``, read here as the Laplace *scale* ``b``: one
tree of epsilon ``eps_tree`` and sensitivity 1 has ``b = 1 / eps_tree``; if a text gives the
rate instead, pass ``1 / lambda``). The leaf's noisy proportion is ``Y / n``.

Algorithms
----------
- :func:`laplace_binomial_cdf`: the exact CDF of ``Y``, ``sum_k P(X = k) F_L(y - k)`` over the
  binomial support (mass below 1e-14 dropped).
- :func:`noisy_share_interval`: the central ``confidence`` interval of ``Y / n``, its two
  quantiles solved on that CDF (Brent's method).
- :func:`normal_interval_width`: the normal approximation ``2 z sqrt(p (1 - p) / n +
  2 b^2 / n^2)`` (binomial variance plus Laplace variance ``2 b^2``), for comparison.
- :func:`min_leaf_size`: the smallest ``n`` whose exact interval is at most ``width`` wide
  (doubling, then bisection on the width, which decreases in ``n`` up to the binomial's
  lattice wobble; the answer is checked to satisfy the target).
- :func:`simulated_interval`: the same interval from ``draws`` simulated leaves (the report's
  10,000-draw check).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

from harness.errors import ConfigError


@dataclass(frozen=True)
class LeafSizeStudy:
    """One row of the study: the settings, the minimum ``n``, the exact interval there, its
    normal approximation and the simulated check."""

    width: float
    confidence: float
    p: float
    scale: float
    n: int
    exact: tuple[float, float]
    normal_width: float
    simulated: tuple[float, float]


def check_study_settings(width: float, confidence: float, p: float, scale: float) -> None:
    """One clear error for a setting outside its range."""
    for name, value, ok, example in (
            ("width", width, 0 < width <= 1, "0.05"),
            ("confidence", confidence, 0 < confidence < 1, "0.95"),
            ("p_i0", p, 0 <= p <= 1, "0.5"),
            ("lambda (Laplace scale)", scale, 0 <= scale < math.inf, "1 / eps_tree, e.g. 25")):
        if not ok:
            raise ConfigError(f"n_B study: {name} out of range (got {value!r})",
                              f"e.g. {name}={example}")


def laplace_cdf(x: np.ndarray | float, scale: float) -> np.ndarray:
    """CDF of Laplace(0, ``scale``); a step at 0 when ``scale`` is 0."""
    x = np.asarray(x, dtype=float)
    if scale == 0:
        return (x >= 0).astype(float)
    return np.where(x < 0, 0.5 * np.exp(np.minimum(x, 0) / scale),
                    1.0 - 0.5 * np.exp(-np.maximum(x, 0) / scale))


def binomial_support(n: int, p: float) -> tuple[np.ndarray, np.ndarray]:
    """The counts ``k`` with non-negligible binomial mass and their probabilities."""
    lo = int(stats.binom.ppf(1e-14, n, p)) if 0 < p < 1 else (0 if p == 0 else n)
    hi = int(stats.binom.isf(1e-14, n, p)) if 0 < p < 1 else lo
    k = np.arange(max(lo - 1, 0), min(hi + 1, n) + 1)
    return k, stats.binom.pmf(k, n, p)


def laplace_binomial_cdf(y: float, n: int, p: float, scale: float) -> float:
    """``P(X + L <= y)`` for ``X ~ Binomial(n, p)`` and ``L ~ Laplace(scale)``."""
    k, pmf = binomial_support(n, p)
    return float(pmf @ laplace_cdf(y - k, scale))


def noisy_share_interval(n: int, p: float, scale: float,
                         confidence: float) -> tuple[float, float]:
    """The central ``confidence`` interval of the noisy proportion ``(X + L) / n``."""
    alpha = 1.0 - confidence
    k, _ = binomial_support(n, p)
    span = scale * math.log(2.0 / alpha) + 1.0  # the Laplace tail beyond the quantile
    low, high = float(k[0]) - span - 1.0, float(k[-1]) + span + 1.0

    def quantile(q: float) -> float:
        if scale == 0:  # the binomial's own (lattice) quantile
            return float(stats.binom.ppf(q, n, p))
        return optimize.brentq(lambda y: laplace_binomial_cdf(y, n, p, scale) - q, low, high,
                               xtol=1e-9 * max(n, 1))

    return quantile(alpha / 2) / n, quantile(1 - alpha / 2) / n


def interval_width(n: int, p: float, scale: float, confidence: float) -> float:
    """Width of :func:`noisy_share_interval`."""
    lo, hi = noisy_share_interval(n, p, scale, confidence)
    return hi - lo


def normal_interval_width(n: int, p: float, scale: float, confidence: float) -> float:
    """The normal approximation's width ``2 z sqrt(p (1 - p) / n + 2 scale^2 / n^2)``."""
    z = float(stats.norm.isf((1.0 - confidence) / 2))
    return 2.0 * z * math.sqrt(p * (1 - p) / n + 2.0 * scale ** 2 / n ** 2)


def min_leaf_size(width: float, confidence: float, p: float, scale: float,
                  n_max: int = 10_000_000) -> int:
    """The smallest leaf size ``n`` whose exact noisy-proportion interval is at most
    ``width`` wide."""
    check_study_settings(width, confidence, p, scale)

    def fits(n: int) -> bool:
        return interval_width(n, p, scale, confidence) <= width

    high = 1
    while not fits(high):
        high *= 2
        if high > n_max:
            raise ConfigError(f"n_B study: no leaf size up to {n_max} gives an interval "
                              f"{width} wide", "ask for a wider interval or a smaller scale")
    low = high // 2  # does not fit (or 0)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if fits(mid) else (mid, high)
    return high


def simulated_interval(n: int, p: float, scale: float, confidence: float, draws: int,
                       rng: np.random.Generator) -> tuple[float, float]:
    """The central interval of ``(X + L) / n`` from ``draws`` simulated leaves."""
    y = rng.binomial(n, p, size=draws) + (rng.laplace(0.0, scale, size=draws) if scale else 0.0)
    alpha = 1.0 - confidence
    lo, hi = np.quantile(y / n, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def leaf_size_study(width: float, confidence: float, p: float, scale: float,
                    draws: int = 10_000, seed: int = 0) -> LeafSizeStudy:
    """The minimum ``n`` for one setting, with its exact, normal and simulated intervals."""
    n = min_leaf_size(width, confidence, p, scale)
    return LeafSizeStudy(width, confidence, p, scale, n,
                         noisy_share_interval(n, p, scale, confidence),
                         normal_interval_width(n, p, scale, confidence),
                         simulated_interval(n, p, scale, confidence, draws,
                                            np.random.default_rng(seed)))
