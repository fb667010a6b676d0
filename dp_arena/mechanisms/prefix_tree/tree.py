"""The noisy hybrid-granularity prefix tree (Chen et al., KDD 2012), level by level: budgets per
level, Laplace thresholds, the exact shortcut for noising empty children (:func:`noisy_children`)
and :func:`build_noisy_tree`. Every count of private data here is charged by the mechanism
(:mod:`dp_arena.mechanisms.prefix_tree.mechanism` states the privacy argument)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from dp_arena.data.taxi.sequences import FILL, SequenceView
from dp_arena.errors import ConfigError
from dp_arena.privacy.accounting import laplace_scale
from dp_arena.privacy.release import Releaser
from dp_arena.privacy.thresholded import choose_empty_children, empty_rank_to_child  # noqa: F401
from dp_arena.mechanisms.conditional_fill import sorted_lookup
from dp_arena.mechanisms.prefix_tree.taxonomy import Taxonomy

ALLOCATIONS = ("uniform", "linear")
SQRT2 = math.sqrt(2.0)


def level_budgets(epsilon: float, h: int, allocation: str | Sequence[float]) -> np.ndarray:
    """Epsilon of each of the ``h`` levels; they sum to ``epsilon``.

    ``uniform``: ``epsilon / h`` each (the paper). ``linear``: proportional to the level
    ``1..h`` (deeper levels hold smaller counts, so they get more). A list of ``h`` positive
    weights: proportional to them."""
    if isinstance(allocation, str):
        if allocation not in ALLOCATIONS:
            raise ConfigError(f"mechanism.allocation must be one of {ALLOCATIONS} or a list of "
                              f"{h} weights (got {allocation!r})",
                              "set mechanism.allocation=uniform")
        weights = np.ones(h) if allocation == "uniform" else np.arange(1, h + 1, dtype=float)
    else:
        weights = np.asarray(list(allocation), dtype=float)
        if weights.shape != (h,) or not np.all(np.isfinite(weights)) or np.any(weights <= 0):
            raise ConfigError(f"mechanism.allocation: a list needs {h} positive weights (one "
                              f"per level), got {list(allocation)!r}",
                              "give h positive numbers or use allocation=uniform")
    return epsilon * weights / weights.sum()


def generalized_share(rule: str | float, taxonomy: Taxonomy) -> float:
    """The share ``s`` of a level's epsilon spent on its generalized sub-level.

    ``fanout``: the seed notes' ``2 / f`` with ``f`` the taxonomy's fan-out (mean locations per
    group), defined for ``f > 2``. A number in (0, 1): that share."""
    if rule == "fanout":
        f = taxonomy.fanout
        if f <= 2:
            raise ConfigError(f"eps1_share=fanout gives eps1 = 2 eps / f, eps2 = (f - 2) eps / f,"
                              f" which needs a taxonomy fan-out f > 2 (this one has f = {f:g})",
                              "set mechanism.eps1_share to a number in (0, 1), e.g. 0.5")
        return 2.0 / f
    if isinstance(rule, bool) or not isinstance(rule, (int, float)) or not 0 < rule < 1:
        raise ConfigError(f"mechanism.eps1_share must be 'fanout' or a number in (0, 1) "
                          f"(got {rule!r})", "set mechanism.eps1_share=0.3")
    return float(rule)


def laplace_threshold(multiplier: float, scale: float) -> float:
    """``multiplier`` standard deviations (``sqrt(2) b``) of ``Lap(b)``."""
    return float(multiplier) * SQRT2 * scale


# ===== noisy children (with the empty-child shortcut) =====================================
def noisy_children(family_sizes: np.ndarray, family: np.ndarray, child: np.ndarray,
                   counts: np.ndarray, scale: float, threshold: float, release: Releaser,
                   name: str = "noisy children", note: str = ""
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Threshold-tested Laplace counts of every child of every family; returns the kept ones
    as ``(family, child, noisy count)`` sorted by (family, child).

    Family ``f`` has children ``0..family_sizes[f]-1``. The children with a non-zero true
    count are given as sorted, distinct ``(family, child)`` pairs with their ``counts``; every
    other child has true count 0.

    - Non-empty children: ``noisy = count + Lap(b)``, kept if ``noisy >= threshold``.
    - Empty children (the shortcut): per family, ``K ~ Binomial(n_empty, p)`` with
      ``p = P(Lap(b) >= threshold) = exp(-threshold / b) / 2``; ``K`` children drawn uniformly
      without replacement among the family's empty ones; each value ``threshold + Exp(b)``.
      :mod:`dp_arena.privacy.thresholded` proves this has the distribution of noising every
      empty child and thresholding (for ``threshold >= 0``).

    One release through ``release`` (:meth:`dp_arena.privacy.release.Releaser.laplace_above`,
    one charge of L1 sensitivity 1 for all children); every draw, which empty children passed
    included, is the releaser's.
    """
    family, child = np.asarray(family, dtype=np.int64), np.asarray(child, dtype=np.int64)
    return release.laplace_above(name, np.asarray(family_sizes, dtype=np.int64), family, child,
                                 np.asarray(counts, dtype=float), 1.0, scale, threshold,
                                 note=note)


# ===== the noisy tree =====================================================================
@dataclass(frozen=True)
class Level:
    """The kept nodes of one depth ``d``: generalized nodes (children of the specific nodes
    of depth ``d - 1``; index 0 of depth 0 is the root) and specific nodes (children of this
    level's generalized nodes). Families are contiguous: generalized nodes are sorted by
    (parent, group), specific ones by (generalized node, place in its group)."""

    gen_parent: np.ndarray
    gen_group: np.ndarray
    gen_noisy: np.ndarray
    gen_var: float
    spec_gen: np.ndarray
    spec_code: np.ndarray
    spec_noisy: np.ndarray
    spec_var: float

    @property
    def spec_parent(self) -> np.ndarray:
        """Specific node of depth ``d - 1`` above each specific node."""
        return self.gen_parent[self.spec_gen]


@dataclass(frozen=True)
class NoisyTree:
    """The noisy hybrid-granularity prefix tree: ``levels[d - 1]`` is depth ``d``."""

    taxonomy: Taxonomy
    h: int
    levels: tuple[Level, ...]


def truncated_symbols(view: SequenceView, h: int, end_code: int) -> np.ndarray:
    """``n x h`` symbols: each sequence's first ``h`` location codes, then ``end_code`` if it
    is shorter than ``h``, then ``FILL`` (-1)."""
    n = view.n_sequences
    out = np.full((n, h), FILL, dtype=np.int32)
    width = min(h, view.max_len)
    out[:, :width] = view.codes[:, :width]
    short = np.flatnonzero(view.lengths < h)
    out[short, view.lengths[short]] = end_code
    return out


def build_noisy_tree(symbols: np.ndarray, taxonomy: Taxonomy, eps1: np.ndarray,
                     eps2: np.ndarray, threshold_g_sd: float, threshold_ng_sd: float,
                     release: Releaser) -> NoisyTree:
    """Step 1 of the module docstring: the ``2 h`` Laplace releases, each through ``release``
    (sensitivity 1, scale ``1 / eps1[i]`` or ``1 / eps2[i]``). Which cells are candidates
    depends only on the releases before (the kept nodes), never on the data directly."""
    n, h = symbols.shape
    n_children = taxonomy.n_groups + 1  # generalized children per frontier node
    width = taxonomy.max_group_size
    node = np.zeros(n, dtype=np.int64)  # every person starts at the root (index 0)
    expandable = np.ones(1, dtype=bool)
    levels: list[Level] = []
    for d in range(1, h + 1):
        if not expandable.any():
            break  # no frontier: nothing left to measure, nothing charged
        column = symbols[:, d - 1]
        active = np.flatnonzero((node >= 0) & (column >= 0))
        symbol = column[active].astype(np.int64)
        # (a) generalized sub-level
        b1 = laplace_scale(float(eps1[d - 1]), 1.0)
        gkey = node[active] * n_children + taxonomy.group_of[symbol]
        keys, counts = np.unique(gkey, return_counts=True)
        g_parent, g_group, g_noisy = noisy_children(
            np.where(expandable, n_children, 0), keys // n_children, keys % n_children, counts,
            b1, laplace_threshold(threshold_g_sd, b1), release,
            f"prefix tree level {d}/{h}: generalized nodes",
            f"{int(expandable.sum())} frontier nodes x {n_children} groups, eps {eps1[d - 1]:.6g}")
        # (b) specific sub-level, under the kept generalized nodes
        b2 = laplace_scale(float(eps2[d - 1]), 1.0)
        g_index = sorted_lookup(g_parent * n_children + g_group, gkey)
        inside = g_index >= 0
        skey = g_index[inside] * width + taxonomy.position[symbol[inside]]
        keys, counts = np.unique(skey, return_counts=True)
        if len(g_group):  # else there is no candidate: nothing released, nothing charged
            s_gen, s_place, s_noisy = noisy_children(
                taxonomy.group_sizes[g_group], keys // width, keys % width, counts,
                b2, laplace_threshold(threshold_ng_sd, b2), release,
                f"prefix tree level {d}/{h}: specific nodes",
                f"{len(g_group)} generalized nodes kept, eps {eps2[d - 1]:.6g}")
        else:
            s_gen = s_place = np.zeros(0, dtype=np.int64)
            s_noisy = np.zeros(0)
        s_code = taxonomy.member_table[g_group[s_gen], s_place]
        levels.append(Level(g_parent, g_group, g_noisy, 2.0 * b1**2,
                            s_gen, s_code, s_noisy, 2.0 * b2**2))
        node = np.full(n, -1, dtype=np.int64)
        node[active[inside]] = sorted_lookup(s_gen * width + s_place, skey)
        expandable = s_code != taxonomy.end_code
    return NoisyTree(taxonomy, h, tuple(levels))


# ===== consistency (post-processing) ======================================================
