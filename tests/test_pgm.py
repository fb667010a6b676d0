"""mechanisms.pgm: the shared mbi glue (marginals, totals, sampling, selection, calibration)."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from harness.privacy.accounting import Budget, compose
from mechanisms import pgm


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(0)
    domain = {"a": 3, "b": 4, "c": 2, "d": 5, "e": 3}
    n = 4000
    a = rng.integers(0, 3, n)
    b = (a + rng.integers(0, 2, n)) % 4
    c = (b > 1).astype(int) ^ (rng.random(n) < 0.1)
    d = rng.integers(0, 5, n)
    e = (d + rng.integers(0, 2, n)) % 3
    codes = pd.DataFrame({"a": a, "b": b, "c": c, "d": d, "e": e})
    cliques = [("a",), ("b",), ("c",), ("d",), ("e",), ("a", "b"), ("b", "c"), ("d", "e")]
    hists = [pgm.histogram(codes, cl, domain) for cl in cliques]
    ms = [pgm.Measurement(cl, h + rng.normal(0.0, 5.0, size=h.shape), 5.0)
          for cl, h in zip(cliques, hists)]
    model = pgm.estimate(domain, ms, 300, pgm.initial_total(ms, domain))
    return domain, codes, ms, model


def test_tree_marginals_match_mbi(fitted):
    domain, _, _, model = fitted
    tm = pgm.TreeMarginals(model)
    for k in (1, 2, 3):
        for cl in itertools.combinations(domain, k):  # includes cliques across components
            ref = np.asarray(model.project(cl).datavector())
            np.testing.assert_allclose(tm.marginal(cl), ref, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(tm.marginal(("c", "a")),  # any attribute order
                               np.asarray(model.project(("c", "a")).datavector()), atol=1e-8)


def test_totals_come_from_noisy_measurements(fitted):
    domain, codes, ms, model = fitted
    assert pgm.initial_total(ms, domain) == pytest.approx(len(codes), rel=0.02)
    assert pgm.initial_total(ms, domain) != len(codes)
    assert pgm.fitted_total(model, ms) == pytest.approx(len(codes), rel=0.02)


def test_sampling_is_seeded_and_leaves_global_state(fitted):
    domain, _, _, model = fitted
    np.random.seed(123)
    before = np.random.get_state()[1].copy()
    a = pgm.sample_codes(model, 500, np.random.default_rng(7), list(domain))
    b = pgm.sample_codes(model, 500, np.random.default_rng(7), list(domain))
    np.testing.assert_array_equal(np.random.get_state()[1], before)
    pd.testing.assert_frame_equal(a, b)
    assert all(a[c].between(0, n - 1).all() for c, n in domain.items())


@pytest.mark.parametrize("accountant", ["gdp", "zcdp"])
def test_solve_scale_spends_exactly(accountant):
    budget = Budget(0.7, 1e-7)

    def plan(s):
        return [pgm.gaussian_charge("g", 2.0, 2.0 / math.sqrt(s), 5),
                pgm.exponential_charge("e", 1.0, math.sqrt(s), 3)]

    s = pgm.solve_scale(plan, budget, accountant)
    eps, _ = compose(plan(s), budget.delta, accountant)
    assert eps <= 0.7 and eps == pytest.approx(0.7, abs=1e-12)
    prior = plan(s / 3)
    r = pgm.solve_scale(plan, budget, accountant, prior=prior)
    assert compose([*prior, *plan(r)], budget.delta, accountant)[0] == pytest.approx(0.7,
                                                                                     abs=1e-12)


def test_downward_closure_and_weights():
    closure = pgm.downward_closure([("c", "a"), ("b", "c", "a")], ["a", "b", "c"])
    assert closure == [("a",), ("c",), ("b",), ("a", "c"), ("a", "b"), ("b", "c"),
                       ("a", "b", "c")]
    w = pgm.contribution_weights(pd.DataFrame({"p": [1, 1, 1, 2]}), "p", 2)
    np.testing.assert_allclose(w, [2 / 3, 2 / 3, 2 / 3, 1.0])


@pytest.mark.parametrize("accountant", ["gdp", "zcdp"])
def test_a_solved_plan_always_fits_the_ledger_charged_one_at_a_time(accountant):
    """The ledger has no tolerance and recomposes charges one by one; a plan calibrated by
    solve_scale must never be refused, whatever its shape, and must spend the budget to 1e-9."""
    from harness.privacy.accounting import Ledger

    rng = np.random.default_rng(7)
    for _ in range(60):
        eps = float(10 ** rng.uniform(-1, 1.3))
        budget = Budget(eps, float(10 ** rng.uniform(-12, -4)))
        n_gauss, n_exp = int(rng.integers(1, 80)), int(rng.integers(0, 30))
        sens = rng.uniform(0.5, 200, size=n_gauss)

        def plan(s: float) -> list:
            # larger s = more expensive: s scales every release's privacy parameter
            return ([pgm.gaussian_charge(f"g{i}", c, c / (0.05 * s)) for i, c in enumerate(sens)]
                    + [pgm.exponential_charge("e", 1.0, 0.01 * s, n_exp)] * (n_exp > 0))

        s = pgm.solve_scale(plan, budget, accountant)
        ledger = Ledger(budget, accountant)
        for c in plan(s):  # as mechanisms do: a counted charge released one at a time
            for _ in range(c.count):
                ledger.charge(c.name, c.kind, c.sensitivity, c.scale)
        spent = ledger.spent()[0]
        assert eps - 1e-9 * eps <= spent <= eps
