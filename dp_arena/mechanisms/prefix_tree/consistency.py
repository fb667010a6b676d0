"""Consistency of the noisy tree (post-processing): two-pass weighted least squares under the
tree's constraints (Hay et al., PVLDB 2010, adapted to a pruned tree's inequalities)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dp_arena.mechanisms.prefix_tree.tree import NoisyTree


def merge_with_children(noisy: np.ndarray, var: float | np.ndarray, child_sum: np.ndarray,
                        child_var: np.ndarray, has_children: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray]:
    """Bottom-up step: where a node's estimate is below the sum of its children's (its
    constraint ``node >= sum of children`` is active), the least-squares estimate of both is the
    inverse-variance weighted mean of the node's value and that sum; elsewhere it is unchanged.
    Returns (estimate, variance)."""
    var = np.broadcast_to(np.asarray(var, dtype=float), noisy.shape)
    active = has_children & (noisy < child_sum)
    safe_cv = np.where(has_children, child_var, 1.0)
    merged_var = 1.0 / (1.0 / var + 1.0 / safe_cv)
    merged = merged_var * (noisy / var + child_sum / safe_cv)
    return np.where(active, merged, noisy), np.where(active, merged_var, var)


def project_families(z: np.ndarray, var: np.ndarray, family: np.ndarray,
                     cap: np.ndarray) -> np.ndarray:
    """Weighted least-squares projection of each family's estimates onto
    ``{x >= 0, sum(x) <= cap[family]}``: minimise ``sum (x - z)^2 / var`` per family.

    If ``sum max(z, 0) <= cap`` the answer is ``max(z, 0)``; otherwise ``x = max(z - tau var, 0)``
    with the ``tau > 0`` that makes the sum equal ``cap`` (KKT). ``tau`` is found per family by
    sorting the children by ``z / var`` (where each hits 0): with the top ``k`` active,
    ``tau_k = (sum z - cap) / sum var`` over them, and the answer is the largest ``k`` whose
    ``k``-th child is still positive (``z_k / var_k > tau_k``), as in Duchi et al. (2008)'s
    simplex projection. ``family`` must be sorted; ``cap`` >= 0 may be ``inf``."""
    x = np.maximum(z, 0.0)
    if len(z) == 0:
        return x
    totals = np.bincount(family, weights=x, minlength=len(cap))
    over = totals > cap * (1.0 + 1e-12)
    if not over.any():
        return x
    idx = np.flatnonzero(over[family])
    zf, vf, ff = z[idx], var[idx], family[idx]
    order = np.lexsort((-(zf / vf), ff))
    zf, vf, ff, tf = zf[order], vf[order], ff[order], (zf / vf)[order]
    first = np.searchsorted(ff, ff, side="left")
    cz, cv = np.cumsum(zf), np.cumsum(vf)
    sum_z = cz - (cz[first] - zf[first])
    sum_v = cv - (cv[first] - vf[first])
    tau = (sum_z - cap[ff]) / sum_v
    valid = tf > tau
    rank = np.arange(len(ff)) - first
    best = np.full(len(cap), -1, dtype=np.int64)
    np.maximum.at(best, ff[valid], rank[valid])
    fam_start = np.zeros(len(cap), dtype=np.int64)
    fam_start[ff] = first  # the same value for every child of a family
    has = best[ff] >= 0
    tau_f = np.where(has, tau[np.where(has, fam_start[ff] + best[ff], 0)], np.inf)
    out = np.where(has, np.maximum(zf - tau_f * vf, 0.0), 0.0)
    x[idx[order]] = out
    return x


@dataclass(frozen=True)
class ConsistentLevel:
    """Consistent counts of one depth (aligned with the :class:`Level`'s nodes)."""

    gen: np.ndarray
    spec: np.ndarray


def sum_by(index: np.ndarray, values: np.ndarray | float, size: int) -> np.ndarray:
    """``out[i] = sum of values where index == i`` (length ``size``)."""
    weights = np.broadcast_to(np.asarray(values, dtype=float), index.shape)
    return np.bincount(index, weights=weights, minlength=size)


def bottom_up_estimates(tree: NoisyTree) -> list[tuple[np.ndarray, ...]]:
    """Per depth, ``(gen estimate, gen variance, spec estimate, spec variance)`` after the
    bottom-up pass (:func:`merge_with_children`, deepest level first)."""
    levels = tree.levels
    out: list[tuple[np.ndarray, ...]] = []
    below: tuple[np.ndarray, np.ndarray] | None = None  # (estimate, var) of the next depth's gens
    for d in range(len(levels) - 1, -1, -1):
        lv = levels[d]
        n_spec, n_gen = len(lv.spec_code), len(lv.gen_group)
        if below is not None:
            parent = levels[d + 1].gen_parent
            child_sum = sum_by(parent, below[0], n_spec)
            child_var = sum_by(parent, below[1], n_spec)
            has = np.bincount(parent, minlength=n_spec) > 0
        else:
            child_sum = child_var = np.zeros(n_spec)
            has = np.zeros(n_spec, dtype=bool)
        zs, vs = merge_with_children(lv.spec_noisy, lv.spec_var, child_sum, child_var, has)
        zg, vg = merge_with_children(lv.gen_noisy, lv.gen_var, sum_by(lv.spec_gen, zs, n_gen),
                                     sum_by(lv.spec_gen, vs, n_gen),
                                     np.bincount(lv.spec_gen, minlength=n_gen) > 0)
        out.append((zg, vg, zs, vs))
        below = (zg, vg)
    return out[::-1]


def consistent_counts(tree: NoisyTree) -> list[ConsistentLevel]:
    """Step 2 of the module docstring: bottom-up merge, then top-down projection; every
    generalized node ends as the sum of its specific children."""
    out: list[ConsistentLevel] = []
    parent_x = np.array([np.inf])  # the root: no measured count, no cap
    for lv, (zg, vg, zs, vs) in zip(tree.levels, bottom_up_estimates(tree)):
        gen_cap = project_families(zg, vg, lv.gen_parent, parent_x)
        spec = project_families(zs, vs, lv.spec_gen, gen_cap)
        out.append(ConsistentLevel(sum_by(lv.spec_gen, spec, len(lv.gen_group)), spec))
        parent_x = spec
    return out


# ===== release ============================================================================
