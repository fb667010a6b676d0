"""The prefix_tree mechanism (Chen et al., KDD 2012): the paper's example, the empty-child
shortcut against brute force, the ledger, consistency invariants, valid output, determinism.

Tolerances: (b) the number of passing empty children over 40,000 copies (Binomial(4, 0.303) per
copy, sd 0.92): standard error 0.0046, rel=0.03 (0.036) is 7.9 of them; (a) spending 1.3 is a
sum of a few charges: abs=1e-12; (c) the projection against a 200-step bisection (interval
2^-200 of its start: exact to rounding) on values ~1-10: atol=1e-6 is far above both.
"""

from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dp_arena.data.datasets import Dataset, load_shared_dataset, load_taxi_sim
from dp_arena.data.schema import Schema
from dp_arena.data.taxi.sequences import (
    SequenceSpec,
    sequence_view,
    sequences_from_lists,
)
from dp_arena.errors import ConfigError
from dp_arena.privacy.accounting import Budget, Ledger
from dp_arena.privacy.release import NumpySampler, Releaser
from dp_arena.mechanisms import make_mechanism
from dp_arena.mechanisms.prefix_tree import (
    Release,
    block_taxonomy,
    build_noisy_tree,
    consistent_counts,
    empty_rank_to_child,
    generalized_share,
    laplace_threshold,
    level_budgets,
    load_taxonomy_file,
    noisy_children,
    project_families,
    resolve_taxonomy,
    taxi_frame,
    taxonomy_from_groups,
    truncated_symbols,
)
from tests.seeding import seeded

#: The paper's example database (Table 1) and taxonomy.
PAPER_SEQUENCES = [["L1", "L2", "L3"], ["L1", "L2"], ["L3", "L2", "L1"], ["L1", "L2", "L4"],
                   ["L1", "L2", "L3"], ["L3", "L2"], ["L1", "L2", "L4", "L1"], ["L3", "L1"]]
PAPER_TAXONOMY = {"G1": [1, 2], "G2": [3, 4]}  # L_i is page code i


def column_dataset(sequences: list[list[int]], width: int, name: str = "toy",
                   n_codes: int = 5) -> Dataset:
    """Record-level MSNBC-style data: site_0..site_{width-1}, 0 after the end."""
    cols = [f"site_{i}" for i in range(width)]
    rows = [list(s) + [0] * (width - len(s)) for s in sequences]
    return Dataset(name, Schema.from_domain({c: n_codes for c in cols}),
                   pd.DataFrame(rows, columns=cols))


def paper_dataset() -> Dataset:
    return column_dataset([[int(x[1]) for x in s] for s in PAPER_SEQUENCES], 4)


def run(data: Dataset, eps: float, seed: int = 0, delta: float = 0.0, **params):
    budget = Budget(eps, delta)
    ledger = Ledger(budget, unit=data.ledger_unit)
    out = make_mechanism("prefix_tree", params).fit_sample(data, budget, seeded(ledger, seed),
                                                           np.random.default_rng(seed))
    return out, ledger


def random_sequences(n: int, n_locations: int, max_len: int, seed: int) -> list[list[int]]:
    """Skewed random sequences over codes 1..n_locations (a sticky first-order chain)."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, n_locations + 1)
    weights /= weights.sum()
    out = []
    for length in rng.integers(1, max_len + 1, size=n):
        seq = [int(rng.choice(n_locations, p=weights)) + 1]
        for _ in range(length - 1):
            stay = rng.random() < 0.5
            seq.append(seq[-1] if stay else int(rng.choice(n_locations, p=weights)) + 1)
        out.append(seq)
    return out


# ----- the paper's example ----------------------------------------------------------------
@pytest.mark.parametrize("ends", ["residual", "marker"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_paper_example_with_negligible_noise_is_released_exactly(ends, seed):
    data = paper_dataset()
    out, ledger = run(data, 1e9, seed, h=4, eps1_share=0.5, taxonomy=PAPER_TAXONOMY, ends=ends)
    assert data.schema.problems(out) == []
    released = Counter(map(tuple, out.to_numpy().tolist()))
    assert released == Counter(map(tuple, data.private.to_numpy().tolist()))
    assert len(ledger.charges) == 8  # the tree reaches depth 4: 4 levels x 2 sub-levels


def test_fanout_split_needs_fanout_above_two():
    paper = taxonomy_from_groups(PAPER_TAXONOMY, [1, 2, 3, 4])
    with pytest.raises(ConfigError, match="f > 2"):
        generalized_share("fanout", paper)
    msnbc_like = taxonomy_from_groups({"a": [1, 2, 3, 4], "b": [5, 6, 7, 8]}, list(range(1, 9)))
    assert generalized_share("fanout", msnbc_like) == pytest.approx(0.5)
    assert generalized_share(0.25, msnbc_like) == 0.25


# ----- the empty-child shortcut -----------------------------------------------------------
def brute_force_children(family_sizes, family, child, counts, scale, threshold, rng):
    """Reference: noise every child of every family (zeros included) and threshold."""
    offsets = np.concatenate([[0], np.cumsum(family_sizes)[:-1]])
    true = np.zeros(int(np.sum(family_sizes)))
    true[offsets[family] + child] = counts
    noisy = true + rng.laplace(0.0, scale, len(true))
    keep = np.flatnonzero(noisy >= threshold)
    fam = np.searchsorted(offsets, keep, side="right") - 1
    return fam, keep - offsets[fam], noisy[keep]


def test_empty_rank_to_child_matches_enumeration():
    rng = np.random.default_rng(0)
    sizes = rng.integers(1, 12, size=300)
    fam, ch = [], []
    for f, size in enumerate(sizes):
        nonempty = np.sort(rng.choice(size, rng.integers(0, size + 1), replace=False))
        fam += [f] * len(nonempty)
        ch += nonempty.tolist()
    fam, ch = np.array(fam, dtype=np.int64), np.array(ch, dtype=np.int64)
    q_fam, q_rank, expected = [], [], []
    for f, size in enumerate(sizes):
        empty = sorted(set(range(size)) - set(ch[fam == f].tolist()))
        for r, c in enumerate(empty):
            q_fam.append(f), q_rank.append(r), expected.append(c)
    got = empty_rank_to_child(np.array(q_fam), np.array(q_rank), fam, ch)
    assert got.tolist() == expected


def test_empty_child_shortcut_matches_brute_force_in_distribution():
    """Many independent copies of one family (6 children; children 1 and 4 have counts 2 and
    1, the other four are empty): the shortcut and brute-force noising give the same
    distribution of (which empty children pass) and of the values that pass."""
    copies, size, scale, threshold = 40_000, 6, 1.0, 0.5  # P(pass | empty) = 0.30
    family_sizes = np.full(copies, size)
    family = np.repeat(np.arange(copies), 2)
    child = np.tile([1, 4], copies)
    counts = np.tile([2, 1], copies)

    def summary(fam, ch, val):
        empty = ~np.isin(ch, [1, 4])
        bits = np.zeros(copies, dtype=np.int64)  # the set of passing empty children, as a mask
        np.bitwise_or.at(bits, fam[empty], 1 << ch[empty])
        nonempty_val = {c: val[ch == c] for c in (1, 4)}
        return bits, val[empty], nonempty_val

    fast = summary(*noisy_children(family_sizes, family, child, counts, scale, threshold,
                                   Releaser(Ledger(Budget(1e9)),
                                            NumpySampler(np.random.default_rng(4)))))
    slow = summary(*brute_force_children(family_sizes, family, child, counts, scale, threshold,
                                         np.random.default_rng(2)))
    # 1. the passing set (a subset of the 4 empty children: 16 outcomes), joint distribution
    masks = sorted(set(fast[0]) | set(slow[0]))
    table = np.array([[np.sum(fast[0] == m) for m in masks], [np.sum(slow[0] == m) for m in masks]])
    assert len(masks) == 16
    assert stats.chi2_contingency(table)[1] > 1e-3
    p = 0.5 * math.exp(-threshold / scale)
    assert np.mean([bin(m).count("1") for m in fast[0]]) == pytest.approx(4 * p, rel=0.03)
    # 2. the values of passing empty children: threshold + Exp(scale)
    assert stats.ks_2samp(fast[1], slow[1]).pvalue > 1e-3
    assert fast[1].min() >= threshold
    # 3. non-empty children are noised individually in both
    for c in (1, 4):
        assert stats.ks_2samp(fast[2][c], slow[2][c]).pvalue > 1e-3


def test_shortcut_output_is_sorted_and_never_duplicates_a_child():
    rng = np.random.default_rng(3)
    sizes = np.array([3, 50, 1, 7, 0])
    fam, ch, cnt = np.array([0, 1, 1, 3]), np.array([2, 0, 49, 6]), np.array([5, 1, 9, 4])
    for _ in range(50):
        f, c, v = noisy_children(sizes, fam, ch, cnt, 1.0, 0.1,
                                 Releaser(Ledger(Budget(1e9)), NumpySampler(rng)))
        pairs = list(zip(f.tolist(), c.tolist()))
        assert pairs == sorted(set(pairs))
        assert np.all(c < sizes[f]) and np.all(v >= 0.1)


# ----- ledger -----------------------------------------------------------------------------
@pytest.mark.parametrize("allocation", ["uniform", "linear", [1, 2, 3, 1, 1]])
def test_ledger_has_two_laplace_charges_per_level_summing_to_epsilon(allocation):
    data = column_dataset([[1, 1, 2, 1, 1, 3]] * 3000 + random_sequences(2000, 8, 8, 0), 8,
                          n_codes=9)
    out, ledger = run(data, 1.3, h=5, allocation=allocation, eps1_share=0.4,
                      taxonomy={"a": [1, 2, 3], "b": [4, 5, 6], "c": [7, 8]})
    assert len(ledger.charges) == 10
    assert {c.kind for c in ledger.charges} == {"laplace"}
    assert {c.sensitivity for c in ledger.charges} == {1.0}
    eps = [c.pure_epsilon for c in ledger.charges]
    levels = level_budgets(1.3, 5, allocation)
    assert np.allclose(np.add(eps[0::2], eps[1::2]), levels)
    assert np.allclose(np.divide(eps[0::2], levels), 0.4)
    assert ledger.spent() == (pytest.approx(1.3, abs=1e-12), 0.0)


def test_budget_helpers():
    assert level_budgets(2.0, 4, "uniform").tolist() == [0.5] * 4
    assert level_budgets(1.0, 3, "linear") == pytest.approx([1 / 6, 2 / 6, 3 / 6])
    for bad in ("geometric", [1, 2], [1, -1, 1]):
        with pytest.raises(ConfigError):
            level_budgets(1.0, 3, bad)
    assert laplace_threshold(2.0, 3.0) == pytest.approx(2 * math.sqrt(2) * 3)


# ----- consistency ------------------------------------------------------------------------
def projection_by_bisection(z, var, cap):
    """Reference weighted projection onto {x >= 0, sum x <= cap} (one family)."""
    if np.maximum(z, 0).sum() <= cap:
        return np.maximum(z, 0)
    lo, hi = 0.0, float(np.max(z / var)) + 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if np.maximum(z - mid * var, 0).sum() > cap else (lo, mid)
    return np.maximum(z - hi * var, 0)


def test_family_projection_is_the_weighted_least_squares_solution():
    rng = np.random.default_rng(4)
    sizes = rng.integers(1, 8, size=200)
    family = np.repeat(np.arange(200), sizes)
    z = rng.normal(5, 6, len(family))
    var = rng.uniform(0.5, 4, len(family))
    cap = rng.uniform(0, 30, 200)
    cap[:5] = 0.0
    cap[5:10] = np.inf
    x = project_families(z, var, family, cap)
    for f in range(200):
        ref = projection_by_bisection(z[family == f], var[family == f], cap[f])
        assert np.allclose(x[family == f], ref, atol=1e-6)


def noisy_test_tree(eps: float, seed: int):
    view = sequences_from_lists(random_sequences(3000, 12, 10, seed))
    taxonomy = block_taxonomy(view.alphabet)
    h = 6
    levels = level_budgets(eps, h, "uniform")
    ledger = Ledger(Budget(eps))
    return build_noisy_tree(truncated_symbols(view, h, taxonomy.end_code), taxonomy,
                            levels * 0.3, levels * 0.7, 1.0, 1.0,
                            Releaser(ledger, NumpySampler(np.random.default_rng([seed, 1]))))


@pytest.mark.parametrize("eps, seed", [(0.5, 0), (2.0, 1), (20.0, 2)])
def test_consistency_invariants(eps, seed):
    tree = noisy_test_tree(eps, seed)
    counts = consistent_counts(tree)
    tol = 1e-7
    violations_before = 0
    parent = prev_noisy = None
    for lv, x in zip(tree.levels, counts):
        assert np.all(x.spec >= 0) and np.all(x.gen >= 0)
        # a generalized node equals the sum of its specific children
        assert np.allclose(x.gen, np.bincount(lv.spec_gen, x.spec, len(lv.gen_group)))
        assert np.all(x.spec <= x.gen[lv.spec_gen] + tol)
        if parent is not None:
            # children (generalized nodes) never exceed, nor sum to more than, their parent
            assert np.all(x.gen <= parent[lv.gen_parent] + tol)
            sums = np.bincount(lv.gen_parent, x.gen, len(parent))
            assert np.all(sums <= parent + tol)
            raw = np.bincount(lv.gen_parent, lv.gen_noisy, len(parent))
            violations_before += int(np.sum(raw > prev_noisy + tol))
        parent, prev_noisy = x.spec, lv.spec_noisy
    if eps <= 2:
        assert violations_before > 0  # the noisy tree did violate them


# ----- output on real schemas -------------------------------------------------------------
@pytest.fixture(scope="module")
def taxi() -> Dataset:
    return load_taxi_sim(n_private=8_000, n_public=8_000, seed=3)


@pytest.mark.parametrize("eps", [1.0, 10.0])
def test_taxi_output_is_schema_valid(taxi, eps):
    out, ledger = run(taxi, eps, delta=2.5e-5)
    assert taxi.schema.problems(out) == []
    assert list(out.columns) == taxi.schema.names
    assert (out["shift"] == out["trip_day_of_week"] * 3 + out["trip_hour_of_day"] // 8).all()
    assert not set(out["taxi_id"]) & set(taxi.private["taxi_id"])
    assert out.groupby("taxi_id").size().max() <= 200
    assert ledger.spent()[0] <= eps * (1 + 1e-12) and ledger.spent()[1] == 0.0


def test_taxi_sequences_follow_the_tree(taxi):
    """With negligible noise every taxi's first h pickups (in the shared view's time order)
    are released exactly, and a taxi with fewer than h trips keeps its trip count."""
    h = 4
    out, _ = run(taxi, 1e9, delta=2.5e-5, h=h)
    spec = SequenceSpec(kind="trips", location="pickup")

    def prefixes(frame):
        view = sequence_view(frame, spec, taxi.schema)
        return Counter(tuple(row[: min(n, h)]) for row, n in zip(view.codes.tolist(),
                                                                 view.lengths))

    assert prefixes(out) == prefixes(taxi.private)
    short = lambda f: Counter(n for n in f.groupby("taxi_id").size() if n < h)  # noqa: E731
    assert short(out) == short(taxi.private)


def test_an_empty_release_still_gives_a_valid_taxi_table(taxi):
    empty = Release(np.zeros((0, 4), dtype=np.int32), np.zeros(0, dtype=np.int64),
                    np.zeros(0, dtype=bool))
    alphabet = list(taxi.schema["pickup_community_area"].values)
    out = taxi_frame(empty, alphabet, taxi, "pickup", 4, np.random.default_rng(0))
    assert len(out) == 1 and taxi.schema.problems(out) == []


def test_taxonomy_files_cover_their_alphabets(taxi):
    sides = load_taxonomy_file("chicago_sides")
    pickup = list(taxi.schema["pickup_community_area"].values)
    assert taxonomy_from_groups(sides, pickup).n_groups == 10
    assert resolve_taxonomy("auto", pickup, "trips", "taxi_sim").n_groups == 10
    assert resolve_taxonomy("auto", list(range(1, 18)), "columns", "msnbc").n_groups == 5
    assert resolve_taxonomy("auto", list(range(30)), "columns", "other").n_groups == 5  # blocks
    with pytest.raises(ConfigError, match="no group"):
        taxonomy_from_groups({"a": [1, 2]}, [1, 2, 3])
    with pytest.raises(ConfigError, match="not a location"):
        taxonomy_from_groups({"a": [1, 2, 3, 9]}, [1, 2, 3])
    with pytest.raises(ConfigError, match="in groups"):
        taxonomy_from_groups({"a": [1, 2], "b": [2, 3]}, [1, 2, 3])


@pytest.mark.realdata
def test_chicago_sides_copy_states_the_published_facts(shared_data):
    published = json.loads((shared_data / "chicago-sides.json").read_text())["groups"]
    assert load_taxonomy_file("chicago_sides") == published


@pytest.fixture
def msnbc_sample(shared_data) -> Dataset:
    return load_shared_dataset("msnbc", data_dir=str(shared_data), max_rows=30_000, split_seed=1)


@pytest.mark.realdata
@pytest.mark.parametrize("eps", [0.5, 5.0])
def test_msnbc_output_is_schema_valid(msnbc_sample, eps):
    out, ledger = run(msnbc_sample, eps)
    assert msnbc_sample.schema.problems(out) == []
    values = out[[f"site_{i}" for i in range(16)]].to_numpy()
    ended = np.cumsum(values == 0, axis=1) > 0
    assert np.all(values[ended] == 0)  # nothing after the end marker
    assert np.all((values != 0).sum(axis=1) <= 6)  # h = 6 by default
    # a size check, not a noise bound: the population's size is read through noisy counts
    # (Laplace, scale of order 1/eps per level) and the consistency step; a tenth of 30,000
    # rows is hundreds of noise scales at eps 0.5, so only a tree that lost or duplicated a
    # share of the population would fail (not derived from the pruning's exact loss)
    assert abs(len(out) - len(msnbc_sample.private)) < 0.1 * len(msnbc_sample.private)
    assert ledger.spent()[0] == pytest.approx(eps)


# ----- determinism and settings -----------------------------------------------------------
def test_same_seed_same_output_other_seed_other_output(taxi):
    a, _ = run(taxi, 1.0, seed=7, delta=2.5e-5)
    b, _ = run(taxi, 1.0, seed=7, delta=2.5e-5)
    c, _ = run(taxi, 1.0, seed=8, delta=2.5e-5)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)
    data = column_dataset(random_sequences(2000, 4, 4, 5), 4)
    x, _ = run(data, 1.0, seed=3, h=3, eps1_share=0.5)
    y, _ = run(data, 1.0, seed=3, h=3, eps1_share=0.5)
    pd.testing.assert_frame_equal(x, y)


@pytest.mark.parametrize("params, match", [
    ({"h": 0}, "mechanism.h"), ({"threshold_g_sd": -1}, "threshold_g_sd"),
    ({"ends": "both"}, "mechanism.ends"), ({"location": "pair"}, "mechanism.location"),
    ({"allocation": "exp"}, "allocation"), ({"eps1_share": 1.5}, "eps1_share"),
    ({"taxonomy": "nowhere"}, "unknown taxonomy"), ({"h": 20}, "sequence columns"),
])
def test_bad_settings_are_refused(params, match):
    data = column_dataset(random_sequences(500, 4, 4, 6), 4)
    with pytest.raises(ConfigError, match=match):
        run(data, 1.0, **{"h": 3, **params})


def test_refuses_data_without_a_sequence_view(small_dataset):
    with pytest.raises(ConfigError, match="sequence"):
        run(small_dataset, 1.0)
