"""dp_arena.mechanisms.pgm: the shared mbi glue (marginals, totals, sampling, selection, calibration).

Tolerances: (c) marginals of a fitted model against brute-force summation of its joint and
against the reference library (the same exponentiated potentials summed in another order over a
few hundred cells, on counts ~4,000): rtol=atol=1e-8 is ~1e-9 relative to the counts, far above
the rounding of a few hundred additions; rtol=atol=1e-9 for the warm-started fit against the
reference, which runs the same mirror-descent updates; (c) compose(plan(solve_scale(...))) hits
epsilon 0.7 to abs=1e-12, the root-finder's tolerance (a few ulps of the scale) times the
composition's slope (~1); (a) a simplex projection of a point already on it changes nothing but
rounding: atol=1e-12; (b) the totals from noisy measurements (noise sd 5 on each of up to 20
cells: the largest clique's total has sd 5 * sqrt(20) = 22, the inverse-variance mix less)
within rel=0.02 (80 rows) of 4,000: more than 3.6 standard errors even for the worst single
clique.
"""

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from dp_arena.privacy.accounting import Budget, compose
from dp_arena.mechanisms import pgm
from tests.support.refcount import only_reference_counting


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


def brute_force_marginal(model, domain, clique):
    """The marginal of ``clique`` from the full joint table of the model's clique potentials
    (every cell of the 360-cell domain enumerated), scaled to the model's total."""
    attrs = list(domain)
    grids = np.meshgrid(*[np.arange(domain[a]) for a in attrs], indexing="ij")
    logp = np.zeros([domain[a] for a in attrs])
    for cl, table in model.potentials.items():
        logp = logp + np.asarray(table)[tuple(grids[attrs.index(a)] for a in cl)]
    p = np.exp(logp - logp.max())
    p *= model.total / p.sum()
    out = p.sum(axis=tuple(i for i, a in enumerate(attrs) if a not in clique))
    kept = [a for a in attrs if a in clique]
    return np.transpose(out, [kept.index(a) for a in clique]).ravel()


def noisy_model(codes, domain, cliques, rng, iters=100):
    """A model fitted to ``cliques``' histograms of ``codes`` plus Gaussian noise of scale 5
    drawn from ``rng`` (clique by clique, in order)."""
    ms = [pgm.Measurement(cl, h + rng.normal(0.0, 5.0, size=h.shape), 5.0)
          for cl in cliques for h in [pgm.histogram(codes, cl, domain)]]
    return pgm.estimate(domain, ms, iters, pgm.initial_total(ms, domain))


def test_tree_marginals_match_the_full_joint(fitted):
    """Belief propagation (dp_arena.mechanisms.pgm.mirror_descent) and TreeMarginals, for cliques inside a
    node, across nodes and across components, against brute-force summation of the joint."""
    domain, _, _, model = fitted
    tm = pgm.TreeMarginals(model)
    for k in (1, 2, 3):
        for cl in itertools.combinations(domain, k):
            np.testing.assert_allclose(tm.marginal(cl), brute_force_marginal(model, domain, cl),
                                       rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(tm.marginal(("c", "a")),  # any attribute order
                               brute_force_marginal(model, domain, ("c", "a")), atol=1e-8)


def test_a_marginal_not_kept_is_the_same_and_not_remembered(fitted):
    domain, _, _, model = fitted
    tm, kept = pgm.TreeMarginals(model), pgm.TreeMarginals(model)
    for cl in itertools.combinations(domain, 2):
        assert np.array_equal(tm.marginal(cl, keep=False), kept.marginal(cl))
    assert tm._cache == {} and len(kept._cache) == len(list(itertools.combinations(domain, 2)))


def test_marginals_do_not_depend_on_the_queries_before(fitted, monkeypatch):
    """TreeMarginals remembers messages and component parts across queries (within
    MEMO_CELLS). On a tree (a, b) - (b, c, d) and a lone e, where one edge carries messages
    over several attribute sets: every marginal, in any attribute order, matches the full
    joint, and is bit for bit what a fresh instance computes and what one remembering
    nothing computes in the reverse order."""
    from dp_arena.mechanisms.pgm import marginals

    domain, codes, _, _ = fitted
    model = noisy_model(codes, domain, [("a",), ("e",), ("a", "b"), ("b", "c", "d")],
                        np.random.default_rng(1))
    cliques = [cl for k in (1, 2, 3) for cl in itertools.permutations(domain, k)]
    shared = pgm.TreeMarginals(model)
    answers = [shared.marginal(cl, keep=False) for cl in cliques]
    assert shared._memo.used > 0 and shared._cache == {}
    for cl, got in zip(cliques, answers):
        np.testing.assert_allclose(got, brute_force_marginal(model, domain, cl),
                                   rtol=1e-8, atol=1e-8)
        assert np.array_equal(got, pgm.TreeMarginals(model).marginal(cl, keep=False)), cl
    monkeypatch.setattr(marginals, "MEMO_CELLS", 0)
    forgetful = pgm.TreeMarginals(model)
    for cl, got in reversed(list(zip(cliques, answers))):
        assert np.array_equal(got, forgetful.marginal(cl, keep=False)), cl
    assert forgetful._memo.used == 0 and len(forgetful._memo) == 0


def test_the_memo_forgets_the_least_recently_used_first():
    """By hand, a budget of 10 cells: a (4) and b (4) fit; reading a makes b the oldest, so
    c (4) evicts b only; an array larger than the budget is not kept and evicts nothing."""
    from dp_arena.mechanisms.pgm.marginals import Memo

    memo = Memo(10)
    a, b, c = np.zeros(4), np.ones(4), np.full(4, 2.0)
    memo.put(("a",), a)
    memo.put(("b",), b)
    assert memo.get(("a",)) is a and memo.used == 8
    memo.put(("c",), c)
    assert memo.get(("b",)) is None and memo.get(("a",)) is a and memo.get(("c",)) is c
    assert memo.used == 8 and len(memo) == 2
    memo.put(("big",), np.zeros(11))
    assert memo.get(("big",)) is None and len(memo) == 2 and memo.used == 8


def test_a_memo_that_forgets_gives_the_same_marginals(fitted, monkeypatch):
    """With a memo of 40 cells (an unbounded one ends up holding 11 arrays of 2-20 cells on
    the chain below, 126 cells in all, so the small one keeps forgetting) every 2- and 3-way
    marginal of a chain model is bit for bit what an unbounded memo computes, in forward and
    reverse order, and the memo never holds more than its budget."""
    from dp_arena.mechanisms.pgm import marginals

    domain, codes, _, _ = fitted
    model = noisy_model(codes, domain, [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e")],
                        np.random.default_rng(3))
    cliques = [cl for k in (2, 3) for cl in itertools.permutations(domain, k)]
    monkeypatch.setattr(marginals, "MEMO_CELLS", 10**9)
    roomy = pgm.TreeMarginals(model)
    expected = [roomy.marginal(cl, keep=False) for cl in cliques]
    monkeypatch.setattr(marginals, "MEMO_CELLS", 40)
    for order in (cliques, cliques[::-1]):
        small = pgm.TreeMarginals(model)
        got = {cl: small.marginal(cl, keep=False) for cl in order}
        assert small._memo.used <= 40 and len(small._memo) > 0
        for cl, want in zip(cliques, expected):
            assert np.array_equal(got[cl], want), cl
    assert roomy._memo.used > 40  # the small memo did have to forget


def test_marginals_from_the_cheapest_root_are_the_same(fitted, monkeypatch):
    """With REROOT_CELLS = 0 every marginal over several tree nodes is computed from the
    covering subtree's cheapest root (TreeMarginals._cheapest_root) instead of the default
    one: on a chain (a, b) - (b, c) - (c, d) - (d, e) every 2- and 3-way marginal, in any
    attribute order, still matches the full joint, and some query does change root."""
    from dp_arena.mechanisms.pgm import marginals

    domain, codes, _, _ = fitted
    model = noisy_model(codes, domain, [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e")],
                        np.random.default_rng(2))
    monkeypatch.setattr(marginals, "REROOT_CELLS", 0)
    moved = []
    search = marginals.TreeMarginals._cheapest_root

    def spy(self, root, children, clique):
        out = search(self, root, children, clique)
        moved.append(out[0] != root)
        return out

    monkeypatch.setattr(marginals.TreeMarginals, "_cheapest_root", spy)
    tm = pgm.TreeMarginals(model)
    for cl in [cl for k in (2, 3) for cl in itertools.permutations(domain, k)]:
        np.testing.assert_allclose(tm.marginal(cl, keep=False),
                                   brute_force_marginal(model, domain, cl), rtol=1e-8,
                                   atol=1e-8)
    assert any(moved) and len(moved) > 0


def test_tree_marginals_match_mbi_models(fitted):
    """TreeMarginals of an mbi model (adaptive grid's estimator) against mbi's own marginals."""
    from mbi import estimation as mbi_estimation

    domain, _, ms, _ = fitted
    model = mbi_estimation.MirrorDescent().estimate(
        pgm.mbi_domain(domain), [m.to_mbi() for m in ms], known_total=4000.0, iters=100)
    tm = pgm.TreeMarginals(model)
    for cl in [("a",), ("a", "b"), ("c", "a"), ("a", "b", "c"), ("a", "d"), ("e", "b")]:
        np.testing.assert_allclose(tm.marginal(cl), np.asarray(model.project(cl).datavector()),
                                   rtol=1e-8, atol=1e-8)


def test_numpy_mirror_descent_is_mbis_step_for_step(fitted):
    """The same iterations as mbi's MirrorDescent (step size, Armijo line search), with a
    diagonal query and a warm start: equal marginals after 50 iterations (later, float
    rounding may flip one line-search decision, and both converge to the same optimum)."""
    from mbi import estimation as mbi_estimation

    from dp_arena.mechanisms.pgm.mirror_descent import mirror_descent

    domain, _, ms, _ = fitted
    ms = [*ms[:2], pgm.Measurement(("c",), ms[2].y, 5.0, np.array([1.0, 0.5])), *ms[3:]]
    ms.append(pgm.Measurement(("a", "c", "e"), np.full(18, 4000 / 18), 20.0))

    def reference(measurements, iters, warm=None):
        return mbi_estimation.MirrorDescent().estimate(
            pgm.mbi_domain(domain), [m.to_mbi() for m in measurements], known_total=4000.0,
            iters=iters, warm_start=warm)

    first, ref_first = mirror_descent(domain, ms[:6], 50, 4000.0), reference(ms[:6], 50)
    ours = mirror_descent(domain, ms, 50, 4000.0, warm_start=first)
    ref = pgm.TreeMarginals(reference(ms, 50, ref_first))
    tm = pgm.TreeMarginals(ours)
    for cl in [("a",), ("c",), ("a", "b"), ("b", "c"), ("a", "c", "e"), ("d", "e")]:
        np.testing.assert_allclose(tm.marginal(cl), ref.marginal(cl), rtol=1e-9, atol=1e-9)


def test_shared_sums_are_the_direct_sums_with_passes_shared():
    """Marginals of one node's table onto several subsets: each equals the direct sum, and
    the passes over the full table are shared. By hand: (a,b), (a,c), (a,d) of a 4-axis
    table need 3 direct passes; shared, one pass sums out b (no set but (a,b) holds it)
    for (a,c) and (a,d), and (a,b) costs one more: 2 passes over the 4-axis table.
    Tolerance: sums in another order, rtol 1e-12 for entries of at most 600 cells of O(1)."""
    from dp_arena.mechanisms.pgm.mirror_descent import shared_sums

    rng = np.random.default_rng(3)
    attrs = ("a", "b", "c", "d")
    table = rng.random((2, 3, 4, 5))
    full_passes = []
    real_sum = np.ndarray.sum

    class Counted(np.ndarray):
        def sum(self, *args, **kwargs):
            if self.shape == table.shape:
                full_passes.append(kwargs.get("axis", args[0] if args else None))
            return real_sum(np.asarray(self), *args, **kwargs)

    wanted = [("a", "b"), ("a", "c"), ("a", "d")]
    got = shared_sums(table.view(Counted), attrs, wanted)
    assert len(full_passes) == 2
    for w in wanted:
        direct = table.sum(axis=tuple(i for i, a in enumerate(attrs) if a not in w))
        np.testing.assert_allclose(np.asarray(got[w]), direct, rtol=1e-12)
    for k in range(12):  # random families of subsets, the whole set and repeats included
        picks = [tuple(a for a in attrs if rng.random() < 0.6) for _ in range(1 + k % 5)]
        picks = [w for w in picks if w] or [attrs]
        full_passes.clear()
        got = shared_sums(table.view(Counted), attrs, picks + picks[:1])
        assert set(got) == set(picks)
        # never more passes over the whole table than one direct sum per distinct set
        assert len(full_passes) <= len(set(picks) - {attrs})
        for w in picks:
            direct = table.sum(axis=tuple(i for i, a in enumerate(attrs) if a not in w))
            np.testing.assert_allclose(np.asarray(got[w]), direct, rtol=1e-12)


def test_calibration_with_children_sharing_a_parent_matches_the_joint():
    """A parent with four children, two of them on the same separator (their downward
    messages come from one set of passes over the parent, ``shared_sums``): every node's
    belief is the brute-force marginal of the potentials' joint. Tolerance: the joint's
    2,880 cells summed in another order, rtol 1e-10."""
    from dp_arena.mechanisms.pgm.mirror_descent import JunctionTree

    domain = {"a": 3, "b": 4, "c": 2, "d": 5, "e": 3, "f": 2, "g": 2}
    cliques = (("a", "b", "c"), ("a", "d"), ("a", "e"), ("b", "c", "f"), ("c", "g"))
    tree = JunctionTree(domain, cliques)
    rng = np.random.default_rng(5)
    potentials = {n: rng.normal(size=tree.shape[n]) for n in tree.nodes}
    beliefs = tree.calibrate(potentials, 1000.0)
    attrs = list(domain)
    grids = np.meshgrid(*[np.arange(domain[a]) for a in attrs], indexing="ij")
    logp = sum(table[tuple(grids[attrs.index(a)] for a in n)] for n, table in potentials.items())
    joint = np.exp(logp - logp.max())
    joint *= 1000.0 / joint.sum()
    assert len(tree.children[("a", "b", "c")]) == 4  # the root, parent of all four
    for n in tree.nodes:
        want = joint.sum(axis=tuple(i for i, a in enumerate(attrs) if a not in n))
        np.testing.assert_allclose(beliefs[n], want, rtol=1e-10)


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
    from dp_arena.privacy.accounting import Ledger

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


# ----- the closed-form 1-way fit ----------------------------------------------------------
def test_simplex_projection_by_hand():
    # unit weights: mu = t - lam on the positive cells; 4 - 2 lam = 3 -> lam = 0.5
    np.testing.assert_allclose(pgm.simplex_projection(np.array([3.0, 1.0, -1.0]), np.ones(3),
                                                      3.0), [2.5, 0.5, 0.0])
    # weights 1 and 3: mu_i = t_i - lam / w_i, 4 - lam (1 + 1/3) = 2 -> lam = 1.5
    np.testing.assert_allclose(pgm.simplex_projection(np.array([2.0, 2.0]), np.array([1.0, 3.0]),
                                                      2.0), [0.5, 1.5])
    # already on the simplex: unchanged
    np.testing.assert_allclose(pgm.simplex_projection(np.array([1.0, 2.0, 0.0]), np.ones(3), 3.0),
                               [1.0, 2.0, 0.0], atol=1e-12)
    with pytest.raises(ValueError, match="weights > 0"):
        pgm.simplex_projection(np.ones(2), np.array([1.0, 0.0]), 1.0)


def test_simplex_projection_is_the_constrained_minimiser():
    """Against a generic solver (SLSQP) on random weighted problems, and the KKT conditions."""
    from scipy.optimize import minimize

    rng = np.random.default_rng(3)
    for _ in range(20):
        n = int(rng.integers(2, 9))
        t = rng.normal(5.0, 10.0, n)
        w = rng.uniform(0.1, 3.0, n)
        total = float(rng.uniform(1.0, 40.0))
        mu = pgm.simplex_projection(t, w, total)
        assert mu.min() >= 0 and mu.sum() == pytest.approx(total)
        ref = minimize(lambda x: float(np.sum(w * (x - t) ** 2)), np.full(n, total / n),
                       method="SLSQP", bounds=[(0, None)] * n,
                       constraints=[{"type": "eq", "fun": lambda x: x.sum() - total}],
                       options={"ftol": 1e-14, "maxiter": 500})
        # SLSQP (ftol 1e-14) may stop a little above the optimum, never below: ours may not
        # exceed it by more than 1e-6; the KKT multipliers are a product and a difference:
        # equal to 1e-9
        assert np.sum(w * (mu - t) ** 2) <= ref.fun + 1e-6
        lam = w * (t - mu)  # KKT: equal on the positive cells, at least that on the zeros
        pos = mu > 1e-12
        assert np.ptp(lam[pos]) < 1e-9 and np.all(w[~pos] * t[~pos] <= lam[pos][0] + 1e-9)


def test_fit_one_way_is_what_mirror_descent_converges_to():
    """MST's compressed 1-way measurements (a diagonal weight on the merged cell): the closed
    form equals a long mirror-descent fit of the same measurements, marginals and products."""
    from dp_arena.mechanisms.pgm.mst import _compress_measurement

    rng = np.random.default_rng(0)
    domain = {"a": 6, "b": 4, "c": 9}
    sigma = 20.0
    ms = []
    for a, n in domain.items():
        x = rng.multinomial(500, rng.dirichlet(np.full(n, 0.5))).astype(float)
        y = x + rng.normal(0.0, sigma, n)
        ms.append(_compress_measurement(pgm.Measurement((a,), y, sigma), y >= 3 * sigma))
    small = {m.clique[0]: m.y.size for m in ms}
    assert small != domain  # something was merged
    total = pgm.initial_total(ms, small)
    exact = pgm.fit_one_way(small, ms, total)
    tree = pgm.TreeMarginals(pgm.estimate(small, ms, 5000, total, tol=None))
    for cl in [("a",), ("b",), ("c",), ("a", "c"), ("c", "b", "a")]:
        np.testing.assert_allclose(exact.marginal(cl), tree.marginal(cl), atol=1e-6 * total)


def test_fit_one_way_combines_repeated_measurements_by_inverse_variance():
    # two identity measurements of one attribute, sigmas 1 and 2: the target is the weighted
    # mean (4 y1 + y2) / 5 = (12, 26) cell by cell; projected to the total 40 with equal cell
    # weights, each cell gains (40 - 38) / 2
    y1, y2 = np.array([10.0, 30.0]), np.array([20.0, 10.0])
    ms = [pgm.Measurement(("a",), y1, 1.0), pgm.Measurement(("a",), y2, 2.0)]
    fit = pgm.fit_one_way({"a": 2, "b": 3}, ms, 40.0)
    np.testing.assert_allclose(fit.marginal(("a",)), [13.0, 27.0])
    np.testing.assert_allclose(fit.marginal(("b",)), np.full(3, 40.0 / 3))  # never measured
    with pytest.raises(ValueError, match="1-way"):
        pgm.fit_one_way({"a": 2, "b": 3}, [pgm.Measurement(("a", "b"), np.ones(6), 1.0)], 6.0)


# ----- sampling ---------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["round", "sample"])
def test_sampled_marginals_follow_the_model(fitted, method):
    """Every 1-, 2- and 3-way marginal of 100,000 sampled rows is within 5 standard errors of
    the model's, cell by cell (i.i.d. bound; stratified rounding is tighter)."""
    domain, _, _, model = fitted
    tree = pgm.TreeMarginals(model)
    n = 100_000
    synth = pgm.sample_codes(model, n, np.random.default_rng(11), list(domain), tree, method)
    for k in (1, 2, 3):
        for cl in itertools.combinations(domain, k):
            p = tree.marginal(cl) / tree.total
            q = pgm.histogram(synth, cl, domain) / n
            assert np.all(np.abs(q - p) <= 5 * np.sqrt(p * (1 - p) / n) + 1e-12), (method, cl)


def test_stratified_rounding_keeps_counts_within_two_of_expected(fitted):
    """``round``: each value's count among rows that share the conditioning values is within
    2 of its expected count (one draw per stratum); for the first column drawn, overall. The
    i.i.d. method misses that by far at this size."""
    domain, _, _, model = fitted
    tree = pgm.TreeMarginals(model)
    n = 50_000
    first = tree.order[-1]
    expected = n * tree.marginal((first,)) / tree.total
    rounded = pgm.sample_codes(model, n, np.random.default_rng(5), list(domain), tree, "round")
    iid = pgm.sample_codes(model, n, np.random.default_rng(5), list(domain), tree, "sample")
    assert np.abs(pgm.histogram(rounded, (first,), domain) - expected).max() < 2
    assert np.abs(pgm.histogram(iid, (first,), domain) - expected).max() > 2
    second = tree.order[-2]
    table = tree.marginal((first, second)).reshape(domain[first], domain[second])
    for v in range(domain[first]):
        rows = rounded[rounded[first] == v]
        got = np.bincount(rows[second], minlength=domain[second])
        want = len(rows) * table[v] / table[v].sum()
        assert np.abs(got - want).max() < 2


def test_unknown_sampling_method_is_refused(fitted):
    from dp_arena.errors import ConfigError

    domain, _, _, model = fitted
    with pytest.raises(ConfigError, match="sampling method"):
        pgm.sample_codes(model, 10, np.random.default_rng(0), list(domain), method="best")


def test_largest_intermediate_by_hand():
    """Contracting ab, bc, cd to ad (a=2, b=3, c=5, d=7): (ab, bc) -> ac (10 cells), then
    (cd, ac) -> ad (14); the other order, (bc, cd) -> bd (21), then (ab, bd) -> ad (14)."""
    from dp_arena.mechanisms.pgm.marginals import _largest_intermediate

    sizes = {"a": 2, "b": 3, "c": 5, "d": 7}
    ops = [["a", "b"], ["b", "c"], ["c", "d"]]
    assert _largest_intermediate(ops, ["einsum_path", (0, 1), (0, 1)], ("a", "d"), sizes) == 14
    assert _largest_intermediate(ops, ["einsum_path", (1, 2), (0, 1)], ("a", "d"), sizes) == 21
    assert _largest_intermediate(ops, ["einsum_path", (0, 1), (0, 1)], ("a", "c", "d"),
                                 sizes) == 70  # c is kept to the end: ac, then acd


def test_a_contraction_over_the_cap_is_split_and_the_same(monkeypatch):
    """With WORK_CELLS = 64, a 4-operand contraction whose planned intermediates exceed it
    (and its operands) is done one value of the target's largest attribute at a time, down
    to slices whose intermediates fit: the same array as numpy's own einsum (float64
    rounding over sums of at most 6 x 5 terms)."""
    from dp_arena.mechanisms.pgm import marginals

    rng = np.random.default_rng(4)
    sizes = {"a": 4, "b": 6, "c": 5, "d": 7, "e": 3}
    spec = [("a", "b"), ("b", "c"), ("c", "d"), ("b", "e")]
    operands = [(cl, rng.random([sizes[x] for x in cl])) for cl in spec]
    target = ("a", "d", "e")
    expected = np.einsum("ab,bc,cd,be->ade", *(arr for _, arr in operands))
    monkeypatch.setattr(marginals, "NAIVE_EINSUM_CELLS", 0)
    monkeypatch.setattr(marginals, "WORK_CELLS", 64)
    calls = []
    whole = marginals._einsum

    def spy(ops, tgt):
        calls.append(tgt)
        return whole(ops, tgt)

    monkeypatch.setattr(marginals, "_einsum", spy)
    got = marginals._einsum(operands, target)
    np.testing.assert_allclose(got, expected, rtol=30 * np.finfo(float).eps)
    assert ("a", "e") in calls  # d (7 values), the target's largest attribute, split first
    assert len(calls) > 1


@pytest.fixture(scope="module")
def wide_chain():
    """A model on the chain (a, b) - (b, c) - (c, d) - (d, e), a = 2 values, b..e 100 each:
    the marginal of (a, c, e) from root (a, b) receives a message over (b, c, e), 10^6 cells
    (7.6 MB), for a 20,000-cell result."""
    rng = np.random.default_rng(3)
    domain = {"a": 2, "b": 100, "c": 100, "d": 100, "e": 100}
    n = 20000
    a = rng.integers(0, 2, n)
    b = (50 * a + rng.integers(0, 60, n)) % 100
    c = (b + rng.integers(0, 10, n)) % 100
    d = (c + rng.integers(0, 10, n)) % 100
    e = (d + rng.integers(0, 10, n)) % 100
    codes = pd.DataFrame({"a": a, "b": b, "c": c, "d": d, "e": e})
    return noisy_model(codes, domain, [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e")], rng,
                       iters=20)


def traced_marginal(model, clique):
    """(marginal, peak bytes allocated while computing it), nothing remembered."""
    import tracemalloc

    tm = pgm.TreeMarginals(model)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        out = tm.marginal(clique, keep=False)
        return out, tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_a_marginal_whose_messages_exceed_the_cap_is_computed_by_slices(wide_chain,
                                                                        monkeypatch):
    """The working memory of a marginal is bounded: with WORK_CELLS = 2^14 the (a, c, e)
    marginal of the wide chain is computed one value of e at a time (its messages then hold
    10,200 cells, not 1,020,000), equals the unsliced marginal (float64 rounding over sums
    of at most 10^6 terms), and allocates at most its result plus WORKING_CELLS (4 x the
    cap; the tables are smaller) float64 cells, while the unsliced one allocates at least
    its 10^6-cell message."""
    from dp_arena.mechanisms.pgm import marginals

    monkeypatch.setattr(marginals, "MEMO_CELLS", 0)
    whole, whole_peak = traced_marginal(wide_chain, ("a", "c", "e"))
    assert whole_peak >= 10**6 * 8
    monkeypatch.setattr(marginals, "WORK_CELLS", 2**14)
    sliced = []
    by_slices = marginals.TreeMarginals._by_slices

    def spy(self, root, parent, children, clique, fixed):
        sliced.append((fixed, self._message_cells(root, parent, children, clique,
                                                  frozenset()),
                       self._message_cells(root, parent, children, clique, frozenset(fixed))))
        return by_slices(self, root, parent, children, clique, fixed)

    monkeypatch.setattr(marginals.TreeMarginals, "_by_slices", spy)
    got, peak = traced_marginal(wide_chain, ("a", "c", "e"))
    assert sliced == [(("e",), 10**4 + 10**4 + 10**6, 100 + 100 + 10**4)]
    np.testing.assert_allclose(got, whole, rtol=10**6 * np.finfo(float).eps)
    assert peak <= (got.size + 4 * 2**14) * 8
    for clique in [("e", "a", "c"), ("b", "d"), ("a", "e")]:  # any order, other slices
        np.testing.assert_allclose(pgm.TreeMarginals(wide_chain).marginal(clique),
                                   brute_chain(wide_chain, clique),
                                   rtol=10**6 * np.finfo(float).eps)


def test_tree_marginals_are_freed_when_dropped_without_the_cycle_collector(fitted,
                                                                           monkeypatch):
    """AIM drops a round's ``TreeMarginals`` (its tables, memo and inverse separators) before
    the refit builds the next: with the cyclic garbage collector off, the last reference
    going frees it, after marginals by every path (one node; the default root; the
    cheapest root, REROOT_CELLS = 0; by slices, WORK_CELLS = 1). A reference cycle (a
    nested function calling itself, as the eliminations once were) would keep it alive:
    through a loans run such marginals piled up over rounds until a collection, 130-170 MB
    a round over three rounds."""
    import weakref

    from dp_arena.mechanisms.pgm import marginals

    domain, codes, _, _ = fitted
    model = noisy_model(codes, domain, [("a", "b"), ("b", "c"), ("c", "d"), ("b", "e")],
                        np.random.default_rng(7))
    queries = [("a", "b"), ("a", "d"), ("e", "c", "a"), ("d", "e")]
    paths = [{}, {"REROOT_CELLS": 0}, {"REROOT_CELLS": 0, "WORK_CELLS": 1}]
    with only_reference_counting():
        for path in paths:
            for name, value in path.items():
                monkeypatch.setattr(marginals, name, value)
            tree = pgm.TreeMarginals(model)
            for clique in queries:
                tree.marginal(clique, keep=False)
            assert len(tree._memo) > 0 or path  # the eliminations did run
            alive = weakref.ref(tree)
            del tree
            assert alive() is None, path


def test_post_order_visits_children_first_in_their_order():
    """A hand-built tree: r has children x, y; x has u, v; y has w. Post order (the order a
    recursion from r returns in): u v x w y r; a lone root is itself."""
    from dp_arena.mechanisms.pgm.marginals import _post_order

    children = {("r",): [("x",), ("y",)], ("x",): [("u",), ("v",)], ("y",): [("w",)],
                ("u",): [], ("v",): [], ("w",): []}
    assert _post_order(("r",), children) == [("u",), ("v",), ("x",), ("w",), ("y",), ("r",)]
    assert _post_order(("r",), {("r",): []}) == [("r",)]


def brute_chain(model, clique):
    """A chain model's marginal as one dense einsum over the whole chain (no slicing, no
    junction-tree code): prod mu_(i,i+1) / prod mu_i, summed to ``clique``."""
    order = ["a", "b", "c", "d", "e"]
    letter = {a: chr(ord("p") + i) for i, a in enumerate(order)}
    ops, subs = [], []
    for a, b in zip(order, order[1:]):
        table = model.beliefs[(a, b)] if (a, b) in model.beliefs else model.beliefs[(b, a)].T
        ops.append(table)
        subs.append(letter[a] + letter[b])
        if a != "a":  # the separator a between (., a) and (a, b)
            mu = table.sum(axis=1)
            ops.append(np.divide(1.0, mu, out=np.zeros_like(mu), where=mu > 0))
            subs.append(letter[a])
    spec = ",".join(subs) + "->" + "".join(letter[a] for a in clique)
    return np.einsum(spec, *ops, optimize=True).ravel()


def test_marginals_by_slices_of_every_attribute_match_the_full_joint(fitted, monkeypatch):
    """With WORK_CELLS = 1 (and every contraction planned) each marginal over several tree
    nodes holds every clique attribute that shrinks its messages, down to tables sliced to
    single cells, and contractions are split: every 2- and 3-way marginal, in any attribute
    order, still matches the full joint, bit for bit the same when asked again."""
    from dp_arena.mechanisms.pgm import marginals

    domain, codes, _, _ = fitted
    model = noisy_model(codes, domain, [("a", "b"), ("b", "c"), ("c", "d"), ("b", "e")],
                        np.random.default_rng(5))
    monkeypatch.setattr(marginals, "WORK_CELLS", 1)
    monkeypatch.setattr(marginals, "NAIVE_EINSUM_CELLS", 0)
    held, cells = [], []
    by_slices, hold = marginals.TreeMarginals._by_slices, marginals._held

    def spy(self, root, parent, children, clique, fixed):
        held.append(len(fixed))
        return by_slices(self, root, parent, children, clique, fixed)

    def held_spy(attrs, table, evidence):
        out = hold(attrs, table, evidence)
        cells.append(np.ndim(out[1]))
        return out

    monkeypatch.setattr(marginals.TreeMarginals, "_by_slices", spy)
    monkeypatch.setattr(marginals, "_held", held_spy)
    tm = pgm.TreeMarginals(model)
    for cl in [cl for k in (2, 3) for cl in itertools.permutations(domain, k)]:
        got = tm.marginal(cl, keep=False)
        np.testing.assert_allclose(got, brute_force_marginal(model, domain, cl), rtol=1e-8,
                                   atol=1e-8)
        assert np.array_equal(got, tm.marginal(cl, keep=False)), cl
    assert held and max(held) >= 2 and 0 in cells  # two attributes held; single cells


def test_from_start_lets_a_converged_warm_start_stop_after_one_block():
    """With ``from_start`` the loss a fit starts from counts as the first block's: refitting
    a converged model to the same measurements stops after one block of 50 steps (the block
    improved on the start by at most tol); without it the rule needs two blocks. The step
    count is the stopping rule's arithmetic, not a timing."""
    from dp_arena.mechanisms.pgm.mirror_descent import CALLBACK_EVERY

    rng = np.random.default_rng(3)
    domain = {"a": 3, "b": 4, "c": 2}
    codes = pd.DataFrame({a: rng.integers(0, k, 400) for a, k in domain.items()})
    ms = [pgm.Measurement(cl, pgm.histogram(codes, cl, domain) + rng.normal(0, 2, size=int(
        np.prod([domain[a] for a in cl]))), 2.0) for cl in [("a", "b"), ("b", "c")]]
    total = pgm.initial_total(ms, domain)
    model = pgm.estimate(domain, ms, 2000, total, tol=1e-9, patience=2)
    again = pgm.estimate(domain, ms, 1000, total, warm_start=model.warm_start(), tol=0.03,
                         patience=1, warm_step=True, from_start=True)
    assert again.iterations == CALLBACK_EVERY
    assert len(again.block_losses) == 1
    plain = pgm.estimate(domain, ms, 1000, total, warm_start=model.warm_start(), tol=0.03,
                         patience=1, warm_step=True)
    assert plain.iterations == 2 * CALLBACK_EVERY
