"""``rdt``: random decision trees for private attributes (dp_arena.mechanisms.rdt).

Ledger totals, structure independence from the private data, the leaf noise's scale, chained
private attributes, fallbacks that read no raw private counts, schema-valid output and clear
errors; the trees' budget on top of a base mechanism under either accountant; on Adult
(shared data) a win over the noisy-marginal baseline and the rdt-on-mst acceptance case.

Tolerances: (a) per-tree epsilons and their totals are a few products and sums: rel=1e-12 (the
total of a few dozen charges rel=1e-8); (b) mean |Laplace(b)| over > 2,000 leaf cells
(each |noise| ~ Exp(b), sd b): z = 4.89 relative standard errors 1 / sqrt(n)
(tests.support.tolerances, false failure 1e-6); the shrinkage check's atol=0.01 bounds its
by-hand weights (at shrinkage 100 every w <= 100 / (100 + 40,000), so every proportion is
within 1e-3 of the prior); the marginal at epsilon 50 over 3,000 rows and the agreement share
over 4,000 rows (binomial standard errors <= 0.0091 and 0.0079) allow 0.04 and 0.05: 4.4 and
6.3 standard errors, which also absorb the trees' Laplace noise of scale 2 / epsilon on counts
of thousands (seeded).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dp_arena.data.datasets import Dataset, load_shared_dataset
from dp_arena.data.schema import Column
from dp_arena.errors import ConfigError
from dp_arena.privacy.accounting import Budget, Ledger
from dp_arena.privacy.release import NumpySampler, Releaser
from dp_arena.mechanisms import make_mechanism, rdt
from dp_arena.mechanisms.rdt.attributes import collapse_rare_values
from dp_arena.mechanisms.rdt.forest import (
    TreeStructure,
    grow_tree,
    leaf_label_counts,
    node_proportions,
    route_to_leaves,
    subtree_sums,
)
from tests.support.rdt_people import people, people_schema
from tests.support.tolerances import mean_se, statistical

# ----- a small dataset with public predictors and private sex/race -------------------------


def people_dataset(n: int = 3000, private_seed: int = 1, public_seed: int = 2,
                   private: pd.DataFrame | None = None) -> Dataset:
    return Dataset("people", people_schema(),
                   people(n, private_seed) if private is None else private,
                   people(n, public_seed), unit="record")


def fit(data: Dataset, eps: float = 1.0, seed: int = 0, delta: float = 0.0,
        accountant: str = "gdp", **params):
    budget = Budget(eps, delta)
    ledger = Ledger(budget, accountant, unit=data.ledger_unit)  # type: ignore[arg-type]
    release = Releaser(ledger, NumpySampler(np.random.default_rng([seed, 1])))
    result = make_mechanism("rdt", params).fit(data, budget, release, np.random.default_rng(seed))
    return result, ledger


# ----- ledger -----------------------------------------------------------------------------
@pytest.mark.parametrize("m, split", [(4, None), (3, [0.25, 0.75])])
def test_ledger_has_m_trees_per_private_attribute_summing_to_the_budget(m, split):
    data = people_dataset()
    result, ledger = fit(data, eps=0.8, m=m, n_B=50, budget_split=split)
    assert len(ledger.charges) == 2 * m
    assert {c.kind for c in ledger.charges} == {"laplace"}
    assert {c.sensitivity for c in ledger.charges} == {1.0}
    shares = split or [0.5, 0.5]
    for attr, share in zip(("sex", "race"), shares):
        mine = [c for c in ledger.charges if c.name.startswith(f"rdt {attr}:")]
        assert len(mine) == m
        assert all(c.pure_epsilon == pytest.approx(0.8 * share / m) for c in mine)
        assert result.forests[attr].noise_scale == pytest.approx(m / (0.8 * share))
    eps, delta = ledger.spent()
    assert 0.8 - 1e-9 <= eps <= 0.8 and delta == 0.0  # a hair below, never above


@pytest.mark.parametrize("m, per_tree, accountant", [(5, 0.1, "gdp"), (10, 0.1, "zcdp"),
                                                     (3, 0.4, "gdp")])
def test_epsilon_per_tree_charges_trees_times_epsilon(m, per_tree, accountant):
    """The report's reading: every tree spends epsilon_per_tree; the ledger holds m x 2 charges
    of it and the run's spend is their total m x 2 x epsilon_per_tree (5 x 2 x 0.1 = 1.0,
    10 x 2 x 0.1 = 2.0, 3 x 2 x 0.4 = 2.4), whatever larger budget the run was given."""
    data = people_dataset()
    result, ledger = fit(data, eps=5.0, accountant=accountant, m=m, n_B=200,
                         epsilon_per_tree=per_tree)
    assert len(ledger.charges) == 2 * m
    assert [c.pure_epsilon for c in ledger.charges] == pytest.approx([per_tree] * (2 * m),
                                                                     rel=1e-12, abs=0)
    assert all(c.pure_epsilon <= per_tree for c in ledger.charges)  # a hair below, never above
    total = 2 * m * per_tree
    assert ledger.spent()[0] == pytest.approx(total, rel=1e-12) and ledger.spent()[0] <= total
    assert result.tree_epsilon == pytest.approx(total)
    assert result.forests["sex"].epsilon == pytest.approx(m * per_tree)
    assert result.forests["race"].noise_scale == pytest.approx(1.0 / per_tree)
    assert all("per tree" in c.note for c in ledger.charges)


def test_epsilon_per_tree_over_the_budget_is_refused_with_the_total_before_any_charge():
    from dp_arena.errors import BudgetExceededError

    data = people_dataset()
    with pytest.raises(BudgetExceededError) as caught:
        fit(data, eps=0.5, m=5, n_B=200, epsilon_per_tree=0.1)
    text = str(caught.value)
    assert "10 trees x epsilon 0.1 = 1 in total" in text and "privacy.epsilon" in text
    # exactly the total fits (the charges are calibrated a hair below)
    _, ledger = fit(data, eps=1.0, m=5, n_B=200, epsilon_per_tree=0.1)
    assert 1.0 - 1e-9 <= ledger.spent()[0] <= 1.0


def test_epsilon_per_tree_and_budget_split_cannot_both_be_set():
    with pytest.raises(ConfigError, match="budget_split"):
        fit(people_dataset(), eps=2.0, epsilon_per_tree=0.1, budget_split=[0.5, 0.5])


def test_epsilon_reading_is_tagged():
    assert make_mechanism("rdt", {}).setting_tags() == {"rdt_epsilon_reading":
                                                       "total (adaptation)"}
    assert make_mechanism("rdt", {"epsilon_per_tree": 0.1}).setting_tags() == {
        "rdt_epsilon_reading": "per tree (report)"}


@pytest.mark.parametrize("delta, accountant", [(0.0, "gdp"), (1e-6, "gdp"), (1e-6, "zcdp")])
def test_ledger_with_a_base_mechanism_stays_within_and_uses_the_budget(delta, accountant):
    data = people_dataset()
    result, ledger = fit(data, eps=2.0, delta=delta, accountant=accountant, base="independent",
                         base_share=0.3, m=2)
    base_charges = [c for c in ledger.charges if not c.name.startswith("rdt ")]
    tree_charges = [c for c in ledger.charges if c.name.startswith("rdt ")]
    assert len(base_charges) == 5 and len(tree_charges) == 4
    eps, spent_delta = ledger.spent()
    assert 2.0 - 1e-9 <= eps <= 2.0 and spent_delta <= delta  # exactly what the base left
    if delta == 0:  # pure DP: the base spends its share, the trees the rest
        assert sum(c.pure_epsilon for c in base_charges) == pytest.approx(0.6)
        assert result.tree_epsilon == pytest.approx(1.4)
    # The targets' predictors are the base mechanism's output, P the trees'.
    assert data.schema.problems(result.synthetic) == []


@pytest.mark.parametrize("accountant", ["gdp", "zcdp"])
def test_mst_base_spends_exactly_the_budget_under_either_accountant(accountant):
    """Under gdp the ledger reports min(GDP + basic, zCDP) once MST's
    exponential selections are in, so the trees' share is solved on that composition, not
    ``epsilon - spent``; the run spends the budget to 1e-9 and never more."""
    data = people_dataset(n=1500)
    result, ledger = fit(data, eps=1.0, delta=1e-9, accountant=accountant, base="mst",
                         base_share=0.5, m=2, n_B=50)
    eps, delta = ledger.spent()
    assert 1.0 - 1e-9 <= eps <= 1.0 and delta == 1e-9
    trees = [c for c in ledger.charges if c.name.startswith("rdt ")]
    assert sum(c.pure_epsilon for c in trees) == pytest.approx(result.tree_epsilon, rel=1e-8)
    assert data.schema.problems(result.synthetic) == []


def test_tree_epsilon_is_what_the_ledger_admits():
    """Hand case: a pure ledger with 0.25 spent leaves 0.75 for the trees (a hair below);
    a ledger spent to the budget leaves nothing: one clear error."""
    from dp_arena.errors import BudgetExceededError

    ledger = Ledger(Budget(1.0))
    ledger.charge("base", "laplace", 1.0, 4.0)
    left = rdt.tree_epsilon(ledger, [0.5, 0.5], m=3)
    assert 0.75 - 1e-9 <= left <= 0.75
    ledger.charge("rest", "laplace", 1.0, 1.0 / 0.75)
    with pytest.raises(BudgetExceededError, match="base_share"):
        rdt.tree_epsilon(ledger, [0.5, 0.5], m=3)


@pytest.mark.realdata
@pytest.mark.slow
@pytest.mark.parametrize("accountant", ["gdp", "zcdp"])
def test_adult_on_mst_spends_exactly_the_budget(shared_data, accountant):
    """The acceptance case, ``dp-arena mechanism=rdt dataset=adult mechanism.base=mst
    privacy.epsilon=1 privacy.delta=1e-9``: default settings, no public part, except MST's
    estimation iterations (its releases and their calibration do not depend on them)."""
    data = load_shared_dataset("adult", data_dir=str(shared_data))
    budget = Budget(1.0, 1e-9)
    ledger = Ledger(budget, accountant)  # type: ignore[arg-type]
    out = make_mechanism("rdt", {"base": "mst", "base_params": {
        "iters": 300, "select_iters": 100}}).fit_sample(data, budget, Releaser(ledger),
                                                        np.random.default_rng(0))
    eps, _ = ledger.spent()
    assert 1.0 - 1e-9 <= eps <= 1.0
    assert data.schema.problems(out) == []


def test_public_reference_base_spends_nothing_and_trees_get_everything():
    data = people_dataset()
    result, ledger = fit(data, eps=1.0, base="public_only", m=2)
    assert all(c.name.startswith("rdt ") for c in ledger.charges)
    assert result.tree_epsilon == pytest.approx(1.0)


# ----- structure --------------------------------------------------------------------------
def test_tree_structure_does_not_depend_on_the_private_data():
    first = people_dataset(private_seed=1)
    other_rows = people(2500, seed=7, sex_from_job=False)  # different rows, sizes and labels
    second = people_dataset(private=other_rows)
    a, _ = fit(first, seed=3, m=4, n_B=40)
    b, _ = fit(second, seed=3, m=4, n_B=40)
    for attr in ("sex", "race"):
        assert len(a.forests[attr].trees) == 4
        for ta, tb in zip(a.forests[attr].trees, b.forests[attr].trees):
            assert ta.same_shape(tb)
            assert np.array_equal(ta.sd_count, tb.sd_count)
        assert any(t.n_leaves > 3 for t in a.forests[attr].trees)  # the trees do split
    # ... while the noisy counts (which do read AD) differ.
    assert not np.allclose(a.forests["sex"].noisy_counts[0], b.forests["sex"].noisy_counts[0])
    # Sanity: the trees are grown from SD: other structure data, other trees.
    moved = Dataset("people", people_schema(), first.private, people(1500, 9))
    c, _ = fit(moved, seed=3, m=4, n_B=40)
    assert not all(ta.same_shape(tc) and np.array_equal(ta.sd_count, tc.sd_count)
                   for ta, tc in zip(a.forests["sex"].trees, c.forests["sex"].trees))


def test_grow_tree_splits_while_n_B_rows_and_depth_allow():
    rng = np.random.default_rng(0)
    sd = np.column_stack([rng.integers(0, 2, 400), rng.integers(0, 3, 400)])
    tree = grow_tree(sd, np.array([2, 3]), np.array([1.0, 1.0]), n_B=100, max_depth=5, rng=rng)
    internal = ~tree.is_leaf
    assert np.all(tree.sd_count[internal] >= 100)
    assert np.all(tree.depth <= 2)  # two attributes, each used once per path
    leaf_parents = tree.parent[tree.is_leaf & (tree.depth > 0)]
    assert np.all(tree.sd_count[leaf_parents] >= 100)
    shallow = grow_tree(sd, np.array([2, 3]), np.array([1.0, 1.0]), 100, max_depth=1, rng=rng)
    assert shallow.depth.max() == 1
    stump = grow_tree(sd, np.array([2, 3]), np.array([1.0, 1.0]), 100, max_depth=0, rng=rng)
    assert stump.n_nodes == 1
    only_second = grow_tree(sd, np.array([2, 3]), np.array([0.0, 1.0]), 1, 5, rng)
    assert set(only_second.split[only_second.split >= 0]) == {1}


def test_route_to_leaves_follows_the_splits():
    # root splits on column 1 (3 values); its child for value 2 splits on column 0.
    tree = TreeStructure(split=np.array([1, -1, -1, 0, -1, -1]),
                         first_child=np.array([1, -1, -1, 4, -1, -1]),
                         parent=np.array([-1, 0, 0, 0, 3, 3]), depth=np.array([0, 1, 1, 1, 2, 2]),
                         sd_count=np.zeros(6))
    codes = np.array([[0, 0], [1, 1], [0, 2], [1, 2]])
    assert route_to_leaves(tree, codes).tolist() == [1, 2, 4, 5]
    counts = leaf_label_counts(tree, route_to_leaves(tree, codes), np.array([0, 1, 1, 0]), 2)
    assert counts.tolist() == [[0, 0], [1, 0], [0, 1], [0, 0], [0, 1], [1, 0]]
    sums = subtree_sums(tree, counts)
    assert sums[0].tolist() == [2, 2] and sums[3].tolist() == [1, 1]


def test_collapse_rare_values_keeps_frequent_sd_values():
    codes = np.array([0] * 50 + [1] * 3 + [2] * 20 + [3] * 2 + [4] * 30 + [5] * 10)
    assert collapse_rare_values(codes, 6, collapse_above=6, min_count=5).tolist() == list(range(6))
    # at most 3 kept (0, 4, 2 are the most frequent), then the rest share code 3
    assert collapse_rare_values(codes, 6, collapse_above=4, min_count=5).tolist() == \
        [0, 3, 1, 3, 2, 3]
    # min_count: only values with >= 25 rows keep their own code
    assert collapse_rare_values(codes, 6, collapse_above=4, min_count=25).tolist() == \
        [0, 2, 2, 2, 1, 2]


# ----- noise and post-processing ----------------------------------------------------------
def test_leaf_noise_has_the_charged_laplace_scale():
    data = people_dataset()
    result, ledger = fit(data, eps=2.0, m=10, n_B=10, max_depth=3, seed=4)
    schema = data.schema
    for attr, forest in result.forests.items():
        cols = forest.node_attributes
        codes = np.column_stack([result.collapse[c][schema.encode(data.private)[c].to_numpy()]
                                 for c in cols])
        labels = schema.encode(data.private)[attr].to_numpy()
        noise = []
        for tree, noisy in zip(forest.trees, forest.noisy_counts):
            raw = leaf_label_counts(tree, route_to_leaves(tree, codes), labels, noisy.shape[1])
            noise.append((noisy - raw)[tree.is_leaf].ravel())
            assert np.all(noisy[~tree.is_leaf] == 0)  # only leaves are released
        noise = np.concatenate(noise)
        charged = {c.scale for c in ledger.charges if c.name.startswith(f"rdt {attr}:")}
        assert len(charged) == 1 and charged.pop() == pytest.approx(forest.noise_scale)
        assert forest.noise_scale == pytest.approx(10 / (2.0 * 0.5))
        assert len(noise) > 2000
        # Laplace(b): mean |noise| = b (|noise| ~ Exp(b), sd b: relative standard error
        # 1 / sqrt(n)), z = 4.89 of it (false failure 1e-6): <= 11% at n > 2,000 (the
        # constant 8% was 3.6 standard errors at 2,000); median 0 (standard error b / sqrt(n):
        # 0.15 b is 6.7 of them)
        assert np.mean(np.abs(noise)) == pytest.approx(
            forest.noise_scale, rel=statistical(mean_se(1.0, len(noise))))
        assert abs(np.median(noise)) < 0.15 * forest.noise_scale


def _two_leaf_tree() -> TreeStructure:
    return TreeStructure(split=np.array([0, -1, -1]), first_child=np.array([1, -1, -1]),
                         parent=np.array([-1, 0, 0]), depth=np.array([0, 1, 1]),
                         sd_count=np.array([10, 5, 5]))


def test_node_proportions_plain_rule_and_empty_leaf_fallback():
    tree = _two_leaf_tree()
    noisy = np.array([[0.0, 0.0], [3.0, 1.0], [-2.0, -1.0]])  # leaf 2 is empty (total <= 0)
    props = node_proportions(tree, noisy, scale=1.0, prior=np.array([0.5, 0.5]), shrinkage=0)
    # root: clamp([1, 0]) normalised; leaf 1: [3, 1] / 4; leaf 2 falls back to the root.
    assert props.tolist() == [[1.0, 0.0], [0.75, 0.25], [1.0, 0.0]]
    # a root with no noisy mass falls back to the prior (SD proportions)
    empty = node_proportions(tree, np.array([[0.0, 0.0], [-1.0, 0.5], [0.0, -1.0]]), 1.0,
                             np.array([0.2, 0.8]), 0)
    assert np.allclose(empty, [[0.2, 0.8], [0.2, 0.8], [0.2, 0.8]])


def test_node_proportions_shrinkage_weights_by_hand():
    tree = _two_leaf_tree()
    noisy = np.array([[0.0, 0.0], [8.0, 2.0], [6.0, 4.0]])
    prior = np.array([0.5, 0.5])
    props = node_proportions(tree, noisy, scale=1.0, prior=prior, shrinkage=1.0)
    # root: n = 20, sigma^2 = 2 * 1 * 2 leaves = 4, v = 0.25 -> w = 100 / 104
    w_root = 400 * 0.25 / (400 * 0.25 + 4)
    root = w_root * np.array([0.7, 0.3]) + (1 - w_root) * prior
    assert np.allclose(props[0], root)
    # leaf 1: n = 10, sigma^2 = 2, v_k = root_k (1 - root_k)
    v = root * (1 - root)
    w = 100 * v / (100 * v + 2)
    leaf = w * np.array([0.8, 0.2]) + (1 - w) * root
    assert np.allclose(props[1], leaf / leaf.sum())
    # more shrinkage pulls every node towards the prior
    strong = node_proportions(tree, noisy, 1.0, prior, shrinkage=100.0)
    assert np.allclose(strong, 0.5, atol=0.01)


def test_fallbacks_read_no_raw_private_counts(monkeypatch):
    """With the noisy release replaced by all-zero counts (every leaf empty), the output must
    not depend on the private data at all: it is the SD proportions, whatever AD holds."""
    monkeypatch.setattr(rdt, "add_laplace_noise",
                        lambda counts, *args, **kwargs: np.zeros_like(counts, dtype=float))
    data_a = people_dataset(private_seed=1)
    data_b = people_dataset(private=people(1000, seed=5, sex_from_job=False).assign(sex=1))
    a, _ = fit(data_a, seed=2, m=3, n_B=40)
    b, _ = fit(data_b, seed=2, m=3, n_B=40)
    pd.testing.assert_frame_equal(a.synthetic, b.synthetic)
    public = data_a.public
    for attr, k in (("sex", 2), ("race", 3)):
        sd = np.bincount(public[attr], minlength=k) / len(public)
        for props in a.forests[attr].proportions:
            assert np.allclose(props, sd)


# ----- chaining and output ----------------------------------------------------------------
def test_race_is_chained_on_the_synthesized_sex():
    n = 4000
    rng = np.random.default_rng(0)
    frame = people(n, 1, sex_from_job=False)
    frame["race"] = np.where(frame["sex"] == 1, 0, 2)  # race determined by sex only
    public = people(n, 2, sex_from_job=False)
    public["race"] = np.where(public["sex"] == 1, 0, 2)
    data = Dataset("people", people_schema(), frame, public)
    weights = {"age": 0, "job": 0, "hours": 0, "sex": 1}
    result, _ = fit(data, eps=20.0, m=2, n_B=50, attribute_weights=weights,
                    seed=int(rng.integers(9)))
    assert result.forests["sex"].node_attributes == ["age", "job", "hours"]
    assert result.forests["race"].node_attributes == ["age", "job", "hours", "sex"]
    assert all(t.split[0] == 3 for t in result.forests["race"].trees)  # root splits on sex
    out = result.synthetic
    # X carries no information about sex, so only the chain can make race follow it.
    agree = np.mean(out["race"].to_numpy() == np.where(out["sex"] == 1, 0, 2))
    assert agree > 0.95
    # independent of the public sex: the agreement share over 4,000 rows is 0.5 with binomial
    # standard error sqrt(0.25 / 4,000) = 0.0079: 0.05 is 6.3 of them (false failure 3e-10)
    assert abs(np.mean(out["sex"].to_numpy() == public["sex"].to_numpy()) - 0.5) < 0.05


def test_output_is_schema_valid_and_keeps_the_targets_predictors():
    data = people_dataset()
    result, _ = fit(data, eps=1.0, n_B=200)
    out = result.synthetic
    assert data.schema.problems(out) == []
    assert list(out.columns) == data.schema.names
    pd.testing.assert_frame_equal(out[["age", "job", "hours"]],
                                  data.public[["age", "job", "hours"]].reset_index(drop=True))
    # sex follows job in the synthetic data too (eps = 1 on 3000 rows)
    share = out.groupby("job")["sex"].mean()
    assert share["a"] < 0.35 and share["c"] > 0.65


def test_user_level_data_clips_contributions(small_dataset):
    budget = Budget(1.0)
    ledger = Ledger(budget, unit=small_dataset.ledger_unit)
    out = make_mechanism("rdt", {"private_attributes": ["color"], "m": 2, "n_B": 100}).fit_sample(
        small_dataset, budget, Releaser(ledger), np.random.default_rng(0))
    assert small_dataset.schema.problems(out) == []
    assert {c.sensitivity for c in ledger.charges} == {5.0}  # max 5 rows per person
    assert set(out["pid"]) <= set(small_dataset.public["pid"])
    assert 1.0 - 1e-9 <= ledger.spent()[0] <= 1.0


def test_max_depth_zero_is_a_noisy_marginal():
    data = people_dataset()
    result, _ = fit(data, eps=50.0, m=1, max_depth=0, shrinkage=0)
    assert all(t.n_nodes == 1 for f in result.forests.values() for t in f.trees)
    share = result.synthetic["sex"].mean()
    assert share == pytest.approx(data.private["sex"].mean(), abs=0.04)


# ----- errors -----------------------------------------------------------------------------
@pytest.mark.parametrize("params, match", [
    ({"private_attributes": ["nope"]}, r"\['nope'\] not in the schema"),
    ({"private_attributes": []}, "is empty"),
    ({"private_attributes": ["sex", "sex"]}, "twice"),
    ({"predictors": ["sex", "job"]}, "overlap"),
    ({"predictors": ["job", "zzz"]}, r"\['zzz'\] not in the schema"),
    ({"budget_split": [1.0]}, "one positive share per private attribute"),
    ({"budget_split": [0.7, 0.7]}, "summing to 1"),
    ({"m": 0}, r"mechanism.m must be an integer >= 1"),
    ({"n_B": 0}, r"mechanism.n_B must be an integer >= 1"),
    ({"max_depth": -1}, "max_depth must be null or an integer"),
    ({"shrinkage": -1}, "shrinkage must be a number >= 0"),
    ({"attribute_weights": {"zzz": 1}}, r"\['zzz'\] are not node attributes"),
    ({"attribute_weights": {"race": 1}}, r"\['race'\] are not node attributes"),
    ({"attribute_weights": {"job": -1}}, "finite numbers >= 0"),
    ({"attribute_weights": "mutual"}, "a mapping or 'sd_association'"),
    ({"base": "resample"}, "not differentially private"),
    ({"base": "rdt"}, "cannot be rdt itself"),
    ({"base": "nope"}, "unknown mechanism 'nope'"),
    ({"base": "independent", "base_share": 1.5}, r"base_share must be in \(0, 1\)"),
    ({"base": "independent", "base_params": {"k": 1}}, r"unknown setting mechanism\.base_params\.k\b"),
    ({"structure": "other"}, "structure must be one of 'base', 'public'"),
    ({"max_depth": "half"}, "max_depth must be an integer or one of 'all' or null"),
    ({"leaf_min_count": -1}, "leaf_min_count must be a number >= 0"),
    ({"chain": "real"}, "chain must be one of 'authentic', 'synthesized'"),
    ({"collapse_min_counts": {"zzz": 5}}, r"collapse_min_counts: \['zzz'\] are not node"),
    ({"collapse_min_counts": {"job": 2.5}}, "collapse_min_counts values must be integers"),
    ({"collapse_min_counts": [5]}, "collapse_min_counts must be a mapping"),
    ({"regroup_widths": {"age": 0}}, "regroup_widths values must be finite numbers > 0"),
    ({"regroup_widths": {"job": 2}}, "'job' has non-numeric values"),
])
def test_bad_settings_raise_clear_config_errors(params, match):
    with pytest.raises(ConfigError, match=match):
        fit(people_dataset(), **params)


def test_public_base_without_public_part_is_a_config_error():
    data = people_dataset()
    data.public = None
    with pytest.raises(ConfigError, match="needs a public part") as info:
        fit(data)
    assert "public_fraction" in info.value.fix


def test_without_sex_race_or_a_target_rdt_is_na_with_how_to_run_it_alone(small_dataset):
    from dp_arena.errors import NotApplicable
    from dp_arena.mechanisms.rdt.attributes import resolve_private_attributes

    with pytest.raises(NotApplicable, match="rdt needs mechanism.private_attributes") as info:
        fit(small_dataset)
    assert "['color', 'size', 'amount']" in str(info.value)
    assert "to rdt alone, dp-arena mechanism=rdt mechanism.private_attributes=[" in \
        info.value.problem
    # the dataset's target (the column its utility view predicts) is the default
    assert resolve_private_attributes(small_dataset.schema, None, "size") == ["size"]
    assert resolve_private_attributes(small_dataset.schema, ["color"], "size") == ["color"]


def test_unknown_setting_is_refused():
    with pytest.raises(ConfigError, match=r"unknown setting mechanism\.depth \(did you mean mechanism\.max_depth\?\)"):
        make_mechanism("rdt", {"depth": 3})


# ----- Adult ------------------------------------------------------------------------------
@pytest.mark.realdata
def test_adult_beats_the_noisy_marginal(shared_data):
    from dp_arena.metrics.duke_utility import DukeUtility

    data = load_shared_dataset("adult", data_dir=str(shared_data), public_fraction=0.5)
    budget = Budget(1.0)
    ledger = Ledger(budget)
    out = make_mechanism("rdt", {}).fit_sample(data, budget, Releaser(ledger), np.random.default_rng(0))
    assert data.schema.problems(out) == []
    assert len(ledger.charges) == 2 * 3 and 1.0 - 1e-9 <= ledger.spent()[0] <= 1.0
    stump_ledger = Ledger(budget)
    stump = make_mechanism("rdt", {"m": 1, "max_depth": 0, "shrinkage": 0}).fit_sample(
        data, budget, Releaser(stump_ledger), np.random.default_rng(0))  # = noisy marginals, ignores X
    metric = DukeUtility(figures=False)
    trees, marginal = metric.score(data, out).scores, metric.score(data, stump).scores
    assert trees["logreg_coef_corr"] > marginal["logreg_coef_corr"] + 0.3
    assert trees["joint_prop_corr"] > marginal["joint_prop_corr"]


# ----- the Duke report's procedure ---------------------------------------------
def test_collapse_below_count_combines_every_rare_value_by_hand():
    codes = np.array([0] * 50 + [1] * 3 + [2] * 20 + [3] * 2 + [4] * 30 + [5] * 10)
    # >= 20 rows: 0, 2, 4 keep codes 0, 1, 2 (no cap on how many); 1, 3, 5 share code 3
    assert rdt.collapse_below_count(codes, 6, 20).tolist() == [0, 3, 1, 3, 2, 3]
    # nothing below the threshold: no shared code is added
    assert rdt.collapse_below_count(codes, 6, 2).tolist() == list(range(6))


def test_regroup_codes_by_width_by_hand():
    # values 0, 5, 10, 15, 20, 45 in width-10 bands from 0: bands 0, 0, 1, 1, 2, 4 -> 0, 0, 1, 1, 2, 3
    values = np.array([0.0, 5, 10, 15, 20, 45])
    assert rdt.regroup_codes(values, 10).tolist() == [0, 0, 1, 1, 2, 3]
    assert rdt.regroup_codes(values, 25).tolist() == [0, 0, 0, 0, 0, 1]
    assert rdt.regroup_codes(values + 100, 25).tolist() == [0, 0, 0, 0, 0, 1]  # from the minimum


def test_attribute_collapse_regroups_then_thresholds():
    col = Column("pay", "categorical", values=tuple(range(0, 60, 5)))  # 0, 5, ..., 55
    sd = np.repeat(np.arange(12), [40, 40, 40, 40, 1, 1, 1, 1, 30, 0, 0, 0])
    # width 20: codes 0-3 -> band 0 (160 rows), 4-7 -> band 1 (4 rows), 8-11 -> band 2 (30)
    only_width = rdt.attribute_collapse(col, sd, 16, 1000, None, 20.0)
    assert only_width.tolist() == [0] * 4 + [1] * 4 + [2] * 4
    # then < 10 rows combined: band 1 joins the shared (last) code after bands 0 and 2
    both = rdt.attribute_collapse(col, sd, 16, 1000, 10, 20.0)
    assert both.tolist() == [0] * 4 + [2] * 4 + [1] * 4
    # no rule of its own: the generic rule (12 values <= collapse_above 16: unchanged)
    assert rdt.attribute_collapse(col, sd, 16, 1000, None, None).tolist() == list(range(12))


def test_per_attribute_collapse_settings_reach_the_fit():
    data = people_dataset()
    result, _ = fit(data, m=1, n_B=200, regroup_widths={"age": 50},
                    collapse_min_counts={"hours": 300})
    # age bins [0, 30), [30, 50), [50, 70), [70, 99]: lower edges 0, 30, 50, 70 -> bands 0, 0, 1, 1
    assert result.collapse["age"].tolist() == [0, 0, 1, 1]
    counts = np.bincount(data.public["hours"], minlength=30)
    kept = np.flatnonzero(counts >= 300)
    expected = np.full(30, len(kept))
    expected[kept] = np.arange(len(kept))
    assert 2 <= len(kept) < 30 and result.collapse["hours"].tolist() == expected.tolist()
    assert result.collapse["job"].tolist() == [0, 1, 2]  # untouched


def test_leaf_min_count_is_tested_on_the_structure_count_not_the_noisy_total():
    """leafFreqMin as the report's pseudo-code tests it: the structure data's count of the leaf
    (``sd_count``: root 10, leaves 5 and 5 in ``_two_leaf_tree``), whatever the noisy total."""
    tree = _two_leaf_tree()
    uneven = TreeStructure(tree.split, tree.first_child, tree.parent, tree.depth,
                           sd_count=np.array([10, 8, 2]))
    # leaf 1: noisy total 1 but 8 SD rows -> its own shares; leaf 2: noisy total 40 but 2 SD
    # rows -> its parent's (root counts [1 + 30, 0 + 10] = [31, 10]).
    noisy = np.array([[0.0, 0.0], [1.0, 0.0], [30.0, 10.0]])
    props = node_proportions(uneven, noisy, 1.0, np.array([0.5, 0.5]), shrinkage=0, min_count=3)
    assert np.allclose(props, [[31 / 41, 10 / 41], [1.0, 0.0], [31 / 41, 10 / 41]])
    plain = node_proportions(uneven, noisy, 1.0, np.array([0.5, 0.5]), shrinkage=0)
    assert np.allclose(plain[2], [0.75, 0.25])  # without it, leaf 2 keeps its own shares
    # at the minimum a node keeps its own shares (">= leafFreqMin", as the report writes)
    at = node_proportions(uneven, noisy, 1.0, np.array([0.5, 0.5]), shrinkage=0, min_count=2)
    assert np.allclose(at[2], [0.75, 0.25])
    # a root below the minimum falls back to the prior, and so does everything under it
    tiny = node_proportions(uneven, noisy, 1.0, np.array([0.2, 0.8]), shrinkage=0, min_count=11)
    assert np.allclose(tiny, [0.2, 0.8])
    # an empty leaf (noisy total <= 0) still falls back, whatever its structure count
    empty = node_proportions(uneven, np.array([[0.0, 0.0], [-1.0, 0.5], [30.0, 10.0]]), 1.0,
                             np.array([0.5, 0.5]), shrinkage=0, min_count=1)
    assert np.allclose(empty[1], empty[0])


def test_leaf_min_count_in_a_fit_follows_the_structure_counts_and_charges_the_same():
    """The rule reads SD only: the leaves that take their parent's proportions are exactly
    those with fewer than leafFreqMin SD rows, and the ledger is the same with or without it."""
    data = people_dataset()
    a, ledger_a = fit(data, seed=4, m=2, n_B=200, max_depth="all", shrinkage=0,
                      leaf_min_count=150)
    _, ledger_b = fit(data, seed=4, m=2, n_B=200, max_depth="all", shrinkage=0)
    assert [c.pure_epsilon for c in ledger_a.charges] == [c.pure_epsilon
                                                           for c in ledger_b.charges]
    small_seen = 0
    for tree, props, noisy in zip(a.forests["sex"].trees, a.forests["sex"].proportions,
                                  a.forests["sex"].noisy_counts):
        small = tree.is_leaf & (tree.sd_count < 150)
        small_seen += int(small.sum())
        assert np.allclose(props[small], props[tree.parent[small]])
        total = subtree_sums(tree, noisy).sum(axis=1)
        big = tree.is_leaf & (tree.sd_count >= 150) & (total > 0)
        own = subtree_sums(tree, noisy)[big]
        assert np.allclose(props[big], np.clip(own, 0, None) / np.clip(own, 0, None).sum(
            axis=1, keepdims=True))
    assert small_seen > 0  # the case is exercised


def test_max_depth_all_uses_every_node_attribute():
    assert rdt.tree_depth("all", 7) == 7 and rdt.tree_depth(None, 7) == 4
    assert rdt.tree_depth(2, 7) == 2
    data = people_dataset(n=6000)
    result, _ = fit(data, m=3, n_B=5, max_depth="all")
    assert max(t.depth.max() for t in result.forests["sex"].trees) == 3  # age, job, hours
    assert max(t.depth.max() for t in result.forests["race"].trees) == 4  # ... and sex


def _sex_decides_race(seed: int) -> pd.DataFrame:
    frame = people(4000, seed, sex_from_job=False)  # X says nothing about sex
    frame["race"] = np.where(frame["sex"] == 1, 0, 2)
    return frame


@pytest.mark.parametrize("chain, agreement", [("authentic", 1.0), ("synthesized", 0.5)])
def test_chain_synthesized_trains_race_on_a_synthesized_sex(chain, agreement):
    """Race is a function of sex and X carries no information about sex. Race's forest (root
    split on sex) learns race | real sex with ``chain=authentic``: the output's race follows
    its sex (agreement ~1). With the report's ``chain=synthesized``, AD's sex is replaced by a
    draw from the sex forest, which here is independent of the real sex, so race's leaves
    see race independent of (synthesized) sex: agreement ~0.5."""
    data = Dataset("people", people_schema(), _sex_decides_race(1), _sex_decides_race(2))
    weights = {"age": 0, "job": 0, "hours": 0, "sex": 1}
    result, ledger = fit(data, eps=20.0, m=2, n_B=50, attribute_weights=weights, chain=chain,
                         seed=5)
    out = result.synthetic
    agree = np.mean(out["race"].to_numpy() == np.where(out["sex"] == 1, 0, 2))
    assert agree == pytest.approx(agreement, abs=0.05)
    # the same budget either way: 2 x 2 Laplace trees of epsilon 5, sensitivity 1
    assert [c.pure_epsilon for c in ledger.charges] == pytest.approx([5.0] * 4)
    assert {c.sensitivity for c in ledger.charges} == {1.0}


def test_chain_does_not_change_the_first_forest():
    data = people_dataset()
    a, _ = fit(data, seed=3, m=2, n_B=100, chain="authentic")
    b, _ = fit(data, seed=3, m=2, n_B=100, chain="synthesized")
    for x, y in zip(a.forests["sex"].noisy_counts, b.forests["sex"].noisy_counts):
        assert np.array_equal(x, y)
    assert a.synthetic["sex"].equals(b.synthetic["sex"])


def test_report_preset_sets_every_element_of_the_report():
    import yaml

    from dp_arena.resources import config_dir

    preset = yaml.safe_load((config_dir() / "mechanism" / "rdt_report.yaml").read_text())
    assert preset.pop("name") == "rdt"
    assert preset["chain"] == "synthesized" and preset["max_depth"] == "all"
    assert preset["shrinkage"] == 0 and preset["leaf_min_count"] > 0
    mech = make_mechanism("rdt", preset)  # every key is a setting
    result, ledger = fit(people_dataset(), **{**preset, "n_B": 100})
    assert all(t.depth.max() <= 4 for f in result.forests.values() for t in f.trees)
    # epsilon per tree: 5 trees x 2 attributes x 0.1 = the run's 1.0, charged in full
    assert preset["epsilon_per_tree"] == 0.1 and preset["m"] == 5
    assert [c.pure_epsilon for c in ledger.charges] == pytest.approx([0.1] * 10)
    assert 1.0 - 1e-9 <= ledger.spent()[0] <= 1.0 and mech.chain == "synthesized"


@pytest.mark.realdata
@pytest.mark.parametrize("accountant", ["gdp", "zcdp"])
def test_adult_report_preset_spends_at_most_the_budget(shared_data, accountant):
    """The ``rdt_report`` preset with the report's collapse Method 1 on Adult (half public)."""
    import yaml

    from dp_arena.resources import config_dir

    preset = yaml.safe_load((config_dir() / "mechanism" / "rdt_report.yaml").read_text())
    preset.pop("name")
    preset.update(collapse_min_counts={"native-country": 500, "occupation": 200},
                  regroup_widths={"age": 10, "hours-per-week": 10})
    preset["epsilon_per_tree"] = 0.04  # 5 trees x 2 attributes x 0.04 = 0.4 in total
    data = load_shared_dataset("adult", data_dir=str(shared_data), public_fraction=0.5)
    budget = Budget(0.4, 1e-9)
    ledger = Ledger(budget, accountant)  # type: ignore[arg-type]
    out = make_mechanism("rdt", preset).fit_sample(data, budget, Releaser(ledger),
                                                   np.random.default_rng(0))
    eps, delta = ledger.spent()
    assert 0.4 - 1e-9 <= eps <= 0.4 and delta <= 1e-9
    assert len(ledger.charges) == 2 * 5
    assert data.schema.problems(out) == []


def test_report_collapse_methods_as_the_report_words_them():
    """Method 1: only Pay regrouped ($10,000 units), nothing else adjusted; Method 2: Pay in
    $25,000 units, Agency < 500 and Occupation < 200 combined, nothing else."""
    from dp_arena.mechanisms.rdt.attributes import report_collapse_method

    one = report_collapse_method(1, "pay", "agency", "occupation")
    assert one == {"collapse_above": None, "collapse_min_count": None,
                   "regroup_widths": {"pay": 10_000}, "collapse_min_counts": None}
    two = report_collapse_method(2, "pay", "agency", "occupation")
    assert two["regroup_widths"] == {"pay": 25_000} and two["collapse_above"] is None
    assert two["collapse_min_counts"] == {"agency": 500, "occupation": 200}
    with pytest.raises(ConfigError, match="Methods 1 and 2"):
        report_collapse_method(3, "pay")
    # in a fit, Method 1 leaves every other attribute at full width (hours: 30 values kept)
    result, _ = fit(people_dataset(), m=1, n_B=100,
                    **report_collapse_method(1, "age", pay_widths=(50, 75)))
    assert result.collapse["hours"].tolist() == list(range(30))
    assert result.collapse["age"].tolist() == [0, 0, 1, 1]  # bins from 0, 30, 50, 70 by 50
