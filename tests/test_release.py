"""dp_arena.privacy.release: one call charges the ledger and draws the noise; samplers.

Tolerances: (a) every pytest.approx here compares hand-computed arithmetic: its default, 1e-6
relative (and 1e-12 absolute), is far above the rounding of a few operations and far below any
wrong formula; (b) every statistical check states its standard error and z where it is (5 or
more standard errors, or z = 4.89 from tests.support.tolerances), and the KS tests' p > 1e-3 is
their stated false-failure rate.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dp_arena.errors import BudgetExceededError, ConfigError, DPArenaError
from dp_arena.privacy.accounting import Budget, Ledger
from dp_arena.privacy.release import (
    NumpySampler,
    OpenDPSampler,
    Releaser,
    ReleasesComplete,
    accountant_for,
    check_sampler,
)
from dp_arena.run.config import parse_run_config
from tests.support.tolerances import mean_se, statistical


def releaser(budget: Budget | None = None, accountant="gdp", sampler=None, **kw) -> Releaser:
    sampler = sampler or NumpySampler(np.random.default_rng(0))
    return Releaser(Ledger(budget or Budget(10.0, 1e-6), accountant), sampler, **kw)


def test_gaussian_release_charges_and_draws_with_the_same_scale():
    seen = []
    r = releaser(observer=seen.append)
    values = np.arange(20000, dtype=float)
    noisy = r.gaussian("hist", values, 2.0, 3.0, query="q")
    charge = r.ledger.charges[-1]
    assert (charge.kind, charge.sensitivity, charge.scale) == ("gaussian", 2.0, 3.0)
    noise = noisy - values
    assert stats.kstest(noise / 3.0, "norm").pvalue > 1e-3
    rec = seen[-1]
    assert rec.query == "q" and rec.scale == 3.0 and np.array_equal(rec.true, values)
    assert np.array_equal(rec.noisy, noisy)


def test_laplace_release_matches_its_scale():
    r = releaser(Budget(1000.0))
    noisy = r.laplace("hist", np.zeros(20000), 1.0, 0.5)
    assert r.ledger.charges[-1].pure_epsilon == pytest.approx(2.0)
    assert stats.kstest(noisy, "laplace", args=(0, 0.5)).pvalue > 1e-3


def test_exponential_mechanism_distribution():
    """P(i) proportional to exp(eps * score_i / (2 Delta)); charged as eps-DP."""
    scores = np.array([0.0, 1.0, 3.0])
    eps, sens = 2.0, 1.5
    sampler = NumpySampler(np.random.default_rng(0))
    # one sampler, a ledger per draw (one ledger recomposing 20,000 charges is quadratic)
    draws = np.bincount([releaser(Budget(1e6), sampler=sampler).exponential(
        "pick", scores, sens, eps) for _ in range(20000)], minlength=3) / 20000
    r = releaser(Budget(1e6))
    r.exponential("pick", scores, sens, eps)
    expected = np.exp(eps * scores / (2 * sens))
    # (b) 20,000 draws of p = (0.097, 0.188, 0.715): binomial standard errors <= 0.0032;
    # atol=0.015 is >= 4.7 of them (false failure < 3e-6 per share)
    np.testing.assert_allclose(draws, expected / expected.sum(), atol=0.015)
    assert r.ledger.charges[-1].pure_epsilon == pytest.approx(eps)
    assert r.ledger.charges[-1].rho == pytest.approx(eps**2 / 8)


class _TestsAll:
    """A sampler without ``argmax_gumbel_among`` (as OpenDP's): the releaser tests every
    candidate and draws from the admitted scores."""

    name = "numpy-eager"

    def __init__(self, rng):
        self.inner = NumpySampler(rng)

    def argmax_gumbel(self, scores, sensitivity, scale):
        return self.inner.argmax_gumbel(scores, sensitivity, scale)


@pytest.mark.parametrize("lazy", [True, False])
def test_exponential_mechanism_over_the_admissible_candidates(lazy):
    """With ``admissible``: P(i) proportional to exp(eps * score_i / (2 Delta)) over the
    admitted candidates, never another one, whether candidates are tested lazily (numpy) or
    all up front (a sampler without the lazy method)."""
    scores = np.array([5.0, 0.0, 1.0, 9.0, 3.0])
    allowed = {1, 2, 4}  # the two best scores are not admitted
    eps, sens = 2.0, 1.5
    rng = np.random.default_rng(1)
    sampler = NumpySampler(rng) if lazy else _TestsAll(rng)
    draws = np.bincount([releaser(Budget(1e6), sampler=sampler).exponential(
        "pick", scores, sens, eps, admissible=allowed.__contains__) for _ in range(20000)],
        minlength=5) / 20000
    expected = np.where(np.isin(np.arange(5), list(allowed)),
                        np.exp(eps * scores / (2 * sens)), 0.0)
    # (b) 20,000 draws of p = (0, 0.097, 0.188, 0, 0.715): binomial standard errors <= 0.0032;
    # atol=0.015 is >= 4.7 of them; the excluded ones must be exactly 0
    np.testing.assert_allclose(draws, expected / expected.sum(), atol=0.015)
    assert draws[0] == draws[3] == 0.0


def test_lazy_exponential_mechanism_tests_few_candidates_and_the_audit_sees_the_admitted():
    tested = []

    def admissible(i):
        tested.append(i)
        return i % 2 == 0

    scores = np.arange(1000, dtype=float) * 10.0  # scale 1: the top score wins by 10 nats
    index = releaser(Budget(1e6)).exponential("pick", scores, 0.5, 1.0, admissible=admissible)
    # the best two are 999 (refused) and 998 (admitted, ahead of 997 by 10 nats: a Gumbel
    # difference over 10 has probability 4.5e-5)
    assert index == 998 and tested == [999, 998]
    seen = []
    r = releaser(Budget(1e6), observer=seen.append)
    index = r.exponential("pick", scores, 0.5, 1.0, admissible=lambda i: i % 2 == 0)
    assert index == 998
    rec = seen[-1]  # the audit's record: the admitted scores and the index among them
    assert np.array_equal(rec.true, scores[::2]) and int(rec.noisy) == 499
    with pytest.raises(DPArenaError, match="admitted no candidate"):
        releaser(Budget(1e6)).exponential("pick", scores, 0.5, 1.0, admissible=lambda i: False)


def test_an_over_budget_release_is_refused_before_any_noise_is_drawn():
    class Counting(NumpySampler):
        draws = 0

        def gaussian(self, values, sensitivity, sigma):
            Counting.draws += 1
            return super().gaussian(values, sensitivity, sigma)

    r = releaser(Budget(0.1, 1e-6), sampler=Counting(np.random.default_rng(0)))
    with pytest.raises(BudgetExceededError):
        r.gaussian("too much", np.zeros(3), 1.0, 0.01)
    assert Counting.draws == 0 and r.ledger.charges == []


def test_non_finite_values_are_refused():
    with pytest.raises(Exception, match="finite"):
        releaser().gaussian("bad", [1.0, math.nan], 1.0, 1.0)


def test_laplace_above_thresholds_and_counts_the_empty_cells():
    """Family 0: 40,000 cells, cells 3 and 7 non-empty (counts 50, 60: always kept); family 1:
    one empty cell. Empty cells pass with probability exp(-t/b)/2, at t + Exp(b); the
    observer sees the non-empty cells and the kept cells by key."""
    seen = []
    r = releaser(Budget(1e9), observer=seen.append)
    fam, ch, values = r.laplace_above("tree", [40000, 1], [0, 0], [3, 7], [50.0, 60.0],
                                      1.0, 1.0, 2.0)
    pairs = list(zip(fam.tolist(), ch.tolist()))
    assert pairs == sorted(set(pairs)) and (0, 3) in pairs and (0, 7) in pairs
    empty = ~np.isin(ch, [3, 7]) | (fam == 1)
    p = 0.5 * math.exp(-2.0)
    assert abs(empty.sum() - 40001 * p) < 5 * math.sqrt(40001 * p)
    assert values.min() >= 2.0
    assert stats.kstest(values[empty] - 2.0, "expon").pvalue > 1e-3
    assert len(r.ledger.charges) == 1 and r.ledger.charges[0].pure_epsilon == pytest.approx(1.0)
    rec = seen[-1]
    assert rec.threshold == 2.0 and rec.cells.tolist() == [3, 7] and rec.true.tolist() == [50, 60]
    assert rec.kept.tolist() == (np.where(fam == 1, 40000, 0) + ch).tolist()
    assert np.array_equal(rec.noisy, values) and not rec.discrete


def test_laplace_above_refuses_unsorted_cells_and_a_negative_threshold():
    with pytest.raises(ValueError, match="sorted"):
        releaser(Budget(1e9)).laplace_above("t", [5], [0, 0], [3, 1], [1.0, 1.0], 1.0, 1.0, 1.0)
    refusing = releaser(Budget(1e9))
    with pytest.raises(DPArenaError, match=r">= 0 \(got -1\)") as refused:
        refusing.laplace_above("t", [5], [0], [1], [1.0], 1.0, 1.0, -1.0)
    assert "non-negative" in refused.value.fix
    assert not refusing.ledger.charges  # refused before anything is charged


def test_opendp_thresholded_counts_are_integers_empty_cells_included():
    """OpenDP noises integer counts with the discrete Laplace; empty cells must pass with the
    discrete law (P = q^ceil(t) / (1 + q), q = exp(-1/b)) at integer values, else a
    non-integer value would give an empty cell away."""
    r = releaser(Budget(1e9), sampler=OpenDPSampler())
    _fam, ch, values = r.laplace_above("tree", [20000], [0], [5], [40.0], 1.0, 1.5, 2.2)
    assert np.all(values == np.round(values)) and values.min() >= 3
    q = math.exp(-1 / 1.5)
    p = q**3 / (1 + q)
    n_empty = int((ch != 5).sum())
    assert abs(n_empty - 19999 * p) < 5 * math.sqrt(19999 * p)
    # given a pass, value - 3 is geometric with ratio q: mean q / (1 - q) = 1.055, sd
    # sqrt(q) / (1 - q) = 1.47, over ~1,790 passes: 3.3% relative standard error, z = 4.89
    # of it (false failure 1e-6): 16% (the constant 10% was 3 standard errors, 1 in 400);
    # a continuous Exp(1.5) tail (mean 1.5) is 42% off
    passed = values[ch != 5] - 3
    se = mean_se(math.sqrt(q) / (1 - q), passed.size) / (q / (1 - q))
    assert np.mean(passed) == pytest.approx(q / (1 - q), rel=statistical(se))


def test_done_ends_a_run_only_when_asked():
    releaser().done()
    with pytest.raises(ReleasesComplete):
        releaser(stop_after_releases=True).done()


def test_opendp_sampler_charges_what_opendp_certifies():
    """Integer counts get the discrete Gaussian; the ledger is charged OpenDP's own rho."""
    r = releaser(Budget(1e6, 1e-6), "zcdp", sampler=OpenDPSampler())
    noisy = r.gaussian("counts", np.full(4000, 7.0), 1.0, 2.0)
    assert np.all(noisy == np.round(noisy))  # discrete Gaussian on integers
    # (b) 4,000 draws: the mean's standard error 2 / sqrt(4000) = 0.032 and the sd's 2 /
    # sqrt(8000) = 0.022, so 0.2 and 0.15 are 6.3 and 6.7 of them; Laplace(1.5) below: sd 2.12,
    # standard errors 0.034 (mean) and 2.12 sqrt(5 / 16,000) = 0.038 (sd, kurtosis 6): 0.2 is
    # >= 5.3 of them
    assert abs(np.mean(noisy) - 7.0) < 0.2 and abs(np.std(noisy) - 2.0) < 0.15
    assert r.ledger.charges[-1].rho == pytest.approx(1 / 8)
    lap = r.laplace("floats", np.full(4000, 0.5), 1.0, 1.5)
    assert abs(np.mean(lap) - 0.5) < 0.2 and abs(np.std(lap) - 1.5 * math.sqrt(2)) < 0.2
    picks = np.bincount([r.exponential("pick", [0.0, 3.0], 1.0, 2.0) for _ in range(2000)],
                        minlength=2) / 2000
    # (b) 2,000 draws of p = 0.953: binomial standard error 0.0048, abs=0.03 is 6.3 of them
    assert picks[1] == pytest.approx(math.exp(3) / (1 + math.exp(3)), abs=0.03)


def test_sampler_settings():
    check_sampler("numpy")
    with pytest.raises(ConfigError, match="privacy.sampler"):
        check_sampler("bogus")
    assert accountant_for("opendp", "gdp") == "zcdp"
    assert accountant_for("numpy", "gdp") == "gdp"
    base = {"dataset": {"name": "titanic"}, "mechanism": {"name": "independent"},
            "metrics": {"kmarginal": {}}}
    rc = parse_run_config({**base, "privacy": {"epsilon": 1.0, "delta": 1e-6,
                                                 "sampler": "opendp"}})
    assert (rc.sampler, rc.accountant) == ("opendp", "zcdp")
    with pytest.raises(ConfigError, match="replayable"):
        parse_run_config({**base, "privacy": {"epsilon": 1.0, "sampler": "opendp",
                                              "noise": "replayable"}})
