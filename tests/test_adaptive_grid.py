"""adaptive_grid: calibration, the 66 measurements, unit-norm query columns, contribution
weights, ledger totals (re-derived independently), output, determinism, config errors.

Tolerances: (d) the write-up's sigmas are printed to 2 decimals: abs=0.005, half a unit of the
last digit, for the calibrations that reproduce them (gdp, zcdp_bs); abs=0.01 where a printed
(rounded) sigma is rescaled by 1/sqrt(0.99) (its half unit grows to 0.00503); (c) budgets are
spent to abs=1e-9 at epsilon 1-10, the calibrations' root-finding target
(test_budget_edges.assert_spends_the_budget: within 1e-9 relative, never over); autodp's
epsilon is its own numerical minimisation over the Renyi order, trusted to rel=1e-6; (a) query
columns, norms and marginals are sums of at most a few thousand terms of magnitude <= 1:
atol=1e-12 is ~4,500 ulps of 1, above their rounding; share * rho and the folded-loss
differences are a few operations: rel=1e-9; the structured fit is compared to the reference
mirror descent (the same updates in another operation order) at rtol=atol=1e-9; rtol=1e-12 for
one marginal summed two ways; (c) the finite-difference gradient (step h = 1e-6) has truncation
error ~h * curvature (relative 1e-6 here) and cancellation error ~1e-16 * loss / h: rel=1e-4
plus abs=1e-6 bounds both.
"""

import itertools
import math
import re
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from autodp import mechanism_zoo, transformer_zoo

from dp_arena.data.datasets import PROJECT_ROOT, Dataset, load_taxi_sim
from dp_arena.errors import ConfigError
from dp_arena.privacy.accounting import Budget, Ledger
from dp_arena.privacy.release import NumpySampler, Releaser
from dp_arena.mechanisms import make_mechanism, pgm
from dp_arena.mechanisms.base import output_facts
from dp_arena.mechanisms.pgm.adaptive_grid import (
    DIAGNOSTICS_FILE,
    TAXI_OUTER,
    AdaptiveGrid,
    chow_liu_pairs,
)
from dp_arena.mechanisms.pgm.grid_query import GridQuery, fold_measurements
from tests.seeding import seeded
from tests.support.docstrings import printed_table

DELTA = 2.5e-5


@pytest.fixture(scope="module")
def taxi() -> Dataset:
    return load_taxi_sim(n_private=3000, n_public=3000, seed=1)


def diagnostics(out: pd.DataFrame) -> dict:
    """The run's diagnostics its output carries (the mechanism keeps none of them)."""
    _, files = output_facts(out.copy())  # a copy: the table keeps them for the next reader
    return files[DIAGNOSTICS_FILE]


def run(data, params, budget, accountant="gdp", seed=0):
    mech = make_mechanism("adaptive_grid", params)
    ledger = Ledger(budget, accountant, unit=data.ledger_unit)
    out = mech.fit_sample(data, budget, seeded(ledger, seed), np.random.default_rng(seed))
    return mech, ledger, out


def test_66_measurements_downward_closure_plus_copies(taxi):
    cliques, derived = AdaptiveGrid().cliques(taxi)
    # downward closure of the 7 outer marginals: 10 one-way, 23 two-way, 20 three-way and
    # 6 four-way cliques = 59 (the company_id outer marginal is 3-way, so only 6 four-ways),
    # plus 7 extra copies of pickup x dropoff = 66.
    distinct = set(cliques)
    assert len(cliques) == 66 and len(distinct) == 59
    assert Counter(len(c) for c in distinct) == {1: 10, 2: 23, 3: 20, 4: 6}
    expected = {tuple(sorted(s)) for cl in TAXI_OUTER for k in range(1, len(cl) + 1)
                for s in itertools.combinations(cl, k)}
    assert {tuple(sorted(c)) for c in distinct} == expected
    pd_pair = ("pickup_community_area", "dropoff_community_area")
    assert Counter(cliques)[pd_pair] == 8
    assert derived == ["trip_day_of_week", "trip_hour_of_day"]
    assert [len(c) for c in cliques] == sorted(len(c) for c in cliques)  # rounds k = 1..4


@pytest.mark.parametrize("eps, C, zcdp_sigma, gdp_sigma", [
    (1.0, 150, 5739.36, 4290.24),
    (10.0, 200, 895.42, 784.12),
])
def test_writeup_sigmas_from_the_mechanisms_own_calibration(taxi, eps, C, zcdp_sigma,
                                                            gdp_sigma):
    """gdp gives the write-up's GDP sigmas; zcdp_bs the write-up's printed (Bun-Steinke zCDP)
    sigmas; zcdp converts with Canonne-Kamath-Steinke (autodp recomputes it), tighter than
    the write-up's Bun-Steinke zCDP sigmas."""
    from autodp.converter import rdp_to_approxdp

    budget = Budget(eps, DELTA)
    # the write-up's rule: 150 at eps <= 1, 200 above; no person count (66 measurements)
    mech = AdaptiveGrid(C=None, person_count_share=0)
    assert mech.calibrate(taxi, budget, "gdp") == (C, pytest.approx(gdp_sigma, abs=0.005), 66)
    assert mech.calibrate(taxi, budget, "zcdp_bs") == (C, pytest.approx(zcdp_sigma, abs=0.005),
                                                       66)
    c, ours, k = mech.calibrate(taxi, budget, "zcdp")
    rho = 66 * C**2 / (2 * ours**2)
    assert (c, k) == (C, 66) and gdp_sigma < ours < zcdp_sigma
    assert rdp_to_approxdp(lambda alpha: rho * alpha)(DELTA) == pytest.approx(eps, rel=1e-6)
    # the default person count takes 1% of mu^2 (gdp) or rho (zcdp): sigma grows by 1/sqrt(.99)
    counted = AdaptiveGrid(C=None)
    for accountant, sigma in (("zcdp", ours), ("gdp", gdp_sigma)):
        assert counted.calibrate(taxi, budget, accountant) == (
            C, pytest.approx(sigma / math.sqrt(0.99), abs=0.01), 66)


def random_queries(domain, seed):
    rng = np.random.default_rng(seed)
    queries, plausible = {}, {}
    cliques = [c for k in range(1, len(domain) + 1) for c in itertools.combinations(domain, k)]
    for cl in cliques:
        queries[cl] = AdaptiveGrid.grid_query(cl, domain, queries, plausible)
        plausible[cl] = rng.random(queries[cl].n_cells) < rng.uniform(0.1, 0.9)
    return queries


@pytest.mark.parametrize("seed", range(4))
def test_query_matrix_columns_have_unit_l2_norm(seed):
    domain = {"a": 3, "b": 4, "c": 2, "d": 3}
    rng = np.random.default_rng(seed)
    for q in random_queries(domain, seed).values():
        Q = q.matrix()
        norms = np.sqrt(np.asarray(Q.power(2).sum(axis=0)).ravel())
        np.testing.assert_allclose(norms, 1.0, rtol=0, atol=1e-12)
        np.testing.assert_allclose(q.column_norms_sq(), 1.0, rtol=0, atol=1e-12)
        x = rng.random(q.n_cells)
        np.testing.assert_allclose(Q @ x, q.apply(x), atol=1e-12)
        for j in range(q.n_cells):  # the column extraction the estimator uses
            rows, vals = q.column(j)
            col = np.zeros(q.n_rows)
            np.add.at(col, rows, vals)
            np.testing.assert_allclose(col, Q[:, j].toarray().ravel(), atol=1e-12)


def taxi_measurements(taxi, mech, budget, weights=None):
    """``(measurements, model domain)`` of ``mech.measure`` on the taxi data, seed 0."""
    cliques, derived = mech.cliques(taxi)
    domain = {a: n for a, n in taxi.schema.domain().items() if a not in derived}
    codes = taxi.schema.encode(taxi.private)
    C, sigma, _ = mech.calibrate(taxi, budget, "gdp")
    ms = mech.measure(codes, domain, cliques, weights, C, sigma,
                      Releaser(Ledger(budget), NumpySampler(np.random.default_rng(0))))
    return ms, domain


def test_query_columns_of_a_taxi_run_have_unit_norm(taxi):
    weights = pgm.contribution_weights(taxi.private, "taxi_id", 20)
    ms, _ = taxi_measurements(taxi, AdaptiveGrid(C=20), Budget(10.0, DELTA), weights)
    structured = [m.query for m in ms if m.query is not None]
    assert structured, "expected adaptive (non-identity) queries"
    assert any(0 < len(q.ident) < q.n_cells for q in structured)
    for q in structured:
        np.testing.assert_allclose(q.column_norms_sq(), 1.0, rtol=0, atol=1e-12)


def test_weights_bound_each_taxis_contribution_by_C(taxi):
    C = 7.0
    df = taxi.private
    w = pgm.contribution_weights(df, "taxi_id", C)
    rows = df.groupby("taxi_id")["taxi_id"].transform("size").to_numpy()
    np.testing.assert_allclose(w, np.minimum(1.0, C / rows))
    per_taxi = pd.Series(w).groupby(df["taxi_id"].to_numpy()).sum()
    assert per_taxi.max() <= C + 1e-9 and per_taxi.max() == pytest.approx(C)
    codes = taxi.schema.encode(df)
    domain = taxi.schema.domain()
    big = per_taxi.idxmax()
    mine = (df["taxi_id"] == big).to_numpy()
    queries = random_queries({"pickup_community_area": 78, "shift": 21}, seed=3)
    for cl in [("pickup_community_area",), ("pickup_community_area", "shift"),
               ("fare", "trip_total", "shift")]:
        h = pgm.histogram(codes[mine], cl, domain, w[mine])  # the taxi's own contribution
        assert np.abs(h).sum() <= C + 1e-9 and np.linalg.norm(h) <= C + 1e-9
    q = queries[("pickup_community_area", "shift")]
    h = pgm.histogram(codes[mine], ("pickup_community_area", "shift"),
                      domain, w[mine])
    assert np.linalg.norm(q.apply(h)) <= C + 1e-9  # unit columns: ||Q h||_2 <= ||h||_1 <= C


@pytest.mark.parametrize("accountant", ["gdp", "zcdp"])
@pytest.mark.parametrize("share", [0.0, 0.01, 0.2])
def test_ledger_spends_exactly_the_budget_and_recomputes_independently(taxi, accountant, share):
    budget = Budget(1.0, DELTA)
    mech, ledger, out = run(taxi, {"C": 25, "iters": 10, "person_count_share": share}, budget,
                            accountant)
    assert ledger.spent()[0] == pytest.approx(1.0, abs=1e-9)
    charges = [c for c in ledger.charges if c.name != "person count"]
    counts = [c for c in ledger.charges if c.name == "person count"]
    assert len(charges) == 66 and len(counts) == (1 if share else 0)
    assert {c.kind for c in ledger.charges} == {"gaussian"}
    assert {c.sensitivity for c in charges} == {25.0}
    sigma = charges[0].scale
    assert {c.scale for c in charges} == {sigma}
    assert diagnostics(out)["sigma"] == sigma
    # the mechanism keeps nothing of the run: it is as it was built
    assert vars(mech) == vars(make_mechanism("adaptive_grid", {"C": 25, "iters": 10,
                                                               "person_count_share": share}))
    if accountant == "zcdp":  # rho by hand, converted by autodp (Canonne-Kamath-Steinke)
        from autodp.converter import rdp_to_approxdp

        rho = sum(c.sensitivity**2 / (2 * c.scale**2) for c in ledger.charges)
        eps = rdp_to_approxdp(lambda alpha: rho * alpha)(DELTA)
        if share:  # the count's rho is the share of the total
            assert 1 / (2 * counts[0].scale**2) == pytest.approx(share * rho, rel=1e-9, abs=0)
    else:  # autodp: 66 Gaussian mechanisms at noise multiplier sigma / C (+ the count's)
        mechs, times = [mechanism_zoo.GaussianMechanism(sigma / 25.0)], [66]
        if share:
            assert counts[0].sensitivity == 1.0
            mechs.append(mechanism_zoo.GaussianMechanism(counts[0].scale))
            times.append(1)
        eps = transformer_zoo.ComposeGaussian()(mechs, times).get_approxDP(DELTA)
    assert eps == pytest.approx(1.0, rel=1e-6)


def test_person_count_is_measured_only_where_ids_use_it(taxi, small_dataset):
    budget = Budget(10.0, DELTA)
    for params in ({"ids": "public_sizes"}, {"ids": "public_groups"},
                   {"person_count_share": 0}):
        _, ledger, _ = run(taxi, {"iters": 5, **params}, budget)
        assert len(ledger.charges) == 66 and ledger.spent()[0] == pytest.approx(10.0, abs=1e-9)
    small_dataset.unit = "record"  # every row is its own person: nothing to count
    _, ledger, out = run(small_dataset, {"iters": 5}, Budget(1.0, 1e-6))
    assert "person count" not in [c.name for c in ledger.charges]
    assert diagnostics(out)["noisy_persons"] is None


def test_default_ids_give_the_noisy_number_of_taxis(taxi):
    _, ledger, out = run(taxi, {"iters": 10}, Budget(10.0, DELTA))
    noisy = diagnostics(out)["noisy_persons"]
    true = taxi.private["taxi_id"].nunique()
    sigma = next(c.scale for c in ledger.charges if c.name == "person count")
    assert abs(noisy - true) < 6 * sigma  # Gaussian: false failure 2e-9
    assert out["taxi_id"].nunique() == round(noisy)
    assert out.groupby("taxi_id").size().max() <= taxi.max_records_per_individual


def test_output_is_schema_valid_and_deterministic_per_seed(taxi):
    budget = Budget(10.0, DELTA)
    _, _, a = run(taxi, {"iters": 10}, budget, seed=3)
    _, _, b = run(taxi, {"iters": 10}, budget, seed=3)
    _, _, c = run(taxi, {"iters": 10}, budget, seed=4)
    assert taxi.schema.problems(a) == []
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)
    # derived time columns follow the Sprint 3 definition of shift
    assert (a["shift"] == a["trip_day_of_week"] * 3 + a["trip_hour_of_day"] // 8).all()
    assert a.groupby("taxi_id").size().max() <= taxi.max_records_per_individual


def test_row_count_comes_from_noisy_measurements(taxi):
    budget = Budget(10.0, DELTA)
    runs = [run(taxi, {"iters": 30, "C": 20, "row_count": policy}, budget, seed=s)
            for s in range(2) for policy in ("fitted", "one_way")]
    sizes = {len(out) for _, _, out in runs}
    assert len(sizes) == 4  # noise, not len(private)
    assert all(abs(n - len(taxi.private)) < 0.35 * len(taxi.private) for n in sizes)
    for mech, _, out in runs[1::2]:  # one_way: noisy 1-way totals x public clipping ratio
        info = diagnostics(out)
        assert len(out) == round(info["one_way_total"] * info["clip_ratio"])


def test_public_groups_ids(taxi):
    _, _, out = run(taxi, {"iters": 10, "ids": "public_groups"}, Budget(10.0, DELTA))
    assert taxi.schema.problems(out) == []
    assert out.groupby("taxi_id").size().max() <= 200


def test_folding_changes_the_loss_by_a_constant(taxi):
    ms, domain = taxi_measurements(taxi, AdaptiveGrid(C=200), Budget(1.0, DELTA))
    folded = fold_measurements(ms)
    assert len(folded) < len(ms)
    rng = np.random.default_rng(1)

    def loss(measurements, tables):
        # a product distribution: every clique marginal is consistent with every other
        total = 0.0
        for m in measurements:
            marg = np.ones(())
            for a in m.clique:
                marg = np.multiply.outer(marg, tables[a])
            total += 0.5 * np.sum((m.apply(marg.ravel() * len(taxi.private)) - m.y) ** 2) \
                / m.sigma**2
        return total

    diffs = []
    for _ in range(2):
        tables = {a: rng.random(n) for a, n in domain.items()}
        tables = {a: t / t.sum() for a, t in tables.items()}
        diffs.append(loss(ms, tables) - loss(folded, tables))
    assert diffs[0] == pytest.approx(diffs[1], rel=1e-9)


def test_batch_loss_gradient_matches_finite_differences():
    domain = {"a": 3, "b": 2, "c": 3}
    queries = random_queries(domain, seed=5)
    rng = np.random.default_rng(0)
    items = [(q, rng.random(q.n_rows), 0.5) for q in queries.values() if q.parents]
    needed = set().union(*[q.required_cliques() for q, _, _ in items])
    marg = {c: rng.random(math.prod(domain[a] for a in c)) for c in needed}
    loss, grads = GridQuery.batch_loss(items, marg)
    for c in needed:
        for j in range(len(marg[c])):
            bumped = {k: v.copy() for k, v in marg.items()}
            bumped[c][j] += 1e-6
            numeric = (GridQuery.batch_loss(items, bumped)[0] - loss) / 1e-6
            assert numeric == pytest.approx(grads[c][j], rel=1e-4, abs=1e-6)


def test_generic_variant_picks_marginals_from_public_data(small_dataset):
    mech = AdaptiveGrid()
    cliques, derived = mech.cliques(small_dataset)
    assert derived == []
    pairs = chow_liu_pairs(small_dataset.schema.encode(small_dataset.public),
                           small_dataset.schema.domain())
    assert {c for c in cliques if len(c) == 2} == {tuple(sorted(p, key=small_dataset.schema
                                                                .attributes.index))
                                                   for p in pairs}
    changed = Dataset("x", small_dataset.schema, small_dataset.private.iloc[::-1].copy(),
                      small_dataset.public, "user", "pid", 5)
    changed.private["size"] = 0  # the private data does not influence the choice
    assert mech.cliques(changed) == (cliques, [])
    budget = Budget(2.0, 1e-6)
    _, ledger, out = run(small_dataset, {"iters": 20, "C": 5}, budget)
    assert small_dataset.schema.problems(out) == []
    assert ledger.spent()[0] == pytest.approx(2.0, abs=1e-9)
    assert [c.name for c in ledger.charges][-1] == "person count"  # user-level: persons counted
    assert len(ledger.charges) == len(cliques) + 1


def test_explicit_marginals_and_record_level_sensitivity(small_dataset):
    small_dataset.unit, small_dataset.public = "record", None
    params = {"iters": 20, "marginals": [["color", "size"]], "copies_of": ["size"],
              "extra_copies": 2}
    _, ledger, out = run(small_dataset, params, Budget(1.0, 1e-6))
    names = [c.name for c in ledger.charges]
    assert len(names) == 6  # color, size, amount (uncovered -> 1-way), color x size, 2 copies
    assert {c.sensitivity for c in ledger.charges} == {1.0}
    assert small_dataset.schema.problems(out) == []


@pytest.mark.parametrize("params, match", [
    ({"C": -1}, "mechanism.C"),
    ({"C": {1: 0}}, "mechanism.C"),
    ({"C": "big"}, "mechanism.C"),
    ({"threshold": -1}, "threshold"),
    ({"iters": 0}, "iters"),
    ({"row_count": "exact"}, "row_count"),
    ({"ids": "private"}, "ids"),
    ({"person_count_share": 1.0}, "person_count_share"),
    ({"person_count_share": -0.1}, "person_count_share"),
    ({"profile": "shift"}, "profile"),
    ({"marginals": []}, "marginals"),
    ({"extra_copies": -2}, "extra_copies"),
    ({"nope": 1}, "unknown setting"),
])
def test_bad_hyperparameters_raise_config_error(params, match):
    with pytest.raises(ConfigError, match=match):
        make_mechanism("adaptive_grid", params)


def test_bad_marginals_for_the_data(small_dataset):
    with pytest.raises(ConfigError, match="unknown attributes"):
        AdaptiveGrid(marginals=[["color", "weight"]]).cliques(small_dataset)
    with pytest.raises(ConfigError, match="copies_of"):
        AdaptiveGrid(marginals=[["color", "size"]], copies_of=["color", "amount"],
                     extra_copies=1).cliques(small_dataset)
    with pytest.raises(ConfigError, match="delta > 0"):
        run(small_dataset, {}, Budget(1.0, 0.0))
    ledger = Ledger(Budget(1.0, 1e-6))
    with pytest.raises(ConfigError, match="profile names unknown attributes"):
        AdaptiveGrid(profile=["weight"]).fit_sample(small_dataset, Budget(1.0, 1e-6), Releaser(ledger),
                                                    np.random.default_rng(0))
    assert ledger.charges == []  # refused before any measurement


def wide_table(n_cols: int, width: int, n: int = 500) -> Dataset:
    """A record-level table without a public part: ``n_cols`` categorical columns of
    ``width`` values each (salary-like CSV tables)."""
    from dp_arena.data.schema import Column, RunSpec, Schema

    cols = tuple(Column(f"c{i}", "categorical", values=tuple(range(width)))
                 for i in range(n_cols))
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({f"c{i}": rng.integers(0, width, size=n) for i in range(n_cols)})
    return Dataset("wide", Schema(cols, (RunSpec(1.0, DELTA),)), frame, None, unit="record")


def test_default_marginals_without_public_data_are_chosen_by_size():
    """No public part: 16 binary columns fit every pair (one 2^16-cell clique, 0.5 MB, within
    auto_model_mb = 4); 12 columns of 50 values cannot (50^12 cells): a spanning tree of
    2,500-cell pairs plus the pairs that keep the model within 4 MB; 12 columns of 5,000
    values have no pair within max_cells = 10,000: 1-way marginals only."""
    binary = wide_table(16, 2)
    pairs = [c for c in AdaptiveGrid().cliques(binary)[0] if len(c) == 2]
    assert len(pairs) == 120
    data = wide_table(12, 50)
    cliques, _ = AdaptiveGrid().cliques(data)
    pairs = [c for c in cliques if len(c) == 2]
    assert not [c for c in cliques if len(c) > 2] and 11 <= len(pairs) < 66
    comp = {a: a for a in data.schema.attributes}

    def find(a):
        while comp[a] != a:
            a = comp[a]
        return a

    for a, b in pairs:
        comp[find(a)] = find(b)
    assert len({find(a) for a in comp}) == 1  # connected: the spanning tree comes first
    assert pgm.model_size_mb(data.schema.domain(), pairs) <= 4.0
    wide = wide_table(12, 5000)  # every pair has 25M cells: 1-way marginals only
    assert all(len(c) == 1 for c in AdaptiveGrid().cliques(wide)[0])


def test_iteration_cap_follows_the_minutemen_schedule_unless_set():
    # int(344 eps + 256), by hand: 428 at 0.5, 600 at 1, 3,696 at 10
    assert [AdaptiveGrid().max_iters(Budget(e, DELTA)) for e in (0.5, 1.0, 10.0)] == \
        [428, 600, 3696]
    assert AdaptiveGrid(iters=200).max_iters(Budget(10.0, DELTA)) == 200


def test_the_fit_stops_when_the_loss_stalls_and_runs_the_cap_without_a_tol(small_dataset,
                                                                          monkeypatch):
    """Defaults: the cap is int(344 x 10 + 256) = 3,696 at epsilon 10 and the loss rule (tol
    0.03) ends the fit well before it; tol=None runs exactly the iterations asked."""
    fits = []
    real = pgm.estimate

    def recorded(domain, measurements, iters, total, **kwargs):
        model = real(domain, measurements, iters, total, **kwargs)
        fits.append((iters, kwargs.get("tol"), model.iterations))
        return model

    monkeypatch.setattr(pgm, "estimate", recorded)
    run(small_dataset, {"C": 5}, Budget(10.0, 1e-6))
    (cap, tol, taken), = fits
    assert (cap, tol) == (3696, 0.03) and 0 < taken < cap
    fits.clear()
    run(small_dataset, {"C": 5, "iters": 120, "tol": None}, Budget(10.0, 1e-6))
    assert fits == [(120, None, 120)]


def test_a_table_outside_the_taxi_design_is_said_once_and_the_taxi_data_is_not(
        taxi, small_dataset):
    assert AdaptiveGrid().notes(taxi) == ()
    assert AdaptiveGrid(marginals=[["color", "size"]]).notes(small_dataset) == ()
    (note,) = AdaptiveGrid().notes(small_dataset)
    closure, _ = AdaptiveGrid().cliques(small_dataset)
    pairs = sum(len(c) == 2 for c in closure)
    assert "designed for the taxi challenge" in note and "Chow-Liu tree of the public" in note
    assert f"measures {pairs} pairs" in note and f"{len(closure)} measurements" in note
    (note,) = AdaptiveGrid().notes(wide_table(12, 50))
    assert "domain size alone (no public sample" in note


def test_too_large_marginals_are_refused_before_anything_is_measured():
    """Three 5,000-value columns in one marginal: 1.25e11 cells (1e12 bytes). The run stops
    with the fix before any budget is spent or any array is allocated."""
    data = wide_table(4, 5000)
    ledger = Ledger(Budget(1.0, DELTA), "gdp")
    mech = AdaptiveGrid(marginals=[["c0", "c1", "c2"]])
    with pytest.raises(ConfigError, match="max_model_mb"):
        mech.fit_sample(data, Budget(1.0, DELTA), Releaser(ledger), np.random.default_rng(0))
    assert ledger.charges == []


@pytest.mark.slow
def test_default_run_on_a_plain_table_spends_the_budget_exactly():
    data = wide_table(6, 8, n=800)
    budget = Budget(1.0, DELTA)
    _, ledger, out = run(data, {"iters": 20}, budget)
    assert ledger.spent()[0] == pytest.approx(1.0, abs=1e-9) and ledger.spent()[0] <= 1.0
    assert data.schema.problems(out) == [] and 1000 <= len(out) <= 1_000_000


def mbi_structured_fit(domain, measurements, iters, total):
    """The reference: ``mbi``'s JAX MirrorDescent on the same loss (plain queries in JAX, the
    grid queries through ``GridQuery.batch_loss`` in a ``pure_callback`` with a custom VJP)
    and the same first step size (:func:`unit_norm_lipschitz`), as adaptive_grid ran before
    its estimation moved to NumPy."""
    import jax
    import jax.numpy as jnp
    from mbi import estimation as mbi_estimation
    from mbi.clique_utils import maximal_subset
    from mbi.marginal_loss import MarginalLossFn

    from dp_arena.mechanisms.pgm.mirror_descent import unit_norm_lipschitz

    plain = [m for m in measurements if not m.structured]
    items = [(m.query, np.asarray(m.y, float), float(m.sigma)) for m in measurements
             if m.structured]
    needed = sorted({c for q, _, _ in items for c in q.required_cliques()},
                    key=lambda c: (len(c), c))
    sizes = [math.prod(domain[a] for a in c) for c in needed]
    shapes = (jax.ShapeDtypeStruct((), jnp.float64),
              tuple(jax.ShapeDtypeStruct((n,), jnp.float64) for n in sizes))

    def host(*vecs):
        loss, grads = GridQuery.batch_loss(items, dict(zip(needed, map(np.asarray, vecs))))
        return (np.asarray(loss, np.float64),
                tuple(np.asarray(grads.get(c, np.zeros(n)), np.float64)
                      for c, n in zip(needed, sizes)))

    @jax.custom_vjp
    def grid_loss(*vecs):
        return jax.pure_callback(host, shapes, *vecs)[0]

    grid_loss.defvjp(lambda *v: jax.pure_callback(host, shapes, *v),
                     lambda grads, g: tuple(g * gr for gr in grads))

    def loss_fn(marginals, _):
        loss = 0.0
        for m in plain:
            diff = (marginals.project(tuple(m.clique)).datavector() - m.y) / m.sigma
            loss = loss + 0.5 * jnp.vdot(diff, diff)
        return loss + grid_loss(*[marginals.project(c).datavector() for c in needed])

    maximal = maximal_subset([tuple(m.clique) for m in measurements])
    fn = MarginalLossFn(maximal, loss_fn, {}, unit_norm_lipschitz(domain, measurements))
    return mbi_estimation.MirrorDescent().estimate(
        pgm.mbi_domain(domain), fn, known_total=total, iters=iters)


def test_numpy_estimation_with_grid_queries_is_mbis_step_for_step():
    """The NumPy estimator on grid queries (identity cells, parent blocks, folded as in a
    run) takes the same steps as ``mbi``'s JAX estimator on the same loss: equal marginals
    after 50 iterations (one block), and a lower loss than the uniform start's."""
    from dp_arena.mechanisms.pgm import ProductMarginals

    domain = {"a": 3, "b": 4, "c": 2, "d": 3}
    rng = np.random.default_rng(3)
    codes = pd.DataFrame({a: rng.integers(0, n, 400) for a, n in domain.items()})
    queries = random_queries(domain, seed=2)
    ms = [pgm.Measurement(cl, q.apply(pgm.histogram(codes, cl, domain))
                          + rng.normal(0, 2.0, q.n_rows), 2.0, q)
          for cl, q in queries.items() if len(cl) <= 3]
    ms = fold_measurements(ms)
    assert any(m.structured for m in ms) and any(not m.structured for m in ms)
    ours = pgm.estimate(domain, ms, 50, 400.0)
    ref = pgm.TreeMarginals(mbi_structured_fit(domain, ms, 50, 400.0))
    tm = pgm.TreeMarginals(ours)
    for cl in [("a",), ("b", "d"), ("a", "b", "c"), ("b", "c", "d"), ("a", "d")]:
        np.testing.assert_allclose(tm.marginal(cl), ref.marginal(cl), rtol=1e-9, atol=1e-9)
    start = ProductMarginals({a: np.full(n, 400.0 / n) for a, n in domain.items()}, 400.0)

    def loss(model):
        items = [(m.query, m.y, m.sigma) for m in ms if m.structured]
        need = {c for q, _, _ in items for c in q.required_cliques()}
        value, _ = GridQuery.batch_loss(items, {c: model.marginal(c) for c in need})
        return value + sum(0.5 * np.sum((model.marginal(m.clique) - m.y) ** 2) / m.sigma**2
                           for m in ms if not m.structured)

    assert loss(tm) < loss(start)


def test_marginals_read_from_smaller_cliques_equal_those_read_from_the_tree():
    from dp_arena.mechanisms.pgm.mirror_descent import (
        JunctionTree,
        marginal_plan,
        read_marginals,
    )

    domain = {"a": 3, "b": 4, "c": 2, "d": 5}
    rng = np.random.default_rng(0)
    tree = JunctionTree(domain, (("a", "b", "c"), ("b", "c", "d")))
    beliefs = tree.calibrate({n: rng.normal(size=tree.shape[n]) for n in tree.nodes}, 100.0)
    cliques = [("c", "b", "a"), ("a", "c"), ("c",), ("d", "b"), ("b", "c", "d"), ("b",)]
    readers = []
    for cl in cliques:
        node = tree.host(cl)
        kept = [a for a in node if a in cl]
        readers.append(type("R", (), {
            "clique": cl, "node": node, "kept": tuple(kept),
            "perm": [kept.index(a) for a in cl]})())
    plan = marginal_plan(cliques, domain)
    assert plan[1] is not None and plan[1][0] == 0  # ("a", "c") from ("c", "b", "a")
    got = read_marginals(readers, plan, beliefs)
    for cl, flat in zip(cliques, got):
        node = tree.host(cl)
        direct = beliefs[node].sum(axis=tuple(i for i, a in enumerate(node) if a not in cl))
        kept = [a for a in node if a in cl]
        np.testing.assert_allclose(flat, np.transpose(direct, [kept.index(a) for a in cl])
                                   .ravel(), rtol=1e-12)


def writeup_sigmas(taxi) -> dict[tuple[str, float], float]:
    """(accountant, epsilon) -> sigma of the write-up's 66 measurements (its C rule, no
    person count), from the mechanism's own calibration."""
    mech = AdaptiveGrid(C=None, person_count_share=0)
    return {(acc, eps): mech.calibrate(taxi, Budget(eps, DELTA), acc)[1]
            for acc in ("zcdp_bs", "zcdp", "gdp") for eps in (1.0, 10.0)}


def test_docstring_sigma_table_is_the_calibration(taxi):
    import dp_arena.mechanisms.pgm.adaptive_grid as module

    sigmas = writeup_sigmas(taxi)
    rows = printed_table(module.__doc__, "epsilon  C")
    assert [r[:2] for r in rows] == [["1", "150"], ["10", "200"]]
    for eps_text, C_text, *printed in rows:
        eps = float(eps_text)
        assert AdaptiveGrid(C=None).clip_bound(Budget(eps, DELTA)) == int(C_text)
        for acc, text in zip(("zcdp_bs", "zcdp", "gdp"), printed, strict=True):
            assert f"{sigmas[acc, eps]:.2f}" == text, (acc, eps)
    # "its sigma is 18.5% smaller at epsilon 1 and 7.0% smaller at epsilon 10"
    smaller = re.search(r"is (\d+\.\d)% smaller at epsilon 1 and (\d+\.\d)% smaller at "
                        r"epsilon 10", " ".join(module.__doc__.split()))
    assert smaller is not None
    for text, eps in zip(smaller.groups(), (1.0, 10.0)):
        assert f"{100 * (1 - sigmas['zcdp', eps] / sigmas['zcdp_bs', eps]):.1f}" == text


@pytest.mark.parametrize("where", ["dp_arena/conf/mechanism/adaptive_grid_zcdp.yaml",
                                   "dp_arena/conf/mechanism/adaptive_grid_zcdp_bs.yaml",
                                   "dp_arena/privacy/accounting.py"])
def test_every_sigma_printed_in_comments_is_computed(taxi, where):
    """Each sigma (a figure like 5739.36) and each "N.N%" printed in the presets' comments
    and the accountant's docstring is one the code computes, to the printed digits."""
    sigmas = writeup_sigmas(taxi)
    text = (PROJECT_ROOT / where).read_text()
    if where.endswith(".py"):
        text = text.split('"""')[1]  # the module docstring
    computed = {f"{s:.2f}" for s in sigmas.values()}
    printed = re.findall(r"(?<![\d.])\d{3,4}\.\d{2}(?!\d)", text)
    assert {"5739.36", "895.42"} <= set(printed)
    assert set(printed) <= computed, set(printed) - computed
    shares = {f"{100 * (1 - sigmas['zcdp', e] / sigmas['zcdp_bs', e]):.1f}" for e in (1.0, 10.0)}
    assert set(re.findall(r"(\d+\.\d)%", text)) <= shares
    assert "slightly tighter" not in text


def test_public_taxis_more_numerous_and_lighter():
    """The module docstring's figures for taxi_sim at 50k trips (data seed 0): the public
    year has more taxis, each with fewer trips on average, than the private year."""
    import dp_arena.mechanisms.pgm.adaptive_grid as module

    data = load_taxi_sim(n_private=50_000, n_public=50_000, seed=0, n_heldout=0)
    doc = " ".join(module.__doc__.split())
    found = re.search(r"([\d,]+) public taxis with (\d+\.\d) trips on average vs ([\d,]+) "
                      r"private taxis with (\d+\.\d)", doc)
    assert found is not None
    figures = []
    for frame in (data.public, data.private):
        per_taxi = frame.groupby("taxi_id").size()
        figures += [f"{per_taxi.size:,}", f"{per_taxi.mean():.1f}"]
    assert list(found.groups()) == figures
    assert int(figures[0].replace(",", "")) > int(figures[2].replace(",", ""))
    assert float(figures[1]) < float(figures[3])


def test_the_bun_steinke_preset_is_adaptive_grid_under_zcdp_bs():
    """``mechanism=adaptive_grid_zcdp_bs`` is adaptive_grid's shipped settings under the
    write-up's accounting; ``adaptive_grid_zcdp`` stays under zcdp (CKS)."""
    from hydra import compose, initialize_config_dir

    import dp_arena.audit.config_store  # noqa: F401 - registers every room's config schemas
    from dp_arena.mechanisms.options import mechanism_conf

    with initialize_config_dir(config_dir=str(PROJECT_ROOT / "dp_arena" / "conf"), version_base=None):
        for preset, accountant in (("adaptive_grid_zcdp_bs", "zcdp_bs"),
                                   ("adaptive_grid_zcdp", "zcdp")):
            cfg = compose("config", overrides=[f"mechanism={preset}"])
            assert cfg.privacy.accountant == accountant
            params = dict(cfg.mechanism)
            assert params.pop("name") == "adaptive_grid"
            assert params == mechanism_conf("adaptive_grid")
