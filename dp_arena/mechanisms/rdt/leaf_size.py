"""The Duke report's n_B study: how many records a leaf needs for its noisy proportion to be
useful (section 5 of the report, ``../shared/seeds/004_*.txt``, its Figures 1-2). Pure
functions of public settings; no data.

Model
-----
A leaf holds ``n`` records, each with label ``i`` with probability ``p`` (the report's
``p_i0``), so its true count is ``X ~ Binomial(n, p)``; the release is ``Y = X + L`` with
``L ~ Laplace(b)``. The report names the Laplace parameter ``lambda = epsilon / Delta f`` (a
rate: one tree of epsilon ``eps_tree`` and sensitivity ``Delta f = 1`` has ``lambda =
eps_tree``), so the Laplace *scale* is ``b = Delta f / epsilon = 1 / lambda``. The functions
named ``report_*`` take the report's ``lambda``; the older ones take the scale ``b``. The
leaf's noisy proportion is ``Y / n``; the mechanism clamps it at 0 (and normalises), so the
report's functions give the interval of ``clip(Y / n, 0, 1)``: quantiles commute with a
non-decreasing map, so that interval is the raw one clipped to [0, 1] (at ``p_i0 = 0`` the raw
interval goes negative; the clipped one starts at 0).

The report writes ``p_i ~ Laplace(lambda, p_i0)`` and then ``X_i | p_i ~ Binomial(n, p_i)``
(noise on the proportion, then sampling); this module keeps noise on the count (what the
mechanism does): both have mean ``n p_i0``, and variances ``n p (1 - p) + 2 / lambda^2`` (here)
and the same less ``2 / (lambda^2 n)`` (the report's, noise read on the count scale).

Algorithms
----------
- :func:`laplace_binomial_cdf`: the exact CDF of ``Y``, ``sum_k P(X = k) F_L(y - k)`` over the
  binomial support (mass below 1e-14 dropped): the report's accumulated Laplace-binomial mass,
  no normal approximation.
- :func:`noisy_share_interval`: the central ``confidence`` interval of ``Y / n``, its two
  quantiles solved on that CDF (Brent's method); :func:`report_interval` the same in the
  report's terms (``n_B``, ``p_i0``, ``lambda``), clipped to [0, 1].
- :func:`normal_interval_width`: the normal approximation ``2 z sqrt(p (1 - p) / n +
  2 b^2 / n^2)`` (binomial variance plus Laplace variance ``2 b^2``), for comparison.
- :func:`min_leaf_size`: the smallest leaf size ``n`` whose exact interval is at most ``width``
  wide (doubling, then bisection on the width, which decreases in ``n`` up to the binomial's
  lattice wobble; the answer is checked to satisfy the target); :func:`report_min_n_B`
  (width) and :func:`report_min_n_B_within` (the interval inside ``[low, high]``, the report's
  worked example's wording) are the inverse in the report's terms.
- :func:`simulated_interval`: the same interval from ``draws`` simulated leaves (the report's
  10,000-draw check).
- :func:`figure_1` / :func:`figure_2`: the report's Figures 1 (0.90 intervals against ``n_B``
  for ``lambda`` 0.1 ... 1.0, one panel per ``p_i0``) and 2 (histograms of 10,000 simulated
  shares at ``lambda = 0.3``, ``n_B = 1000``, with their empirical and exact 0.90 intervals).

The report's worked example (``p_i0 = 0.25``, ``lambda = 0.4``, ``n_B = 1000``: the 0.90
interval "within [0.22, 0.27]") gives [0.2269, 0.2734] here: 0.0465 wide, inside a 0.05 width,
but its upper end is above 0.27, so the report's bound is loose (rounded) and, read as
containment in [0.22, 0.27], needs a larger ``n_B`` (:func:`report_min_n_B_within`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from matplotlib.figure import Figure
from scipy import optimize, stats

from dp_arena.errors import ConfigError


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


# ----- the report's terms: lambda = epsilon / Delta f --------------------------------------
def scale_of_lambda(lam: float) -> float:
    """The Laplace scale ``b = 1 / lambda`` of the report's ``lambda = epsilon / Delta f``."""
    if not (isinstance(lam, (int, float)) and 0 < lam < math.inf):
        raise ConfigError(f"n_B study: lambda = epsilon / Delta f must be > 0 (got {lam!r})",
                          "e.g. lambda=0.4 (the report's worked example)")
    return 1.0 / float(lam)


def report_interval(n_B: int, p_i0: float, lam: float,
                    confidence: float = 0.90) -> tuple[float, float]:
    """The report's ``1 - alpha`` interval on ``p_i`` for a leaf of ``n_B`` records: the exact
    central interval of the noisy share ``(X + L) / n_B``, ``X ~ Binomial(n_B, p_i0)``, ``L ~
    Laplace(1 / lambda)``, clipped to [0, 1] (the clamped share the mechanism uses)."""
    check_study_settings(0.5, confidence, p_i0, 0.0)
    if not (isinstance(n_B, (int, np.integer)) and n_B >= 1):
        raise ConfigError(f"n_B study: n_B must be an integer >= 1 (got {n_B!r})",
                          "e.g. n_B=1000")
    lo, hi = noisy_share_interval(int(n_B), p_i0, scale_of_lambda(lam), confidence)
    return min(max(lo, 0.0), 1.0), min(max(hi, 0.0), 1.0)


def smallest_n(fits: Callable[[int], bool], n_max: int, what: str) -> int:
    """The smallest ``n >= 1`` with ``fits(n)`` by doubling then bisection (``fits`` is
    monotone in ``n`` up to the lattice wobble)."""
    high = 1
    while not fits(high):
        high *= 2
        if high > n_max:
            raise ConfigError(f"n_B study: no n_B up to {n_max} gives {what}",
                              "ask for a wider interval, a lower confidence or a larger lambda")
    low = high // 2
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if fits(mid) else (mid, high)
    return high


def report_min_n_B(width: float, confidence: float, p_i0: float, lam: float,
                   n_max: int = 10_000_000) -> int:
    """The inverse: the smallest ``n_B`` whose :func:`report_interval` is at most ``width``
    wide (the report's "given p_i0, lambda and maximum width of a 0.90 confidence interval,
    the minimum n_B")."""
    check_study_settings(width, confidence, p_i0, scale_of_lambda(lam))

    def fits(n: int) -> bool:
        lo, hi = report_interval(n, p_i0, lam, confidence)
        return hi - lo <= width

    return smallest_n(fits, n_max, f"a {confidence:g} interval at most {width:g} wide")


def report_min_n_B_within(low: float, high: float, confidence: float, p_i0: float,
                          lam: float, n_max: int = 10_000_000) -> int:
    """The smallest ``n_B`` whose :func:`report_interval` lies inside ``[low, high]`` (the
    worked example's wording: "to restrict the 0.90 confidence interval on p_i to within
    [0.22, 0.27]")."""
    if not (0 <= low <= p_i0 <= high <= 1):
        raise ConfigError(f"n_B study: [low, high] = [{low!r}, {high!r}] must contain p_i0 = "
                          f"{p_i0!r} within [0, 1]", "e.g. low=0.22, high=0.27 for p_i0=0.25")
    scale_of_lambda(lam)

    def fits(n: int) -> bool:
        lo, hi = report_interval(n, p_i0, lam, confidence)
        return lo >= low and hi <= high

    return smallest_n(fits, n_max, f"a {confidence:g} interval inside [{low:g}, {high:g}]")


# ----- the report's figures ----------------------------------------------------------------
FIGURE_1_P = (0.0, 0.01, 0.05, 0.10, 0.25, 0.50)
FIGURE_1_LAMBDAS = tuple(round(0.1 * k, 1) for k in range(1, 11))
FIGURE_1_N = (100, 250, 500, 1000, 2000, 4000)


def figure_1(p_values: tuple[float, ...] = FIGURE_1_P,
             lambdas: tuple[float, ...] = FIGURE_1_LAMBDAS,
             n_values: tuple[int, ...] = FIGURE_1_N, confidence: float = 0.90) -> Figure:
    """The report's Figure 1: per ``p_i0`` one panel of :func:`report_interval` error bars
    against ``n_B`` (x, log scale), one bar per ``lambda`` side by side. (The report's
    ``lambda = 0.0`` is infinite noise and is left out.)"""
    cols = min(3, len(p_values))
    rows = math.ceil(len(p_values) / cols)
    fig = Figure(figsize=(4.2 * cols, 3.4 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    colours = [f"C{k % 10}" for k in range(len(lambdas))]
    for ax, p in zip(axes, p_values):
        for k, lam in enumerate(lambdas):
            offset = 1.0 + 0.035 * (k - (len(lambdas) - 1) / 2)
            for n in n_values:
                lo, hi = report_interval(n, p, lam, confidence)
                ax.plot([n * offset] * 2, [lo, hi], color=colours[k], linewidth=1.2,
                        label=f"lambda {lam:g}" if n == n_values[0] else None)
        ax.axhline(p, color="black", linewidth=0.6)
        ax.set_xscale("log")
        ax.set_title(f"specified p = {p:g}", fontsize=9)
        ax.set_xlabel("n_B (leaf records)"), ax.set_ylabel(f"{confidence:g} interval on p_i")
    for ax in axes[len(p_values):]:
        ax.set_visible(False)
    axes[0].legend(fontsize=6, ncol=2)
    return fig


def figure_2(p_values: tuple[float, ...] = FIGURE_1_P, lam: float = 0.3, n_B: int = 1000,
             draws: int = 10_000, confidence: float = 0.90, seed: int = 0) -> Figure:
    """The report's Figure 2: per ``p_i0``, a histogram of ``draws`` simulated clamped shares
    ``clip((X + L) / n_B, 0, 1)`` with the empirical (dashed) and exact (solid)
    ``confidence`` intervals."""
    rng = np.random.default_rng(seed)
    cols = min(3, len(p_values))
    rows = math.ceil(len(p_values) / cols)
    fig = Figure(figsize=(4.2 * cols, 3.2 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    alpha = 1.0 - confidence
    for ax, p in zip(axes, p_values):
        y = rng.binomial(n_B, p, size=draws) + rng.laplace(0.0, scale_of_lambda(lam), draws)
        share = np.clip(y / n_B, 0.0, 1.0)
        ax.hist(share, bins=60, color="C0", alpha=0.7)
        for q in np.quantile(share, [alpha / 2, 1 - alpha / 2]):
            ax.axvline(q, color="C1", linestyle="--", linewidth=1)
        for q in report_interval(n_B, p, lam, confidence):
            ax.axvline(q, color="black", linewidth=0.8)
        ax.set_title(f"specified p = {p:g} (lambda {lam:g}, n_B {n_B})", fontsize=9)
        ax.set_xlabel("p_i")
    for ax in axes[len(p_values):]:
        ax.set_visible(False)
    return fig
