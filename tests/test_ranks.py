"""Ranks that read right (dp_arena.report.ranks): rows in order of their mean, a rank shared
only by rows that no test tells apart, no rank (and no tie) without an interval. Hand cases,
then random pools checked against the rule's invariants."""

from __future__ import annotations

import math

import numpy as np

from dp_arena.report.ranks import compare, mean_order, mean_order_ranks, rank_meaning


def test_mean_order_puts_the_best_mean_first_in_either_direction():
    assert mean_order([1.0, 3.0, math.nan, 2.0], higher_better=True) == [1, 3, 0, 2]
    assert mean_order([1.0, 3.0, math.nan, 2.0], higher_better=False) == [0, 3, 1, 2]
    assert mean_order([2.0, 2.0], True) == [0, 1]  # equal means keep their order


def test_a_chain_of_ties_breaks_where_a_row_is_separated_from_the_rank_above():
    # l is wide; m and n are 1 apart in every trial (separated), and neither from l
    values = [{0: 10.0, 1: 20.0, 2: 0.0}, {0: 10.0, 1: 9.0, 2: 11.0},
              {0: 9.0, 1: 8.0, 2: 10.0}]
    assert [compare(values[i], values[j], True) for i, j in ((0, 1), (0, 2), (1, 2))] \
        == [0, 0, 1]
    # means 10, 10 (l first: its place), 9: n is separated from m, so a new rank, its place 3
    assert mean_order_ranks(values, True) == ([1, 1, 3], [True, True, False])


def test_lower_is_better_orders_and_ranks_the_other_way():
    values = [{0: 1.0, 1: 1.1}, {0: 2.0, 1: 2.1}, {0: 1.5, 1: 2.5}]
    # means 1.05, 2.05, 2.0: by mean 0, 2, 1; 2 vs 0 (d = 0.5, 1.4: p = 0.28) and 1 vs 2
    # not separated, but 1 vs 0 is (constant 0.95): 0 1, 2 1=, 1 starts rank 3
    assert mean_order_ranks(values, False) == ([1, 3, 1], [True, False, True])


def test_rows_without_an_interval_get_no_rank_and_no_tie():
    values = [{0: 5.0}, {0: 4.0}, {0: 3.0, 1: 3.5}, None, {}]
    ranks, tied = mean_order_ranks(values, True)
    assert [math.isnan(r) for r in ranks] == [True, True, False, True, True]
    assert ranks[2] == 1 and tied == [False] * 5


def test_the_given_means_decide_the_order():
    values = [{0: 1.0, 1: 1.0}, {0: 5.0, 1: 5.0}]
    assert mean_order_ranks(values, True, means=[9.0, 1.0]) == ([1, 2], [False, False])


def test_the_sentence_says_the_level():
    assert "level 0.01" in rank_meaning(0.01) and "2=" in rank_meaning()


def test_random_pools_keep_the_rules_invariants():
    rng = np.random.default_rng(58)
    for _ in range(300):
        k = int(rng.integers(1, 8))
        higher = bool(rng.integers(2))
        values = []
        for _row in range(k):
            n = int(rng.integers(1, 5))
            centre, spread = rng.normal(0, 2), rng.uniform(0.01, 3)
            values.append({t: float(rng.normal(centre, spread)) for t in range(n)})
        ranks, tied = mean_order_ranks(values, higher)
        means = [float(np.mean(list(v.values()))) for v in values]
        order = [i for i in mean_order(means, higher) if not math.isnan(ranks[i])]
        # no rank without an interval; ranks never decrease down the mean order
        assert all(math.isnan(ranks[i]) == (len(values[i]) < 2) for i in range(k))
        assert [ranks[i] for i in order] == sorted(ranks[i] for i in order)
        for place, i in enumerate(order, start=1):
            same = [j for j in order if ranks[j] == ranks[i]]
            assert tied[i] == (len(same) > 1)
            # rows sharing a rank: no test separates any two; the rank is the first's place
            assert all(compare(values[a], values[b], higher) == 0
                       for a in same for b in same if a != b)
            assert ranks[i] == order.index(same[0]) + 1
            # a new rank: a test separates its first row from some row of the rank above
            above = [j for j in order[:place - 1] if ranks[j] == ranks[order[place - 2]]]
            if same[0] == i and place > 1:
                assert any(compare(values[j], values[i], higher) != 0 for j in above)
