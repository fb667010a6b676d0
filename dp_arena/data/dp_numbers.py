"""DP ranges and many-quantile bin edges of one number column on a public axis.

An :class:`Axis` is public and chosen before any data is seen: coarse cells (decades on the
log axis, years on a date axis) that a range is made of, each split into fine cells (20 a
decade, one day) that bin edges are read from. Values beyond the axis ends are counted in the
end cells, so no range can reach further than the axis's own ends (never +-1e12).

Algorithms
----------
:func:`log_axis`, :func:`linear_axis`
    The public axes: real numbers of both signs on decades with 0 as a point cell of its own,
    or an evenly spaced axis (dates as days since 1970, integers) whose fine cells are
    ``fine`` wide and aligned with the coarse cells.
:func:`dp_numeric_range` (pure ``epsilon``-DP, delta 0), two stages of Laplace counts through
the caller's :class:`~dp_arena.privacy.release.Releaser`:

1. **Support** (share :data:`SUPPORT_SHARE` of epsilon): Laplace counts of *every* coarse cell
   of the axis (:func:`coarse_counts`), scale ``s1 = bound / eps1``. **Noise floor**
   (:func:`noise_floor`): a cell *survives* when its noisy count exceeds
   ``tau = s1 ln(K / beta)`` (K coarse cells). An empty cell survives with probability
   ``P(Lap(s1) > tau) = exp(-tau / s1) / 2 = beta / (2K)``, so by the union bound over at most K
   empty cells, no empty cell survives with probability ``>= 1 - beta / 2``. **Extension**
   (:func:`support_span`): from the surviving cells' span, the adjacent cell on each side is
   added while its noisy count exceeds ``tau' = s1 ln(2 / beta)`` (one test per side at a time).
   A cell beyond the data's hull can only be added after the first cell beyond the hull (which
   is empty) is, probability ``<= 2 exp(-tau'/s1) / 2 = beta / 2`` for both sides. So with
   probability ``>= 1 - beta`` the support lies inside the hull of the coarse cells that hold
   data (on the log axis: within a factor 10 of the data's smallest and largest magnitude).
   Nothing survives: ``None`` (the caller asks for a hint; only stage 1's share is spent).
   Cells inside the span whose noisy count is at most ``tau'`` are gaps: they count 0 in
   stage 2 (the noise floor; their rows, at most a few ``tau'``, take no part in the ranks).
2. **Fine CDF** (the rest, ``eps2``): the support's non-gap cells are read with leaves made
   of their fine cells, about one leaf per :data:`LEAF_NOISE_MULTIPLE` noise scales of the
   cell's stage-1 count (:func:`leaves_per_cell`; at most one leaf per fine cell: 20 a decade
   at epsilon 0.08 on the taxi fares, ~5 a year for dates at 0.008 instead of 365 one-day
   leaves whose summed noise swamps the CDF); values below / above the support are counted
   in the first / last leaf. A b-ary tree
   over the leaves (hierarchical histogram, Hay et al. 2010; Qardaji, Yang & Li 2013), with the
   branching chosen from the leaf count alone (:func:`choose_branching`: the smallest average
   variance of a prefix query, ``levels^2 x nodes per prefix``; a flat histogram when that is
   best, e.g. 40 leaves; 16-ary for the 1,461 days of four years), every node released in one
   Laplace vector of L1 sensitivity ``levels * bound``.
   Post-processing: the least-squares consistent tree (:func:`consistent_leaves`, the exact
   generalized least squares of a tree with equal node variances, two passes as in Hay et al.),
   then the CDF as the isotonic (non-decreasing) regression of the leaves' prefix sums anchored
   at 0 (:func:`monotone_cdf`; no positive bias from clipping empty leaves one by one).
   **Confirmation** (:func:`confirmed`): the support's end cells whose raw stage-2 mass is
   under :data:`CONFIRM_Z` noise standard deviations are dropped, so the rare empty cell that
   passed stage 1 cannot carry the extreme quantiles and the range out to it.
3. **Zoom** (share :data:`ZOOM_SHARE` of epsilon, kept back from stage 2 only when one active
   coarse interval cell holds more than :data:`ZOOM_TRIGGER` of stage 1's noisy counts,
   :func:`dominant_cell`; otherwise stage 2 gets it all, as before). When the fine CDF puts
   more than :data:`ZOOM_TRIGGER` of the mass in one interval leaf or two adjacent ones
   (:func:`heavy_run`; a narrow column far from 0: Minneapolis latitudes all in [44.7, 50.1)),
   a flat Laplace histogram over a linear subdivision of that run (:func:`zoom_cells`: the most
   sub-cells, 4..256, that still put the noise floor in each if the mass were spread evenly),
   scale ``bound / (ZOOM_SHARE eps / MAX_ZOOMS)`` (the whole zoom share at once when half is
   too little for 4 sub-cells). :func:`refine` replaces the run by its sub-cells and shares
   its mass by their clipped noisy counts inside the stage-1 floors' :func:`support_span`
   of the sub-cells (0 outside); repeated on the refined leaves at most :data:`MAX_ZOOMS`
   times. The share left (no heavy run, or fewer rounds needed) reads the last histogram again
   (the last zoom's sub-cells, else the fine tree) and the two draws are pooled by inverse
   variance, so the zoom share is always spent. After a zoom, fine leaves whose mass is
   under ``extension_floor(stage-2 scale)`` count 0 (noise beside a narrow mass).
4. **Range**: the coarse cells holding the noisy CDF's :data:`Q_LO` and :data:`Q_HI` quantiles,
   whole (a year on the date axis covers the year; a decade on the log axis). After a zoom:
   the leaves holding them, a sub-cell widened by its sibling on the outside
   (:func:`zoom_range`; within a few sub-cells of the data instead of a decade).
5. **Edges** (:func:`cdf_edges`): the ``i / bins`` quantiles of the CDF, interpolated linearly
   inside a fine cell. A point cell (0 on the log axis) that holds two or more quantiles is a
   heavy point mass: it gets its own bin, edges ``p`` and the axis's next edge above ``p``
   (bins are left-closed, so ``[0, 0.001)`` holds the zeros). Edges equal to the range's ends
   and duplicates are dropped.

**Privacy argument.** Private: the column's present values, a person contributing at most
``bound`` rows (neighbouring tables add or remove one person). Stage 1 counts a fixed, public
set of K cells, every row in exactly one (values beyond the axis clipped into the end cells):
L1 sensitivity ``bound``; Laplace scale ``bound / eps1``: ``eps1``-DP. Stage 2's queries (which
fine cells, the tree's shape) are a function of stage 1's released counts and the public axis
only (adaptive composition; the fine grid is public once stage 1 is released), each row adds 1
to at most one leaf and one node per level: L1 sensitivity ``levels * bound``; Laplace scale
``levels * bound / eps2``: ``eps2``-DP. Stage 3: whether to keep the zoom share back, whether
and where to zoom, the sub-cells and every round's epsilon are functions of the released
counts and the public axis only (a fixed public set of sub-cells once the previous releases
are known); each row falls in at most one sub-cell: L1 sensitivity ``bound``, scale
``bound / eps_r``: ``eps_r``-DP per round; the second draw of the fine tree has sensitivity
``levels * bound`` (``eps_left``-DP), of a zoom ``bound``. Adaptive composition: stage 3 spends
``eps_zoom = sum eps_r + eps_left`` exactly (0 when not kept back). Floors, extension,
consistency, isotonic CDF, refinement, pooling, range, edges and ``largest_bin_share`` read
released numbers only (post-processing). Stage 1 is drawn even for an empty column (an early
return would tell empty from non-empty). Total ``eps1 + eps2 + eps_zoom = epsilon`` (each
scale widened by the ledger's calibration headroom, so the ledger is charged a hair under
``epsilon``), pure DP, delta 0.

:func:`exact_numeric_range`
    The same shape read exactly (public data): min, max, the ``i / bins`` quantiles, a value
    that two or more quantiles fall on gets its own bin (edges ``p`` and the next value above).

Measured (``benchmarks/bench_dp_numbers.py``; figures in docs/datasets.md, "Your own table"): on the
taxi sample the tree is chosen only for one-day date leaves (largest bin 0.30 against the flat
histogram's 0.49 at epsilon 0.008); support shares 0.25 and 0.5 are no better than 0.4; the
zoom brings narrow columns (coordinates, pressures, a constant year) from 150-900x their true
extent to at most 9.1x, and leaves the taxi columns within 0.01 of their unzoomed bins. The
recursive ApproximateQuantiles (Kaplan, Schnapp & Stemmer 2022) is not implemented (not
measured).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dp_arena.data.tree_histogram import choose_branching, tree_cdf, tree_counts
from dp_arena.errors import ConfigError
from dp_arena.privacy.accounting import laplace_scale
from dp_arena.privacy.release import Releaser

#: share of a column's epsilon spent finding its support (stage 1); the rest reads the CDF
SUPPORT_SHARE = 0.4
#: the noisy CDF's quantiles whose coarse cells end the range
Q_LO, Q_HI = 0.001, 0.999
#: fine cells per decade on the default log axis
FINE_PER_DECADE = 20
#: a coarse cell is read with about one leaf per this many stage-2 noise scales of its count
LEAF_NOISE_MULTIPLE = 4.0
#: share of a column's epsilon kept for the zoom (stage 3) when one coarse cell dominates
ZOOM_SHARE = 0.2
CONFIRM_Z = 3.0  #: noise standard deviations an end cell's stage-2 mass must pass
#: a run of at most two interval leaves holding more than this share of the mass is zoomed
ZOOM_TRIGGER = 0.5
#: zoom rounds at most (each ``ZOOM_SHARE / MAX_ZOOMS`` of epsilon)
MAX_ZOOMS = 2
#: sub-cells of one zoom: fewer than the first is no zoom, more than the second are not used
ZOOM_CELLS = (4, 256)


@dataclass(frozen=True)
class Axis:
    """A public axis: coarse cells ``[edges[k], edges[k+1])`` (the last one closed), each
    split into ``fine[k]`` fine cells (geometrically spaced when ``geometric`` and both ends
    have one sign, else evenly); each value of ``points`` (an edge other than the last) is a
    point cell of its own, just before the interval it starts. Data-independent."""

    edges: tuple[float, ...]
    fine: tuple[int, ...]
    points: tuple[float, ...] = ()
    geometric: bool = False

    def __post_init__(self) -> None:
        e = np.asarray(self.edges, dtype=float)
        if (e.ndim != 1 or len(e) < 2 or not np.all(np.isfinite(e))
                or not np.all(np.diff(e) > 0)):
            raise ConfigError("an axis needs at least two finite, increasing edges",
                              "use log_axis() or linear_axis(lo, hi, coarse, fine)")
        if len(self.fine) != len(e) - 1 or any(int(f) < 1 for f in self.fine):
            raise ConfigError("an axis needs one fine-cell count >= 1 per coarse interval",
                              "use log_axis() or linear_axis(lo, hi, coarse, fine)")
        if any(p not in self.edges[:-1] for p in self.points):
            raise ConfigError("an axis's point cells must be edges other than the last",
                              "use log_axis() (0 is its point cell)")


def log_axis(per_decade: int = FINE_PER_DECADE, lo_exp: int = -3, hi_exp: int = 9) -> Axis:
    """Real numbers of both signs: decades ``+-[10^j, 10^(j+1))`` for ``j = lo_exp..hi_exp-1``
    (``per_decade`` geometric fine cells each), ``[-10^lo_exp, 0)`` and ``(0, 10^lo_exp)`` as
    one fine cell each, and 0 as a point cell."""
    if per_decade < 1 or not lo_exp < hi_exp:
        raise ConfigError("log_axis needs per_decade >= 1 and lo_exp < hi_exp",
                          "use log_axis() (20 fine cells a decade, 10^-3..10^9)")
    pos = [10.0 ** j for j in range(lo_exp, hi_exp + 1)]
    edges = tuple([-p for p in reversed(pos)] + [0.0] + pos)
    decades = hi_exp - lo_exp
    fine = tuple([per_decade] * decades + [1, 1] + [per_decade] * decades)
    return Axis(edges, fine, points=(0.0,), geometric=True)


def linear_axis(lo: float, hi: float, coarse: float, fine: float) -> Axis:
    """Evenly spaced fine cells ``[lo + i fine, lo + (i+1) fine)`` up to ``hi`` (the last
    cell reaching it or past), grouped into coarse cells of about ``coarse`` (their edges on
    fine edges). Dates: days since 1970, ``coarse=365.25``, ``fine=1`` (``lo`` a whole day)."""
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi and 0 < fine <= coarse
            and math.isfinite(coarse)):
        raise ConfigError("linear_axis needs finite lo < hi and 0 < fine <= coarse",
                          "e.g. linear_axis(-25567, 47482, 365.25, 1) for dates 1900..2100")
    n_fine = int(math.ceil((hi - lo) / fine - 1e-9))
    n_coarse = int(math.ceil(n_fine * fine / coarse - 1e-9))
    cuts = sorted({min(int(round(j * coarse / fine)), n_fine) for j in range(n_coarse + 1)}
                  | {n_fine})
    edges = tuple(float(lo + c * fine) for c in cuts)
    return Axis(edges, tuple(int(b - a) for a, b in zip(cuts[:-1], cuts[1:])))


@dataclass(frozen=True)
class NumericRange:
    """A range ``[min, max]`` and interior left-closed bin edges (``len(edges) + 1`` bins);
    ``largest_bin_share``: the largest bin's share of the (noisy, for DP) counts; ``inner``:
    the bounds of the fine leaves holding the :data:`Q_LO` and :data:`Q_HI` quantiles (a
    tighter range than the whole coarse cells, for integer columns that become categorical
    over their range; the exact min and max for exact ranges)."""

    min: float
    max: float
    edges: tuple[float, ...]
    largest_bin_share: float
    inner: tuple[float, float] | None = None


# ----- the axis's cells --------------------------------------------------------------------
@dataclass(frozen=True)
class Cells:
    """Cells in axis order: ``[lo, hi)`` intervals, or points (``lo == hi``, ``point``);
    ``interval`` is the axis interval each cell belongs to (a point: the one it starts)."""

    lo: np.ndarray
    hi: np.ndarray
    point: np.ndarray
    interval: np.ndarray


def coarse_cells(axis: Axis) -> Cells:
    """The coarse cells of ``axis`` in order (points before the interval they start)."""
    lo, hi, point, interval = [], [], [], []
    for k, (a, b) in enumerate(zip(axis.edges[:-1], axis.edges[1:])):
        if a in axis.points:
            lo.append(a), hi.append(a), point.append(True), interval.append(k)
        lo.append(a), hi.append(b), point.append(False), interval.append(k)
    return Cells(np.array(lo), np.array(hi), np.array(point, dtype=bool), np.array(interval))


def coarse_index(axis: Axis, values: np.ndarray) -> np.ndarray:
    """Each value's coarse cell (values beyond the axis ends in the end cells)."""
    edges = np.asarray(axis.edges, dtype=float)
    k = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, len(edges) - 2)
    is_point = np.isin(edges[:-1], np.asarray(axis.points, dtype=float))
    points_through = np.cumsum(is_point)  # point cells at or before interval k
    cell = k + points_through[k]
    return np.where(is_point[k] & (values == edges[k]), cell - 1, cell)


def fine_edges(axis: Axis, cells: Cells, cell: int) -> np.ndarray:
    """The fine cells' edges inside coarse cell ``cell`` (a point cell: ``[p, p]``)."""
    a, b = float(cells.lo[cell]), float(cells.hi[cell])
    if cells.point[cell]:
        return np.array([a, a])
    n = int(axis.fine[int(cells.interval[cell])])
    steps = np.arange(n + 1) / n
    out = a * (b / a) ** steps if axis.geometric and a * b > 0 else a + (b - a) * steps
    out[0], out[-1] = a, b
    return out


# ----- stage 1: the support ----------------------------------------------------------------
def noise_floor(scale: float, n_cells: int, beta: float) -> float:
    """``tau = scale ln(n_cells / beta)``: each of at most ``n_cells`` empty cells passes
    with probability ``exp(-tau / scale) / 2``, so none does with probability
    ``>= 1 - beta / 2`` (union bound)."""
    return scale * math.log(n_cells / beta)


def extension_floor(scale: float, beta: float) -> float:
    """``tau' = scale ln(2 / beta)``: the first empty cell beyond the data on either side
    passes with probability ``exp(-tau'/scale) / 2``, both sides ``<= beta / 2``."""
    return scale * math.log(2.0 / beta)


def coarse_counts(axis: Axis, values: np.ndarray) -> np.ndarray:
    """Rows per coarse cell of ``axis`` (every cell, empty ones included)."""
    n_cells = len(coarse_cells(axis).lo)
    return np.bincount(coarse_index(axis, values), minlength=n_cells).astype(float)


def support_span(noisy: np.ndarray, scale: float, beta: float
                 ) -> tuple[int, int, np.ndarray] | None:
    """``(first, last, active)`` from stage 1's noisy counts: the span of the cells above
    :func:`noise_floor`, extended cell by cell while the next one is above
    :func:`extension_floor`; ``active`` marks the span's cells above ``tau'`` (the rest are
    gaps). ``None`` when no cell survives. Post-processing."""
    alive = np.flatnonzero(noisy > noise_floor(scale, len(noisy), beta))
    if not len(alive):
        return None
    tau_ext = extension_floor(scale, beta)
    first, last = int(alive[0]), int(alive[-1])
    while first > 0 and noisy[first - 1] > tau_ext:
        first -= 1
    while last < len(noisy) - 1 and noisy[last + 1] > tau_ext:
        last += 1
    active = np.zeros(len(noisy), dtype=bool)
    active[first:last + 1] = noisy[first:last + 1] > tau_ext
    return first, last, active


def confirmed(raw: np.ndarray, leaves: Leaves, scale: float) -> np.ndarray:
    """Which leaves to keep: from both ends inwards, an end cell of the support is dropped
    while the sum of its leaves' raw stage-2 counts ``raw`` (before consistency and the
    isotonic CDF, which can move mass into an empty cell) is under :data:`CONFIRM_Z` standard
    deviations of that sum's noise (``scale * sqrt(2 * leaves)``): a second, independent
    reading of the rare empty cell that passed stage 1 far from the data. Post-processing."""
    keep = np.ones(len(raw), dtype=bool)
    order = [int(c) for c in dict.fromkeys(leaves.coarse.tolist())]
    while len(order) > 1:
        for end in (order[0], order[-1]):
            at = leaves.coarse == end
            if raw[at].sum() <= CONFIRM_Z * scale * math.sqrt(2.0 * at.sum()):
                keep[at] = False
                order.remove(end)
                break
        else:
            break
    return keep


# ----- stage 2: the fine CDF ---------------------------------------------------------------
@dataclass(frozen=True)
class Leaves:
    """Stage 2's fine cells in order: bounds, point cells, geometric cells (interpolated in
    log space), the coarse cell each belongs to and its zoom depth (0: a fine leaf, ``r``: a
    sub-cell of zoom round ``r``)."""

    lo: np.ndarray
    hi: np.ndarray
    point: np.ndarray
    geometric: np.ndarray
    coarse: np.ndarray
    depth: np.ndarray


def leaves_per_cell(noisy: np.ndarray, active: np.ndarray, cells: Cells, axis: Axis,
                    scale: float) -> np.ndarray:
    """How many leaves each coarse cell is read with: about one per
    :data:`LEAF_NOISE_MULTIPLE` noise scales of its stage-1 count, at least 1, at most its
    fine cells (0 for inactive cells). A finer split than the noise can resolve only adds
    noise to the CDF (1,461 one-day leaves for four years at epsilon 0.008); a function of
    released counts and public scales: post-processing."""
    fine = np.array([1 if p else axis.fine[k] for p, k in zip(cells.point, cells.interval)])
    wanted = np.ceil(np.clip(noisy, 0.0, None) / (LEAF_NOISE_MULTIPLE * scale))
    return np.where(active, np.clip(wanted, 1, fine), 0).astype(int)


def cell_leaf_edges(axis: Axis, cells: Cells, cell: int, n_leaves: int) -> np.ndarray:
    """The edges of ``n_leaves`` leaves of coarse cell ``cell``, on its fine edges."""
    e = fine_edges(axis, cells, cell)
    if cells.point[cell]:
        return e
    f = len(e) - 1
    return e[np.unique(np.round(np.arange(n_leaves + 1) * f / n_leaves).astype(int))]


def support_leaves(axis: Axis, cells: Cells, per_cell: np.ndarray) -> Leaves:
    """The leaves of the active coarse cells (public once stage 1 is released)."""
    lo, hi, point, geo, coarse = [], [], [], [], []
    for c in np.flatnonzero(per_cell):
        e = cell_leaf_edges(axis, cells, int(c), int(per_cell[c]))
        n = len(e) - 1
        lo.append(e[:-1]), hi.append(e[1:]), coarse.append(np.full(n, c))
        point.append(np.full(n, bool(cells.point[c])))
        geo.append(np.full(n, axis.geometric and cells.lo[c] * cells.hi[c] > 0))
    lo, hi, point, geo, coarse = (np.concatenate(x) for x in (lo, hi, point, geo, coarse))
    return Leaves(lo, hi, point, geo, coarse, np.zeros(len(lo), dtype=int))


def leaf_counts(axis: Axis, cells: Cells, leaves: Leaves, values: np.ndarray) -> np.ndarray:
    """Rows per leaf: values below / above the active cells in the first / last leaf, values
    in a gap cell nowhere (each row in at most one leaf)."""
    cell = coarse_index(axis, values)
    alive = np.unique(leaves.coarse)
    counts = np.zeros(len(leaves.lo))
    counts[0] += np.count_nonzero(cell < alive[0])
    counts[-1] += np.count_nonzero(cell > alive[-1])
    for c in alive:
        where = np.flatnonzero(leaves.coarse == c)
        e = np.append(leaves.lo[where], leaves.hi[where[-1]])
        idx = np.clip(np.searchsorted(e, values[cell == c], side="right") - 1, 0, len(where) - 1)
        counts[where] += np.bincount(idx, minlength=len(where))
    return counts


def cdf_below(edge: float, leaves: Leaves, mass: np.ndarray) -> float:
    """Mass strictly below ``edge`` (left-closed bins), linear inside a fine cell."""
    with np.errstate(divide="ignore", invalid="ignore"):
        linear = (edge - leaves.lo) / np.where(leaves.point, 1.0, leaves.hi - leaves.lo)
        ratio = np.where(leaves.geometric, np.log(edge / leaves.lo) / np.log(leaves.hi / leaves.lo),
                         0.0)
    inside = np.where(leaves.geometric & (edge * leaves.lo > 0), ratio, linear)
    frac = np.where(leaves.point, (leaves.lo < edge).astype(float),
                    np.clip(np.nan_to_num(inside, nan=0.0), 0.0, 1.0))
    frac = np.where(~leaves.point & (edge >= leaves.hi), 1.0, frac)
    frac = np.where(~leaves.point & (edge <= leaves.lo), 0.0, frac)
    return float(np.dot(mass, frac))


def inside_leaf(leaves: Leaves, j: int, share: float) -> float:
    """The point a share ``share`` of the way through leaf ``j`` (geometric leaves in log
    space, as :func:`cdf_below` reads them)."""
    a, b = float(leaves.lo[j]), float(leaves.hi[j])
    return a * (b / a) ** share if leaves.geometric[j] else a + (b - a) * share


def cdf_edges(cdf: np.ndarray, leaves: Leaves, bins: int, axis: Axis) -> list[float]:
    """The ``i / bins`` quantiles of ``cdf`` (interpolated in a fine cell); a point cell
    holding two or more of them also gets the axis's next edge above it (its own bin)."""
    total = cdf[-1]
    edges: list[float] = []
    hits: dict[int, int] = {}
    for i in range(1, bins):
        target = total * i / bins
        j = min(int(np.searchsorted(cdf[1:], target, side="left")), len(leaves.lo) - 1)
        if leaves.point[j]:
            edges.append(float(leaves.lo[j]))
            hits[j] = hits.get(j, 0) + 1
            continue
        mass = cdf[j + 1] - cdf[j]
        share = (target - cdf[j]) / mass if mass > 0 else 1.0
        edges.append(inside_leaf(leaves, j, share))
    for j, n in hits.items():
        k = axis.edges.index(float(leaves.lo[j]))
        if n >= 2:
            edges.append(float(axis.edges[k + 1]))
    return edges


# ----- stage 3: the zoom -------------------------------------------------------------------
def dominant_cell(noisy: np.ndarray, active: np.ndarray, cells: Cells) -> bool:
    """Whether one active interval coarse cell holds more than :data:`ZOOM_TRIGGER` of the
    active cells' noisy counts (clipped at 0): only then can a run of leaves inside it hold
    that much, so only then is the zoom's share kept back. Post-processing of stage 1."""
    mass = np.where(active, np.clip(noisy, 0.0, None), 0.0)
    total = float(mass.sum())
    return total > 0 and float(np.max(np.where(cells.point, 0.0, mass))) > ZOOM_TRIGGER * total


def heavy_run(leaves: Leaves, mass: np.ndarray) -> tuple[int, int] | None:
    """``(first, last)``: the interval leaf, else the two adjacent interval leaves, holding
    more than :data:`ZOOM_TRIGGER` of ``mass`` (the heaviest such); ``None`` when none does."""
    total = float(mass.sum())
    if total <= 0:
        return None
    single = np.where(leaves.point, -np.inf, mass)
    j = int(np.argmax(single))
    if single[j] > ZOOM_TRIGGER * total:
        return j, j
    if len(mass) < 2:
        return None
    joined = ~leaves.point[:-1] & ~leaves.point[1:] & (leaves.hi[:-1] == leaves.lo[1:])
    pair = np.where(joined, mass[:-1] + mass[1:], -np.inf)
    j = int(np.argmax(pair))
    return (j, j + 1) if pair[j] > ZOOM_TRIGGER * total else None


def zoom_cells(run_mass: float, scale: float, beta: float) -> int:
    """Sub-cells of a zoom: the most (at most ``ZOOM_CELLS[1]``) for which the run's (released)
    mass spread evenly would still put :func:`noise_floor` in each sub-cell, so that a spread
    mass survives the floor as well as a narrow one; 0 (no zoom) below ``ZOOM_CELLS[0]``."""
    n = np.arange(ZOOM_CELLS[0], ZOOM_CELLS[1] + 1)
    fits = n[max(run_mass, 0.0) / n >= scale * np.log(n / beta)]
    return int(fits.max()) if len(fits) else 0


def sub_counts(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Rows per sub-cell ``[edges[i], edges[i+1])`` (values outside: in none)."""
    inside = values[(values >= edges[0]) & (values < edges[-1])]
    idx = np.clip(np.searchsorted(edges, inside, side="right") - 1, 0, len(edges) - 2)
    return np.bincount(idx, minlength=len(edges) - 1).astype(float)


@dataclass(frozen=True)
class Zoom:
    """One zoom release: the run of leaves it refines, its sub-cells' edges, their noisy
    counts and the Laplace scale they were drawn with."""

    run: tuple[int, int]
    edges: np.ndarray
    noisy: np.ndarray
    scale: float


def refine(leaves: Leaves, mass: np.ndarray, zoom: Zoom, beta: float
           ) -> tuple[Leaves, np.ndarray] | None:
    """The run's leaves replaced by the zoom's sub-cells, the run's mass redistributed by the
    sub-cells' noisy counts (clipped at 0) inside the :func:`support_span` of the noisy
    counts (the stage-1 floors on the sub-cells; gaps inside the span are kept: a mass spread
    evenly near the floor is not torn apart); outside it they count 0. ``None`` when no
    sub-cell is above the floor. Post-processing."""
    span = support_span(zoom.noisy, zoom.scale, beta)
    if span is None:
        return None
    inside = np.zeros(len(zoom.noisy), dtype=bool)
    inside[span[0]:span[1] + 1] = True
    weight = np.where(inside, np.clip(zoom.noisy, 0.0, None), 0.0)
    if weight.sum() <= 0:
        return None
    first, last = zoom.run
    e, n = zoom.edges, len(zoom.edges) - 1
    mid = (e[:-1] + e[1:]) / 2
    coarse = np.where(mid < leaves.hi[first], leaves.coarse[first], leaves.coarse[last])
    depth = int(leaves.depth[first:last + 1].max()) + 1
    sub = (e[:-1], e[1:], np.zeros(n, dtype=bool), np.zeros(n, dtype=bool), coarse,
           np.full(n, depth))
    out = Leaves(*(np.concatenate([old[:first], new, old[last + 1:]]) for old, new in
                   zip((leaves.lo, leaves.hi, leaves.point, leaves.geometric, leaves.coarse,
                        leaves.depth), sub)))
    run_mass = float(mass[first:last + 1].sum())
    return out, np.concatenate([mass[:first], run_mass * weight / weight.sum(), mass[last + 1:]])


def pooled(a: np.ndarray, scale_a: float, b: np.ndarray, scale_b: float) -> np.ndarray:
    """Two independent noisy releases of the same counts combined by inverse variance (Laplace
    variance ``2 scale^2``). Post-processing."""
    wa, wb = 1.0 / scale_a ** 2, 1.0 / scale_b ** 2
    return (wa * a + wb * b) / (wa + wb)


def zoom_range(cdf: np.ndarray, leaves: Leaves) -> tuple[float, float]:
    """After a zoom: the leaves holding the :data:`Q_LO` and :data:`Q_HI` quantiles, each
    widened by its outer neighbour when both are sub-cells of one zoom (same depth and
    width), so that a partly filled sub-cell under the noise floor still falls inside."""
    j, k = quantile_leaf(cdf, leaves, Q_LO), quantile_leaf(cdf, leaves, Q_HI)
    width = leaves.hi - leaves.lo
    sibling = lambda a, b: (leaves.depth[a] > 0 and leaves.depth[a] == leaves.depth[b]
                            and math.isclose(width[a], width[b], rel_tol=1e-9))
    lo = leaves.lo[j - 1] if j > 0 and sibling(j, j - 1) else leaves.lo[j]
    hi = leaves.hi[k + 1] if k + 1 < len(width) and sibling(k, k + 1) else leaves.hi[k]
    return float(lo), float(hi)


def quantile_leaf(cdf: np.ndarray, leaves: Leaves, q: float) -> int:
    """The leaf where ``cdf`` reaches the share ``q`` of its total."""
    return min(int(np.searchsorted(cdf[1:], q * cdf[-1], side="left")), len(leaves.lo) - 1)


def interior(edges: list[float], lo: float, hi: float) -> tuple[float, ...]:
    """Sorted distinct edges strictly inside ``(lo, hi)``."""
    return tuple(sorted({e for e in edges if lo < e < hi}))


def largest_share(lo: float, hi: float, edges: tuple[float, ...], leaves: Leaves,
                  mass: np.ndarray) -> float:
    """The largest bin's share of ``mass`` (mass outside ``[lo, hi]`` in the end bins)."""
    total = float(mass.sum())
    below = [0.0] + [cdf_below(e, leaves, mass) for e in edges] + [total]
    return float(np.max(np.diff(below)) / total) if total > 0 else 1.0


def check_arguments(bins: int, epsilon: float, bound: int, beta: float, share: float) -> None:
    if bins < 2 or bound < 1:
        raise ConfigError("a DP range needs bins >= 2 and a contribution bound >= 1",
                          "use e.g. bins=10, bound=1 (record level)")
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ConfigError(f"a DP range needs a finite epsilon > 0 (got {epsilon!r})",
                          "give the column a positive share of the budget")
    if not (0 < beta < 1 and 0 < share < 1):
        raise ConfigError("beta and the support share must be in (0, 1)",
                          "use the defaults (beta=0.01, support_share=0.4)")


def zoom_rounds(values: np.ndarray, leaves: Leaves, mass: np.ndarray, eps_zoom: float,
                bound: int, releaser: Releaser, name: str, beta: float
                ) -> tuple[Leaves, np.ndarray, float, tuple[Leaves, np.ndarray, Zoom] | None]:
    """Up to :data:`MAX_ZOOMS` zoom releases of ``eps_zoom / MAX_ZOOMS`` each (the whole
    ``eps_zoom`` in one when that share is too small for ``ZOOM_CELLS[0]`` sub-cells), while
    a :func:`heavy_run` exists (and the last zoom found any sub-cell). Returns the refined
    leaves and mass, the epsilon drawn, and the last zoom with the leaves and mass it refines."""
    last, spent = None, 0.0
    for r in range(MAX_ZOOMS):
        run = heavy_run(leaves, mass)
        if run is None or spent >= eps_zoom:
            break
        run_mass = float(mass[run[0]:run[1] + 1].sum())
        eps_r = eps_zoom / MAX_ZOOMS
        n = zoom_cells(run_mass, laplace_scale(eps_r, bound), beta)
        if n == 0 and r == 0:
            eps_r = eps_zoom
            n = zoom_cells(run_mass, laplace_scale(eps_r, bound), beta)
        if n == 0:
            break
        scale = laplace_scale(eps_r, bound)
        edges = np.linspace(leaves.lo[run[0]], leaves.hi[run[1]], n + 1)
        noisy = releaser.laplace(f"{name}: zoom {r + 1}", sub_counts(values, edges),
                                 sensitivity=bound, scale=scale,
                                 note=f"{n} public sub-cells of a heavy run of leaves")
        spent += eps_r
        last = (leaves, mass, Zoom(run, edges, noisy, scale))
        refined = refine(leaves, mass, last[2], beta)
        if refined is None:
            break
        leaves, mass = refined
    return leaves, mass, spent, last


def tree_release(releaser: Releaser, label: str, levels: list[np.ndarray], bound: int,
                 epsilon: float, note: str) -> tuple[np.ndarray, float]:
    """Every node of the tree in one Laplace vector of L1 sensitivity ``levels * bound``."""
    scale = laplace_scale(epsilon, len(levels) * bound)
    return releaser.laplace(label, np.concatenate(levels), sensitivity=len(levels) * bound,
                            scale=scale, note=note), scale


def dp_numeric_range(values: np.ndarray, axis: Axis, bins: int, epsilon: float, bound: int,
                     releaser: Releaser, name: str, beta: float = 0.01, *,
                     support_share: float = SUPPORT_SHARE,
                     zoom_share: float = ZOOM_SHARE) -> NumericRange | None:
    """An ``epsilon``-DP range and up to ``bins - 1`` interior edges of one column (module
    docstring: stages 1-5 and the privacy argument). ``values``: the present values of the
    private column (non-finite ones are ignored); ``bound``: rows per person (L1
    contribution); ``zoom_share``: the share of ``epsilon`` kept for stage 3 when one coarse
    cell dominates (0: never zoom). ``None`` when no coarse cell is above the noise floor
    (then only ``support_share * epsilon`` is spent). With probability ``>= 1 - beta`` the
    range lies inside the coarse cells that hold data."""
    check_arguments(bins, epsilon, bound, beta, support_share)
    if not 0 <= zoom_share < 1 - support_share:
        raise ConfigError("the zoom share must be in [0, 1 - support share)",
                          "use the defaults (support_share=0.4, zoom_share=0.2)")
    v = np.asarray(values, dtype=float).ravel()
    v = v[np.isfinite(v)]
    cells = coarse_cells(axis)
    eps1 = epsilon * support_share
    scale1 = laplace_scale(eps1, bound)
    noisy1 = releaser.laplace(f"{name}: coarse histogram", coarse_counts(axis, v),
                              sensitivity=bound, scale=scale1,
                              note=f"{len(cells.lo)} public coarse cells")
    span = support_span(noisy1, scale1, beta)
    if span is None:
        return None
    eps_zoom = epsilon * zoom_share if zoom_share > 0 and dominant_cell(
        noisy1, span[2], cells) else 0.0
    eps2 = epsilon - eps1 - eps_zoom
    per_cell = leaves_per_cell(noisy1, span[2], cells, axis, bound / eps2)
    leaves = support_leaves(axis, cells, per_cell)
    branching = choose_branching(len(leaves.lo))
    levels = tree_counts(leaf_counts(axis, cells, leaves, v), branching)
    sizes = [len(level) for level in levels]
    note = f"{len(leaves.lo)} fine cells, {len(levels)} level(s) of a {branching}-ary tree"
    noisy2, scale2 = tree_release(releaser, f"{name}: fine tree", levels, bound, eps2, note)
    cdf = tree_cdf(noisy2, sizes, branching)
    if cdf[-1] <= 0:
        return None
    keep = confirmed(noisy2[:sizes[0]], leaves, scale2)
    mass = np.where(keep, np.diff(cdf), 0.0)
    cdf = np.concatenate([[0.0], np.cumsum(mass)])
    if cdf[-1] <= 0:
        return None
    if eps_zoom > 0:
        zoomed, mass = zoom_stage(v, leaves, mass, eps_zoom, bound, releaser, name, beta,
                                  (noisy2, scale2, levels, sizes, branching, note))
        if zoomed is leaves:  # no zoom: a second draw of the same leaves, read as confirmed
            mass = np.where(keep, mass, 0.0)
        leaves = zoomed
        if leaves.depth.max() > 0:  # fine leaves under the floor: noise beside a narrow mass
            floor = extension_floor(scale2, beta)
            mass = np.where((leaves.depth == 0) & (mass <= floor), 0.0, mass)
        cdf = np.concatenate([[0.0], np.cumsum(mass)])
        if cdf[-1] <= 0:
            return None
    if leaves.depth.max() > 0:
        lo, hi = zoom_range(cdf, leaves)
    else:
        lo_cell = int(leaves.coarse[quantile_leaf(cdf, leaves, Q_LO)])
        hi_cell = int(leaves.coarse[quantile_leaf(cdf, leaves, Q_HI)])
        lo, hi = float(cells.lo[lo_cell]), float(cells.hi[hi_cell])
    if hi <= lo:  # one point cell: the range reaches to the axis's next edge
        hi_cell = int(leaves.coarse[quantile_leaf(cdf, leaves, Q_HI)])
        hi = float(axis.edges[int(cells.interval[hi_cell]) + 1])
    edges = interior(cdf_edges(cdf, leaves, bins, axis), lo, hi)
    mass = np.diff(cdf)
    inner = (float(leaves.lo[quantile_leaf(cdf, leaves, Q_LO)]),
             float(leaves.hi[quantile_leaf(cdf, leaves, Q_HI)]))
    return NumericRange(lo, hi, edges, largest_share(lo, hi, edges, leaves, mass), inner)


def zoom_stage(values: np.ndarray, leaves: Leaves, mass: np.ndarray, eps_zoom: float,
               bound: int, releaser: Releaser, name: str, beta: float,
               fine: tuple[np.ndarray, float, list[np.ndarray], list[int], int, str]
               ) -> tuple[Leaves, np.ndarray]:
    """Stage 3 (module docstring): :func:`zoom_rounds`, then the share they left spent on a
    second draw of the last histogram read (the last zoom's sub-cells, else the fine tree
    ``fine = (noisy, scale, levels, sizes, branching, note)``), pooled with the first by
    inverse variance. Spends exactly ``eps_zoom``."""
    out_leaves, out_mass, spent, last = zoom_rounds(values, leaves, mass, eps_zoom, bound,
                                                    releaser, name, beta)
    left = eps_zoom - spent
    if left <= eps_zoom * 1e-9:
        return out_leaves, out_mass
    if last is None:
        noisy2, scale2, levels, sizes, branching, note = fine
        again, scale = tree_release(releaser, f"{name}: fine tree, second draw", levels, bound,
                                    left, note)
        cdf = tree_cdf(pooled(noisy2, scale2, again, scale), sizes, branching)
        return leaves, np.diff(cdf)
    before, before_mass, zoom = last
    scale = laplace_scale(left, bound)
    again = releaser.laplace(f"{name}: zoom, second draw",
                             sub_counts(values, zoom.edges), sensitivity=bound, scale=scale,
                             note=f"the same {len(zoom.edges) - 1} public sub-cells")
    both = Zoom(zoom.run, zoom.edges, pooled(zoom.noisy, zoom.scale, again, scale),
                max(zoom.scale, scale))
    refined = refine(before, before_mass, both, beta)
    return refined if refined is not None else (before, before_mass)
