"""The Duke report's n_B study (dp_arena.mechanisms.rdt.leaf_size): the exact Laplace-binomial interval
against hand-computed cases and a simulation, and the minimum leaf size it implies.

Tolerances: (c) interval endpoints are brentq roots to xtol 1e-9 * n, checked against closed
forms at rel=1e-7 and against a direct sum of the mass at abs=1e-6 (the root's xtol times the
density, plus the sum's rounding); (d) the report's worked example is quoted to 4 digits:
abs=5e-5 is half a unit; the sqrt law's 1537 is the normal approximation of a discrete binomial
search: abs=20; 1.96 is the 95% normal quantile to 3 digits: abs=0.002 on a ratio of 0.925
covers its rounding (1.96 vs 1.959964); (b) the simulated width from 10,000 draws: z = 4.89
standard errors of the two sample quantiles (see the test).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dp_arena.errors import ConfigError
from dp_arena.mechanisms.rdt.leaf_size import (
    interval_width,
    laplace_binomial_cdf,
    leaf_size_study,
    min_leaf_size,
    noisy_share_interval,
    normal_interval_width,
    simulated_interval,
)
from tests.support.tolerances import statistical


def test_pure_laplace_interval_by_hand():
    # p = 0: X = 0 and Y = L; P(|L| > t) = exp(-t / b) = 0.05 -> t = b ln 20
    lo, hi = noisy_share_interval(10, 0.0, 2.0, 0.95)
    assert lo == pytest.approx(-2 * math.log(20) / 10, rel=1e-7)
    assert hi == pytest.approx(2 * math.log(20) / 10, rel=1e-7)


def test_cdf_by_hand_for_one_record():
    # n = 1, p = 0.5: Y = Bernoulli + L; at y = 0.5: 0.5 F_L(0.5) + 0.5 F_L(-0.5), b = 1
    expected = 0.5 * (1 - 0.5 * math.exp(-0.5)) + 0.5 * 0.5 * math.exp(-0.5)
    assert laplace_binomial_cdf(0.5, 1, 0.5, 1.0) == pytest.approx(expected)
    assert expected == pytest.approx(0.5)  # symmetric about 1/2


def test_no_noise_is_the_binomial_interval():
    # Binomial(4, 1/2): P(X = 0) = 1/16 > 2.5%, so the 95% interval is [0, 4] / 4
    assert noisy_share_interval(4, 0.5, 0.0, 0.95) == (0.0, 1.0)


@pytest.mark.parametrize("n, p, scale", [(500, 0.3, 5.0), (2000, 0.5, 25.0), (300, 0.05, 10.0)])
def test_exact_interval_matches_a_simulation(n, p, scale):
    draws = 40_000
    exact = noisy_share_interval(n, p, scale, 0.95)
    sim = simulated_interval(n, p, scale, 0.95, draws, np.random.default_rng(1))
    # Monte Carlo error of a 2.5% quantile: sqrt(q (1 - q) / draws) / density; the density of
    # Y / n at the quantile is bounded below by the normal approximation's at 2.5 sd
    sd = math.sqrt(p * (1 - p) / n + 2 * scale ** 2 / n ** 2)
    density = math.exp(-2.5 ** 2 / 2) / (sd * math.sqrt(2 * math.pi)) * 0.5
    tol = 4 * math.sqrt(0.025 * 0.975 / draws) / density
    assert sim[0] == pytest.approx(exact[0], abs=tol)
    assert sim[1] == pytest.approx(exact[1], abs=tol)


def test_min_leaf_size_is_the_first_that_fits():
    n = min_leaf_size(0.1, 0.95, 0.5, 25.0)
    assert interval_width(n, 0.5, 25.0, 0.95) <= 0.1 < interval_width(n - 1, 0.5, 25.0, 0.95)
    # more noise, a smaller share or a narrower target: more records
    assert min_leaf_size(0.1, 0.95, 0.5, 50.0) > n
    assert min_leaf_size(0.05, 0.95, 0.5, 25.0) > n
    # without noise, the binomial's sqrt law: about (2 * 1.96 * 0.5 / 0.05)^2 = 1537
    assert min_leaf_size(0.05, 0.95, 0.5, 0.0) == pytest.approx(1537, abs=20)


def test_normal_approximation_understates_the_laplace_tails():
    # Laplace tails are heavier than normal ones: at a small n (noise dominating) the
    # normal width is too narrow; at a large n (binomial dominating) they agree.
    # Pure Laplace: the normal's 1.96 sqrt(2) b against the exact b ln 20, ratio 0.9252.
    small = interval_width(20, 0.5, 25.0, 0.95), normal_interval_width(20, 0.5, 25.0, 0.95)
    large = interval_width(200_000, 0.5, 25.0, 0.95), normal_interval_width(200_000, 0.5, 25.0,
                                                                               0.95)
    assert small[1] / small[0] == pytest.approx(1.96 * math.sqrt(2) / math.log(20), abs=0.002)
    assert large[1] == pytest.approx(large[0], rel=0.01)


def test_study_row_and_errors():
    row = leaf_size_study(0.1, 0.95, 0.5, 25.0, draws=10_000)
    assert row.n == min_leaf_size(0.1, 0.95, 0.5, 25.0)
    # each 2.5% sample quantile of 10,000 draws has standard error sqrt(0.025 * 0.975 / 10,000)
    # / f, f the share's density there (from the exact CDF: 1.66 at n = 1665, so 0.00094);
    # the width's is at most twice that; z = 4.89 of it (false failure 1e-6): 0.0092 (the
    # constant 0.005 was 2.7 to 3.8 standard errors)
    lo, _ = noisy_share_interval(row.n, 0.5, 25.0, 0.95)
    h = 1e-4
    f = (laplace_binomial_cdf((lo + h) * row.n, row.n, 0.5, 25.0)
         - laplace_binomial_cdf((lo - h) * row.n, row.n, 0.5, 25.0)) / (2 * h)
    quantile_se = math.sqrt(0.025 * 0.975 / 10_000) / f
    assert row.simulated[1] - row.simulated[0] == pytest.approx(
        0.1, abs=statistical(2 * quantile_se))
    for bad in ({"width": 0}, {"confidence": 1.0}, {"p": 1.5}, {"scale": -1.0}):
        args = {"width": 0.1, "confidence": 0.95, "p": 0.5, "scale": 25.0, **bad}
        with pytest.raises(ConfigError, match="out of range"):
            min_leaf_size(**args)


# ----- section 5 in the report's terms (lambda = epsilon / Delta f) -------------------------
def direct_mass(n: int, p: float, lam: float, lo: float, hi: float) -> float:
    """P(lo <= (X + L) / n <= hi) summed directly over every k = 0..n (no truncation):
    Binomial pmf from log-gamma, Laplace(1 / lambda) CDF written out."""
    def cdf(x: float) -> float:
        return 0.5 * math.exp(lam * x) if x < 0 else 1.0 - 0.5 * math.exp(-lam * x)

    total = 0.0
    for k in range(n + 1):
        if p in (0.0, 1.0):
            pmf = 1.0 if k == round(p * n) else 0.0
        else:
            pmf = math.exp(math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
                           + k * math.log(p) + (n - k) * math.log1p(-p))
        total += pmf * (cdf(hi * n - k) - cdf(lo * n - k))
    return total


def test_report_worked_example_interval_and_that_its_bound_is_loose():
    from dp_arena.mechanisms.rdt.leaf_size import report_interval

    lo, hi = report_interval(1000, 0.25, 0.4, 0.90)
    assert lo == pytest.approx(0.2269, abs=5e-5) and hi == pytest.approx(0.2734, abs=5e-5)
    # a direct numerical sum puts 5% in each tail (the interval is central and exact)
    assert direct_mass(1000, 0.25, 0.4, -1.0, lo) == pytest.approx(0.05, abs=1e-6)
    assert direct_mass(1000, 0.25, 0.4, hi, 2.0) == pytest.approx(0.05, abs=1e-6)
    # the report: "within [0.22, 0.27]": 0.0465 wide (< 0.05) but above 0.27 at the top
    assert hi - lo < 0.05 and hi > 0.27


@pytest.mark.parametrize("n, p, lam, conf", [(200, 0.1, 0.3, 0.90), (50, 0.5, 1.0, 0.95),
                                             (400, 0.01, 0.2, 0.90)])
def test_report_interval_has_the_stated_mass_by_direct_sum(n, p, lam, conf):
    from dp_arena.mechanisms.rdt.leaf_size import report_interval

    lo, hi = report_interval(n, p, lam, conf)
    alpha = 1 - conf
    if lo > 0:  # not clipped: a central interval, alpha / 2 in each tail
        assert direct_mass(n, p, lam, -10.0, lo) == pytest.approx(alpha / 2, abs=1e-6)
    else:  # clipped at 0: the raw lower quantile is negative, so at least alpha / 2 below 0
        assert direct_mass(n, p, lam, -10.0, 0.0) >= alpha / 2 - 1e-9
    assert direct_mass(n, p, lam, hi, 10.0) == pytest.approx(alpha / 2, abs=1e-6)


def test_report_interval_at_p_zero_stays_in_unit_interval_by_hand():
    from dp_arena.mechanisms.rdt.leaf_size import report_interval

    # p_i0 = 0: Y = L, P(L > t) = 0.5 exp(-lambda t) = 0.05 -> t = ln(10) / lambda; the
    # lower end (-t / n) is clipped to 0 (the mechanism clamps shares at 0)
    assert report_interval(100, 0.0, 0.5, 0.90) == pytest.approx((0.0, math.log(10) / 50))
    # p_i0 = 1, mirrored: [1 - ln(10) / (lambda n), 1]
    assert report_interval(100, 1.0, 0.5, 0.90) == pytest.approx((1 - math.log(10) / 50, 1.0))
    # so much noise that both ends clip: 10 records at lambda 0.1 (scale 10)
    assert report_interval(10, 1.0, 0.1, 0.90) == (0.0, 1.0)


@pytest.mark.parametrize("width, conf, p, lam", [(0.05, 0.90, 0.25, 0.4), (0.1, 0.95, 0.5, 0.1),
                                                 (0.02, 0.90, 0.05, 1.0)])
def test_report_min_n_B_round_trip(width, conf, p, lam):
    from dp_arena.mechanisms.rdt.leaf_size import report_interval, report_min_n_B

    n = report_min_n_B(width, conf, p, lam)
    lo, hi = report_interval(n, p, lam, conf)
    lo1, hi1 = report_interval(n - 1, p, lam, conf)
    assert hi - lo <= width < hi1 - lo1
    # the same answer as the scale-named inverse (scale = 1 / lambda), away from p = 0
    assert n == min_leaf_size(width, conf, p, 1.0 / lam)


def test_report_min_n_B_within_the_worked_example_bounds():
    from dp_arena.mechanisms.rdt.leaf_size import report_interval, report_min_n_B_within

    n = report_min_n_B_within(0.22, 0.27, 0.90, 0.25, 0.4)
    lo, hi = report_interval(n, 0.25, 0.4, 0.90)
    assert 0.22 <= lo and hi <= 0.27
    assert report_interval(n - 1, 0.25, 0.4, 0.90)[1] > 0.27
    assert n > 1000  # the report's "at least 1,000" does not reach inside [0.22, 0.27]
    with pytest.raises(ConfigError, match="contain p_i0"):
        report_min_n_B_within(0.3, 0.4, 0.9, 0.25, 0.4)
    with pytest.raises(ConfigError, match="lambda"):
        report_interval(100, 0.25, 0.0)


def test_figures_have_a_bar_per_lambda_and_n_and_a_histogram_per_p():
    from dp_arena.mechanisms.rdt.leaf_size import figure_1, figure_2

    fig = figure_1((0.0, 0.25), (0.2, 0.4), (100, 1000))
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert len(panels) == 2
    assert all(len(ax.lines) == 2 * 2 + 1 for ax in panels)  # bars + the p_i0 line
    fig2 = figure_2((0.0, 0.5), draws=500)
    assert [len(ax.patches) for ax in fig2.axes if ax.get_visible()] == [60, 60]
