"""DP ranges and many-quantile bin edges on a public axis (dp_arena.data.dp_numbers).

Tolerances: (a) the consistent leaves against numpy's least squares (an SVD on a small
0/1 hierarchy matrix, well conditioned): atol=1e-8 on counts of magnitude ~10-100 is ~10^7
ulps of them, far above both computations' rounding; a scale 3 / 0.4 or 1 / (0.4 epsilon) is
two operations: rel_tol=1e-9; a largest-bin share is a ratio of counts, exact to rounding:
abs_tol=1e-6; (b) counts of passing cells within 5 standard deviations (false failure 6e-7);
approx's default elsewhere is hand arithmetic.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom

from dp_arena.data.dp_numbers import (MAX_ZOOMS, Q_HI, Q_LO, ZOOM_CELLS, Leaves, coarse_cells,
                                     coarse_index, dp_numeric_range, heavy_run, linear_axis,
                                     log_axis, noise_floor, zoom_cells)
from dp_arena.data.exact_numbers import bin_shares, exact_numeric_range
from dp_arena.data.tree_histogram import consistent_leaves, tree_counts
from dp_arena.privacy.accounting import Budget, Ledger
from dp_arena.privacy.release import NumpySampler, Releaser


def releaser(eps: float, seed: int, observer=None) -> Releaser:
    return Releaser(Ledger(Budget(eps, 0.0)), sampler=NumpySampler(np.random.default_rng(seed)),
                    observer=observer)


def lognormal(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).lognormal(math.log(10.0), 0.6, n)


# ----- the axes ------------------------------------------------------------------------------
def test_log_axis_cells_zero_is_a_point_and_ends_are_the_axis():
    axis = log_axis()
    cells = coarse_cells(axis)
    assert len(cells.lo) == 27  # 12 decades a sign, two sub-10^-3 cells, the point 0
    idx = coarse_index(axis, np.array([0.0, 1e-9, -1e-9, 5.0, 1e15, -1e15]))
    zero = int(np.flatnonzero(cells.point)[0])
    assert idx[0] == zero and cells.lo[zero] == cells.hi[zero] == 0.0
    assert idx[1] == zero + 1 and idx[2] == zero - 1
    assert cells.lo[idx[3]] == 1.0 and cells.hi[idx[3]] == 10.0
    assert idx[4] == len(cells.lo) - 1 and idx[5] == 0  # clipped into the end cells
    assert cells.hi.max() == 1e9 and cells.lo.min() == -1e9


def test_linear_date_axis_cells_are_whole_days_and_about_a_year():
    axis = linear_axis(-25567, 47482, 365.25, 1)  # 1900-01-01 .. 2100-01-01 in days
    edges = np.asarray(axis.edges)
    assert edges[0] == -25567 and edges[-1] == 47482 and np.all(edges == np.round(edges))
    assert set(np.diff(edges[:-1])) <= {365.0, 366.0} and sum(axis.fine) == 47482 + 25567


# ----- privacy accounting --------------------------------------------------------------------
def narrow(n: int, seed: int) -> np.ndarray:
    """Like Minneapolis stops' latitudes: one fine leaf [44.7, 50.1) of the log axis holds all."""
    return np.random.default_rng(seed).uniform(44.9, 45.05, n)


@pytest.mark.parametrize("eps", [0.008, 0.3, 5.0])
@pytest.mark.parametrize("column", ["lognormal", "narrow", "constant"])
def test_ledger_is_charged_epsilon_and_never_more(eps, column):
    """Every release is Laplace; whatever the zoom does (zoom rounds, a second draw of the
    fine tree or of the last zoom), the charges add up to epsilon and never more."""
    v = {"lognormal": lognormal(5000, 0), "narrow": narrow(20_000, 0),
         "constant": np.full(20_000, 2013.0)}[column]
    rel = releaser(eps, seed=3)
    out = dp_numeric_range(v, log_axis(), 10, eps, 1, rel, "x")
    spent, delta = rel.ledger.spent()
    assert out is not None and delta == 0.0
    assert eps * (1 - 1e-9) <= spent <= eps
    charges = rel.ledger.charges
    assert {c.kind for c in charges} == {"laplace"}
    assert 2 <= len(charges) <= 2 + MAX_ZOOMS + 1
    if column != "lognormal" and eps >= 0.3:
        assert any("zoom" in c.name for c in charges)


def test_bound_scales_the_noise_not_the_charge():
    rel = releaser(1.0, seed=4)
    dp_numeric_range(lognormal(2000, 1), log_axis(), 10, 1.0, 3, rel, "x")
    first = rel.ledger.charges[0]
    assert first.sensitivity == 3 and math.isclose(first.scale, 3 / 0.4, rel_tol=1e-9)
    assert all(c.sensitivity % 3 == 0 for c in rel.ledger.charges)
    assert rel.ledger.spent()[0] <= 1.0


def test_empty_column_returns_none_after_drawing_stage_one():
    rel = releaser(1e6, seed=5)
    assert dp_numeric_range(np.array([]), log_axis(), 10, 1e6, 1, rel, "x") is None
    assert len(rel.ledger.charges) == 1  # the support was still released (no early exit)


# ----- accuracy --------------------------------------------------------------------------------
def test_huge_epsilon_edges_converge_to_exact_quantiles_within_a_fine_cell():
    """Noise-free counts: each edge lies in the fine cell where the CDF crosses i / bins,
    which also holds the exact quantile up to one order statistic: the same or the adjacent
    cell, i.e. within 2 / 20 of a decade on the 20-a-decade axis."""
    v = lognormal(20_000, 2)
    out = dp_numeric_range(v, log_axis(), 10, 1e6, 1, releaser(1e6, 6), "x")
    exact = np.quantile(v, np.arange(1, 10) / 10)
    assert out is not None and len(out.edges) == 9
    assert np.max(np.abs(np.log10(out.edges) - np.log10(exact))) <= 2 / 20 + 1e-12
    assert math.isclose(out.largest_bin_share, 0.1, abs_tol=1e-6)
    # the range: the decades holding the 0.1% and 99.9% quantiles, whole
    lo, hi = np.quantile(v, [Q_LO, Q_HI])
    assert out.min == 10.0 ** math.floor(math.log10(lo))
    assert out.max == 10.0 ** math.ceil(math.log10(hi))


def test_huge_epsilon_on_days_edges_within_a_day_and_range_is_whole_years():
    rng = np.random.default_rng(7)
    days = rng.uniform(15706, 17167, 10_000)  # 2013-01-01 .. 2016-12-31
    axis = linear_axis(-25567, 47482, 365.25, 1)
    out = dp_numeric_range(days, axis, 10, 1e6, 1, releaser(1e6, 7), "d")
    exact = np.quantile(days, np.arange(1, 10) / 10)
    assert out is not None and np.max(np.abs(np.asarray(out.edges) - exact)) <= 2.0
    assert out.min <= days.min() and out.max >= days.max()
    assert out.min in axis.edges and out.max in axis.edges
    assert out.max - out.min <= 4 * 366 + 1


def test_point_mass_gets_its_own_bin():
    rng = np.random.default_rng(8)
    v = np.concatenate([np.zeros(6000), rng.lognormal(1.0, 0.8, 4000)])
    out = dp_numeric_range(v, log_axis(), 10, 1e6, 1, releaser(1e6, 8), "tips")
    assert out is not None and out.min == 0.0 and out.edges[0] == 1e-3
    shares = bin_shares(v, out)
    assert shares[0] == 0.6 and math.isclose(out.largest_bin_share, 0.6, abs_tol=1e-6)
    assert len(out.edges) <= 9 and np.all(np.diff(out.edges) > 0)
    exact = exact_numeric_range(v, 10)
    assert exact.min == 0.0 and bin_shares(v, exact)[0] == 0.6 == exact.largest_bin_share


def test_exact_range_is_min_max_and_quantiles():
    v = np.arange(1.0, 101.0)
    out = exact_numeric_range(v, 4)
    assert (out.min, out.max) == (1.0, 100.0)
    assert out.edges == tuple(np.quantile(v, [0.25, 0.5, 0.75]))
    # edges 25.75, 50.5, 75.25: 1..25, 26..50, 51..75, 76..100 (left-closed bins)
    assert list(bin_shares(v, out)) == [0.25] * 4 and out.largest_bin_share == 0.25
    ties = exact_numeric_range(np.array([0.0] * 7 + [1.0, 2.0, 3.0]), 5)
    # quantiles 0, 0, 0, 1.2
    assert np.allclose(ties.edges, (1.0, 1.2)) and ties.largest_bin_share == 0.7


# ----- no absurd range, and the noise floor -------------------------------------------------
def test_no_range_is_absurd_on_lognormal_with_outliers_over_many_seeds():
    """With probability >= 1 - beta a range stays inside the coarse cells holding data (module
    docstring); over N independent draws the failures are Binomial(N, <= beta), so more than
    its 1 - 1e-6 quantile would refute the floor (the old floor scale * ln(cells) fails about
    half of all draws)."""
    v = np.concatenate([np.clip(lognormal(3000, 9), 1.0, 99.0), [5000.0] * 5])
    hull_lo, hull_hi = 1.0, 10_000.0
    beta, n_draws = 0.01, 300
    failures = 0
    for seed in range(n_draws):
        out = dp_numeric_range(v, log_axis(), 10, 0.05, 1, releaser(0.05, 100 + seed), "x", beta)
        assert out is not None
        failures += not (hull_lo <= out.min < out.max <= hull_hi)
    assert failures <= binom.ppf(1 - 1e-6, n_draws, beta)


def test_empty_cells_survive_stage_one_at_the_laplace_tail_rate():
    """An empty coarse cell passes ``tau = s ln(K / beta)`` with probability
    ``exp(-tau / s) / 2 = beta / (2 K)``; with beta = 0.9 that is measurable. The observed
    count over many draws must be within 5 binomial standard deviations."""
    beta, eps, n_draws = 0.9, 0.5, 300
    records = []
    v = np.clip(lognormal(500, 10), 1.0, 99.0)  # two decades hold data, 25 cells are empty
    for seed in range(n_draws):
        dp_numeric_range(v, log_axis(), 10, eps, 1, releaser(eps, 1000 + seed, records.append),
                         "x", beta)
    stage1 = [r for r in records if r.name == "x: coarse histogram"]
    assert len(stage1) == n_draws
    k = len(stage1[0].true)
    empty = np.concatenate([r.noisy[r.true == 0] for r in stage1])
    floors = np.array([noise_floor(r.scale, k, beta) for r in stage1])
    passed = sum(int(np.sum(r.noisy[r.true == 0] > f)) for r, f in zip(stage1, floors))
    p = beta / (2 * k)
    expected, sd = len(empty) * p, math.sqrt(len(empty) * p * (1 - p))
    assert abs(passed - expected) <= 5 * sd
    assert math.isclose(stage1[0].scale, 1 / (0.4 * eps), rel_tol=1e-9)


# ----- tree consistency ----------------------------------------------------------------------
def test_consistent_leaves_is_the_least_squares_fit_of_the_tree():
    rng = np.random.default_rng(11)
    leaves, b = rng.integers(0, 50, 23).astype(float), 4
    true = tree_counts(leaves, b)
    assert np.allclose(consistent_leaves(true, b), leaves)  # noise-free: unchanged
    noisy = [lvl + rng.laplace(0, 5, len(lvl)) for lvl in true]
    # brute force: least squares of all node observations in the leaves
    rows, m = [], len(leaves)
    for k, lvl in enumerate(noisy):
        span = b ** k
        for i in range(len(lvl)):
            row = np.zeros(m)
            row[i * span:(i + 1) * span] = 1.0
            rows.append(row)
    fit = np.linalg.lstsq(np.array(rows), np.concatenate(noisy), rcond=None)[0]
    assert np.allclose(consistent_leaves(noisy, b), fit, atol=1e-8)


# ----- the zoom ---------------------------------------------------------
def leaves_of(bounds: list[tuple[float, float]]) -> Leaves:
    lo, hi = (np.array(x, dtype=float) for x in zip(*bounds))
    n = len(lo)
    return Leaves(lo, hi, lo == hi, np.zeros(n, bool), np.arange(n), np.zeros(n, int))


def test_heavy_run_is_a_leaf_or_a_pair_over_half_the_mass_never_a_point():
    leaves = leaves_of([(0, 0), (1, 2), (2, 3), (3, 4)])
    assert heavy_run(leaves, np.array([0.0, 1.0, 6.0, 3.0])) == (2, 2)
    assert heavy_run(leaves, np.array([0.0, 1.0, 4.0, 4.0])) == (2, 3)  # 0.44 alone, 0.89 paired
    assert heavy_run(leaves, np.array([9.0, 1.0, 1.0, 1.0])) is None  # the point cell
    assert heavy_run(leaves, np.array([1.0, 1.0, 1.0, 1.0])) is None  # 0.5 is not more than half


@pytest.mark.parametrize("mass,scale", [(50_000, 125.0), (50_000, 1250.0), (3000, 10.0)])
def test_zoom_cells_put_the_noise_floor_in_each_cell_of_an_even_spread(mass, scale):
    beta = 0.01
    n = zoom_cells(mass, scale, beta)
    assert ZOOM_CELLS[0] <= n <= ZOOM_CELLS[1]
    assert mass / n >= noise_floor(scale, n, beta)
    assert n == ZOOM_CELLS[1] or mass / (n + 1) < noise_floor(scale, n + 1, beta)
    assert zoom_cells(10.0, scale, beta) == 0  # too little mass: no zoom


@pytest.mark.parametrize("column", ["narrow", "negative", "constant", "normal"])
def test_narrow_column_range_within_10x_and_bins_split_it(column):
    """At epsilon 1 on 20,000 rows the zoom reads sub-cells much narrower than the data: the
    range stays within 10x the true extent (the constant: within 1 of 2013) and the largest
    bin holds at most 25% (the issue's bar at epsilon 0.08; ten bins could hold 10% each)."""
    rng = np.random.default_rng(21)
    v = {"narrow": narrow(20_000, 1), "negative": -narrow(20_000, 2) - 48.3,
         "constant": np.full(20_000, 2013.0), "normal": rng.normal(1013.0, 7.0, 20_000)}[column]
    extent = float(np.ptp(v))
    for seed in range(5):
        out = dp_numeric_range(v, log_axis(), 10, 1.0, 1, releaser(1.0, 300 + seed), "x")
        assert out is not None
        if column == "constant":
            assert out.min <= 2013.0 < out.max and out.max - out.min <= 1.0
            continue
        assert out.max - out.min <= 10 * extent
        assert out.min - extent <= v.min() and out.max + extent >= v.max()
        assert bin_shares(v, out).max() <= 0.25


def test_no_zoom_on_a_spread_column():
    """Lognormal fares: no fine leaf holds half the mass, so no zoom is drawn (the zoom's
    share, when kept back, reads the fine tree a second time) and the range is whole
    decades as before."""
    v = lognormal(20_000, 3)
    for seed in range(5):
        rel = releaser(0.08, 400 + seed)
        out = dp_numeric_range(v, log_axis(), 10, 0.08, 1, rel, "fare")
        assert out is not None and not any("zoom" in c.name for c in rel.ledger.charges)
        assert math.log10(out.min) % 1 == 0 and math.log10(out.max) % 1 == 0
        assert bin_shares(v, out).max() <= 0.2


def test_an_empty_end_cell_is_dropped_when_stage_two_reads_it_empty():
    """Three coarse cells, 4 leaves each: the first two hold the data, the last (an empty cell
    that passed stage 1's floor, the beta / 2 event that once gave the taxi miles a range to
    10^6) sums to 50 in stage 2's raw leaves, under 3 standard deviations of 4 leaves' noise
    at scale 100 (3 * 100 * sqrt(8) = 849): it is dropped; at 900 it is kept; an empty inner
    cell is never dropped (only the ends are read again)."""
    from dp_arena.data.dp_numbers import CONFIRM_Z, confirmed

    coarse = np.repeat([5, 6, 9], 4)
    leaves = Leaves(*(np.zeros(12) for _ in range(4)), coarse, np.zeros(12, dtype=int))
    raw = np.concatenate([np.full(4, 500.0), np.full(4, 800.0), np.full(4, 50.0 / 4)])
    limit = CONFIRM_Z * 100.0 * math.sqrt(8.0)
    assert confirmed(raw, leaves, 100.0).tolist() == [True] * 8 + [False] * 4
    raw[8:] = (limit + 51.0) / 4
    assert confirmed(raw, leaves, 100.0).all()
    raw[4:8] = 0.0
    assert confirmed(raw, leaves, 100.0).all()
