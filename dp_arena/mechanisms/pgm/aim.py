"""``aim``: Adaptive and Iterative Mechanism (McKenna, Mullins, Sheldon & Miklau, VLDB 2022),
on ``mbi``.

The algorithm, its settings and speed, and the privacy argument: :class:`AIM`; the
estimation's settings and figures: docs/pgm-estimation.md.
"""

from __future__ import annotations

import itertools
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from dp_arena.data.datasets import Dataset
from dp_arena.errors import ConfigError
from dp_arena.params import Constraint, Interval
from dp_arena.privacy.accounting import (
    CALIBRATION_HEADROOM,
    Budget,
    Charge,
    zcdp_rho,
)
from dp_arena.privacy.release import Releaser

from .. import pgm
from ..base import Mechanism, finish
from .heap import trim_heap
from .marginals import MEMO_CELLS, WORKING_CELLS

_BIAS = math.sqrt(2.0 / math.pi)
log = logging.getLogger(__name__)


def aim_rho_budget(budget: Budget) -> float:
    """AIM's zCDP budget: the largest rho whose zCDP conversion is ``budget``-DP,
    aimed a hair (:data:`CALIBRATION_HEADROOM`) below so rounding never takes it over."""
    return zcdp_rho(budget.epsilon, budget.delta) * (1.0 - CALIBRATION_HEADROOM)


def initial_scale(rho: float, d: int, T: int) -> float:
    """The zCDP scale ``s`` of the ``T`` nominal rounds (each ``0.9 s / T`` measuring,
    ``0.1 s / T`` selecting): ``s = rho`` as in the paper, unless the ``d`` 1-way measurements
    (``0.9 s / T`` each) and two rounds would not fit in ``rho``; then ``s`` is such that the
    1-way measurements plus ``T`` rounds cost exactly ``rho``."""
    if (0.9 * d + 2.0) / T <= 1.0:
        return rho
    return rho / (1.0 + 0.9 * d / T)


def final_round(rho_left: float, b: float) -> tuple[float, float]:
    """(sigma, eps) of a round that spends ``rho_left``: 90% measuring, 10% selecting."""
    return b / math.sqrt(2 * 0.9 * rho_left), math.sqrt(8 * 0.1 * rho_left)


@dataclass
class AIM(Mechanism):
    """AIM on ``mbi``: workload, rounds of selection and measurement, the zCDP filter.

    Algorithm
    ---------
    - Workload ``W`` (chosen from domain sizes only): all ``workload_degree``-way marginals
      (default 3, the paper's ALL-3WAY workload), weight 1 each, with at most ``max_cells`` cells
      (default 10,000, the reference implementation's filter); a smaller marginal (2 or more
      attributes) that no kept marginal contains and that has at most ``max_cells`` cells joins
      ``W`` in their place, so wide columns lose only the marginals that do not fit. If the
      candidates' answers would take more than ``max_answers_mb`` of memory, the largest
      workload marginals are dropped until they fit. What is dropped is logged once, up front.
      Candidates: the downward closure of ``W`` plus every 1-way marginal, a candidate ``r``
      weighted by ``w_r = sum_{s in W} |r & s|``; a candidate that alone would make the model
      larger than ``max_model_size`` MB is dropped up front (it could never be selected).
    - Start: every 1-way marginal measured with ``sigma_0``; fit an ``mbi`` model.
    - ``T = rounds``, or ``rounds_per_attribute x d`` (paper: ``16 d``) when ``rounds`` is null.
    - Round ``t``: keep the candidates that are already inside a measured clique or keep the
      model's junction tree under ``max_model_size * (budget used so far)`` MB; select one with
      the exponential mechanism on ``w_r (||x_r - xhat_r||_1 - sqrt(2/pi) sigma n_r)``
      (``n_r`` cells); measure it with Gaussian noise ``sigma``; refit (warm start; with
      ``matched_start``, from the last model after one smoothed IPF step onto the new noisy
      marginal, see below). If the refit
      moved that marginal by at most ``sqrt(2/pi) sigma n_r`` in L1, halve ``sigma`` and double the
      selection epsilon (each round then costs 4x as much). When the zCDP budget left is at
      most two rounds' cost (or after ``T`` rounds), the last round uses exactly the rho that is
      left (90% measurement, 10% selection): the paper's zCDP filter, see below.
    - Finally refit with ``final_iters``, derive the row count from the noisy measurements
      (clipped to the public bounds of :mod:`dp_arena.mechanisms.row_count`: at least 1,000 rows, at most
      the schema's ``max_records``, else 1,000,000), sample records and decode them to schema
      values.

    Settings follow the paper and its reference implementation (ryan112358/private-pgm
    ``dp_arena/mechanisms/aim.py``): ``rounds = 16 d``, ``max_model_size = 80`` MB, 1,000 mirror-descent
    iterations per round (warm started from the previous model) and for the final fit,
    ``max_cells = 10000``, 90% / 10% measurement / selection split. Speed: every fit
    stops once its loss has stalled (:func:`dp_arena.mechanisms.pgm.mirror_descent.stalled`: at most ``tol``
    relative improvement in each of ``patience`` blocks of 50 iterations in a row; default
    ``tol = 0.03``, ``patience = 1``), and a round's fit starts from the previous round's
    potentials (a new clique's extended by zeros) and, with ``warm_step``, from the step size
    the previous fit ended with. On adult at epsilon 1 the fits then take 100-400 iterations
    instead of 1,000 each, at a mean 3-way TVD within the seeds' spread of the old settings'
    (benchmarks/bench_pgm_adult.py). ``tol = 1e-7, patience = 2, warm_step = false,
    final_tol = 1e-7`` are the old settings (fixed iterations); ``tol: null`` runs every iteration as
    the reference does. ``matched_start`` (default true): each refit, and the final fit, starts
    from the last model with ``log((y+ + s) / (m + s))`` added to the new clique's potential
    (``y+`` the new noisy marginal's non-negative part scaled to the model's total, ``m`` the
    model's marginal of the clique, ``s = sigma``; :meth:`dp_arena.mechanisms.pgm.mirror_descent.FittedModel.matched_to`),
    so the new measurement is fitted at the first step, and a refit may stop after one block
    of 50 steps when that block improved the loss it started from by at most ``tol``. At
    epsilon 10 a refit otherwise spends hundreds of steps fitting the one new measurement
    (its sigma is small, so it dominates the loss); the start reads the model and a released
    measurement only (post-processing). ``matched_start: false`` is the start before
    (benchmarks/bench_aim_epsilons.py runs both). The stopping rule reads only the loss, a function of the
    noisy measurements: post-processing, it spends nothing. The model size of a candidate
    depends only on the graph of the measured cliques and the candidate, so it is computed once
    per distinct graph within a round, and only for the candidates the exponential mechanism
    tests: it draws the Gumbel-perturbed scores of all candidates and takes the first admissible
    one in decreasing order (:meth:`dp_arena.privacy.release.Releaser.exponential`,
    ``admissible``), which is the exponential mechanism over the admissible candidates exactly;
    the sensitivity is the heaviest admissible candidate's weight, found the same way. When a
    probe of 256 candidates says at most 80% are admissible (late in a run, as the model nears
    its size limit), every candidate is tested and only the admissible ones are scored
    (:func:`admitted_pool`): the same mechanism, without scoring candidates it cannot choose.
    ``dp_arena/conf/mechanism/aim_quick.yaml`` is the budget preset of the default competition (2-way
    workload, ``T = 2 d`` rounds, 100 iterations; labelled ``[quick]`` on the board).

    Privacy argument
    ----------------
    Private: every attribute of ``data.private`` (the id column is never modelled). Each person
    contributes at most ``b`` rows (``b = 1`` for record-level data; for user-level data rows are
    clipped to ``b = max_contrib`` per person; default, and upper limit: the dataset's
    ``max_records_per_individual``), so any histogram moves by at most ``b`` in L1 and L2 and a
    selection score ``w_r ||x_r - xhat_r||_1`` by at most ``w_r b`` (``xhat`` comes from noisy
    releases only): the exponential mechanism uses sensitivity ``b max_r w_r``.

    Budget: a zCDP privacy filter, whatever accountant the ledger displays. The budget is
    converted to ``rho = zcdp_rho(eps, delta)`` (the largest rho whose Canonne, Kamath & Steinke
    2020 conversion is ``(eps, delta)``-DP, as in the paper's reference code; Bun & Steinke's
    looser ``rho + 2 sqrt(rho ln 1/delta)``, which dp-arena used before, allows 21% less rho at
    epsilon 1, delta 1e-9; see :func:`dp_arena.privacy.accounting.zcdp_epsilon`; aimed ``2e-13``
    relative
    below). A Gaussian release of sensitivity ``b`` with noise ``sigma`` is ``b^2 / (2 sigma^2)``-zCDP
    and an ``eps``-DP exponential mechanism ``eps^2 / 8``-zCDP (bounded range, Cesar & Rogers
    2021). As in the paper (Alg. 1): with ``T = rounds`` (default ``16 d``) the 1-way
    measurements and every round start at ``sigma_0 = b sqrt(T / (2 * 0.9 rho))`` and
    ``eps_0 = sqrt(8 * 0.1 rho / T)`` (so ``T`` rounds cost ``rho``; when the 1-way
    measurements and two rounds would not fit, a case the paper's ``T = 16 d`` never meets, the
    scale is lowered so that they and ``T`` rounds cost ``rho``). AIM tracks the rho it has used;
    a round is the last when the rho left is at most twice the next round's cost (or after ``T``
    rounds), and the last round spends exactly what is left (90% measurement, 10% selection).
    The noise scales are chosen adaptively from earlier noisy outputs, so the guarantee rests on
    fully adaptive composition with a privacy filter: releases with adaptively chosen zCDP
    costs ``rho_i``, stopped before ``sum_i rho_i`` would exceed ``rho``, are jointly
    ``rho``-zCDP. zCDP is Renyi DP of order ``alpha`` with ``rho alpha`` at every ``alpha``, so
    this is the Renyi filter of Feldman & Zrnic (NeurIPS 2021, "Individual privacy accounting
    via a Renyi filter") applied at every order; Whitehouse, Ramdas, Rogers & Wu (ICML 2023,
    "Fully-adaptive composition in differential privacy") state filters for this setting too.
    The AIM paper relies on the same argument. Hence the run is
    ``(eps, delta)``-DP. Every release is also charged to the ledger when it is made: under
    ``privacy.accountant=zcdp`` the ledger reports ``eps`` (to ``1e-9``, never above); under
    ``gdp`` it composes to the smaller of its two bounds, at most ``eps``, but that composition
    assumes scales fixed in advance, and no filter theorem is known for the min-of-two-bounds.
    So the run reports what it can prove, the filter's full budget ``(eps, delta)``, as
    ``epsilon_spent`` under every accountant (``filter_bound``); ``ledger.json`` keeps the
    per-release charges.
    """
    max_contrib: int | None = None
    workload_degree: int = 3
    max_cells: int | None = 10_000
    rounds: int | None = None
    rounds_per_attribute: int = 16
    max_model_size: float = 80.0
    max_answers_mb: float = 1000.0
    iters: int = 1000
    final_iters: int = 1000
    tol: float | None = 3e-2
    patience: int = 1
    warm_step: bool = True
    final_tol: float | None = 3e-2
    matched_start: bool = True
    name: ClassVar[str] = "aim"
    #: the zCDP filter over the whole budget is AIM's proven bound (see the class docstring)
    filter_bound: ClassVar[bool] = True

    parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "workload_degree": [Interval(int, 1)], "iters": [Interval(int, 1)],
        "final_iters": [Interval(int, 1)], "rounds": [Interval(int, 1), None],
        "rounds_per_attribute": [Interval(int, 1)],
        "max_cells": [Interval(int, 1), None], "max_contrib": [Interval(int, 1), None],
        "max_model_size": [Interval(float, 0, closed="neither")],
        "max_answers_mb": [Interval(float, 0, closed="neither")],
        "tol": [Interval(float, 0), None], "patience": [Interval(int, 1)],
        "final_tol": [Interval(float, 0), None]}

    @property
    def stopping(self) -> dict:
        """The estimator's stopping settings (:func:`dp_arena.mechanisms.pgm.estimate`)."""
        return {"tol": self.tol, "patience": self.patience, "warm_step": self.warm_step}

    # ----- the release plan -------------------------------------------------------------
    @staticmethod
    def round_charges(sigma: float, eps: float, b: float, count: int = 1) -> list[Charge]:
        return [pgm.gaussian_charge("measure", b, sigma, count),
                pgm.exponential_charge("select", b, eps, count)]

    @staticmethod
    def nominal(s: float, T: int, b: float) -> tuple[float, float]:
        """Per-round (sigma, eps) when ``T`` rounds share zCDP scale ``s`` (90% / 10%)."""
        return b * math.sqrt(T / (2 * 0.9 * s)), math.sqrt(8 * 0.1 * s / T)

    def workload(self, domain: dict[str, int]) -> list[tuple[str, ...]]:
        """The workload (see the class docstring), from domain sizes only."""
        return self.sized_workload(domain)[0]

    def sized_workload(self, domain: dict[str, int]
                       ) -> tuple[list[tuple[str, ...]], str | None]:
        """:meth:`workload` and what was trimmed to fit the memory caps (``None``: nothing)."""
        return trimmed_workload(domain, self.workload_degree, self.max_cells,
                                self.max_answers_mb)

    def candidates(self, domain: dict[str, int],
                   work: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
        """The downward closure of ``work`` plus every 1-way marginal, without the cliques
        that alone exceed ``max_model_size``."""
        return self.trimmed_candidates(domain, work)[0]

    def trimmed_candidates(self, domain: dict[str, int], work: list[tuple[str, ...]]
                           ) -> tuple[list[tuple[str, ...]], str | None]:
        """:meth:`candidates` and what was dropped (``None``: nothing)."""
        attrs = list(domain)
        closure = pgm.downward_closure([*work, *[(a,) for a in attrs]], attrs)
        fits = [cl for cl in closure if len(cl) == 1
                or pgm.singletons_plus_one_mb(domain, cl) <= self.max_model_size]
        if len(fits) == len(closure):
            return fits, None
        return fits, (f"{len(closure) - len(fits)} of {len(closure)} candidate marginals alone "
                      f"exceed max_model_size={self.max_model_size:g} MB and are dropped")

    def memory_mb(self, data: Dataset) -> tuple[float, str]:
        """The candidates' answers (float64 cells of the trimmed workload's closure, at most
        ``max_answers_mb``) plus :data:`MODEL_COPIES` x ``max_model_size``: the per-round
        cap is ``max_model_size`` x the budget used so far, never more, and a warm-started
        refit plus reading marginals peaks at about 8.3x the junction tree's size (measured on
        31 MB and 117 MB models, benchmarks/bench_aim_memory.py), plus what scoring the candidates
        remembers (:data:`dp_arena.mechanisms.pgm.marginals.MEMO_CELLS`) and the working memory of
        one candidate's marginal (:data:`dp_arena.mechanisms.pgm.marginals.WORKING_CELLS`; the
        slices and split contractions of ``TreeMarginals`` keep it there). A measured bound,
        not a proof: on a 55-column table at epsilon 10 fits grew past it (by up to 15%)
        until two causes were removed, freed memory the allocator kept
        (:func:`dp_arena.mechanisms.pgm.heap.trim_heap`) and dropped ``TreeMarginals`` a reference
        cycle kept until a garbage collection; since, one runner run on each of three wide
        tables grew to 46-63% of it (docs/pgm-estimation.md, "AIM's memory bound"; the runs in
        benchmarks/RESULTS.md)."""
        domain = data.schema.domain()
        closure, _ = self.trimmed_candidates(domain, self.sized_workload(domain)[0])
        answers = sum(math.prod(domain[a] for a in cl) for cl in closure) * 8 / 2**20
        memo = MEMO_CELLS * 8 / 2**20
        working = WORKING_CELLS * 8 / 2**20
        bound = answers + MODEL_COPIES * self.max_model_size + memo + working
        return bound, (f"{answers:,.0f} MB of candidate answers, at most mechanism."
                       f"max_answers_mb={self.max_answers_mb:g}, + {MODEL_COPIES} x mechanism."
                       f"max_model_size={self.max_model_size:g} MB for estimation, + "
                       f"{memo:g} MB remembered and {working:g} MB of working memory while "
                       f"scoring")

    def notes(self, data: Dataset) -> tuple[str, ...]:
        """What AIM trims on this schema to fit its memory caps (domain sizes only), said
        once per sweep before it starts."""
        domain = data.schema.domain()
        work, trimmed = self.sized_workload(domain)
        dropped = self.trimmed_candidates(domain, work)[1]
        return tuple(n for n in (trimmed, dropped) if n)

    def fit_sample(self, data: Dataset, budget: Budget, release: Releaser,
                   rng: np.random.Generator) -> pd.DataFrame:
        pgm.require_delta("aim", budget)
        start = time.time()
        schema = data.schema
        codes, b = pgm.bounded_codes(data, self.max_contrib, rng)
        domain = schema.domain()
        attrs = list(domain)
        T = self.rounds or self.rounds_per_attribute * len(attrs)

        work, trimmed = self.sized_workload(domain)
        closure, dropped = self.trimmed_candidates(domain, work)
        for note in (trimmed, dropped):
            if note:  # said once per sweep before it starts (notes); here only with -v
                log.info("aim: %s", note)
        weights = candidate_weights(closure, work)
        position = {a: i for i, a in enumerate(attrs)}
        heaviest_first = sorted(range(len(closure)), key=lambda i: -weights[closure[i]])
        answers = {cl: pgm.histogram(codes, cl, domain) for cl in closure}
        cells = {cl: answers[cl].size for cl in closure}

        rho_total = aim_rho_budget(budget)
        scale = initial_scale(rho_total, len(attrs), T)
        sigma, eps = self.nominal(scale, T, b)
        first_charge = len(release.ledger.charges)  # the filter counts this fit's charges

        def rho_used() -> float:
            return sum(c.rho for c in release.ledger.charges[first_charge:])

        def used_fraction(extra: list[Charge]) -> float:
            return min(1.0, (rho_used() + sum(c.rho for c in extra)) / rho_total)

        measurements = []
        for a in attrs:
            measurements.append(pgm.Measurement((a,), release.gaussian(
                f"1-way marginal {a}", answers[(a,)], b, sigma, query=f"marginal {a}",
                note=f"{domain[a]} cells"), sigma))
        total = pgm.initial_total(measurements, domain)
        model = pgm.estimate(domain, measurements, self.iters, total, **self.stopping)
        marginals = pgm.TreeMarginals(model)

        for t in range(1, 10 * T + 1):
            left = rho_total - rho_used()
            round_rho = sum(c.rho for c in self.round_charges(sigma, eps, b))
            last = t >= T or left <= 2 * round_rho  # the paper's filter (Alg. 1)
            if last:  # the final round uses all the rho that is left (90% / 10%)
                sigma, eps = final_round(left, b)
            limit = self.max_model_size * (1.0 if last else used_fraction(
                self.round_charges(sigma, eps, b)))
            admissible = size_admission(closure, [m.clique for m in measurements], domain,
                                        limit)
            pool = admitted_pool(admissible, len(closure))
            scored = closure if pool is None else [closure[i] for i in pool]
            errors = model_errors(marginals, scored, answers, position)
            scores = np.array([weights[cl] * (errors[j] - _BIAS * sigma * cells[cl])
                               for j, cl in enumerate(scored)])
            note = f"{len(closure)} candidates, those within size limit {limit:.3g} MB"
            if pool is None:  # most are admitted: test lazily, by noisy score
                sens = b * next(weights[closure[i]] for i in heaviest_first if admissible(i))
                pick = closure[release.exponential(f"round {t}: select", scores, sens, eps,
                                                   admissible=admissible, note=note)]
            else:  # the admitted candidates alone were scored
                sens = b * max(weights[closure[i]] for i in pool)
                pick = closure[pool[release.exponential(f"round {t}: select", scores, sens, eps,
                                                        note=note)]]
            measurements.append(pgm.Measurement(pick, release.gaussian(
                f"round {t}: measure {' x '.join(pick)}", answers[pick], b, sigma,
                query=f"marginal {' x '.join(pick)}", note=f"{cells[pick]} cells"), sigma))
            before = marginals.marginal(pick)
            total = pgm.initial_total(measurements, domain)
            if last:
                break
            warm = (model.matched_to(pick, measurements[-1].y, before, sigma)
                    if self.matched_start else model.warm_start())
            del model, marginals  # the old beliefs: freed before the refit builds new ones
            trim_heap()  # and the memo's memory returned, not kept resident (heap.py)
            model = pgm.estimate(domain, measurements, self.iters, total, warm_start=warm,
                                 from_start=self.matched_start, **self.stopping)
            marginals = pgm.TreeMarginals(model)
            moved = float(np.abs(marginals.marginal(pick) - before).sum())
            log.info("round %d: %s, sigma %.4g, budget used %.3f, %.1fs", t, pick, sigma,
                     used_fraction([]), time.time() - start)
            if moved <= _BIAS * sigma * cells[pick]:
                sigma, eps = sigma / 2, eps * 2
        release.done()

        warm = (model.matched_to(pick, measurements[-1].y, before, sigma)
                if self.matched_start else model.warm_start())
        del model, marginals
        trim_heap()
        model = pgm.estimate(domain, measurements, self.final_iters, total, warm_start=warm,
                             **{**self.stopping, "tol": self.final_tol})
        tree = pgm.TreeMarginals(model)
        n_rows = pgm.fitted_rows(model, measurements, tree, data, budget.epsilon, b)
        return finish(data, pgm.sample_codes(model, n_rows, rng, attrs, tree), rng)


#: Copies of the junction tree that a round holds at its peak: a warm-started refit and
#: reading marginals from it (8.2-8.3 measured, rounded up; benchmarks/bench_aim_memory.py;
#: see :meth:`AIM.memory_mb`).
MODEL_COPIES = 9


def size_admission(closure: list[tuple[str, ...]], measured: list[tuple[str, ...]],
                   domain: dict[str, int], limit: float) -> Callable[[int], bool]:
    """Whether candidate ``closure[i]`` may be selected this round: it lies inside a measured
    clique, or the model's junction tree with it stays within ``limit`` MB. Domain sizes and
    released cliques only (public). Each answer is computed on first use and remembered for
    the round: the exponential mechanism tests candidates lazily (most rounds test a handful
    of the 16,000-25,000 a 3-way workload has on 50 columns, where testing all took half of
    the run) unless :func:`admitted_pool` finds few admissible, and the junction-tree
    cells of merged components are remembered by their neighbourhoods
    for the round only (each measured clique changes the component it joins, so last round's
    keys rarely recur: kept across rounds they held gigabytes on a 34-column table)."""
    free = set(pgm.downward_closure(measured, list(domain)))
    graph = pgm.ModelGraph.of(domain, measured)
    sizes: dict[tuple[int, int], int] = {}
    answers: dict[int, bool] = {}

    def admissible(i: int) -> bool:
        if i not in answers:
            cl = closure[i]
            answers[i] = cl in free or graph.size_with_mb(cl, sizes) <= limit
        return answers[i]

    return admissible


def admitted_pool(admissible: Callable[[int], bool], n: int,
                  probes: int = 256, share: float = 0.8) -> list[int] | None:
    """The indices of the admitted candidates among ``n``, or ``None`` when most are admitted.

    Tests ``probes`` candidates evenly spaced in candidate order; if more than ``share`` of
    them are admitted, returns ``None`` (score every candidate, test admission lazily in
    noisy-score order: a handful of tests). Otherwise tests all and returns the admitted
    ones, so that only they are scored: late in a run, when the model nears its size limit,
    70% of the candidates can be inadmissible (happiness, 34 columns, epsilon 10: 29-41%
    admitted from round 56 on) and scoring them was most of a round. Either way the
    selection is the exponential mechanism over the admitted candidates; which way is taken
    depends on ``admissible`` only (public: domain sizes, released cliques, the size limit)."""
    step = max(1, math.ceil(n / probes))
    probe = range(0, n, step)
    if sum(map(admissible, probe)) > share * len(probe):
        return None
    return [i for i in range(n) if admissible(i)]


def model_errors(marginals: pgm.TreeMarginals, scored: list[tuple[str, ...]],
                 answers: dict[tuple[str, ...], np.ndarray], position: dict[str, int]
                 ) -> np.ndarray:
    """``||x_r - xhat_r||_1`` of each candidate ``r`` in ``scored`` (in that order), the
    model's marginals computed in the order of the candidates' attribute positions: then
    candidates that share attributes come one after another and reuse the messages
    :class:`~dp_arena.mechanisms.pgm.marginals.TreeMarginals` remembers (least recently used
    forgotten first). On a 55-column table's model at round 40 of a full run at epsilon 10
    (``benchmarks/bench_aim_scoring.py``): 0.91 of the time of the workload's order (sorted
    by cells) with the first-come memo of before at the same 2^21 cells, 0.57 with today's
    ``MEMO_CELLS``. The order changes no value: a remembered array is the one computing it
    again would give."""
    order = sorted(range(len(scored)), key=lambda j: [position[a] for a in scored[j]])
    errors = np.empty(len(scored))
    for j in order:
        cl = scored[j]
        errors[j] = np.abs(answers[cl] - marginals.marginal(cl, keep=False)).sum()
    return errors


def candidate_weights(candidates: list[tuple[str, ...]], work: list[tuple[str, ...]]
                      ) -> dict[tuple[str, ...], float]:
    """AIM's weight of each candidate ``r``: ``w_r = sum_{s in W} |r & s|``. Computed as
    ``sum_{a in r} c_a`` with ``c_a`` the number of workload marginals holding ``a`` (each
    ``|r & s|`` counts the attributes of ``r`` in ``s``): linear in the candidates and the
    workload, where the pairwise sum is their product (25,000 x 24,000 set intersections on
    a 56-column table, minutes before the first round). Same integers (a test compares)."""
    holding: dict[str, int] = {}
    for s in work:
        for a in set(s):
            holding[a] = holding.get(a, 0) + 1
    return {r: float(sum(holding.get(a, 0) for a in set(r))) for r in candidates}


def trimmed_workload(domain: dict[str, int], degree: int, max_cells: int | None,
                     max_answers_mb: float) -> tuple[list[tuple[str, ...]], str | None]:
    """All ``degree``-way marginals with at most ``max_cells`` cells, plus every smaller
    marginal (2+ attributes, within ``max_cells``) that none of them contains; then, while
    the answers of the workload's downward closure would take more than ``max_answers_mb``
    (float64), the largest workload marginal is dropped. Domain sizes only (public). Raises
    before any budget is spent when nothing is left. Returns the workload and what was
    trimmed (``None``: nothing)."""
    attrs = list(domain)
    k = min(degree, len(attrs))

    def cells(cl: tuple[str, ...]) -> int:
        return math.prod(domain[a] for a in cl)

    def fits(cl: tuple[str, ...]) -> bool:
        return max_cells is None or cells(cl) <= max_cells

    top = list(itertools.combinations(attrs, k))
    work = [cl for cl in top if fits(cl)]
    covered = set(pgm.downward_closure(work, attrs))
    for size in range(k - 1, 1, -1):
        extra = [cl for cl in itertools.combinations(attrs, size)
                 if cl not in covered and fits(cl)]
        work += extra
        covered |= set(pgm.downward_closure(extra, attrs))
    dropped_cells = len(top) - sum(1 for cl in work if len(cl) == k)
    budget_cells = max_answers_mb * 2**20 / 8 - sum(domain.values())
    work.sort(key=cells)
    holders: dict[tuple[str, ...], int] = {}  # closure member -> workload marginals holding it
    for cl in work:
        for sub in _subsets(cl):
            holders[sub] = holders.get(sub, 0) + 1
    closure_cells = sum(cells(sub) for sub in holders if len(sub) > 1)
    dropped_memory = 0
    while work and closure_cells > budget_cells:
        for sub in _subsets(work.pop()):
            holders[sub] -= 1
            if holders[sub] == 0 and len(sub) > 1:
                closure_cells -= cells(sub)
        dropped_memory += 1
    if not work and k > 1:
        raise ConfigError(f"no marginal of 2 to {k} attributes fits max_cells={max_cells} and "
                          f"max_answers_mb={max_answers_mb:g}",
                          "raise mechanism.max_cells / mechanism.max_answers_mb, or coarsen "
                          "the widest columns in the schema")
    note = None
    if dropped_cells or dropped_memory:
        note = (f"workload trimmed to fit memory: {dropped_cells} of {len(top)} {k}-way "
                f"marginals have more than max_cells={max_cells} cells (their smaller subsets "
                f"within the cap are kept); {dropped_memory} more dropped so the candidates' "
                f"answers fit max_answers_mb={max_answers_mb:g}; {len(work)} workload "
                "marginals left")
    return work or [(a,) for a in attrs], note


def _subsets(cl: tuple[str, ...]) -> list[tuple[str, ...]]:
    return [sub for r in range(1, len(cl) + 1) for sub in itertools.combinations(cl, r)]
