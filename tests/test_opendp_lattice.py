"""The OpenDP sampler's float draws on a lattice 2^k (dp_arena/privacy/release.py lattice_k):
the exponent as computed by hand, the charge OpenDP certifies still the nominal one to float
precision (below the ledger's calibration headroom), and the noise of the stated scale.

Tolerances: (b) the noise's mean and sd within 5 standard errors of n draws (false failure 6e-7
each); (a) OpenDP's certified rho against 1/(2 sigma^2): OpenDP rounds each operation
conservatively (upwards), a few ulps: rel=1e-14 is 45 ulps.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dp_arena.privacy.accounting import CALIBRATION_HEADROOM, Budget, Ledger
from dp_arena.privacy.release import LATTICE_K_RANGE, OpenDPSampler, Releaser, lattice_k


def test_lattice_exponent_by_hand():
    # floor(log2 1) - 60 - ceil(log2 1024) = -70, capped at the coarsest -100
    assert lattice_k(1.0, 1024) == -100
    # floor(log2 2^-50) - 60 - ceil(log2 2^20) = -130
    assert lattice_k(2.0**-50, 2**20) == -130
    # 0.37: floor(log2) = -2; 5000 values: ceil(log2) = 13 -> -75, capped at -100
    assert lattice_k(0.37, 5000) == -100
    assert lattice_k(1e-30, 10**6) == math.floor(math.log2(1e-30)) - 60 - 20
    # no usable sensitivity, or one so small the lattice would pass the smallest float
    assert lattice_k(0.0, 10) == lattice_k(math.inf, 10) == LATTICE_K_RANGE[0]
    assert lattice_k(1e-300, 10**6) == LATTICE_K_RANGE[0]


@pytest.mark.parametrize("size", [1, 5000])
def test_float_gaussian_charges_the_nominal_rho_to_float_precision(size):
    sampler = OpenDPSampler()
    values = np.linspace(-3.3, 7.1, size)  # not integers: OpenDP's float Gaussian
    cost = sampler.gaussian_cost(values, 0.37, 2.0)
    # the effective sensitivity the ledger is charged: never below the nominal, and above it
    # by less than the calibrations' headroom (a release calibrated to the budget still fits)
    assert 0.37 <= cost <= 0.37 * (1 + CALIBRATION_HEADROOM / 10)


def test_float_laplace_charges_the_nominal_epsilon_to_float_precision():
    sampler = OpenDPSampler()
    cost = sampler.laplace_cost(np.linspace(0.1, 9.9, 3000), 0.25, 1.5)
    assert 0.25 <= cost <= 0.25 * (1 + CALIBRATION_HEADROOM / 10)


def test_float_gaussian_noise_has_the_stated_scale():
    n, sigma = 20_000, 2.0
    r = Releaser(Ledger(Budget(1e6, 1e-6), "zcdp"), OpenDPSampler())
    values = np.linspace(0.0, 10.0, n) + 0.123  # floats
    noise = r.gaussian("floats", values, 1.0, sigma) - values
    assert not np.all(noise == np.round(noise))  # not the integer path
    # mean: N(0, sigma^2 / n); sample std: sd about sigma / sqrt(2 n); 5 standard errors
    assert abs(noise.mean()) < 5 * sigma / math.sqrt(n)
    assert abs(noise.std() - sigma) < 5 * sigma / math.sqrt(2 * n)
    assert r.ledger.charges[-1].rho == pytest.approx(1 / (2 * sigma**2), rel=1e-14, abs=0)


def test_float_laplace_noise_has_the_stated_scale():
    n, b = 20_000, 1.5
    r = Releaser(Ledger(Budget(1e6), "zcdp"), OpenDPSampler())
    values = np.full(n, 0.5)
    noise = r.laplace("floats", values, 1.0, b) - values
    # Laplace(b): variance 2 b^2, E|X| = b (sd of |X| is b): 5 standard errors
    assert abs(noise.mean()) < 5 * b * math.sqrt(2 / n)
    assert abs(np.abs(noise).mean() - b) < 5 * b / math.sqrt(n)


def test_a_release_builds_its_measurement_once_and_other_arguments_rebuild(monkeypatch):
    sampler = OpenDPSampler()
    built: list[tuple] = []
    build = sampler._build
    monkeypatch.setattr(sampler, "_build", lambda *a: built.append(a) or build(*a))
    r = Releaser(Ledger(Budget(1e6, 1e-6), "zcdp"), sampler)
    r.gaussian("counts", np.full(50, 7.0), 1.0, 2.0)  # cost, then draw: one build
    assert len(built) == 1
    r.gaussian("counts again", np.full(50, 7.0), 1.0, 2.0)  # the same measurement again
    assert len(built) == 1
    r.gaussian("floats", np.full(50, 7.5), 1.0, 2.0)  # floats: another measurement
    r.gaussian("wider", np.full(50, 7.5), 1.0, 3.0)  # another scale
    r.laplace("laplace", np.full(50, 7.5), 1.0, 3.0)  # another kind
    assert [b[:2] for b in built] == [("gaussian", True), ("gaussian", False),
                                      ("gaussian", False), ("laplace", False)]
    assert [b[4] for b in built] == [2.0, 2.0, 3.0, 3.0]
    # every charge is still what OpenDP certifies for its own measurement
    assert [c.rho for c in r.ledger.charges[:4]] == pytest.approx([1 / 8, 1 / 8, 1 / 8, 1 / 18])
