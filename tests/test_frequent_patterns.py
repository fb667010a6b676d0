"""Top-k frequent contiguous sequential patterns (dp_arena.metrics.frequent_patterns).

Tolerances: (a) every pytest.approx here compares hand-computed arithmetic: its default, 1e-6
relative (and 1e-12 absolute), is far above the rounding of a few operations and far below any
wrong formula.
"""

from __future__ import annotations

import warnings
from collections import Counter

import numpy as np
import pytest

from dp_arena.data.datasets import Dataset
from dp_arena.data.schema import Schema
from dp_arena.data.taxi.sequences import sequences_from_lists
from dp_arena.data.taxi.sprint3 import taxi_schema
from dp_arena.errors import ConfigError
from dp_arena.metrics import make_metric
from dp_arena.metrics.frequent_patterns import (
    FrequentPatterns,
    compare_top_k,
    decode_pattern,
    encode_pattern,
    max_encodable_length,
    pattern_lengths,
    pattern_support,
    supports_until_exact,
    top_k_patterns,
)
from tests.support.sequences import (
    PAPER_EXAMPLE,
    PERTURBED,
    msnbc_style_frame,
    taxi_frame,
    toy_dataset,
)

ALPHABET = [1, 2, 3, 4]  # L1..L4; L_i has code i - 1


def view_of(sequences: list[list[int]]):
    return sequences_from_lists(sequences, alphabet=ALPHABET)


def ranked(sequences: list[list[int]], k: int, max_length: int = 5) -> list[tuple[int, ...]]:
    """The top-k as tuples of location labels."""
    keys = top_k_patterns(pattern_support(view_of(sequences), max_length), k)
    return [tuple(ALPHABET[c] for c in decode_pattern(key, 4)) for key in keys]


def brute_force_support(sequences: list[list[int]], max_length: int) -> Counter:
    support: Counter = Counter()
    for seq in sequences:
        support.update({tuple(seq[i:i + n]) for n in range(1, max_length + 1)
                        for i in range(len(seq) - n + 1)})
    return support


def test_paper_example_supports() -> None:
    support = pattern_support(view_of(PAPER_EXAMPLE), 5)
    def of(*labels: int) -> int:
        return int(support.support_of([encode_pattern([x - 1 for x in labels], 4)])[0])
    assert of(1, 2) == 5  # sequences 1, 2, 4, 5, 7 contain L1 > L2
    assert of(1) == 7 and of(2) == 7 and of(3) == 5 and of(4) == 2
    assert of(1, 2, 4, 1) == 1
    assert of(1, 1) == 0  # seq 7 holds L1 twice, but not adjacent
    assert of(2, 1) == 1  # contiguous: only L3 > L2 > L1


def test_each_sequence_counts_once_per_pattern() -> None:
    support = pattern_support(view_of([[1, 1, 1, 1], [1, 2, 1, 2]]), 3)
    def of(*labels: int) -> int:
        return int(support.support_of([encode_pattern([x - 1 for x in labels], 4)])[0])
    assert of(1) == 2 and of(1, 1) == 1 and of(1, 1, 1) == 1 and of(1, 2) == 1
    assert of(1, 2, 1) == 1 and of(2) == 1


def test_supports_match_brute_force() -> None:
    rng = np.random.default_rng(0)
    seqs = [list(rng.integers(1, 5, size=rng.integers(0, 12))) for _ in range(300)]
    want = brute_force_support(seqs, 4)
    support = pattern_support(view_of(seqs), 4)
    got = {tuple(ALPHABET[c] for c in decode_pattern(k, 4)): int(n)
           for k, n in zip(support.keys, support.counts)}
    assert got == dict(want)


def test_top_k_ranking_and_ties_at_the_kth_place() -> None:
    # supports: L1 7, L2 7, L3 5, L1>L2 5, then support 2: L4, L2>L3, L2>L4, L3>L2,
    # L1>L2>L3, L1>L2>L4; ties broken by length, then lexicographically
    assert ranked(PAPER_EXAMPLE, 10) == [(1,), (2,), (3,), (1, 2), (4,), (2, 3), (2, 4), (3, 2),
                                         (1, 2, 3), (1, 2, 4)]
    assert ranked(PAPER_EXAMPLE, 4) == [(1,), (2,), (3,), (1, 2)]
    assert ranked(PAPER_EXAMPLE, 6)[-1] == (2, 3)  # six patterns tie at support 2
    assert len(ranked(PAPER_EXAMPLE, 100)) == 16  # every pattern there is


def test_keys_order_by_length_then_lexicographically() -> None:
    keys = [encode_pattern(p, 17) for p in [(16,), (0, 0), (0, 16), (16, 0), (0, 0, 0)]]
    assert keys == sorted(keys)
    assert pattern_lengths(np.array(keys), 17).tolist() == [1, 2, 2, 2, 3]
    assert decode_pattern(encode_pattern((3, 0, 16), 17), 17) == (3, 0, 16)
    assert max_encodable_length(17) == 15 and max_encodable_length(78 * 78) == 5


def test_compare_top_k_by_hand() -> None:
    scores = compare_top_k(np.array([1, 2, 3, 4]), np.array([2, 3, 5, 6]), k=4)
    assert scores == {"true_positives": 2.0, "false_positives": 2.0, "false_drops": 2.0,
                      "precision": 0.5}


def test_metric_on_perturbed_paper_example() -> None:
    # perturbed supports: L1 7, L2 6, L1>L2 5, L3 4, L4 3, L2>L3 2, L2>L4 2, L1>L2>L3 2, ...
    data = toy_dataset()
    synthetic = msnbc_style_frame(PERTURBED)
    for k, tp in ((4, 4), (5, 5), (6, 6)):
        scores = FrequentPatterns(k=k).score(data, synthetic).scores
        assert scores["true_positives"] == tp and scores["false_positives"] == 0
    result = FrequentPatterns(k=8).score(data, synthetic)
    # real top-8 ends ..., L2>L4, L3>L2; synthetic top-8 ends ..., L2>L4, L1>L2>L3
    assert result.scores == {"true_positives": 7.0, "false_positives": 1.0,
                             "false_drops": 1.0, "precision": 7 / 8}
    table = result.tables["top_k"]
    assert table["pattern"].tolist() == ["1", "2", "3", "1 > 2", "4", "2 > 3", "2 > 4", "3 > 2"]
    assert table["real_support"].tolist() == [7, 7, 5, 5, 2, 2, 2, 2]
    assert table["synthetic_support"].tolist() == [7, 6, 4, 5, 3, 2, 2, 1]
    assert table["in_synthetic_top_k"].tolist() == [True] * 7 + [False]


def test_fewer_patterns_than_k() -> None:
    scores = FrequentPatterns(k=100).score(toy_dataset(), msnbc_style_frame(PAPER_EXAMPLE)).scores
    assert scores["true_positives"] == 16 and scores["false_positives"] == 0
    assert scores["precision"] == pytest.approx(0.16)


def test_length_bound_warning_and_exact_mode() -> None:
    real = [[1] * 7] * 3 + [[2]]  # L1^n has support 3 for n = 1..7, L2 support 1
    data = toy_dataset(real)
    synthetic = msnbc_style_frame(real)
    with pytest.warns(UserWarning, match="maximal length 2"):
        cut = FrequentPatterns(k=3, max_pattern_length=2).score(data, synthetic)
    assert cut.tables["top_k"]["pattern"].tolist() == ["1", "1 > 1", "2"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exact = FrequentPatterns(k=3, max_pattern_length=None).score(data, synthetic)
    assert exact.tables["top_k"]["pattern"].tolist() == ["1", "1 > 1", "1 > 1 > 1"]
    supports, length, is_exact = supports_until_exact([view_of(real)], k=3)
    assert (length, is_exact) == (4, True)


def test_taxi_patterns_over_pickups_and_pairs() -> None:
    trips = [(1, 0, 1, 8, 32), (1, 0, 2, 32, 8), (1, 0, 3, 8, 32),
             (2, 1, 0, 8, 32), (2, 1, 3, 32, 76),
             (3, 0, 5, 76, 76)]
    frame = taxi_frame(trips)
    data = Dataset("taxi", taxi_schema(), frame, unit="user", id_column="taxi_id")
    result = FrequentPatterns(k=3).score(data, frame)
    assert result.tables["top_k"]["pattern"].tolist() == ["8", "32", "8 > 32"]
    assert result.tables["top_k"]["real_support"].tolist() == [2, 2, 2]
    assert result.scores["true_positives"] == 3
    pairs = FrequentPatterns(k=1, location="pair").score(data, frame)
    assert pairs.tables["top_k"]["pattern"].tolist() == ["(8, 32)"]
    with pytest.raises(ConfigError, match="at most 5"):
        FrequentPatterns(location="pair", max_pattern_length=6).score(data, frame)


def test_settings_and_applicability() -> None:
    with pytest.raises(ConfigError, match="k must be"):
        FrequentPatterns(k=0)
    with pytest.raises(ConfigError, match="location"):
        FrequentPatterns(location="everywhere")
    metric = make_metric("frequent_patterns", {"k": 10})
    assert isinstance(metric, FrequentPatterns) and metric.headline == "true_positives"
    table = Dataset("table", Schema.from_domain({"age": 5, "sex": 2}),
                    msnbc_style_frame([[1]]).rename(columns=lambda c: c.replace("site", "x")))
    assert not metric.applies_to(table)
    assert metric.applies_to(toy_dataset())
    with pytest.raises(ConfigError, match="sequence data"):
        metric.score(table, table.private)
