"""The Private-PGM family: :mod:`~dp_arena.mechanisms.pgm.mst`, :mod:`~dp_arena.mechanisms.pgm.aim` and
:mod:`~dp_arena.mechanisms.pgm.adaptive_grid` (its query matrices in :mod:`~dp_arena.mechanisms.pgm.grid_query`),
fitted with :mod:`~dp_arena.mechanisms.pgm.mirror_descent` over
:mod:`~dp_arena.mechanisms.pgm.cliques` (:mod:`~dp_arena.mechanisms.pgm.mbi_setup` configures ``mbi``), read
and sampled through :mod:`~dp_arena.mechanisms.pgm.marginals`. This module is their shared (``mbi``)
glue, imported as ``from mechanisms import pgm``. It may import ``dp_arena.data``,
``dp_arena.privacy`` and ``mechanisms`` (the floors below and its own).

Everything here is post-processing of noisy releases or planning from public facts (the
noise itself is drawn by :class:`dp_arena.privacy.release.Releaser`):

- ``mbi`` comes configured from :mod:`dp_arena.mechanisms.pgm.mbi_setup` (its domain, clique and
  junction-tree helpers; nothing here runs JAX code);
- :class:`Measurement`: one noisy linear measurement ``y = Q x + N(0, sigma^2 I)`` of the
  (possibly weighted) histogram ``x`` of a clique, ``Q`` the identity, a diagonal or a
  structured query (adaptive grid);
- :func:`estimate`: mirror descent over the measurements, in NumPy
  (:mod:`dp_arena.mechanisms.pgm.mirror_descent`, no compilation; identity, diagonal and structured
  queries);
- :func:`fit_one_way`: the exact (closed-form) fit to 1-way measurements, a product model
  (:class:`ProductMarginals`; MST's selection step);
- :class:`~dp_arena.mechanisms.pgm.marginals.TreeMarginals` and
  :func:`~dp_arena.mechanisms.pgm.marginals.sample_codes` live in :mod:`dp_arena.mechanisms.pgm.marginals`
  (re-exported here): the model's marginals and records drawn from it;
- :func:`initial_total` / :func:`fitted_total`: the synthetic row count, derived from the
  noisy measurements only (never read from the private data); :func:`fitted_rows` /
  :func:`synthetic_rows`: that count corrected for contribution clipping (public ratio) and
  bounded (:mod:`dp_arena.mechanisms.row_count`);
- :func:`solve_scale` (calibrating a parameterised release plan so that the run's ledger accountant composes it to the budget, a hair below, never above);
- :func:`model_size_mb`: the size of the junction tree a set of cliques induces (AIM's cap);
  :func:`smallest_pairs_forest` / :func:`sized_pairs`: pairs chosen by domain size only.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dp_arena.data.datasets import Dataset
from dp_arena.errors import ConfigError
from dp_arena.privacy.accounting import Budget, Charge, largest_fitting

from ..base import bounded_private, contribution_bound, require_delta  # noqa: F401 - pgm.require_delta for callers
from ..row_count import bounded_row_count
from .cliques import (  # noqa: F401 - pgm.*
    ModelGraph,
    downward_closure,
    kruskal_forest,
    model_size_mb,
    singletons_plus_one_mb,
    sized_pairs,
    smallest_pairs_forest,
)
from .marginals import TreeMarginals, sample_codes  # noqa: F401 - pgm.*
from .mbi_setup import (  # noqa: F401 - pgm.mbi_* for callers
    LinearMeasurement,
    WeightedQuery,
    mbi,
    mbi_clique_utils,
    mbi_domain,
    mbi_junction_tree,
)
from .mirror_descent import mirror_descent, unit_norm_lipschitz

Clique = tuple[str, ...]


# ----- histograms -------------------------------------------------------------------------
def histogram(codes: pd.DataFrame, clique: Sequence[str], domain: dict[str, int],
              weights: np.ndarray | None = None) -> np.ndarray:
    """Flattened (row-major, in ``clique`` order) histogram of the codes of ``clique``."""
    sizes = [domain[c] for c in clique]
    if not clique:
        return np.array([float(len(codes)) if weights is None else float(np.sum(weights))])
    keys = np.ravel_multi_index([codes[c].to_numpy() for c in clique], sizes)
    return np.bincount(keys, weights=weights, minlength=int(np.prod(sizes))).astype(float)


# ----- measurements -----------------------------------------------------------------------
@dataclass
class Measurement:
    """``y = Q x + N(0, sigma^2 I)`` for the histogram ``x`` of ``clique``.

    ``query`` is ``None`` for the identity, a vector of per-cell weights (diagonal ``Q``), or
    a *structured* query such as ``dp_arena.mechanisms.pgm.grid_query.GridQuery``:
    an object with ``apply(x)`` (``Q x`` in NumPy), ``required_cliques()`` (the marginals its
    evaluation reads) and a static ``batch_loss(items, marginals)`` returning the loss
    ``sum ||Q mu - y||^2 / (2 sigma^2)`` over ``(query, y, sigma)`` items and its gradient
    with respect to each required marginal.
    """

    clique: Clique
    y: np.ndarray
    sigma: float
    query: object = None
    _mbi_query: object = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def structured(self) -> bool:
        return hasattr(self.query, "batch_loss")

    def __post_init__(self) -> None:
        if not (self.query is None or isinstance(self.query, np.ndarray) or self.structured):
            raise TypeError(f"unsupported query type {type(self.query).__name__}")

    def apply(self, x: np.ndarray) -> np.ndarray:
        """``Q x`` in NumPy (``x`` flattened in clique order)."""
        if self.query is None:
            return np.asarray(x, dtype=float)
        if isinstance(self.query, np.ndarray):
            return self.query * x
        return self.query.apply(np.asarray(x, dtype=float))  # type: ignore[union-attr]

    def to_mbi(self) -> LinearMeasurement:
        """The ``mbi`` measurement (identity or diagonal queries only)."""
        if self._mbi_query is None:
            if self.query is None:
                self._mbi_query = mbi.DatavectorQuery()
            elif isinstance(self.query, np.ndarray):
                self._mbi_query = WeightedQuery(np.asarray(self.query, dtype=float))
            else:
                raise TypeError("structured queries have no mbi measurement: "
                                "mirror_descent evaluates them with their batch_loss")
        return LinearMeasurement(np.asarray(self.y, dtype=float), tuple(self.clique),
                                 stddev=float(self.sigma), query=self._mbi_query)


# ----- estimation -------------------------------------------------------------------------
def estimate(domain: dict[str, int], measurements: Sequence[Measurement], iters: int,
             total: float, warm_start=None, tol: float | None = None, patience: int = 2,
             warm_step: bool = False, from_start: bool = False):
    """Mirror descent fit of a graphical model to ``measurements`` with ``total`` records
    (:func:`dp_arena.mechanisms.pgm.mirror_descent.mirror_descent`: NumPy, ``mbi``'s algorithm step for
    step, no compilation; returns a :class:`~dp_arena.mechanisms.pgm.mirror_descent.FittedModel`).
    ``iters`` is the most iterations; with ``tol`` the fit stops early once the loss improves
    by at most ``tol`` (relative) over ``patience`` consecutive blocks of 50 iterations
    (``mbi``'s early stopping, :func:`~dp_arena.mechanisms.pgm.mirror_descent.stalled`): a warm-started
    refit that has converged stops after ``50 (patience + 1)`` iterations instead of running
    all ``iters``. ``warm_step``: a warm-started fit starts from the step size its warm start
    ended with; ``from_start``: the starting loss counts as a block's, so a close warm start
    can stop after one block. The rule reads only the loss, a function of the noisy
    measurements: it is
    post-processing and spends nothing.

    With structured queries (adaptive grid) the first step size comes from
    :func:`~dp_arena.mechanisms.pgm.mirror_descent.unit_norm_lipschitz` instead of ``mbi``'s metadata bound
    (see there)."""
    if iters < 1:
        raise ConfigError(f"estimation iterations must be >= 1 (got {iters})",
                          "set mechanism.iters to a positive integer")
    structured = any(m.structured for m in measurements)
    return mirror_descent(domain, measurements, int(iters), float(max(total, 1.0)),
                          warm_start=warm_start, tol=tol, patience=int(patience),
                          warm_step=warm_step, from_start=from_start,
                          lipschitz_constant=(unit_norm_lipschitz(domain, measurements)
                                              if structured else None))


# ----- the closed-form fit to 1-way measurements ------------------------------------------
def simplex_projection(target: np.ndarray, weights: np.ndarray, total: float) -> np.ndarray:
    """``argmin_mu sum_i w_i (mu_i - t_i)^2`` subject to ``mu >= 0`` and ``sum mu = total``
    (``w > 0``): by the KKT conditions ``mu_i = max(0, t_i - lam / w_i)`` with the one ``lam``
    that makes the sum ``total``. The sum is piecewise linear and decreasing in ``lam`` with
    breakpoints ``w_i t_i``; with cells sorted by breakpoint, the first ``k`` are positive
    and ``lam = (sum_k t - total) / sum_k (1 / w)`` for the ``k`` whose ``lam`` lies between
    the ``k``-th and the ``(k+1)``-th breakpoint."""
    t = np.asarray(target, dtype=float)
    w = np.asarray(weights, dtype=float)
    if t.shape != w.shape or t.ndim != 1 or t.size == 0 or not np.all(w > 0):
        raise ValueError("simplex_projection needs equal-length 1-d targets and weights > 0")
    order = np.argsort(-(w * t), kind="stable")
    brk = (w * t)[order]
    lam = (np.cumsum(t[order]) - total) / np.cumsum(1.0 / w[order])
    nxt = np.append(brk[1:], -np.inf)
    k = int(np.flatnonzero(lam >= nxt)[0])  # the last k always qualifies (nxt = -inf)
    return np.maximum(0.0, t - lam[k] / w)


class ProductMarginals:
    """Marginals of a product model (independent attributes), with
    :class:`TreeMarginals`' interface: ``marginal(clique)`` is the outer product of the
    1-way marginals divided by ``total ** (k - 1)``, flattened in clique order."""

    def __init__(self, one_way: dict[str, np.ndarray], total: float):
        self.one_way = {a: np.asarray(v, dtype=float) for a, v in one_way.items()}
        self.total = float(total)

    def marginal(self, clique: Sequence[str]) -> np.ndarray:
        out = np.ones(())
        for a in clique:
            out = np.multiply.outer(out, self.one_way[a])
        return (out / self.total ** max(len(clique) - 1, 0)).ravel() if clique else \
            np.array([self.total])


def fit_one_way(domain: dict[str, int], measurements: Sequence[Measurement],
                total: float) -> ProductMarginals:
    """The exact least-squares model of 1-way measurements with diagonal queries: the
    minimiser of ``sum_m ||Q_m mu_a - y_m||^2 / (2 sigma_m^2)`` over models with ``total``
    records, which is what :func:`estimate` approaches by mirror descent on the same
    measurements (post-processing of the noisy answers, like any fit).

    With only 1-way cliques the loss separates by attribute and the model is a product of
    its 1-way marginals; each is the weighted projection of its measurements onto the
    simplex scaled to ``total`` (:func:`simplex_projection`): cell ``i`` of attribute ``a``
    gets weight ``W_i = sum_m q_mi^2 / sigma_m^2`` and target
    ``sum_m q_mi y_mi / sigma_m^2 / W_i`` (for MST's compressed cell, ``q = 1/sqrt(m)`` and
    the target is the sum of the merged noisy counts). An attribute never measured stays
    uniform, as in mirror descent from zero potentials."""
    weight = {a: np.zeros(n) for a, n in domain.items()}
    moment = {a: np.zeros(n) for a, n in domain.items()}
    for m in measurements:
        if len(m.clique) != 1 or m.structured:
            raise ValueError("fit_one_way takes 1-way measurements with diagonal queries")
        a = m.clique[0]
        q = np.ones(domain[a]) if m.query is None else np.asarray(m.query, dtype=float)
        weight[a] += q**2 / m.sigma**2
        moment[a] += q * np.asarray(m.y, dtype=float) / m.sigma**2
    one_way = {}
    for a, n in domain.items():
        if not np.any(weight[a] > 0):
            one_way[a] = np.full(n, total / n)
            continue
        if not np.all(weight[a] > 0):
            raise ValueError(f"fit_one_way: some cells of {a} are never measured")
        one_way[a] = simplex_projection(moment[a] / weight[a], weight[a], total)
    return ProductMarginals(one_way, total)


# ----- the synthetic row count ------------------------------------------------------------
def total_estimate(m: Measurement, n_cells: int) -> tuple[float, float] | None:
    """Unbiased estimate of the record count from one measurement and its variance, when the
    query is diagonal with full support (identity or per-cell weights); else ``None``."""
    if m.query is None:
        return float(np.sum(m.y)), m.sigma**2 * n_cells
    if isinstance(m.query, np.ndarray) and np.all(m.query > 0):
        inv = 1.0 / m.query
        return float(np.sum(m.y * inv)), m.sigma**2 * float(np.sum(inv**2))
    return None


def initial_total(measurements: Sequence[Measurement], domain: dict[str, int]) -> float:
    """Inverse-variance weighted mean of the per-measurement totals (post-processing)."""
    est, var = [], []
    for m in measurements:
        found = total_estimate(m, int(np.prod([domain[c] for c in m.clique])))
        if found is not None:
            est.append(found[0])
            var.append(found[1])
    if not est:
        return 1.0
    w = 1.0 / np.asarray(var)
    return max(1.0, float(np.sum(w * np.asarray(est)) / np.sum(w)))


def initial_total_std(measurements: Sequence[Measurement], domain: dict[str, int]) -> float:
    """Standard deviation of :func:`initial_total`'s noise (noise scales and domain sizes)."""
    found = [total_estimate(m, int(np.prod([domain[c] for c in m.clique])))
             for m in measurements]
    weight = sum(1.0 / f[1] for f in found if f is not None)
    return 1.0 / math.sqrt(weight) if weight > 0 else math.inf


def fitted_total(model, measurements: Sequence[Measurement],
                 marginals: TreeMarginals | None = None) -> float:
    """Least-squares record count given the model's distribution ``p``: the scale ``T``
    minimising ``sum_m ||T Q_m p_m - y_m||^2 / sigma_m^2`` over *all* measurements.

    It uses every noisy measurement (not only the identity ones), so it is much less noisy
    than :func:`initial_total`; it is post-processing of the noisy answers.
    """
    return fitted_total_and_std(model, measurements, marginals)[0]


def fitted_total_and_std(model, measurements: Sequence[Measurement],
                         marginals: TreeMarginals | None = None) -> tuple[float, float]:
    """:func:`fitted_total` and the standard deviation of its noise given ``p``,
    ``1 / sqrt(sum_m ||Q_m p_m||^2 / sigma_m^2)`` (what :mod:`dp_arena.mechanisms.row_count` weighs
    against a public figure; post-processing too)."""
    tm = marginals if marginals is not None else TreeMarginals(model)
    total = float(model.total)
    num = den = 0.0
    for m in measurements:
        qp = m.apply(tm.marginal(m.clique) / max(total, 1e-12))
        num += float(qp @ m.y) / m.sigma**2
        den += float(qp @ qp) / m.sigma**2
    if den <= 0:
        return total, math.inf
    return max(1.0, num / den), 1.0 / math.sqrt(den)


def clip_ratio(data: Dataset, bound: float) -> float:
    """:func:`public_clip_ratio` for rows weighted by :func:`contribution_weights` at
    ``bound`` (1.0 for record-level data; public data only, no privacy cost)."""
    if data.unit != "user":
        return 1.0
    return public_clip_ratio(data, lambda df: contribution_weights(df, str(data.id_column), bound))


def synthetic_rows(estimate: float, std: float, data: Dataset, epsilon: float,
                   ratio: float = 1.0) -> int:
    """The synthetic row count from a noisy total ``estimate`` of the bounded rows and its
    noise ``std``: both scaled by the public clip ``ratio``, then
    :func:`dp_arena.mechanisms.row_count.bounded_row_count` (post-processing)."""
    return bounded_row_count(estimate * ratio, data, epsilon, std=std * ratio)


def fitted_rows(model, measurements: Sequence[Measurement], marginals: TreeMarginals,
                data: Dataset, epsilon: float, bound: float) -> int:
    """The row count of a fitted model's sample (MST, AIM): :func:`fitted_total_and_std`,
    corrected by :func:`clip_ratio` at the contribution ``bound``, bounded by
    :func:`synthetic_rows` (post-processing of the noisy measurements)."""
    total, std = fitted_total_and_std(model, measurements, marginals)
    return synthetic_rows(total, std, data, epsilon, clip_ratio(data, bound))


def bounded_rows(data: Dataset, max_contrib: int | None) -> int:
    """Rows kept per person (the histogram sensitivity): 1 for record-level data, else
    ``max_contrib`` (default: the dataset's ``max_records_per_individual``), never more than
    the dataset's declared maximum. The caller clips every person to this many rows
    (:func:`dp_arena.mechanisms.base.clip_contributions`), so the bound holds whatever the data."""
    bound = contribution_bound(data, max_contrib)
    if data.unit == "user" and data.max_records_per_individual:
        bound = min(bound, int(data.max_records_per_individual))
    return bound


def bounded_codes(data: Dataset, max_contrib: int | None,
                  rng: np.random.Generator) -> tuple[pd.DataFrame, int]:
    """The private table clipped to :func:`bounded_rows` rows per person, as codes, and that
    bound (the sensitivity of every histogram measured on it)."""
    bound = bounded_rows(data, max_contrib)
    return data.schema.encode(bounded_private(data, bound, rng)), bound


def contribution_weights(df: pd.DataFrame, id_column: str, bound: float) -> np.ndarray:
    """Per-row weight ``min(1, bound / R)``, ``R`` the number of rows of the row's person:
    every person's rows then weigh ``min(R, bound) <= bound`` in total."""
    rows = df.groupby(id_column)[id_column].transform("size").to_numpy().astype(float)
    return np.minimum(1.0, float(bound) / rows)


def public_clip_ratio(data: Dataset, weights_for: Callable[[pd.DataFrame], np.ndarray]) -> float:
    """Rows per unit of bounded contribution on the *public* data (1.0 when there is no
    public part with the id column, or for record-level data).

    Contribution bounding (row clipping or weights) makes the noisy totals estimate the
    bounded row count; multiplying by this public ratio corrects for the rows bounding
    removed, using public information only (no privacy cost).
    """
    if data.unit != "user" or data.public is None or data.id_column not in data.public:
        return 1.0
    kept = float(np.sum(weights_for(data.public)))
    return len(data.public) / kept if kept > 0 else 1.0


# ----- selection and calibration ----------------------------------------------------------
#: How far below the budget a whole release plan is calibrated (relative): far above float
#: rounding (~1e-15), far below anything a reader of ``epsilon_spent`` cares about (1e-9).
PLAN_HEADROOM = 1e-12


def solve_scale(plan: Callable[[float], list[Charge]], budget: Budget, accountant: str,
                prior: Sequence[Charge] = ()) -> float:
    """The scale ``s`` at which ``prior + plan(s)`` composes to ``budget.epsilon`` under
    ``accountant``, aimed :data:`PLAN_HEADROOM` (relative) below it: the ledger, which has no
    tolerance, recomposes the charges one at a time, and sums in another order round
    differently (``plan`` must get more expensive as ``s`` grows; for a plan written in zCDP
    units under the zcdp accountant, ``s`` is the remaining rho)."""
    s = largest_fitting(plan, budget, accountant, prior,  # type: ignore[arg-type]
                        guess=budget.epsilon, headroom=PLAN_HEADROOM)
    if s == 0.0:
        raise ConfigError("the privacy budget is too small for this mechanism's plan",
                          "raise privacy.epsilon")
    return s


def gaussian_charge(name: str, sensitivity: float, sigma: float, count: int = 1) -> Charge:
    return Charge(name, "gaussian", float(sensitivity), float(sigma), int(count))


def exponential_charge(name: str, sensitivity: float, epsilon: float, count: int = 1) -> Charge:
    return Charge(name, "exponential", float(sensitivity), 2.0 * sensitivity / epsilon, int(count))
