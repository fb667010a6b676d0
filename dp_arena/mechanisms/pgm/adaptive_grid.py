"""``adaptive_grid``: the Minutemen's adaptive-granularity mechanism (NIST Temporal Map
Challenge, Sprint 3 winner), on ``mbi``.

Algorithm
---------
- Discretize: numeric columns to the schema's scoring bins (11 challenge bins for taxi data),
  categoricals to codes (``Schema.encode``).
- Marginals: for the taxi schema the write-up's 7 "outer" marginals, each
  ``(pickup_community_area, shift)`` plus one of fare x trip_total, trip_total x trip_seconds,
  dropoff_community_area x fare, payment_type x trip_total, fare x trip_miles, company_id,
  tips x trip_total; their downward closure (59 cliques); plus 7 extra copies of
  pickup x dropoff: 66 measurements (see :data:`TAXI_OUTER`). ``trip_day_of_week`` and
  ``trip_hour_of_day`` are not measured: the day is ``shift // 3`` and the hour is drawn from
  the public trips of the same shift (the Sprint 3 definition ``shift = 3 day + hour // 8``).
  Other schemas (the generic variant) use ``marginals`` from the config, else a Chow-Liu tree
  (maximum spanning tree of pairwise mutual information) of the *public* data over the pairs
  with at most ``max_cells`` cells, else pairs chosen by size only
  (:func:`dp_arena.mechanisms.pgm.sized_pairs`): a spanning forest of the smallest pairs, then every
  further pair of at most ``max_cells`` cells, smallest first, that keeps the model within
  ``auto_model_mb`` (all pairs of a small domain such as 16 binary columns; a subset of a
  wide one, where every pair would make one clique of the whole domain); attributes in no
  marginal get a 1-way marginal. Marginals are never chosen from the private data. Before
  anything is measured, the junction tree the marginals induce must fit ``max_model_mb``
  (float64): else the run stops with the fix (no budget spent, nothing allocated).
- Four rounds ``k = 1..4`` (up to the largest marginal): every k-way clique is measured as
  ``y = Q x + N(0, sigma^2)``, ``x`` its weighted histogram. ``Q`` stacks identity rows for the
  cells whose every (k-1)-way parent cell had a noisy estimate of at least
  ``threshold * sigma`` (copies of a clique are averaged for that test), and, for the other
  cells, each parent's own query ``Q_c`` applied to their marginal onto that parent, scaled
  by ``1/sqrt(#parents)``. By induction every column of ``Q`` has L2 norm exactly 1
  (:class:`~dp_arena.mechanisms.pgm.grid_query.GridQuery`).
- Estimate (``mbi``'s mirror descent, in NumPy: :mod:`dp_arena.mechanisms.pgm.mirror_descent`), at
  most ``iters`` steps (default: the Minutemen code's ``int(344 epsilon + 256)``), stopping
  once the loss has stalled (``tol``, ``patience``, as MST: post-processing of the noisy
  measurements). A fixed 200 steps (the earlier setting) cut the fit short on wide
  tables, worse at epsilon 10 (docs/pgm-estimation.md). Before estimating, measurements
  whose query has no identity rows are replaced by what they observe exactly, their parents'
  query answers (with noise ``sigma / coef``), and repeated observations are merged by
  inverse-variance weighting (:func:`~dp_arena.mechanisms.pgm.grid_query.fold_measurements`): the
  least-squares objective changes by a constant only, and cliques without cell-level
  information leave the model. The adaptive queries are evaluated with their gradients by
  :meth:`~dp_arena.mechanisms.pgm.grid_query.GridQuery.batch_loss`.
- Row count: least-squares scale of the fitted model against all noisy measurements, times
  the public data's rows-per-clipped-weight ratio (``row_count``, ``clip_correction``),
  clipped to the public bounds of :mod:`dp_arena.mechanisms.row_count` (at least 1,000 rows; at most
  the schema's ``max_records``, else 1,000,000): post-processing.
- Sample, decode numeric codes to values inside their bin drawn from the public data, and
  assign person ids (:mod:`dp_arena.mechanisms.person_ids`). Default ``ids=public_profiles``: the
  number of persons is one extra noisy measurement, the count of distinct persons
  (``person_count_share`` of the budget, 1% by default), and each synthetic person copies a
  public person's trip count (scaled to the synthetic row count) and its pickup-area x shift
  profile; synthetic rows are matched to persons of the same profile. ``ids=public_sizes``
  (:func:`dp_arena.mechanisms.base.assign_ids`: public trips-per-person sizes, rows grouped at random)
  and ``ids=public_groups`` (the write-up: public trips of the same pickup area and shift lend
  their taxi ids) spend nothing on persons; so does ``person_count_share=0`` (persons =
  rows / public mean size).

Deviation from the write-up, and why: the write-up's 66 measurements assign taxi ids from
public data only. The HOC score compares the distribution of per-taxi (shift, pickup area)
count vectors, so it depends mostly on how many taxis there are and how concentrated each is;
the public year's taxis are more numerous and lighter (on ``taxi_sim`` at 50k trips each,
data seed 0: 3,276 public taxis with 15.3 trips on average vs 2,101 private taxis with 23.8;
:func:`tests.test_adaptive_grid.test_public_taxis_more_numerous_and_lighter` checks the
direction), and no post-processing of the marginals recovers the private count. With the noisy count and public profiles, HOC on ``taxi_sim`` (50k trips, 3 trials)
went from 0.956 (public sizes, the same as ``independent``) to 0.989 at epsilon 10 and from
0.949 to 0.985 at epsilon 1; the marginals' sigma grows by ``1/sqrt(0.99)``, 0.5%
(``benchmarks/bench_adaptive_grid_taxi.py``). The count is what matters: public profiles
with the public-derived count (``person_count_share=0``) scored 0.952 and 0.951, below public
sizes. ``ids=public_sizes`` (or ``public_groups``) restores the write-up's 66 measurements,
its sigmas and public-only ids exactly.

Sigmas (the write-up's accounting, reproduced)
----------------------------------------------
The write-up (``003_*.txt`` line 82) prints sigma 5739.36 at epsilon 1, C 150 and 895 at
epsilon 10, C 200 (delta 2.5e-5, 66 measurements). Its text derives them by Gaussian DP and
the analytic Gaussian mechanism (line 78), but those give smaller sigmas; the printed ones
are zCDP converted with Bun & Steinke's ``rho = (sqrt(eps + ln(1/delta)) -
sqrt(ln(1/delta)))^2``, ``sigma = C sqrt(66 / (2 rho))``. With no person count
(``person_count_share=0`` or ``ids=public_sizes``, the write-up's 66 measurements):

=======  ===  ==================  ==============  ==============
epsilon  C    zcdp_bs (write-up)  zcdp (CKS)      gdp (default)
=======  ===  ==================  ==============  ==============
1        150  5739.36             4677.41         4290.24
10       200  895.42              833.01          784.12
=======  ===  ==================  ==============  ==============

So ``privacy.accountant=zcdp_bs`` (preset ``mechanism=adaptive_grid_zcdp_bs``) runs the
write-up's accounting exactly; ``zcdp`` (preset ``adaptive_grid_zcdp``) does not: its sigma
is 18.5% smaller at epsilon 1 and 7.0% smaller at epsilon 10.
(``tests/test_adaptive_grid.py`` parses this table and recomputes every figure.)

Privacy argument
----------------
Private: every attribute of ``data.private``. User-level data: a person with ``R`` rows gives
each of them weight ``min(1, C/R)``, so the person's weighted rows total ``min(R, C) <= C``
and adding or removing the person changes the weighted histogram ``x`` of any clique by a
vector ``h >= 0`` with ``||h||_1 <= C``; since every column of ``Q`` has unit L2 norm,
``||Q h||_2 <= sum_i h_i ||Q e_i||_2 = ||h||_1 <= C``: each measurement has L2 sensitivity
``C`` (record-level data: weight 1, sensitivity 1; ``C`` is then unused). ``Q`` depends only
on earlier noisy answers, so the ``K`` measurements (66 for taxi data) are an adaptive
composition of Gaussian mechanisms with sensitivity ``C``; ``sigma`` is calibrated with
:func:`dp_arena.privacy.accounting.gaussian_sigma` so that ``K`` of them compose to the budget (a
hair below, never above) under
the ledger's accountant (tight Gaussian DP by default; ``zcdp_bs``, zCDP with Bun-Steinke's
conversion, is the write-up's accounting; ``zcdp`` converts with Canonne-Kamath-Steinke's
tighter bound), and each measurement is charged to the ledger. The weights themselves are never released.
With ``ids=public_profiles`` on user-level data and ``person_count_share = s > 0``, the
marginals get the share ``1 - s`` of the accountant's additive Gaussian budget (mu^2 under
gdp, rho under zcdp; ``sigma`` grows by ``1/sqrt(1 - s)``) and one more Gaussian release, the
number of distinct persons (L2 sensitivity 1 under adding or removing a person), gets the
share ``s``; the ``K + 1`` charges compose to the budget (a hair below, never above). The
threshold tests, the
model fit, the row count (least-squares scale of the model fitted to all noisy measurements,
times the public data's rows-per-weight ratio when bounding removes mass), sampling,
decoding, the derived time columns and the person ids (given the noisy person count) are
post-processing of noisy answers and public data: they spend no budget. The mechanism keeps
nothing of a run: its diagnostics travel with the output (``DIAGNOSTICS_FILE``).
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from dp_arena.data.datasets import Dataset
from dp_arena.errors import ConfigError
from dp_arena.params import Constraint, Interval, OneOf, Satisfies
from dp_arena.privacy.accounting import Budget, gaussian_sigma
from dp_arena.privacy.release import Releaser

from .. import pgm
from ..base import Mechanism, assign_ids, with_output_facts
from ..person_ids import (
    ids_from_public_groups,
    ids_from_public_profiles,
    noisy_person_count,
)
from .grid_query import GridQuery, fold_measurements, plausible_cells, query_key

PICKUP, DROPOFF, SHIFT = "pickup_community_area", "dropoff_community_area", "shift"
DAY, HOUR = "trip_day_of_week", "trip_hour_of_day"
#: The write-up's outer marginals (each with pickup area and shift) for the taxi schema.
TAXI_OUTER: tuple[tuple[str, ...], ...] = (
    (PICKUP, SHIFT, "fare", "trip_total"),
    (PICKUP, SHIFT, "trip_total", "trip_seconds"),
    (PICKUP, SHIFT, DROPOFF, "fare"),
    (PICKUP, SHIFT, "payment_type", "trip_total"),
    (PICKUP, SHIFT, "fare", "trip_miles"),
    (PICKUP, SHIFT, "company_id"),
    (PICKUP, SHIFT, "tips", "trip_total"),
)
TAXI_REPEATED: tuple[str, str] = (PICKUP, DROPOFF)
TAXI_EXTRA_COPIES = 7
#: Person-id policies (see :mod:`dp_arena.mechanisms.person_ids`).
ID_POLICIES: tuple[str, ...] = ("public_profiles", "public_sizes", "public_groups")
#: The run's diagnostics (carried by the output, logged as this artifact): measurements, sigma,
#: C, the public clipping ratio; the noisy one-way total, row count and person count
#: (post-processing of releases); seconds per stage (like the run's ``seconds``).
DIAGNOSTICS_FILE = "adaptive_grid/diagnostics.json"


def is_epsilon_mapping(value: object) -> bool:
    """A non-empty mapping epsilon -> C > 0 (both numbers, never booleans)."""
    number = Interval(float)
    return isinstance(value, dict) and bool(value) and all(
        number.accepts(k) and Interval(float, 0, closed="neither").accepts(v)
        for k, v in value.items())


@dataclass
class AdaptiveGrid(Mechanism):
    C: float | dict | None = None
    threshold: float = 5.0
    iters: int | None = None
    tol: float | None = 3e-2
    patience: int = 2
    marginals: list[list[str]] | None = None
    copies_of: list[str] | None = None
    extra_copies: int | None = None
    row_count: str = "fitted"
    clip_correction: bool = True
    ids: str = "public_profiles"
    person_count_share: float = 0.01
    profile: list[str] | None = None
    max_cells: int = 10_000
    max_model_mb: float = 80.0
    auto_model_mb: float = 4.0
    name: ClassVar[str] = "adaptive_grid"

    parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "C": [Interval(float, 0, closed="neither"), None, Satisfies(
            is_epsilon_mapping, "a mapping epsilon -> C > 0 (e.g. {1: 30, 10: 100})")],
        "threshold": [Interval(float, 0)], "iters": [Interval(int, 1), None],
        "tol": [Interval(float, 0), None], "patience": [Interval(int, 1)],
        "extra_copies": [Interval(int, 0), None], "row_count": [OneOf("fitted", "one_way")],
        "ids": [OneOf(*ID_POLICIES)],
        "person_count_share": [Interval(float, 0, 1, closed="left")],
        "profile": [None, Satisfies(lambda v: isinstance(v, (list, tuple)) and all(
            isinstance(a, str) for a in v), "a list of attribute names")],
        "max_cells": [Interval(int, 1)], "max_model_mb": [Interval(float, 0, closed="neither")],
        "marginals": [None, Satisfies(lambda v: isinstance(v, (list, tuple)) and v and all(
            isinstance(m, (list, tuple)) and m for m in v),
            "a non-empty list of non-empty attribute lists")]}

    # ----- configuration resolved against the data -------------------------------------
    def clip_bound(self, budget: Budget) -> float:
        """``C`` for this budget: a number; a mapping epsilon -> C (the entry with the largest
        epsilon <= the budget's, else the smallest); null follows the write-up: 150 at
        epsilon <= 1, 200 (no clipping of the challenge's 200-trip taxis) above."""
        if isinstance(self.C, dict):
            eps = sorted(self.C)
            below = [e for e in eps if e <= budget.epsilon * (1 + 1e-12)]
            return float(self.C[below[-1] if below else eps[0]])
        if self.C is not None:
            return float(self.C)
        return 150.0 if budget.epsilon <= 1 else 200.0

    def max_iters(self, budget: Budget) -> int:
        """The estimation's iteration cap: ``iters``, or with ``iters: null`` the schedule
        ``int(344 epsilon + 256)`` of the Minutemen team's published Sprint 3 code (the
        write-up, 003_*.txt, gives none)."""
        if self.iters is not None:
            return int(self.iters)
        return int(344 * budget.epsilon + 256)

    @staticmethod
    def is_taxi(data: Dataset) -> bool:
        needed = {a for cl in TAXI_OUTER for a in cl} | {DAY, HOUR}
        return needed <= set(data.schema.attributes)

    def cliques(self, data: Dataset) -> tuple[list[tuple[str, ...]], list[str]]:
        """The measured cliques (closure in rounds of size, copies included, attributes in
        schema order) and the attributes derived instead of measured."""
        attrs = data.schema.attributes
        taxi = self.marginals is None and self.is_taxi(data)
        derived: list[str] = [DAY, HOUR] if taxi else []
        if self.marginals is not None:
            outer = [tuple(m) for m in self.marginals]
            unknown = sorted({a for m in outer for a in m} - set(attrs))
            if unknown:
                raise ConfigError(f"mechanism.marginals name unknown attributes {unknown}",
                                  f"use attributes of the schema: {attrs}")
        elif taxi:
            outer = list(TAXI_OUTER)
        elif data.public is not None:
            outer = chow_liu_pairs(data.schema.encode(data.public), data.schema.domain(),
                                   self.max_cells)
        else:
            outer = pgm.sized_pairs(data.schema.domain(), self.max_cells,
                                    min(self.auto_model_mb, self.max_model_mb))
        covered = {a for m in outer for a in m}
        outer += [(a,) for a in attrs if a not in covered and a not in derived]
        domain = data.schema.domain()
        size = pgm.model_size_mb({a: domain[a] for a in attrs if a not in derived}, outer)
        if size > self.max_model_mb:
            raise ConfigError(f"adaptive_grid's marginals make a {size:.4g} MB model, over "
                              f"max_model_mb={self.max_model_mb:g}",
                              "measure fewer or smaller marginals (mechanism.marginals), "
                              "coarsen the widest columns, or raise mechanism.max_model_mb")
        closure = pgm.downward_closure(outer, attrs)
        repeated = self.copies_of if self.copies_of is not None else (
            list(TAXI_REPEATED) if taxi else None)
        copies = self.extra_copies if self.extra_copies is not None else (
            TAXI_EXTRA_COPIES if taxi else 0)
        if copies:
            if repeated is None:
                raise ConfigError("mechanism.extra_copies needs mechanism.copies_of",
                                  "name the marginal to repeat, e.g. copies_of=[a,b]")
            rep = tuple(a for a in attrs if a in set(repeated))
            if rep not in closure or len(rep) != len(set(repeated)):
                raise ConfigError(f"mechanism.copies_of {list(repeated)} is not one of the "
                                  "measured marginals", "repeat a subset of a measured marginal")
            closure = closure + [rep] * copies
        return sorted(closure, key=len), derived

    def notes(self, data: Dataset) -> tuple[str, ...]:
        """Said once per sweep: on a table other than the taxi data the write-up's marginals
        do not apply, so the measured marginals come from the public sample (a Chow-Liu
        tree) or, without one, from domain sizes alone. From public facts only."""
        if self.marginals is not None or self.is_taxi(data):
            return ()
        try:
            closure, _ = self.cliques(data)
        except ConfigError:  # refused by the run's own check, with its fix
            return ()
        pairs = sum(len(cl) == 2 for cl in closure)
        source = ("a Chow-Liu tree of the public sample" if data.public is not None else
                  "pairs chosen by domain size alone (no public sample: they ignore how the "
                  "columns depend)")
        return (f"designed for the taxi challenge's hand-picked marginals; on this table it "
                f"measures {pairs} pairs from {source}, {len(closure)} measurements sharing "
                f"the budget (mechanism.marginals chooses them)",)

    def counts_persons(self, data: Dataset) -> bool:
        """Whether the run releases a noisy person count (``ids=public_profiles`` on
        user-level data with an id column and ``person_count_share > 0``)."""
        return (self.ids == "public_profiles" and self.person_count_share > 0
                and data.unit == "user" and data.schema.id_column is not None)

    def calibrate(self, data: Dataset, budget: Budget, accountant: str) -> tuple[float, float, int]:
        """``(C, sigma, K)``: the sensitivity of every measurement (``C`` for user-level
        data, at most the dataset's ``max_records_per_individual``; 1 for record-level data),
        the noise that makes ``K`` adaptively composed Gaussian measurements exactly
        ``budget``-DP under ``accountant`` (with a person count, exactly the share
        ``1 - person_count_share`` of the accountant's additive budget, mu^2 or rho), and ``K``."""
        n = len(self.cliques(data)[0])
        C = 1.0
        if data.unit == "user":
            C = self.clip_bound(budget)
            if data.max_records_per_individual:  # weights min(1, C/R) then total <= this
                C = min(C, float(data.max_records_per_individual))
        share = 1.0 - self.person_count_share if self.counts_persons(data) else 1.0
        return C, gaussian_sigma(n, C, budget, accountant, share), n  # type: ignore[arg-type]

    def person_count_sigma(self, budget: Budget, accountant: str) -> float:
        """Noise of the person count (sensitivity 1): the share ``person_count_share`` of the
        accountant's additive Gaussian budget."""
        return gaussian_sigma(1, 1.0, budget, accountant,  # type: ignore[arg-type]
                              self.person_count_share)

    # ----- the run --------------------------------------------------------------------
    def fit_sample(self, data: Dataset, budget: Budget, release: Releaser,
                   rng: np.random.Generator) -> pd.DataFrame:
        pgm.require_delta("adaptive_grid", budget, "2.5e-5, the challenge's delta")
        schema = data.schema
        domain = schema.domain()
        cliques, derived = self.cliques(data)
        self.profile_columns(data)  # a bad profile fails before any budget is spent
        model_attrs = [a for a in schema.attributes if a not in derived]
        model_domain = {a: domain[a] for a in model_attrs}
        codes = schema.encode(data.private)
        C, sigma, _ = self.calibrate(data, budget, release.accountant)
        weights = None
        if data.unit == "user":
            weights = pgm.contribution_weights(data.private, str(data.id_column), C)
        marks = [("start", time.time())]
        measurements = self.measure(codes, model_domain, cliques, weights, C, sigma, release)
        people = None
        if self.counts_persons(data):
            people = noisy_person_count(
                data, self.person_count_sigma(budget, release.accountant), release)
        release.done()
        marks.append(("measure", time.time()))
        measurements = fold_measurements(measurements)
        total = pgm.initial_total(measurements, model_domain)
        model = pgm.estimate(model_domain, measurements, self.max_iters(budget), total,
                             tol=self.tol, patience=self.patience)
        marks.append(("estimate", time.time()))
        tree = pgm.TreeMarginals(model)
        n_rows, std = (pgm.fitted_total_and_std(model, measurements, tree)
                       if self.row_count == "fitted"
                       else (total, pgm.initial_total_std(measurements, model_domain)))
        marks.append(("total", time.time()))
        ratio = pgm.clip_ratio(data, C) if self.clip_correction else 1.0
        n_rows = pgm.synthetic_rows(n_rows, std, data, budget.epsilon, ratio)
        synth = pgm.sample_codes(model, n_rows, rng, model_attrs, tree)
        marks.append(("sample", time.time()))
        out = self.finish(data, synth, derived, people, rng)
        marks.append(("finish", time.time()))
        diagnostics = {"measurements": len(cliques), "sigma": sigma, "C": C,
                       "one_way_total": total, "rows": n_rows, "clip_ratio": ratio,
                       "noisy_persons": people, "seconds": stage_seconds(marks)}
        return with_output_facts(out, files={DIAGNOSTICS_FILE: diagnostics})

    def measure(self, codes: pd.DataFrame, domain: dict[str, int],
                cliques: list[tuple[str, ...]], weights: np.ndarray | None, C: float,
                sigma: float, release: Releaser) -> list[pgm.Measurement]:
        """The rounds k = 1.. of adaptive measurements (each one Gaussian release)."""
        queries: dict[tuple[str, ...], GridQuery] = {}
        plausible: dict[tuple[str, ...], np.ndarray] = {}
        measurements: list[pgm.Measurement] = []
        for k in sorted({len(c) for c in cliques}):
            estimates: dict[tuple[str, ...], list[np.ndarray]] = {}
            for cl in (c for c in cliques if len(c) == k):
                query = queries.get(cl) or self.grid_query(cl, domain, queries, plausible)
                queries[cl] = query
                x = pgm.histogram(codes, cl, domain, weights)
                y = release.gaussian(
                    f"k={k} marginal {' x '.join(cl)}" + (
                        f" (copy {len(estimates.get(cl, [])) + 1})" if cl in estimates else ""),
                    query.apply(x), C, sigma,
                    query=f"grid marginal {' x '.join(cl)} {query_key(query)}",
                    note=f"{query.n_rows} rows ({len(query.ident)} identity) over "
                         f"{query.n_cells} cells")
                est = np.zeros(query.n_cells)
                est[query.ident] = y[:len(query.ident)]
                estimates.setdefault(cl, []).append(est)
                measurements.append(pgm.Measurement(
                    cl, y, sigma, None if not query.parents and len(query.ident) == query.n_cells
                    else query))
            for cl, ests in estimates.items():
                plausible[cl] = np.mean(ests, axis=0) >= self.threshold * sigma
        return measurements

    @staticmethod
    def grid_query(cl: tuple[str, ...], domain: dict[str, int],
                   queries: dict[tuple[str, ...], GridQuery],
                   plausible: dict[tuple[str, ...], np.ndarray]) -> GridQuery:
        shape = tuple(domain[a] for a in cl)
        parents = []
        if len(cl) > 1:
            for axis in range(len(cl)):
                parent = cl[:axis] + cl[axis + 1:]
                if parent not in queries:
                    raise ConfigError(f"marginal {cl} measured before its parent {parent}",
                                      "measure cliques in order of size (downward closure)")
                parents.append((axis, parent))
        mask = plausible_cells(shape, [(axis, plausible[p]) for axis, p in parents])
        if mask.all():  # nothing left to re-measure through the parents: Q is the identity
            parents = []
        return GridQuery(key=len(queries), clique=cl, shape=shape,
                         ident=np.flatnonzero(mask), rest=(~mask).astype(float),
                         parents=tuple((axis, queries[p]) for axis, p in parents))

    # ----- decoding ---------------------------------------------------------------------
    def profile_columns(self, data: Dataset) -> list[str]:
        """Columns whose values persons keep from their public template (``profile``; null:
        pickup area and shift for taxi data, else none)."""
        if self.profile is not None:
            unknown = sorted(set(self.profile) - set(data.schema.attributes))
            if unknown:
                raise ConfigError(f"mechanism.profile names unknown attributes {unknown}",
                                  f"use attributes of the schema: {data.schema.attributes}")
            return list(self.profile)
        return [PICKUP, SHIFT] if self.is_taxi(data) else []

    def finish(self, data: Dataset, synth: pd.DataFrame, derived: list[str],
               people: float | None, rng: np.random.Generator) -> pd.DataFrame:
        schema = data.schema
        out = schema.decode(synth, rng, reference=data.public)
        if derived:
            out = fill_time_columns(out, data, rng)
        id_col = schema.id_column
        if id_col is not None:
            if self.ids == "public_profiles" and data.unit == "user":
                ids = ids_from_public_profiles(out, data, people, self.profile_columns(data),
                                               rng)
            elif (self.ids == "public_groups" and data.public is not None
                    and id_col in data.public and all(c in out for c in (PICKUP, SHIFT))):
                ids = ids_from_public_groups(out, data, [PICKUP, SHIFT], rng)
            else:
                ids = assign_ids(len(out), data, rng)
            out.insert(0, id_col, ids)
        return out[schema.names].reset_index(drop=True)


# ----- generic marginals from public data ---------------------------------------------------
def stage_seconds(marks: list[tuple[str, float]]) -> dict[str, float]:
    """Seconds per stage from ``(stage, time it ended)`` marks (the first one: the start)."""
    return {b: round(tb - ta, 2) for (_, ta), (b, tb) in itertools.pairwise(marks)}


def chow_liu_pairs(public_codes: pd.DataFrame, domain: dict[str, int],
                   max_cells: int | None = None) -> list[tuple[str, str]]:
    """Edges of the maximum spanning tree of pairwise mutual information on *public* data,
    over the pairs with at most ``max_cells`` cells."""
    attrs = list(domain)
    n = max(len(public_codes), 1)
    one = {a: pgm.histogram(public_codes, (a,), domain) / n for a in attrs}
    mi = {}
    for a, b in itertools.combinations(attrs, 2):
        if max_cells is not None and domain[a] * domain[b] > max_cells:
            continue
        joint = pgm.histogram(public_codes, (a, b), domain).reshape(domain[a], domain[b]) / n
        indep = np.outer(one[a], one[b])
        nz = joint > 0
        mi[(a, b)] = float(np.sum(joint[nz] * np.log(joint[nz] / indep[nz])))
    return pgm.kruskal_forest(attrs, sorted(mi, key=lambda e: -mi[e]))


# ----- taxi post-processing (public data only) --------------------------------------------
def fill_time_columns(out: pd.DataFrame, data: Dataset, rng: np.random.Generator) -> pd.DataFrame:
    """``trip_day_of_week = shift // 3``; ``trip_hour_of_day`` from the public trips of the
    same shift (uniform over the shift's 8 hours when there are none)."""
    shift = out[SHIFT].to_numpy().astype(np.int64)
    out[DAY] = shift // 3
    hour = 8 * (shift % 3) + rng.integers(0, 8, size=len(shift))
    if data.public is not None and HOUR in data.public and SHIFT in data.public:
        pub = data.public[[SHIFT, HOUR]].to_numpy().astype(np.int64)
        for s in np.unique(shift):
            pool = pub[pub[:, 0] == s, 1]
            where = np.flatnonzero(shift == s)
            if len(pool):
                hour[where] = rng.choice(pool, size=len(where))
    out[HOUR] = hour
    return out
