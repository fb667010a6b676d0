"""aim: ledger totals (re-derived independently), the round structure, the budget schedule,
the workload and model-size cap, output, determinism, config errors.

Tolerances: (c) budgets are spent to abs=1e-9 (the calibrations' root-finding target,
test_budget_edges.assert_spends_the_budget) or rel=1e-6 at epsilon 1e-6 (above the 1e-7 relative
target there); autodp's recomputed epsilon is its own numerical minimisation over the Renyi order,
trusted to rel=1e-6; the plan's rho's sum to the solved rho (a few dozen additions
after a root-find to the 1e-9 relative target): rel=1e-9.
"""

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from dp_arena.data.datasets import Dataset, load_shared_dataset
from dp_arena.data.schema import Column, Schema
from dp_arena.errors import ConfigError
from dp_arena.privacy.accounting import Budget, Ledger, zcdp_rho
from dp_arena.run.runner import spent_budget
from dp_arena.mechanisms import make_mechanism, pgm
from dp_arena.mechanisms.pgm import aim as aim_module
from dp_arena.mechanisms.pgm.aim import AIM, admitted_pool, size_admission, trimmed_workload
from dp_arena.mechanisms.pgm.marginals import MEMO_CELLS, WORKING_CELLS
from tests.seeding import seeded
from tests.support.accounting_check import recomputed_epsilon
from tests.support.refcount import only_reference_counting

FAST = {"rounds": 6, "iters": 30, "final_iters": 30, "workload_degree": 2}


def run(data, budget, accountant="gdp", seed=0, **params):
    ledger = Ledger(budget, accountant, unit=data.ledger_unit)
    out = make_mechanism("aim", {**FAST, **params}).fit_sample(data, budget, seeded(ledger, seed),
                                                             np.random.default_rng(seed))
    return ledger, out


@pytest.mark.parametrize("accountant", ["gdp", "zcdp"])
def test_spends_at_most_the_budget_recomputed_independently(small_dataset, accountant):
    """AIM's zCDP filter uses all of rho = zcdp_rho(eps, delta), never more, under either
    accountant: the zCDP bound of the charges is the budget (to 1e-9, never above); the ledger
    shows that under zcdp and the smaller of its two valid bounds under gdp."""
    budget = Budget(1.5, 1e-6)
    ledger, out = run(small_dataset, budget, accountant)
    rho = sum(c.rho for c in ledger.charges)
    assert rho <= zcdp_rho(1.5, 1e-6)
    by_zcdp = recomputed_epsilon(ledger.charges, 1e-6, "zcdp")
    assert 1.5 - 1e-9 <= by_zcdp <= 1.5
    spent = ledger.spent()[0]
    assert spent <= 1.5
    if accountant == "zcdp":
        assert spent == pytest.approx(1.5, abs=1e-9)
    else:  # min(GDP + basic composition, zCDP), recomputed with autodp
        expected = min(recomputed_epsilon(ledger.charges, 1e-6, "gdp"), by_zcdp)
        assert spent == pytest.approx(expected, rel=1e-6)
    assert small_dataset.schema.problems(out) == []
    charges = ledger.charges
    d = 3
    assert [c.kind for c in charges[:d]] == ["gaussian"] * d  # the 1-way marginals
    rounds = charges[d:]
    assert [c.kind for c in rounds] == ["exponential", "gaussian"] * (len(rounds) // 2)
    assert 1 <= len(rounds) // 2 <= FAST["rounds"]
    assert {c.sensitivity for c in charges if c.kind == "gaussian"} == {5.0}  # 5 rows/person
    # selection sensitivity = 5 * the largest candidate weight, the sum of its overlaps with
    # the workload {ab, ac, bc}: a pair, e.g. ab, scores 2 + 1 + 1 = 4
    assert {c.sensitivity for c in charges if c.kind == "exponential"} == {5.0 * 4}


def test_budget_schedule_follows_the_paper_under_zcdp(small_dataset):
    """Rounds start at sigma_0 = sqrt(T / (2 * 0.9 rho)), eps_0 = sqrt(8 * 0.1 rho / T) (per unit
    sensitivity); sigma only halves (and eps doubles) until the last round uses what is left."""
    budget, T = Budget(1.0, 1e-6), 6
    rho = zcdp_rho(1.0, 1e-6)
    ledger, _ = run(small_dataset, budget, "zcdp", rounds=T)
    gauss = [c.scale / c.sensitivity for c in ledger.charges if c.kind == "gaussian"]
    sel = [c.pure_epsilon for c in ledger.charges if c.kind == "exponential"]
    assert gauss[0] == pytest.approx(math.sqrt(T / (2 * 0.9 * rho)))
    assert sel[0] == pytest.approx(math.sqrt(8 * 0.1 * rho / T))
    per_round = gauss[3:]
    for prev, nxt, e_prev, e_next in zip(per_round[:-2], per_round[1:-1], sel[:-2], sel[1:-1]):
        assert nxt == pytest.approx(prev) or nxt == pytest.approx(prev / 2)
        assert (e_next == pytest.approx(e_prev)) == (nxt == pytest.approx(prev))
    last_rho = ledger.charges[-1].rho + ledger.charges[-2].rho
    assert ledger.charges[-2].rho == pytest.approx(0.1 * last_rho)  # 10% selection
    assert sum(c.rho for c in ledger.charges) == pytest.approx(rho, rel=1e-9)


def test_rounds_per_attribute_sets_t_when_rounds_is_null(small_dataset):
    """T = rounds_per_attribute x d: the first noise scale is sqrt(T / (2 * 0.9 rho)) per unit
    sensitivity with T = 4 x 3 attributes = 12, as with rounds=12."""
    budget, rho = Budget(1.0, 1e-6), zcdp_rho(1.0, 1e-6)
    ledger, _ = run(small_dataset, budget, "zcdp", rounds=None, rounds_per_attribute=4)
    first = ledger.charges[0]
    assert first.scale / first.sensitivity == pytest.approx(math.sqrt(12 / (2 * 0.9 * rho)))
    same, _ = run(small_dataset, budget, "zcdp", rounds=12)
    assert [c.scale for c in same.charges[:3]] == [c.scale for c in ledger.charges[:3]]


@pytest.mark.parametrize("accountant", ["gdp", "zcdp"])
@pytest.mark.parametrize("eps, rounds", [(0.3, 4), (3.0, 9), (1.0, 2)])
def test_zcdp_filter_never_exceeds_rho(small_dataset, accountant, eps, rounds):
    """Whatever the schedule (sigma halvings, few rounds, the few-rounds rescale with
    rounds=2 < 0.9 d + 2), the rho used is at most zcdp_rho(eps, delta) and the last round
    takes the rest; the ledger never reports more than eps."""
    budget = Budget(eps, 1e-7)
    ledger, _ = run(small_dataset, budget, accountant, rounds=rounds)
    rho = sum(c.rho for c in ledger.charges)
    assert zcdp_rho(eps, 1e-7) * (1 - 1e-9) <= rho <= zcdp_rho(eps, 1e-7)
    assert ledger.spent()[0] <= eps
    assert len(ledger.charges) <= 3 + 2 * rounds


def test_the_filter_counts_its_own_charges_not_the_ledgers_earlier_ones(small_dataset):
    """Under a selector (dp_select) the run's ledger already holds charges when AIM starts:
    AIM's filter spends its own budget in full, counting only the charges its fit made."""
    budget = Budget(1.0, 1e-7)
    ledger = Ledger(Budget(3.0, 2e-7), "zcdp", unit=small_dataset.ledger_unit)
    release = seeded(ledger, 0)
    release.gaussian("an earlier selection", np.zeros(3), 1.0, 2.0)
    before = len(ledger.charges)
    make_mechanism("aim", {**FAST, "rounds": 4}).fit_sample(small_dataset, budget, release,
                                                             np.random.default_rng(0))
    rho = sum(c.rho for c in ledger.charges[before:])
    assert zcdp_rho(1.0, 1e-7) * (1 - 1e-9) <= rho <= zcdp_rho(1.0, 1e-7)


def test_filter_schedule_by_hand():
    """initial_scale: rho itself when the 1-way measurements and two rounds fit (paper), else
    the scale at which d 1-ways + T rounds cost rho; final_round splits rho 90% / 10%."""
    from dp_arena.mechanisms.pgm.aim import final_round, initial_scale

    assert initial_scale(0.2, d=3, T=6) == 0.2  # (0.9 * 3 + 2) / 6 <= 1
    s = initial_scale(0.2, d=3, T=2)  # 1-ways 3 * 0.9 s / 2 plus 2 rounds s: 2.35 s = 0.2
    assert s == pytest.approx(0.2 / 2.35)
    sigma, eps = final_round(0.05, b=5.0)
    assert 25.0 / (2 * sigma**2) == pytest.approx(0.9 * 0.05)
    assert eps**2 / 8 == pytest.approx(0.1 * 0.05)


def test_workload_candidates_and_weights():
    domain = {"a": 2, "b": 3, "c": 4, "d": 50}
    work = AIM(workload_degree=2, max_cells=20).workload(domain)
    assert work == [cl for cl in itertools.combinations(domain, 2)
                    if math.prod(domain[a] for a in cl) <= 20]
    with pytest.raises(ConfigError, match="max_cells"):
        AIM(workload_degree=3, max_cells=5).workload(domain)


def test_model_size_matches_mbi():
    domain = {"a": 5, "b": 7, "c": 3, "d": 11, "e": 2, "f": 13}
    rng = np.random.default_rng(0)
    attrs = list(domain)
    for _ in range(25):
        k = int(rng.integers(1, 7))
        cliques = [tuple(rng.choice(attrs, size=int(rng.integers(1, 4)), replace=False))
                   for _ in range(k)]
        ours = pgm.model_size_mb(domain, cliques)
        theirs = pgm.mbi_junction_tree.hypothetical_model_size(pgm.mbi_domain(domain), cliques)
        assert ours == pytest.approx(theirs), cliques


def test_deterministic_per_seed(small_dataset):
    budget = Budget(1.0, 1e-6)
    _, a = run(small_dataset, budget, seed=5)
    _, b = run(small_dataset, budget, seed=5)
    _, c = run(small_dataset, budget, seed=6)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)


@pytest.mark.parametrize("params, match", [
    ({"rounds": 0}, "rounds"), ({"iters": 0}, "iters"), ({"final_iters": 1.5}, "final_iters"),
    ({"workload_degree": 0}, "workload_degree"), ({"max_model_size": -1}, "max_model_size"),
    ({"max_cells": 0}, "max_cells"), ({"max_contrib": -3}, "max_contrib"),
    ({"compress": True}, "unknown setting")])
def test_bad_hyperparameters(params, match):
    with pytest.raises(ConfigError, match=match):
        make_mechanism("aim", params)


def test_needs_delta(small_dataset):
    with pytest.raises(ConfigError, match="delta > 0"):
        run(small_dataset, Budget(1.0, 0.0))


def test_titanic_three_way_workload(shared_data):
    data = load_shared_dataset("titanic", data_dir=str(shared_data))
    budget = Budget(1.0, 1e-6)
    ledger, out = run(data, budget, "zcdp", workload_degree=3, rounds=8)
    assert data.schema.problems(out) == []
    assert 1.0 - 1e-9 <= ledger.spent()[0] <= 1.0
    assert sum(c.rho for c in ledger.charges) <= zcdp_rho(1.0, 1e-6)


def test_memory_cap_trims_the_workload_by_size_and_says_so():
    """Hand count: of the 10 triples of {wide1 (500), wide2 (400), a, b, c (3, 4, 5)}, the 3
    holding both wide columns have 200,000 x 3+ cells > 10,000 and are dropped; the other 7
    (at most 500 * 4 * 5 = 10,000 cells) stay; the pair wide1 x wide2 (200,000) is no
    candidate. The trim is a note with the counts (said once per sweep, see test_sweeps)."""
    domain = {"wide1": 500, "wide2": 400, "a": 3, "b": 4, "c": 5}
    mech = AIM(max_cells=10_000)
    work = mech.workload(domain)
    candidates = mech.candidates(domain, work)
    assert len(work) == 7 and all(len(cl) == 3 for cl in work)
    assert all(math.prod(domain[a] for a in cl) <= 10_000 for cl in candidates)
    assert ("wide1", "wide2") not in candidates and ("a", "b", "c") in candidates
    note = trimmed_workload(domain, mech.workload_degree, 10_000, mech.max_answers_mb)[1]
    assert note is not None and "3 of 10 3-way" in note
    assert trimmed_workload(domain, 3, None, mech.max_answers_mb)[1] is None


def test_answers_memory_budget_drops_the_largest_workload_marginals():
    domain = {"wide1": 500, "wide2": 400, "a": 3, "b": 4, "c": 5}
    budget_mb = 0.1  # 13,107 float64 cells, 912 of them for the 1-way answers
    work, note = trimmed_workload(domain, 3, 10_000, budget_mb)
    full = AIM(max_cells=10_000).workload(domain)
    closure = [cl for cl in pgm.downward_closure(work, list(domain)) if len(cl) > 1]
    assert sum(math.prod(domain[a] for a in cl) for cl in closure) \
        <= budget_mb * 2**20 / 8 - sum(domain.values())
    dropped = set(full) - set(work)
    cells = {cl: math.prod(domain[a] for a in cl) for cl in full}
    assert dropped and max(cells[cl] for cl in work) <= min(cells[cl] for cl in dropped)
    assert note is not None and f"{len(dropped)} more dropped" in note


def test_candidates_over_the_model_size_are_dropped_up_front():
    domain = {"a": 100, "b": 100, "c": 3, "d": 2}
    mech = AIM(max_cells=None, max_model_size=0.05)  # 6,553 cells
    candidates, note = mech.trimmed_candidates(domain, mech.workload(domain))
    ones = [(a,) for a in domain]
    assert all(pgm.model_size_mb(domain, [*ones, cl]) <= 0.05
               for cl in candidates if len(cl) > 1)
    assert ("a", "b") not in candidates and ("a", "c", "d") in candidates
    assert set(ones) <= set(candidates)
    assert note is not None and "exceed max_model_size" in note


@pytest.mark.slow
def test_tiny_epsilon_gives_a_sensible_row_count_within_the_budget(small_dataset):
    """At epsilon 1e-6 the noisy row count is noise; the output keeps the public floor of
    1,000 rows and the schema's max_records cap (100,000) and the ledger stays exact."""
    budget = Budget(1e-6, 1e-6)
    ledger, out = run(small_dataset, budget, "zcdp")
    assert 1000 <= len(out) <= 100_000
    assert ledger.spent()[0] == pytest.approx(1e-6, rel=1e-6) and ledger.spent()[0] <= 1e-6


# ----- AIM's bound: the filter's budget under every accountant ----------------------------
@pytest.mark.parametrize("accountant", ["gdp", "zcdp"])
def test_aim_reports_the_filter_budget_under_every_accountant(small_dataset, accountant):
    """Under gdp the ledger composes AIM's charges to less than the budget, but only the zCDP
    filter over the whole budget is proven for adaptively chosen scales: that is reported."""
    budget = Budget(1.0, 1e-6)
    ledger = Ledger(budget, accountant, unit=small_dataset.ledger_unit)
    aim = make_mechanism("aim", {"rounds": 4, "iters": 20, "final_iters": 20,
                                 "workload_degree": 2})
    aim.fit_sample(small_dataset, budget, seeded(ledger, 0), np.random.default_rng(0))
    assert spent_budget(aim, ledger) == (1.0, 1e-6)
    # the ledger's own figure is a valid bound too, never above the budget: under gdp, with
    # AIM's pure selections among the charges, it is the smaller of the gdp sum and the zCDP
    # conversion (Canonne-Kamath-Steinke), here the zCDP filter's own figure
    assert ledger.spent()[0] <= 1.0


def test_other_mechanisms_report_the_ledger(small_dataset):
    budget = Budget(1.0, 1e-6)
    ledger = Ledger(budget, "gdp", unit=small_dataset.ledger_unit)
    mech = make_mechanism("independent", {})
    mech.fit_sample(small_dataset, budget, seeded(ledger, 0), np.random.default_rng(0))
    assert spent_budget(mech, ledger) == ledger.spent()


def test_candidate_weights_are_the_papers_pairwise_sum():
    """w_r = sum over workload marginals s of |r & s|, by its definition, on a random
    workload (the fast form counts each attribute's workload marginals)."""
    from dp_arena.mechanisms.pgm.aim import candidate_weights

    rng = np.random.default_rng(4)
    attrs = [f"a{i}" for i in range(9)]
    work = [tuple(rng.choice(attrs, size=int(rng.integers(2, 4)), replace=False))
            for _ in range(30)]
    closure = pgm.downward_closure([*work, *[(a,) for a in attrs]], attrs)
    by_definition = {r: float(sum(len(set(r) & set(s)) for s in work)) for r in closure}
    assert candidate_weights(closure, work) == by_definition
    assert candidate_weights([("a0", "a1")], [("a0", "a1", "a2"), ("a1", "a3")]) == \
        {("a0", "a1"): 3.0}  # 2 + 1, by hand


def test_memory_caps_are_checked_against_the_run_limit_before_it_starts(small_dataset):
    """AIM's stated bound is its candidates' answers (float64 cells of the closure) plus
    MODEL_COPIES (9) x max_model_size plus the marginals' memo and working memory (128 MB
    and 4 x 16 MB, the caps of dp_arena.mechanisms.pgm.marginals); a run whose limit is below
    bound + the runtime's share is refused
    with the figures, one above it passes."""
    from types import SimpleNamespace

    from dp_arena.errors import ConfigError
    from dp_arena.run.preflight import RUNTIME_MB, check_memory_caps

    mech = make_mechanism("aim", {"workload_degree": 2, "max_model_size": 50.0})
    domain = small_dataset.schema.domain()
    attrs = list(domain)
    closure = [(a,) for a in attrs] + list(itertools.combinations(attrs, 2))
    cells = sum(math.prod(domain[a] for a in cl) for cl in closure)
    bound, how = mech.memory_mb(small_dataset)
    assert aim_module.MODEL_COPIES == 9
    assert (MEMO_CELLS, WORKING_CELLS) == (2**24, 4 * 2**21)
    assert bound == pytest.approx(cells * 8 / 2**20 + 9 * 50.0 + 128 + 64)
    assert "max_model_size=50" in how
    run_config = SimpleNamespace(limits=SimpleNamespace(memory_limit_mb=RUNTIME_MB + 399.0))
    with pytest.raises(ConfigError) as err:
        check_memory_caps(run_config, mech, small_dataset)
    assert "over limits.memory_limit_mb=799" in str(err.value)
    run_config.limits.memory_limit_mb = RUNTIME_MB + bound + 1
    check_memory_caps(run_config, mech, small_dataset)  # fits: no error
    run_config.limits.memory_limit_mb = None
    check_memory_caps(run_config, mech, small_dataset)  # no limit: nothing to check


def test_size_admission_is_inside_a_measured_clique_or_the_model_size_within_the_limit():
    """Against the definition, on random models: candidate ``r`` is admissible iff it lies
    inside a measured clique or ``model_size_mb(measured + [r]) <= limit`` (the junction tree
    mbi would build), whichever order the candidates are asked in."""
    rng = np.random.default_rng(3)
    domain = {f"a{i}": int(rng.integers(2, 12)) for i in range(14)}
    attrs = list(domain)
    closure = pgm.downward_closure(list(itertools.combinations(attrs, 3)), attrs)
    for _ in range(6):
        measured = [tuple(rng.choice(attrs, size=int(rng.integers(1, 4)), replace=False))
                    for _ in range(10)]
        sizes = [pgm.model_size_mb(domain, [*measured, cl]) for cl in closure]
        limit = float(np.quantile(sizes, 0.5))
        inside = set(pgm.downward_closure(measured, attrs))
        expected = [cl in inside or size <= limit for cl, size in zip(closure, sizes)]
        admissible = size_admission(closure, measured, domain, limit)
        order = rng.permutation(len(closure))
        got = dict((int(i), admissible(int(i))) for i in order)
        assert [got[i] for i in range(len(closure))] == expected
        assert 0 < sum(expected) < len(closure)  # the limit splits the candidates


@pytest.mark.parametrize("n, share_admitted", [(6553, 0.9), (6553, 0.3), (100, 0.5), (40, 0.95)])
def test_admitted_pool_probes_then_lists_exactly_the_admitted(n, share_admitted):
    """Mostly admitted (the probe's share above 0.8): ``None`` after testing at most the
    probe (``ceil(n / 256)`` apart: 256 candidates at most); otherwise every candidate is tested
    and exactly the admitted indices come back, in order."""
    rng = np.random.default_rng(n)
    allowed = rng.random(n) < share_admitted
    asked: list[int] = []

    def admissible(i: int) -> bool:
        asked.append(i)
        return bool(allowed[i])

    pool = admitted_pool(admissible, n)
    step = math.ceil(n / 256)
    probe_share = allowed[::step].mean()
    if probe_share > 0.8:
        assert pool is None
        assert asked == list(range(0, n, step)) and len(asked) <= 256
    else:
        assert pool == list(np.flatnonzero(allowed))


def test_rounds_scoring_the_admitted_alone_select_among_them(small_dataset, monkeypatch):
    """With the admitted-only path forced in every round (a probe share of 1.0 is never
    exceeded), each selection draws from exactly the candidates that round's size test
    admits, picks one of them, and the run stays within its budget."""
    monkeypatch.setattr(aim_module, "admitted_pool",
                        lambda admissible, n: admitted_pool(admissible, n, share=1.0))
    rounds: list = []
    real = aim_module.size_admission

    def recording(closure, measured, domain, limit):
        test = real(closure, measured, domain, limit)
        rounds.append((closure, test))
        return test

    monkeypatch.setattr(aim_module, "size_admission", recording)
    budget = Budget(1.0, 1e-6)
    ledger = Ledger(budget, "zcdp", unit=small_dataset.ledger_unit)
    release = seeded(ledger, 3)
    drawn: list[int] = []
    exponential = release.exponential

    def spy(name, scores, sensitivity, epsilon, **kw):
        assert kw.get("admissible") is None  # the pool path tests nothing lazily
        drawn.append(len(scores))
        return exponential(name, scores, sensitivity, epsilon, **kw)

    monkeypatch.setattr(release, "exponential", spy)
    mech = make_mechanism("aim", {**FAST, "max_model_size": 0.0002})
    mech.fit_sample(small_dataset, budget, release, np.random.default_rng(3))
    assert len(drawn) == len(rounds) > 0
    picks = [c.name.split("measure ")[1] for c in ledger.charges if "measure" in c.name]
    for (closure, test), size, pick in zip(rounds, drawn, picks):
        admitted = [cl for i, cl in enumerate(closure) if test(i)]
        assert size == len(admitted)
        assert tuple(pick.split(" x ")) in admitted
    assert any(size < len(closure) for (closure, _), size in zip(rounds, drawn))  # some excluded
    # the sensitivity: 5 rows per person x the heaviest admitted candidate's weight
    work = mech.sized_workload(small_dataset.schema.domain())[0]
    weights = aim_module.candidate_weights(rounds[0][0], work)
    selections = [c for c in ledger.charges if c.kind == "exponential"]
    for (closure, test), charge in zip(rounds, selections):
        assert charge.sensitivity == 5.0 * max(weights[cl] for i, cl in enumerate(closure)
                                               if test(i))
    assert sum(c.rho for c in ledger.charges) <= zcdp_rho(1.0, 1e-6)


def chain_dataset(n: int = 2000, width: int = 3, n_attrs: int = 6, seed: int = 0) -> Dataset:
    """Records of ``n_attrs`` categorical attributes, each a noisy copy of the one before (a
    chain): AIM's 2-way rounds measure neighbouring pairs, and marginals of attributes
    further apart then span several junction-tree nodes."""
    rng = np.random.default_rng(seed)
    cols = [rng.integers(width, size=n)]
    for _ in range(n_attrs - 1):
        cols.append(np.where(rng.random(n) < 0.8, cols[-1], rng.integers(width, size=n)))
    names = [f"x{i}" for i in range(n_attrs)]
    schema = Schema(tuple(Column(a, "categorical", values=tuple(range(width))) for a in names))
    return Dataset("chain", schema, pd.DataFrame(dict(zip(names, cols))))


def test_each_refit_starts_with_the_last_rounds_model_and_marginals_freed(monkeypatch):
    """AIM drops a round's model and marginals before the refit builds the next (its memory
    bound counts one model's beliefs in a refit, not two): with Python's cycle collector
    off, so that only reference counting frees, no model an earlier ``estimate`` returned
    and no ``TreeMarginals`` is alive when the next ``estimate`` starts (rounds and the
    final fit). A reference cycle through either would keep it (one did: the marginals'
    recursive closures, 2026-11-29)."""
    import weakref

    models: list = []
    marginals: weakref.WeakSet = weakref.WeakSet()
    alive_at_refit: list[tuple[int, int]] = []
    real_estimate, real_marginals = pgm.estimate, pgm.TreeMarginals

    def estimate(*args, **kwargs):
        alive_at_refit.append((sum(ref() is not None for ref in models), len(marginals)))
        model = real_estimate(*args, **kwargs)
        models.append(weakref.ref(model))
        return model

    class Tracked(real_marginals):
        def __init__(self, model):
            super().__init__(model)
            marginals.add(self)

    eliminations = []
    real_eliminate = real_marginals._eliminate

    def eliminate(self, *args, **kwargs):
        eliminations.append(1)
        return real_eliminate(self, *args, **kwargs)

    monkeypatch.setattr(pgm, "estimate", estimate)
    monkeypatch.setattr(pgm, "TreeMarginals", Tracked)
    monkeypatch.setattr(real_marginals, "_eliminate", eliminate)
    with only_reference_counting():
        run(chain_dataset(), Budget(10.0, 1e-6), seed=4, rounds=20)
    assert eliminations  # some marginal spanned tree nodes (where the cycle was)
    assert len(alive_at_refit) >= 3  # the first fit, at least one refit, the final fit
    assert alive_at_refit == [(0, 0)] * len(alive_at_refit)


def test_model_errors_are_each_candidates_l1_error_in_the_given_order(monkeypatch):
    """model_errors computes the marginals in attribute order (to share remembered
    messages) but returns ``||x_r - xhat_r||_1`` in the order asked: against a direct sum
    per candidate, on a chain model where most 2- and 3-way candidates span several nodes,
    with the candidates shuffled and a small memo that keeps forgetting."""
    from dp_arena.mechanisms.pgm import marginals
    from dp_arena.mechanisms.pgm.aim import model_errors

    rng = np.random.default_rng(7)
    domain = {"a": 3, "b": 4, "c": 2, "d": 5, "e": 3}
    codes = pd.DataFrame({a: rng.integers(0, k, 500) for a, k in domain.items()})
    ms = [pgm.Measurement(cl, pgm.histogram(codes, cl, domain) + rng.normal(0, 3, size=math.prod(
        domain[a] for a in cl)), 3.0) for cl in [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e")]]
    model = pgm.estimate(domain, ms, 50, pgm.initial_total(ms, domain))
    candidates = [cl for k in (1, 2, 3) for cl in itertools.combinations(domain, k)]
    candidates = [candidates[i] for i in rng.permutation(len(candidates))]
    answers = {cl: pgm.histogram(codes, cl, domain).astype(float) for cl in candidates}
    direct = [np.abs(answers[cl] - pgm.TreeMarginals(model).marginal(cl)).sum()
              for cl in candidates]
    monkeypatch.setattr(marginals, "MEMO_CELLS", 40)
    got = model_errors(pgm.TreeMarginals(model), candidates, answers,
                       {a: i for i, a in enumerate(domain)})
    assert got.shape == (len(candidates),)
    np.testing.assert_array_equal(got, direct)


def brute_joint(model) -> np.ndarray:
    """The model's distribution over its whole (small) domain, from its potentials by brute
    force: ``exp(sum_C theta_C)`` normalised to the model's total, axes in domain order."""
    attrs = list(model.domain)
    log_p = np.zeros([model.domain[a] for a in attrs])
    for cl, table in model.potentials.items():
        order = sorted(cl, key=attrs.index)
        arr = np.transpose(table, [list(cl).index(a) for a in order])
        log_p = log_p + arr.reshape([model.domain[a] if a in cl else 1 for a in attrs])
    p = np.exp(log_p - log_p.max())
    return p * (model.total / p.sum())


def brute_marginal(joint: np.ndarray, attrs: list[str], clique: tuple[str, ...]) -> np.ndarray:
    kept = [a for a in attrs if a in clique]
    table = joint.sum(axis=tuple(i for i, a in enumerate(attrs) if a not in clique))
    return np.transpose(table, [kept.index(a) for a in clique]).ravel()


@pytest.mark.parametrize("smoothing", [0.0, 2.5])
def test_matched_start_multiplies_the_marginal_by_the_smoothed_ratio(smoothing):
    """One smoothed IPF step: after ``matched_to``, the model's marginal of the clique is the
    old one times ``(t + c) / (m + c)``, renormalised (``t`` the target scaled to the
    model's total); with ``c = 0`` exactly the target. Brute force over a 2 x 3 x 2 x 2
    domain; tolerance: float64 sums of 24 cells of exponentials (1e-12 relative)."""
    rng = np.random.default_rng(5)
    domain = {"a": 2, "b": 3, "c": 2, "d": 2}
    codes = pd.DataFrame({a: rng.integers(0, k, 300) for a, k in domain.items()})
    ms = [pgm.Measurement(cl, pgm.histogram(codes, cl, domain) + rng.normal(0, 2, size=math.prod(
        domain[a] for a in cl)), 2.0) for cl in [("a",), ("b",), ("c",), ("d",), ("a", "b")]]
    model = pgm.estimate(domain, ms, 40, pgm.initial_total(ms, domain))
    attrs = list(domain)
    clique = ("c", "b")  # not a measured clique, attributes out of domain order
    current = brute_marginal(brute_joint(model), attrs, clique)
    target = rng.uniform(5, 40, size=current.size)
    start = model.matched_to(clique, target, current, smoothing)
    got = brute_marginal(brute_joint(start), attrs, clique)
    t = target * current.sum() / target.sum()
    want = current * (t + smoothing) / (current + smoothing)
    want *= model.total / want.sum()
    np.testing.assert_allclose(got, want, rtol=1e-12)
    if smoothing == 0.0:
        np.testing.assert_allclose(got, t, rtol=1e-12)
    assert start.beliefs == {} and model.potentials.keys() <= start.potentials.keys()


def test_selection_distribution_is_the_exponential_mechanism_over_exhaustive_scores(
        monkeypatch):
    """Each round's selection draws from the paper's candidates (the workload's downward
    closure plus the 1-way marginals, all admissible here) with the paper's scores: the
    exponential mechanism's probabilities from the scores AIM passes equal those from
    scores computed exhaustively for every candidate, ``w_r (||x_r - xhat_r||_1 - sqrt(2/pi)
    sigma n_r)``, with ``xhat`` the round's model's distribution by brute force over the
    whole domain (3^5 cells). At epsilon 10, with the matched start, on a chain table whose
    candidates span several tree nodes. Tolerance: the two error sums differ by float64
    rounding (1e-9 counts at most here), so the probabilities by far less than 1e-9."""
    data = chain_dataset(n=1500, n_attrs=5, seed=2)
    domain = data.schema.domain()
    attrs = list(domain)
    codes = data.private
    models: list = []
    real_estimate = pgm.estimate

    def estimate(*args, **kwargs):
        models.append(real_estimate(*args, **kwargs))
        return models[-1]

    monkeypatch.setattr(pgm, "estimate", estimate)
    budget = Budget(10.0, 1e-6)
    ledger = Ledger(budget, "zcdp", unit=data.ledger_unit)
    release = seeded(ledger, 1)
    draws: list = []
    exponential = release.exponential

    def spy(name, scores, sensitivity, epsilon, **kw):
        draws.append((np.array(scores, dtype=float), sensitivity, epsilon))
        return exponential(name, scores, sensitivity, epsilon, **kw)

    monkeypatch.setattr(release, "exponential", spy)
    mech = make_mechanism("aim", {"rounds": 8, "iters": 200, "final_iters": 50,
                                  "workload_degree": 3, "max_model_size": 1000.0})
    assert mech.matched_start
    mech.fit_sample(data, budget, release, np.random.default_rng(1))
    work = mech.sized_workload(domain)[0]
    closure = mech.candidates(domain, work)
    weights = aim_module.candidate_weights(closure, work)
    sigmas = [c.scale for c in ledger.charges if c.kind == "gaussian"][len(attrs):]
    assert len(draws) == len(sigmas) >= 3
    for (scores, sens, eps), model, sigma in zip(draws, models, sigmas):
        assert scores.size == len(closure)
        joint = brute_joint(model)
        exhaustive = np.array([
            weights[cl] * (np.abs(pgm.histogram(codes, cl, domain)
                                  - brute_marginal(joint, attrs, cl)).sum()
                           - math.sqrt(2 / math.pi) * sigma * joint.size
                           / math.prod(domain[a] for a in attrs if a not in cl))
            for cl in closure])

        def probabilities(s):
            z = eps * (s - s.max()) / (2 * sens)
            return np.exp(z) / np.exp(z).sum()

        np.testing.assert_allclose(probabilities(scores), probabilities(exhaustive),
                                   rtol=1e-7, atol=1e-12)
