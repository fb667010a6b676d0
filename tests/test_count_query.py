"""Count-query relative error (dp_arena.metrics.count_query) on hand cases, random cross-checks and,
when the shared data is present, MSNBC.

Tolerances: (a) every pytest.approx here compares hand-computed arithmetic: its default, 1e-6
relative (and 1e-12 absolute), is far above the rounding of a few operations and far below any
wrong formula.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dp_arena.data.datasets import Dataset, shared_data_dir
from dp_arena.data.schema import Column, Schema
from dp_arena.data.taxi.sequences import sequences_from_lists, visit_bitmask
from dp_arena.data.taxi.sprint3 import taxi_schema
from dp_arena.errors import ConfigError, DPArenaError
from dp_arena.metrics import make_metric
from dp_arena.metrics.count_query import (
    AttributeWorkload,
    CountQuery,
    LocationWorkload,
    answer_attribute_queries,
    answer_location_queries,
    count_by_location_bitsets,
    errors_by_true_count_decile,
    make_attribute_workload,
    make_location_workload,
    relative_errors,
    rescaled_counts,
)
from tests.support.sequences import (
    PAPER_EXAMPLE,
    PERTURBED,
    msnbc_style_frame,
    taxi_frame,
    toy_dataset,
)

#: Q_{L1,L2}, Q_{L3}, Q_{L1,L4}, Q_{L2,L3,L4} as location codes (L_i has code i - 1).
PAPER_QUERIES = LocationWorkload.from_lists([[0, 1], [2], [0, 3], [1, 2, 3]])


def bits_of(sequences: list[list[int]], n_locations: int = 4) -> np.ndarray:
    return visit_bitmask(sequences_from_lists(sequences, alphabet=list(range(1, n_locations + 1))))


# ----- answering ----------------------------------------------------------------------------
def test_paper_example_location_counts() -> None:
    bits = bits_of(PAPER_EXAMPLE)
    assert answer_location_queries(bits, PAPER_QUERIES).tolist() == [6, 5, 2, 0]
    # the path for large alphabets
    assert count_by_location_bitsets(bits, PAPER_QUERIES.locations).tolist() == [6, 5, 2, 0]
    assert answer_location_queries(bits_of(PERTURBED), PAPER_QUERIES).tolist() == [6, 4, 3, 0]


@pytest.mark.parametrize("n_locations", [10, 150])
def test_location_counts_match_brute_force(n_locations: int) -> None:
    rng = np.random.default_rng(n_locations)
    seqs = [list(rng.integers(0, n_locations, size=rng.integers(0, 9)))
            for _ in range(400)]
    seqs += [[0, 1, 2, 3]] * 5  # make sure some big queries have answers
    bits = visit_bitmask(sequences_from_lists(seqs, alphabet=list(range(n_locations))))
    queries = make_location_workload(300, 4, n_locations, seed=1)
    explicit = [list(range(s)) for s in range(1, 5)]
    queries = LocationWorkload.from_lists(
        [list(q[:s]) for q, s in zip(queries.locations, queries.sizes)] + explicit)
    want = [sum(set(q[:s]) <= set(seq) for seq in seqs)
            for q, s in zip(queries.locations.tolist(), queries.sizes)]
    assert answer_location_queries(bits, queries).tolist() == want
    assert count_by_location_bitsets(bits, queries.locations).tolist() == want
    assert want[-1] >= 5


def test_location_outside_every_sequence_counts_zero() -> None:
    bits = bits_of(PAPER_EXAMPLE)  # 4 locations -> 1 word, bits 0..3
    queries = LocationWorkload.from_lists([[0, 70], [9], [1]])
    assert answer_location_queries(bits, queries).tolist() == [0, 0, 7]
    assert count_by_location_bitsets(bits, queries.locations).tolist() == [0, 0, 7]


def mixed_schema() -> Schema:
    return Schema((
        Column("color", "categorical", dtype="str", values=("red", "green", "blue")),
        Column("size", "categorical", values=(1, 2)),
        Column("price", "numeric", dtype="float64", min=0, max=100, bins=(10.0, 50.0)),
    ))


def test_attribute_counts_by_hand() -> None:
    frame = pd.DataFrame({"color": ["red", "red", "blue", "green", "red"],
                          "size": [1, 2, 1, 1, 1],
                          "price": [5.0, 10.0, 60.0, 49.9, 9.99]})
    codes = mixed_schema().encode(frame).to_numpy()  # price bins: [0,10) [10,50) [50,100]
    queries = AttributeWorkload.from_lists([
        [(0, 0)],                  # red: 3
        [(0, 0), (1, 0)],          # red and size 1: 2
        [(0, 0), (1, 0), (2, 0)],  # ... and price < 10: 2
        [(2, 1)],                  # 10 <= price < 50: 2
        [(0, 1), (2, 2)],          # green and price >= 50: 0
        [(1, 1), (2, 1)],          # size 2 and 10 <= price < 50: 1
    ])
    assert answer_attribute_queries(codes, queries).tolist() == [3, 2, 2, 2, 0, 1]


def test_attribute_counts_match_brute_force() -> None:
    rng = np.random.default_rng(3)
    domain = [2, 3, 5, 4, 7]
    codes = np.column_stack([rng.integers(0, d, size=2000) for d in domain])
    queries = make_attribute_workload(200, 3, domain, seed=5)
    got = answer_attribute_queries(codes, queries)
    for q in range(len(queries)):
        s = queries.sizes[q]
        match = np.ones(len(codes), dtype=bool)
        for a, v in zip(queries.attributes[q, :s], queries.values[q, :s]):
            match &= codes[:, a] == v
        assert got[q] == match.sum()


# ----- relative error -----------------------------------------------------------------------
def test_relative_errors_by_hand() -> None:
    true = answer_location_queries(bits_of(PAPER_EXAMPLE), PAPER_QUERIES)
    noisy = answer_location_queries(bits_of(PERTURBED), PAPER_QUERIES)
    # sanity bound 0.1% of 8 sequences = 0.008: never binds here
    assert relative_errors(true, noisy, 0.008) == pytest.approx([0.0, 0.2, 0.5, 0.0])
    # sanity bound 4 binds for Q_{L1,L4} (true 2): |3 - 2| / 4
    assert relative_errors(true, noisy, 4.0) == pytest.approx([0.0, 0.2, 0.25, 0.0])
    # a zero true count: error is the noisy count over the bound
    assert relative_errors([0], [3], 2.0) == pytest.approx([1.5])


def test_rescaled_counts_by_hand() -> None:
    assert rescaled_counts([10, 4, 0], n_synthetic=20, n_real=10).tolist() == [5, 2, 0]
    assert rescaled_counts([10], n_synthetic=5, n_real=10).tolist() == [20]
    assert rescaled_counts([0, 0], n_synthetic=0, n_real=10).tolist() == [0, 0]


def test_metric_on_paper_example_matches_pure_functions() -> None:
    data = toy_dataset()
    synthetic = msnbc_style_frame(PERTURBED)
    metric = CountQuery(n_queries=50, max_size=3, sanity_fraction=0.25, seed=4)
    result = metric.score(data, synthetic)
    queries = make_location_workload(50, 3, 4, seed=4)
    errors = relative_errors(answer_location_queries(bits_of(PAPER_EXAMPLE), queries),
                             answer_location_queries(bits_of(PERTURBED), queries), 0.25 * 8)
    assert result.scores["mean_relative_error"] == pytest.approx(errors.mean())
    assert result.scores["median_relative_error"] == pytest.approx(np.median(errors))
    for s in (1, 2, 3):
        assert result.scores[f"mre_size_{s}"] == pytest.approx(errors[queries.sizes == s].mean())
    by_size = result.tables["by_size"]
    assert by_size["size"].tolist() == [1, 2, 3] and by_size["n"].sum() == 50
    assert list(by_size.columns) == ["size", "n", "mean", "median"]
    deciles = result.tables["by_true_count_decile"]
    assert deciles["decile"].tolist() == list(range(1, 11)) and set(deciles["n"]) == {5}
    assert result.figures["relative_error_by_size"].axes  # a matplotlib Figure


def test_identical_synthetic_data_scores_zero() -> None:
    data = toy_dataset()
    result = CountQuery(n_queries=40, max_size=4).score(data, data.private.copy())
    assert result.scores["mean_relative_error"] == 0.0


def test_rescale_flag_on_doubled_data() -> None:
    data = toy_dataset()
    doubled = msnbc_style_frame(PAPER_EXAMPLE * 2)
    raw = CountQuery(n_queries=60, max_size=3).score(data, doubled)
    scaled = CountQuery(n_queries=60, max_size=3, rescale=True).score(data, doubled)
    assert scaled.scores["mean_relative_error"] == 0.0
    # raw counts are twice the true ones: error 1 where the true count is > 0.008, else 0
    queries = make_location_workload(60, 3, 4, seed=0)
    nonzero = answer_location_queries(bits_of(PAPER_EXAMPLE), queries) > 0
    assert raw.scores["mean_relative_error"] == pytest.approx(nonzero.mean())


def test_true_count_deciles() -> None:
    true = np.array([5, 0, 0, 9, 1, 3, 3, 7, 2, 8] * 2)
    table = errors_by_true_count_decile(true, np.arange(20.0))
    assert table["n"].tolist() == [2] * 10
    assert table["true_min"].tolist() == [0, 0, 1, 2, 3, 3, 5, 7, 8, 9]


# ----- workloads ----------------------------------------------------------------------------
def test_same_seed_same_workload_and_scores_different_seed_differs() -> None:
    a = make_location_workload(200, 6, 17, seed=11)
    b = make_location_workload(200, 6, 17, seed=11)
    c = make_location_workload(200, 6, 17, seed=12)
    assert np.array_equal(a.locations, b.locations) and np.array_equal(a.sizes, b.sizes)
    assert not np.array_equal(a.locations, c.locations)
    data, synthetic = toy_dataset(), msnbc_style_frame(PERTURBED)
    first = CountQuery(n_queries=100, max_size=3, seed=7).score(data, synthetic).scores
    again = CountQuery(n_queries=100, max_size=3, seed=7).score(data, synthetic).scores
    other = CountQuery(n_queries=100, max_size=3, seed=8).score(data, synthetic).scores
    assert first == again
    assert first != other


def test_uniform_location_workload_shape() -> None:
    w = make_location_workload(3000, 6, 17, seed=0)
    assert w.locations.shape == (3000, 6)
    assert set(w.sizes.tolist()) == set(range(1, 7))
    for row, s in zip(w.locations.tolist(), w.sizes.tolist()):
        items = row[:s]
        assert len(set(items)) == s and all(0 <= x < 17 for x in items)
        assert row[s:] == [-1] * (6 - s)
    # locations uniform over the domain: every one drawn, none dominating
    counts = np.bincount(w.locations[w.locations >= 0], minlength=17)
    assert counts.min() > 0.7 * counts.mean() and counts.max() < 1.3 * counts.mean()


def test_public_workloads_are_nonzero_on_public_data() -> None:
    public = [[1, 2], [2, 3, 4], [4], [1, 3]]
    w = make_location_workload(300, 3, 4, seed=2, public_bitmask=bits_of(public))
    assert (answer_location_queries(bits_of(public), w) > 0).all()
    assert set(w.sizes.tolist()) == {1, 2, 3}
    with pytest.raises(ConfigError, match="lower max_size"):
        make_location_workload(10, 4, 4, seed=2, public_bitmask=bits_of(public))
    rng = np.random.default_rng(0)
    domain = [3, 4, 50, 50]
    public_codes = np.column_stack([rng.integers(0, d, size=30) for d in domain])
    aw = make_attribute_workload(300, 4, domain, seed=1, public_codes=public_codes)
    assert (answer_attribute_queries(public_codes, aw) > 0).all()


def test_public_workload_through_the_metric() -> None:
    data = toy_dataset(public=[[1, 2, 3], [2, 4], [3, 1]])
    result = CountQuery(n_queries=30, max_size=2, workload="public").score(
        data, msnbc_style_frame(PERTURBED))
    assert 0 <= result.scores["mean_relative_error"] < np.inf
    with pytest.raises(ConfigError, match="public part"):
        CountQuery(workload="public", max_size=2).score(toy_dataset(), data.private)


def test_settings_are_checked() -> None:
    with pytest.raises(ConfigError, match="workload"):
        CountQuery(workload="zipf")
    with pytest.raises(ConfigError, match="sanity_fraction"):
        CountQuery(sanity_fraction=0)
    # max_size above the 4 locations is capped at 4, not an error
    capped = CountQuery(max_size=5).score(toy_dataset(), msnbc_style_frame(PERTURBED))
    assert max(int(k.rsplit("_", 1)[1]) for k in capped.scores if k.startswith("mre_size_")) == 4
    with pytest.raises(ConfigError, match="unknown setting"):
        make_metric("count_query", {"n_query": 3})
    metric = make_metric("count_query", {"n_queries": 10, "max_size": 3})
    assert isinstance(metric, CountQuery) and metric.lower_is_better


# ----- query kinds --------------------------------------------------------------------------
def test_kind_auto_picks_location_queries_on_taxi_data() -> None:
    trips = [(1, 0, 1, 8, 32), (1, 0, 2, 32, 8),
             (2, 1, 0, 32, 76), (2, 1, 3, 76, 32), (2, 2, 0, 32, 8),
             (3, 0, 5, 76, 76)]
    frame = taxi_frame(trips)
    data = Dataset("taxi", taxi_schema(), frame, public=frame, unit="user",
                   id_column="taxi_id")
    metric = CountQuery(n_queries=20, max_size=2, workload="public")  # uniform: mostly 0s
    assert metric.query_kind(data) == "location"
    bits = visit_bitmask(sequences_from_lists([[8, 32], [32, 76, 32], [76]],
                                              alphabet=list(taxi_schema()["pickup_community_area"]
                                                            .values)))
    # pickup codes equal the area number: Q{32} = 2, Q{8,32} = 1, Q{76} = 2, Q{8,76} = 0
    queries = LocationWorkload.from_lists([[32], [8, 32], [76], [8, 76]])
    assert answer_location_queries(bits, queries).tolist() == [2, 1, 2, 0]
    assert metric.score(data, frame).scores["mean_relative_error"] == 0.0
    fewer = metric.score(data, frame.iloc[:2]).scores["mean_relative_error"]
    assert fewer > 0


def test_kind_auto_picks_attribute_queries_on_tables() -> None:
    schema = mixed_schema()
    frame = pd.DataFrame({"color": ["red", "blue", "green", "red"], "size": [1, 2, 1, 2],
                          "price": [1.0, 20.0, 70.0, 5.0]})
    data = Dataset("table", schema, frame)
    metric = CountQuery(n_queries=50, max_size=3)
    assert metric.query_kind(data) == "attribute"
    assert metric.score(data, frame).scores["mean_relative_error"] == 0.0
    shifted = frame.assign(price=[60.0, 60.0, 60.0, 60.0])
    assert metric.score(data, shifted).scores["mean_relative_error"] > 0
    with pytest.raises(ConfigError, match="kind=location"):
        CountQuery(kind="location").score(data, frame)
    assert not CountQuery(kind="location").applies_to(data)


# ----- real data ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def msnbc_sample() -> tuple[Dataset, np.ndarray]:
    """A seeded 100,000-row subsample of MSNBC (the full 989,818 rows are the benchmark's job:
    this keeps the test fast)."""
    try:
        folder = shared_data_dir()
    except DPArenaError as exc:
        pytest.skip(f"shared data folder absent: {exc.problem}")
    if not (folder / "msnbc.zip").is_file():
        pytest.skip(f"msnbc.zip not in {folder}")
    full = pd.read_csv(folder / "msnbc.zip")
    keep = np.sort(np.random.default_rng(0).choice(len(full), 100_000, replace=False))
    frame = full.iloc[keep].reset_index(drop=True)
    schema = Schema.load(folder / "msnbc-domain.json")
    return Dataset("msnbc", schema, frame), frame.to_numpy()


@pytest.mark.realdata
def test_msnbc_subsample_beats_uniform_random_sequences(msnbc_sample) -> None:
    data, values = msnbc_sample
    rng = np.random.default_rng(1)
    n = len(values) // 10
    subsample = data.private.iloc[rng.choice(len(values), n, replace=False)]
    lengths = (values > 0).sum(axis=1)[rng.choice(len(values), n)]  # real-like lengths
    width = values.shape[1]
    uniform = rng.integers(1, 18, size=(n, width))
    uniform[np.arange(width)[None, :] >= lengths[:, None]] = 0
    uniform = pd.DataFrame(uniform, columns=[f"site_{j}" for j in range(width)])
    metric = CountQuery(n_queries=2000, max_size=6, rescale=True)
    good = metric.score(data, subsample).scores
    bad = metric.score(data, uniform).scores
    for size in range(1, 7):
        key = f"mre_size_{size}"
        assert good[key] < bad[key], (size, good[key], bad[key])
    assert good["mean_relative_error"] < bad["mean_relative_error"]


@pytest.mark.realdata
def test_msnbc_attribute_and_location_queries_run(msnbc_sample) -> None:
    data, _ = msnbc_sample
    both = [CountQuery(n_queries=200, max_size=3, kind=k).score(data, data.private.iloc[::2])
            for k in ("location", "attribute")]
    for result in both:
        assert np.isfinite(result.scores["mean_relative_error"])


def test_max_size_is_capped_at_the_number_of_attributes(small_dataset):
    # 3 attributes, max_size 6: queries of sizes 1..3 only, and the metric still scores.
    result = CountQuery(n_queries=200, max_size=6).score(small_dataset, small_dataset.public)
    sizes = {k for k in result.scores if k.startswith("mre_size_")}
    assert sizes == {"mre_size_1", "mre_size_2", "mre_size_3"}
