"""``aim``: Adaptive and Iterative Mechanism (McKenna, Mullins, Sheldon & Miklau, VLDB 2022),
on ``mbi``.

Algorithm
---------
- Workload ``W``: all ``workload_degree``-way marginals (default 3), weight 1 each, optionally
  only those with at most ``max_cells`` cells. Candidates: the downward closure of ``W``, a
  candidate ``r`` weighted by ``w_r = sum_{s in W} |r & s|``.
- Start: every 1-way marginal measured with ``sigma_0``; fit an ``mbi`` model.
- Round ``t``: keep the candidates that are already inside a measured clique or keep the
  model's junction tree under ``max_model_size * (budget used so far)`` MB; select one with
  the exponential mechanism on ``w_r (||x_r - xhat_r||_1 - sqrt(2/pi) sigma n_r)``
  (``n_r`` cells); measure it with Gaussian noise ``sigma``; refit (warm start). If the refit
  moved that marginal by at most ``sqrt(2/pi) sigma n_r`` in L1, halve ``sigma`` and double the
  selection epsilon (each round then costs 4x as much). When less than two more rounds fit in
  the budget, the last round uses exactly what is left (90% measurement, 10% selection).
- Finally refit with ``final_iters``, derive the row count from the noisy measurements,
  sample records and decode them to schema values.

Privacy argument
----------------
Private: every attribute of ``data.private`` (the id column is never modelled). Each person
contributes at most ``b`` rows (``b = 1`` for record-level data; for user-level data rows are
clipped to ``b = max_contrib`` per person; default, and upper limit: the dataset's
``max_records_per_individual``), so any histogram moves by at most ``b`` in L1 and L2 and a
selection score ``w_r ||x_r - xhat_r||_1`` by at most ``w_r b`` (``xhat`` comes from noisy
releases only): the exponential mechanism uses sensitivity ``b max_r w_r``.

Budget, in zCDP units with total ``s`` and ``T = rounds`` (default ``16 d``): the initial
per-round plan is ``sigma_0 = b sqrt(T / (2 * 0.9 s))`` and ``eps_0 = sqrt(8 * 0.1 s / T)``
(so ``T`` rounds cost exactly ``s``); the 1-way measurements are charged too. ``s`` is solved
so that ``T`` nominal rounds compose to exactly the budget under the ledger's accountant
(``s = rho(eps, delta)`` under ``privacy.accountant=zcdp``: the paper's calibration). When
``T`` is small for the number of attributes (the 1-way measurements and two rounds would not
fit, a case the paper's ``T = 16 d`` never meets), ``s`` is solved for the 1-way measurements
plus ``T`` rounds instead. Every
release is charged to the ledger when it is made; the "two more rounds fit" test and the
last round's size are computed by composing the ledger's actual charges with the ledger's
accountant, so the run spends exactly its budget under either accountant. Under ``gdp`` the
exponential selections compose by adding their epsilons (basic composition): valid, but
AIM's many selections make it much less efficient than under zcdp.
"""

from __future__ import annotations

import itertools
import logging
import math
import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from harness.data.datasets import Dataset
from harness.errors import ConfigError
from harness.privacy.accounting import Budget, Charge, Ledger, compose

from . import pgm
from .base import Mechanism

_BIAS = math.sqrt(2.0 / math.pi)
log = logging.getLogger(__name__)


@dataclass
class AIM(Mechanism):
    max_contrib: int | None = None
    workload_degree: int = 3
    max_cells: int | None = None
    rounds: int | None = None
    max_model_size: float = 80.0
    iters: int = 1000
    final_iters: int = 1000
    name: ClassVar[str] = "aim"

    def __post_init__(self) -> None:
        for key in ("workload_degree", "iters", "final_iters"):
            value = getattr(self, key)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"mechanism.{key} must be a positive integer (got {value!r})",
                                  f"set mechanism.{key} to a positive integer")
        for key in ("rounds", "max_cells", "max_contrib"):
            value = getattr(self, key)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ConfigError(f"mechanism.{key} must be a positive integer or null "
                                  f"(got {value!r})", f"set mechanism.{key}=null")
        if not (isinstance(self.max_model_size, (int, float)) and self.max_model_size > 0):
            raise ConfigError(f"mechanism.max_model_size must be > 0 MB "
                              f"(got {self.max_model_size!r})", "set mechanism.max_model_size=80")

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
        attrs = list(domain)
        k = min(self.workload_degree, len(attrs))
        work = [cl for cl in itertools.combinations(attrs, k)
                if self.max_cells is None or math.prod(domain[a] for a in cl) <= self.max_cells]
        if not work:
            raise ConfigError(f"no {k}-way marginal has at most max_cells={self.max_cells} cells",
                              "raise mechanism.max_cells or set it to null")
        return work

    def fit_sample(self, data: Dataset, budget: Budget, ledger: Ledger,
                   rng: np.random.Generator) -> pd.DataFrame:
        pgm.require_delta("aim", budget)
        start = time.time()
        schema = data.schema
        codes, b = pgm.bounded_codes(data, self.max_contrib, rng)
        domain = schema.domain()
        attrs = list(domain)
        T = self.rounds or 16 * len(attrs)

        work = self.workload(domain)
        closure = pgm.downward_closure(work, attrs)
        weights = {cl: float(sum(len(set(cl) & set(w)) for w in work)) for cl in closure}
        answers = {cl: pgm.histogram(codes, cl, domain) for cl in closure}
        cells = {cl: answers[cl].size for cl in closure}

        scale = pgm.solve_scale(lambda x: self.round_charges(*self.nominal(x, T, b), b, T),
                                budget, ledger.accountant)
        sigma, eps = self.nominal(scale, T, b)
        start_charges = [pgm.gaussian_charge("1-way", b, sigma, len(attrs)),
                         *self.round_charges(sigma, eps, b, 2)]
        if compose(start_charges, budget.delta, ledger.accountant)[0] > budget.epsilon:
            # few rounds for many attributes: the 1-way measurements must be in the plan
            scale = pgm.solve_scale(lambda x: [
                pgm.gaussian_charge("1-way", b, self.nominal(x, T, b)[0], len(attrs)),
                *self.round_charges(*self.nominal(x, T, b), b, T)], budget, ledger.accountant)
            sigma, eps = self.nominal(scale, T, b)

        def used_fraction(extra: list[Charge]) -> float:
            return min(1.0, sum(c.rho for c in [*ledger.charges, *extra]) / scale)

        measurements = []
        for a in attrs:
            ledger.charge(f"1-way marginal {a}", "gaussian", b, sigma, note=f"{domain[a]} cells")
            measurements.append(pgm.Measurement((a,), pgm.gaussian_release(
                answers[(a,)], sigma, rng), sigma))
        total = pgm.initial_total(measurements, domain)
        model = pgm.estimate(domain, measurements, self.iters, total)
        marginals = pgm.TreeMarginals(model)

        for t in range(1, 10 * T + 1):
            two_more = [*ledger.charges, *self.round_charges(sigma, eps, b, count=2)]
            last = t >= T or compose(two_more, budget.delta, ledger.accountant)[0] > budget.epsilon
            if last:
                r = pgm.solve_scale(lambda x: self.round_charges(
                    b / math.sqrt(2 * 0.9 * x), math.sqrt(8 * 0.1 * x), b),
                    budget, ledger.accountant, prior=ledger.charges)
                sigma, eps = b / math.sqrt(2 * 0.9 * r), math.sqrt(8 * 0.1 * r)
            limit = self.max_model_size * (1.0 if last else used_fraction(
                self.round_charges(sigma, eps, b)))
            measured = [m.clique for m in measurements]
            free = set(pgm.downward_closure(measured, attrs))
            candidates = [cl for cl in closure
                          if cl in free or pgm.model_size_mb(domain, [*measured, cl]) <= limit]
            scores = np.array([weights[cl] * (np.abs(answers[cl] - marginals.marginal(cl)).sum()
                                              - _BIAS * sigma * cells[cl]) for cl in candidates])
            sens = b * max(weights[cl] for cl in candidates)
            pick = candidates[pgm.exponential_mechanism(scores, eps, sens, rng)]
            ledger.charge(f"round {t}: select", "exponential", sens, 2 * sens / eps,
                          note=f"{len(candidates)} candidates, size limit {limit:.3g} MB")
            ledger.charge(f"round {t}: measure {' x '.join(pick)}", "gaussian", b, sigma,
                          note=f"{cells[pick]} cells")
            measurements.append(pgm.Measurement(pick, pgm.gaussian_release(
                answers[pick], sigma, rng), sigma))
            before = marginals.marginal(pick)
            total = pgm.initial_total(measurements, domain)
            if last:
                break
            model = pgm.estimate(domain, measurements, self.iters, total, warm_start=model)
            marginals = pgm.TreeMarginals(model)
            moved = float(np.abs(marginals.marginal(pick) - before).sum())
            log.debug("round %d: %s (%d candidates), sigma %.4g, budget used %.3f, %.1fs", t,
                      pick, len(candidates), sigma, used_fraction([]), time.time() - start)
            if moved <= _BIAS * sigma * cells[pick]:
                sigma, eps = sigma / 2, eps * 2

        model = pgm.estimate(domain, measurements, self.final_iters, total, warm_start=model)
        n_rows = pgm.fitted_total(model, measurements)
        if data.unit == "user":
            n_rows *= pgm.public_clip_ratio(
                data, lambda df: pgm.contribution_weights(df, data.id_column, b))
        n_rows = max(1, round(n_rows))
        return pgm.finish(data, pgm.sample_codes(model, n_rows, rng, attrs), rng)
