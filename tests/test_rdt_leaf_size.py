"""The Duke report's n_B study (mechanisms.rdt_leaf_size): the exact Laplace-binomial interval
against hand-computed cases and a simulation, and the minimum leaf size it implies."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.errors import ConfigError
from mechanisms.rdt_leaf_size import (
    interval_width,
    laplace_binomial_cdf,
    leaf_size_study,
    min_leaf_size,
    noisy_share_interval,
    normal_interval_width,
    simulated_interval,
)


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
    assert row.simulated[1] - row.simulated[0] == pytest.approx(0.1, abs=0.005)
    for bad in ({"width": 0}, {"confidence": 1.0}, {"p": 1.5}, {"scale": -1.0}):
        args = {"width": 0.1, "confidence": 0.95, "p": 0.5, "scale": 25.0, **bad}
        with pytest.raises(ConfigError, match="out of range"):
            min_leaf_size(**args)
