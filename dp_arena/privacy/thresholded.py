"""Thresholded Laplace counts of a sparse histogram, and their exact likelihood.

A *thresholded release* (:meth:`dp_arena.privacy.release.Releaser.laplace_above`; Chen et al.'s
prefix tree) noises every cell of a histogram with Laplace noise and keeps only the cells whose
noisy count is at least ``theta``. Cells come in *families* (family ``f`` has cells
``0..sizes[f]-1``; the sizes are public); the caller gives the non-empty cells as sorted,
distinct ``(family, child)`` pairs with their counts, every other cell has count 0.

Algorithms
----------
:func:`draw_above` (the empty-cell shortcut)
    Non-empty cells: ``count + Lap(b)``, kept if ``>= theta``. Empty cells are not noised one
    by one: per family ``K ~ Binomial(n_empty, p)`` with ``p = P(Lap(b) >= theta)``; ``K`` of
    the family's empty cells drawn uniformly without replacement; each value ``theta +
    Exp(b)``. *Why this has the distribution of noising every empty cell:* noising them one by
    one gives i.i.d. ``X_1..X_n ~ Lap(0, b)`` and releases the set ``S = {j : X_j >= theta}``
    with the values ``(X_j)_{j in S}``; nothing else is released. (1) The events ``X_j >=
    theta`` are independent with probability ``p``, so ``|S| ~ Binomial(n, p)``. (2) The joint
    law of the ``X_j`` is exchangeable, so given ``|S| = k`` every k-subset is equally likely.
    (3) Given ``S``, the ``X_j`` for ``j in S`` are independent, each with the law of ``X``
    given ``X >= theta``; for ``theta >= 0`` and ``x >= theta`` the density is ``exp(-x / b) /
    (2b)``, so ``X - theta`` given ``X >= theta`` is ``Exp(b)``, independent of which cells
    passed. The shortcut draws exactly (1), (2), (3), and families are independent.
    (``theta < 0`` is refused: the tail above a negative threshold is not exponential.)

    *Discrete noise* (``discrete=True``: the ``opendp`` sampler on integer counts, whose
    non-empty cells get OpenDP's discrete Laplace, pmf ``prop. to exp(-|z| / b)`` on the
    integers): empty cells must then pass with the discrete law too, or a kept value's being an
    integer would tell a non-empty cell from an empty one. With ``c = ceil(theta)`` and ``q =
    exp(-1 / b)``, ``p = P(Z >= c) = q^c / (1 + q)`` and ``Z - c`` given ``Z >= c`` is
    geometric on ``{0, 1, ...}`` with ratio ``q`` (memoryless), so the same three steps apply
    with ``c + Geometric`` values.

    All of (1)-(3) come from the generator the caller passes (the releaser's noise
    generator, never the mechanism's): which empty cells passed is then part of the release's
    noise, so an audit can attribute it (:mod:`dp_arena.audit.releases`).
:func:`log_below`, :func:`log_ratio`
    The exact likelihood of a thresholded release under true counts ``m``: cells are
    independent; a kept cell with value ``y`` has density ``exp(-|y - m| / b) / (2b)`` (the
    discrete pmf has the same form; its normalising constant does not depend on an integer
    ``m``), a suppressed cell probability ``P(m + Lap(b) < theta)``. The shortcut has exactly
    this law (above), so the log-likelihood ratio of two count vectors is a sum over the cells
    where they differ (:func:`log_ratio`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np


def check_cells(sizes: np.ndarray, family: np.ndarray, child: np.ndarray) -> None:
    """The non-empty cells must be sorted, distinct ``(family, child)`` pairs inside their
    families (a programming error otherwise)."""
    if len(family) != len(child):
        raise ValueError("family and child must have the same length")
    if len(family) == 0:
        return
    if family.min() < 0 or family.max() >= len(sizes) or child.min() < 0 or \
            np.any(child >= sizes[family]):
        raise ValueError("a non-empty cell lies outside its family")
    keys = cell_keys(family, child, sizes)
    if np.any(np.diff(keys) <= 0):
        raise ValueError("the non-empty cells must be sorted, distinct (family, child) pairs")


def offsets(sizes: np.ndarray) -> np.ndarray:
    """First key of each family: ``key = offsets[family] + child`` numbers every cell once."""
    return np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)


def cell_keys(family: np.ndarray, child: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """One integer per cell, ``offsets[family] + child`` (ascending in (family, child))."""
    return (offsets(sizes)[np.asarray(family, dtype=np.int64)]
            + np.asarray(child, dtype=np.int64)).astype(np.int64)


def cells_of(keys: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(family, child) of each key (the inverse of :func:`cell_keys`)."""
    start = offsets(sizes)
    nonempty = np.flatnonzero(sizes > 0)
    fam = nonempty[np.searchsorted(start[nonempty], keys, side="right") - 1] \
        if len(keys) else np.zeros(0, dtype=np.int64)
    return fam.astype(np.int64), (keys - start[fam]).astype(np.int64)


def above_probability(threshold: float, scale: float, discrete: bool) -> float:
    """``P(noise >= threshold)`` for Laplace noise of scale ``scale`` (``theta >= 0``)."""
    if not discrete:
        return 0.5 * math.exp(-threshold / scale)
    q = math.exp(-1.0 / scale)
    return q ** math.ceil(threshold) / (1.0 + q)


def log_below(threshold: float, m: np.ndarray, scale: float, discrete: bool) -> np.ndarray:
    """``log P(m + noise < threshold)`` per count ``m`` (a suppressed cell)."""
    m = np.asarray(m, dtype=float)
    if not discrete:
        x = (threshold - m) / scale  # P(Lap(1) < x)
        return np.where(x > 0, np.log1p(-0.5 * np.exp(-np.abs(x))), math.log(0.5) + x)
    q = math.exp(-1.0 / scale)
    j = math.ceil(threshold) - 1 - m  # P(Z <= j); integer j for integer m
    return np.where(j >= 0, np.log1p(-np.exp((np.abs(j) + 1) / -scale) / (1 + q)),
                    np.abs(j) * -1.0 / scale - math.log1p(q))


def log_ratio(kept: np.ndarray, values: np.ndarray, cells0: np.ndarray, m0: np.ndarray,
              cells1: np.ndarray, m1: np.ndarray, scale: float, threshold: float,
              discrete: bool) -> float:
    """``log p_1(release) - log p_0(release)`` of one thresholded release whose kept cells
    are ``kept`` (keys) with ``values``, under the counts ``m0`` of cells ``cells0`` and ``m1``
    of cells ``cells1`` (every other cell 0 in that world). Only cells whose counts differ
    contribute (module docstring)."""
    keys = np.union1d(cells0, cells1)
    if len(keys) == 0:
        return 0.0
    a = np.zeros(len(keys))
    b = np.zeros(len(keys))
    a[np.searchsorted(keys, cells0)] = m0
    b[np.searchsorted(keys, cells1)] = m1
    differ = a != b
    keys, a, b = keys[differ], a[differ], b[differ]
    where = np.searchsorted(kept, keys)
    is_kept = (where < len(kept)) & (kept[np.minimum(where, len(kept) - 1)] == keys) \
        if len(kept) else np.zeros(len(keys), dtype=bool)
    y = values[where[is_kept]] if len(kept) else np.zeros(0)
    out = float(np.sum(np.abs(y - a[is_kept]) - np.abs(y - b[is_kept])) / scale)
    gone = ~is_kept
    return out + float(np.sum(log_below(threshold, b[gone], scale, discrete)
                              - log_below(threshold, a[gone], scale, discrete)))


def draw_above(noise: Callable[[np.ndarray], np.ndarray], sizes: np.ndarray,
               family: np.ndarray, child: np.ndarray, counts: np.ndarray, scale: float,
               threshold: float, rng: np.random.Generator, discrete: bool = False
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The kept cells ``(family, child, value)``, sorted (module docstring): ``noise`` noises
    the non-empty counts; the empty cells by the shortcut, from ``rng``."""
    if threshold < 0:
        raise ValueError("the empty-cell shortcut needs a threshold >= 0")
    noisy = noise(counts) if len(counts) else np.zeros(0)
    keep = noisy >= threshold
    n_empty = sizes - np.bincount(family, minlength=len(sizes))
    k = rng.binomial(n_empty, above_probability(threshold, scale, discrete))
    e_family, e_child = choose_empty_children(k, n_empty, family, child, rng)
    if discrete:
        tail = math.ceil(threshold) + rng.geometric(-math.expm1(-1.0 / scale), len(e_family)) - 1
    else:
        tail = threshold + rng.exponential(scale, len(e_family))
    out_f = np.concatenate([family[keep], e_family])
    out_c = np.concatenate([child[keep], e_child])
    out_v = np.concatenate([noisy[keep], np.asarray(tail, dtype=float)])
    order = np.lexsort((out_c, out_f))
    return out_f[order], out_c[order], out_v[order]


def choose_empty_children(k: np.ndarray, n_empty: np.ndarray, family: np.ndarray,
                          child: np.ndarray, rng: np.random.Generator
                          ) -> tuple[np.ndarray, np.ndarray]:
    """``k[f]`` cells of family ``f`` drawn uniformly without replacement among its empty
    ones (those not among the sorted non-empty pairs ``(family, child)``): random sort keys
    over the empty slots of the families with ``k > 0`` only."""
    chosen = np.flatnonzero(k > 0)
    if len(chosen) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    slots = n_empty[chosen]
    owner = np.repeat(np.arange(len(chosen)), slots)
    start = np.cumsum(slots) - slots
    rank = np.arange(len(owner)) - start[owner]
    order = np.lexsort((rng.random(len(owner)), owner))
    place = np.arange(len(owner)) - start[owner[order]]
    take = order[place < k[chosen][owner[order]]]
    take.sort()
    fam = chosen[owner[take]]
    return fam, empty_rank_to_child(fam, rank[take], family, child)


def empty_rank_to_child(fam: np.ndarray, rank: np.ndarray, family: np.ndarray,
                        child: np.ndarray) -> np.ndarray:
    """The ``rank``-th (0-based, ascending) empty cell of family ``fam``, given the sorted
    non-empty pairs. With non-empty cells ``e_0 < e_1 < ...`` of a family, ``a_j = e_j - j``
    empty cells come before ``e_j``, so the ``r``-th empty cell is ``r + #{j : a_j <= r}``
    (``a_j`` is non-decreasing: one ``searchsorted``)."""
    if len(family) == 0:
        return rank.astype(np.int64)
    first = np.searchsorted(family, family, side="left")
    before = child - (np.arange(len(family)) - first)
    width = int(max(before.max(), rank.max(initial=0))) + 2
    keys = family * width + before
    below = (np.searchsorted(keys, fam * width + rank, side="right")
             - np.searchsorted(keys, fam * width, side="left"))
    return (rank + below).astype(np.int64)
