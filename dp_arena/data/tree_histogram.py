"""Hierarchical histograms: counts over ``m`` ordered leaves released as a b-ary tree, and the
CDF read back from a noisy tree (Hay, Rastogi, Miklau & Suciu 2010; Qardaji, Yang & Li 2013).

Algorithms
----------
- :func:`level_sizes`, :func:`tree_counts`: the tree's levels (leaves first, consecutive
  ``branching`` nodes grouped, no root);
- :func:`prefix_cost`, :func:`choose_branching`: the branching of the smallest average variance
  of a prefix query (``levels^2`` times the nodes a prefix needs), a public function of the leaf
  count only; ``m`` itself is the flat histogram;
- :func:`consistent_leaves`: the least-squares consistent leaves of a tree whose nodes have equal
  noise variance (Hay et al.'s two passes);
- :func:`monotone_cdf`, :func:`tree_cdf`: the CDF as the isotonic regression of the consistent
  leaves' prefix sums, anchored at 0.

Nothing here draws noise: the caller releases every node through its
:class:`~dp_arena.privacy.release.Releaser` (one Laplace vector of L1 sensitivity
``levels * bound``: each row adds 1 to one node per level) and the functions below are
post-processing of that release.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import isotonic_regression

#: branchings :func:`choose_branching` compares (a flat histogram is always a candidate)
BRANCHINGS = (2, 4, 8, 16, 32, 64)


def level_sizes(m: int, branching: int) -> list[int]:
    """Nodes per level of the ``branching``-ary tree over ``m`` leaves, leaves first, up to
    the first level with at most ``branching`` nodes (no root: one level for ``m <= b``)."""
    sizes = [m]
    while sizes[-1] > branching:
        sizes.append(-(-sizes[-1] // branching))
    return sizes


def prefix_cost(m: int, branching: int) -> float:
    """Average variance of the ``m`` prefix sums (in units of one flat leaf's variance):
    ``levels^2`` (the per-level budget is ``1 / levels``) times the average number of nodes
    a prefix needs (the base-``b`` digit sum of its length; top level unbounded)."""
    levels = len(level_sizes(m, branching))
    j = np.arange(1, m + 1)
    nodes = np.zeros(m)
    for _ in range(levels - 1):
        nodes += j % branching
        j = j // branching
    return levels ** 2 * float(np.mean(nodes + j))


def choose_branching(m: int) -> int:
    """The branching (``m``: a flat histogram) of the smallest :func:`prefix_cost`; a public
    function of the leaf count only."""
    best = max(m, 1)
    for b in BRANCHINGS:
        if b < m and prefix_cost(m, b) < prefix_cost(m, best):
            best = b
    return best


def tree_counts(leaves: np.ndarray, branching: int) -> list[np.ndarray]:
    """Every level's node counts (leaves first), consecutive ``branching`` nodes grouped."""
    levels = [np.asarray(leaves, dtype=float)]
    for _ in level_sizes(len(leaves), branching)[1:]:
        prev = levels[-1]
        levels.append(np.add.reduceat(prev, np.arange(0, len(prev), branching)))
    return levels


def consistent_leaves(noisy: list[np.ndarray], branching: int) -> np.ndarray:
    """Least-squares consistent leaves of a tree whose nodes all have the same noise
    variance (Hay et al. 2010's two passes, with subtree variances so that uneven last
    groups are exact): bottom-up, each node's estimate combines its own count with its
    children's sum by inverse variance; top-down, each parent's final value minus its
    children's sum is shared among them in proportion to their variances."""
    z, v = [noisy[0]], [np.ones(len(noisy[0]))]
    sums, variances = [], []
    for level in noisy[1:]:
        starts = np.arange(0, len(z[-1]), branching)
        s, var = np.add.reduceat(z[-1], starts), np.add.reduceat(v[-1], starts)
        sums.append(s), variances.append(var)
        z.append((level + s / var) / (1.0 + 1.0 / var))
        v.append(1.0 / (1.0 + 1.0 / var))
    x = z[-1]
    for k in range(len(noisy) - 1, 0, -1):
        parent = np.arange(len(z[k - 1])) // branching
        x = z[k - 1] + ((x - sums[k - 1]) / variances[k - 1])[parent] * v[k - 1]
    return x


def monotone_cdf(leaves: np.ndarray) -> np.ndarray:
    """``F[0] = 0 <= F[1] <= ... <= F[m]``: the isotonic regression of the prefix sums of
    ``leaves`` (with 0 before the first leaf, held there), clipped at 0."""
    prefix = np.concatenate([[0.0], np.cumsum(leaves)])
    weights = np.ones(len(prefix))
    weights[0] = 1e12
    fit = np.clip(isotonic_regression(prefix, weights=weights).x, 0.0, None)
    fit[0] = 0.0
    return np.maximum.accumulate(fit)


def tree_cdf(noisy: np.ndarray, sizes: list[int], branching: int) -> np.ndarray:
    """The isotonic CDF of the consistent leaves of a released tree."""
    parts = np.split(noisy, np.cumsum(sizes)[:-1])
    return monotone_cdf(consistent_leaves(parts, branching))
