"""``mst``: Maximum Spanning Tree (McKenna, Miklau & Sheldon, JPC 2021), on ``mbi``.

The algorithm, the row count and the privacy argument: :class:`MST`.
"""

from __future__ import annotations

import itertools
import logging
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from dp_arena.data.datasets import Dataset
from dp_arena.params import Constraint, Interval
from dp_arena.privacy.accounting import Budget, Charge
from dp_arena.privacy.release import Releaser

from .. import pgm
from ..base import Mechanism, finish

log = logging.getLogger(__name__)


@dataclass
class MST(Mechanism):
    """MST on ``mbi``: 1-way marginals, a maximum spanning tree of pairs, its marginals.

    Algorithm
    ---------
    1. Measure every 1-way marginal with Gaussian noise (a third of the budget).
    2. Domain compression: in each 1-way measurement, the values whose noisy count is under
       ``3 sigma`` are merged into one "other" value (post-processing of step 1); the
       measurement is re-expressed on the compressed domain (the merged cell is the sum of the
       merged noisy counts divided by ``sqrt(m)``, so its noise stays ``sigma``).
    3. Fit a model to the 1-way measurements: the exact least-squares fit, a product of 1-way
       marginals, each the weighted projection of its noisy marginal onto the simplex scaled to
       the total (:func:`dp_arena.mechanisms.pgm.fit_one_way`; the reference approaches the same fit with
       2,500 mirror-descent iterations). Score every attribute pair by the L1 error
       ``||x_ab - xhat_ab||_1`` of the model's 2-way marginal; build a spanning tree with
       ``d - 1`` exponential-mechanism selections (a third of the budget), each among the pairs
       that join two components (Kruskal order).
    4. Measure the chosen 2-way marginals (the last third); fit all measurements by mirror
       descent (:func:`dp_arena.mechanisms.pgm.estimate`, in NumPy); sample records
       (:func:`dp_arena.mechanisms.pgm.sample_codes`, ``balanced``: less sampling noise than the
       reference's rounding); undo compression: a merged value becomes one of its original
       values with probability proportional to that value's noisy 1-way count clipped at 0
       (the reference: uniformly; both are post-processing of step 1, and on adult this lowers
       the 3-way TVD by about 0.002); decode to schema values.

    Settings (the reference implementation, ryan112358/private-pgm ``dp_arena/mechanisms/mst.py``):
    ``iters = 10000`` mirror-descent iterations for the final fit; ``dp_arena/conf/mechanism/mst_quick.yaml``
    is the budget preset (1,000). The fit stops once its loss has stalled
    (:func:`dp_arena.mechanisms.pgm.mirror_descent.stalled`: at most ``tol`` relative improvement in each of
    ``patience`` blocks of 50 iterations in a row; default ``tol = 0.03``, ``patience = 2``: about
    1,000 iterations on adult at epsilon 1, where the 3-way TVD is no worse than after 10,000;
    ``tol = 1e-7`` is the old setting (fixed iterations), ``tol: null`` runs every iteration as the
    reference does). The rule reads only the loss, a function of the noisy measurements: it is
    post-processing and spends nothing. ``select_iters`` is accepted for old configurations and unused: the 1-way
    fit is exact.
    Size: a pair whose compressed domain has more than ``max_cells`` cells is never a candidate
    (compressed sizes come from the noisy 1-way marginals, so this is post-processing); when no
    candidate pair joins two components the tree stays a forest and the unused selections and
    2-way measurements are not released (the run spends less than its budget, never more).
    Row count: the model's least-squares total, clipped to the public bounds of
    :mod:`dp_arena.mechanisms.row_count` (at least 1,000 rows; at most the schema's ``max_records``, else
    1,000,000).

    Privacy argument
    ----------------
    Private: every attribute of ``data.private`` (the id column is never modelled). Each person
    contributes at most ``b`` rows: ``b = 1`` for record-level data; for user-level data each
    person's rows are clipped to ``b = max_contrib`` rows chosen at random (default, and upper
    limit: the dataset's ``max_records_per_individual``). Adding or removing one person then
    changes any histogram by at most ``b`` in L1 and in L2, and the selection score
    ``||x_ab - xhat_ab||_1`` by at most ``b`` (``xhat`` is computed from noisy releases only).

    Releases, in zCDP units with total ``s``: ``d`` Gaussian 1-way marginals with
    ``sigma_1 = b sqrt(3 d / (2 s))`` (``s/3`` together), ``d - 1`` exponential mechanisms with
    ``eps_sel = sqrt(8 (s/3) / (d - 1))`` (``eps^2/8`` each: ``s/3`` together) and ``d - 1``
    Gaussian 2-way marginals with ``sigma_2 = b sqrt(3 (d - 1) / (2 s))`` (``s/3``); that is the
    paper's ``sigma = sqrt(3 / (2 rho))`` split evenly over the measurements of each third. Every
    release is charged to the ledger. The scale ``s`` is solved so that the ledger's accountant
    composes the whole plan to the budget (a hair below, never above): under
    ``privacy.accountant=zcdp`` this gives
    ``s = rho(eps, delta)``, the paper's calibration (Canonne-Kamath-Steinke conversion, as the
    reference's ``cdp_rho``; :func:`dp_arena.privacy.accounting.zcdp_epsilon`); under ``gdp`` (the
    default) the Gaussian
    releases compose as Gaussian DP and the exponential selections add their epsilons (basic
    composition), which is valid but less efficient, so ``s`` comes out smaller and the noise
    larger than under zcdp (the ledger reports the smaller of that and the zCDP bound).
    Compression, the model fits, the row count (fitted to the noisy measurements), sampling,
    expanding merged values by their noisy 1-way counts, decoding with public values and person
    ids from public data are post-processing.
    """
    max_contrib: int | None = None
    iters: int = 10000
    select_iters: int = 2500
    compress: bool = True
    tol: float | None = 3e-2
    patience: int = 2
    max_cells: int = 1_000_000
    name: ClassVar[str] = "mst"

    parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "iters": [Interval(int, 1)], "select_iters": [Interval(int, 1)],
        "max_cells": [Interval(int, 1)], "max_contrib": [Interval(int, 1), None],
        "tol": [Interval(float, 0), None], "patience": [Interval(int, 1)]}

    # ----- the release plan -------------------------------------------------------------
    @staticmethod
    def plan(s: float, d: int, b: float) -> list[Charge]:
        """The charges of one run at zCDP scale ``s`` (see the class docstring)."""
        if d == 1:
            return [pgm.gaussian_charge("1-way", b, b / math.sqrt(2 * s))]
        return [pgm.gaussian_charge("1-way", b, b * math.sqrt(3 * d / (2 * s)), d),
                pgm.exponential_charge("select", b, math.sqrt(8 * (s / 3) / (d - 1)), d - 1),
                pgm.gaussian_charge("2-way", b, b * math.sqrt(3 * (d - 1) / (2 * s)), d - 1)]

    def fit_sample(self, data: Dataset, budget: Budget, release: Releaser,
                   rng: np.random.Generator) -> pd.DataFrame:
        pgm.require_delta("mst", budget)
        schema = data.schema
        codes, b = pgm.bounded_codes(data, self.max_contrib, rng)
        domain = schema.domain()
        attrs = list(domain)
        d = len(attrs)
        s = pgm.solve_scale(lambda x: self.plan(x, d, b), budget, release.accountant)
        charges = self.plan(s, d, b)

        # 1. one-way marginals
        sigma1 = charges[0].scale
        one_way = []
        for a in attrs:
            one_way.append(pgm.Measurement((a,), release.gaussian(
                f"1-way marginal {a}", pgm.histogram(codes, (a,), domain), b, sigma1,
                query=f"marginal {a}", note=f"{domain[a]} cells"), sigma1))

        # 2. domain compression (post-processing of the noisy one-way marginals)
        kept = {m.clique[0]: (m.y >= 3 * sigma1 if self.compress else np.ones(m.y.size, bool))
                for m in one_way}
        noisy_one_way = {m.clique[0]: m.y for m in one_way}
        small_domain = {a: int(kept[a].sum()) + int((~kept[a]).any()) for a in attrs}
        mapping = {a: _compression_map(kept[a]) for a in attrs}
        measurements = [_compress_measurement(m, kept[m.clique[0]]) for m in one_way]
        small = pd.DataFrame({a: mapping[a][codes[a].to_numpy()] for a in attrs})

        # 3. spanning tree by exponential-mechanism selections
        if d > 1:
            eps_sel = charges[1].pure_epsilon
            total = pgm.initial_total(measurements, small_domain)
            one_way_model = pgm.fit_one_way(small_domain, measurements, total)
            edges = self._select(small, small_domain, one_way_model, eps_sel, b,
                                 release, self.max_cells)
            sigma2 = charges[2].scale
            for edge in edges:
                measurements.append(pgm.Measurement(edge, release.gaussian(
                    f"2-way marginal {' x '.join(edge)}", pgm.histogram(small, edge, small_domain),
                    b, sigma2, query=f"marginal {' x '.join(edge)} kept {_kept_key(kept, edge)}",
                    note=f"{small_domain[edge[0]] * small_domain[edge[1]]} cells"), sigma2))
        release.done()

        # 4. estimate, count, sample, decode
        total = pgm.initial_total(measurements, small_domain)
        model = pgm.estimate(small_domain, measurements, self.iters, total, tol=self.tol,
                             patience=self.patience)
        tree = pgm.TreeMarginals(model)
        n_rows = pgm.fitted_rows(model, measurements, tree, data, budget.epsilon, b)
        synth = pgm.sample_codes(model, n_rows, rng, attrs, tree)
        codes_out = pd.DataFrame({a: _expand(synth[a].to_numpy(), kept[a], rng, noisy_one_way[a])
                                  for a in attrs})
        return finish(data, codes_out, rng)

    @staticmethod
    def _select(codes: pd.DataFrame, domain: dict[str, int],
                model: pgm.TreeMarginals | pgm.ProductMarginals,
                eps_sel: float, b: float, release: Releaser,
                max_cells: int | None = None) -> list[tuple[str, str]]:
        attrs = list(domain)
        pairs = [p for p in itertools.combinations(attrs, 2)
                 if max_cells is None or domain[p[0]] * domain[p[1]] <= max_cells]
        score = {p: float(np.abs(pgm.histogram(codes, p, domain) - model.marginal(p)).sum())
                 for p in pairs}
        comp = {a: a for a in attrs}

        def find(a: str) -> str:
            while comp[a] != a:
                comp[a] = comp[comp[a]]
                a = comp[a]
            return a

        edges = []
        for i in range(len(attrs) - 1):
            candidates = [p for p in pairs if find(p[0]) != find(p[1])]
            if not candidates:  # every joining pair is over max_cells: a forest
                log.warning("mst: no pair of at most max_cells=%d cells joins the %d tree "
                            "components left; %d selections and 2-way measurements are not "
                            "made (budget left unspent)", max_cells, len(attrs) - i,
                            len(attrs) - 1 - i)
                break
            pick = candidates[release.exponential(
                f"select 2-way marginal #{i + 1}", [score[p] for p in candidates], b, eps_sel,
                note=f"{len(candidates)} candidates, L1-error score")]
            comp[find(pick[0])] = find(pick[1])
            edges.append(pick)
        return edges


def _kept_key(kept: dict[str, np.ndarray], edge: tuple[str, str]) -> str:
    """Which values of each attribute of ``edge`` survived compression (the compressed
    marginal's query depends on it; a function of the noisy 1-way marginals)."""
    return "; ".join(",".join(map(str, np.flatnonzero(kept[a]))) for a in edge)


def _compression_map(kept: np.ndarray) -> np.ndarray:
    """Original code -> compressed code (kept values first, the merged ones last)."""
    out = np.full(kept.size, int(kept.sum()), dtype=np.int64)
    out[kept] = np.arange(int(kept.sum()))
    return out


def _compress_measurement(m: pgm.Measurement, kept: np.ndarray) -> pgm.Measurement:
    if kept.all():
        return m
    merged = int((~kept).sum())
    y = np.append(m.y[kept], m.y[~kept].sum() / math.sqrt(merged))
    weights = np.ones(y.size)
    weights[-1] = 1.0 / math.sqrt(merged)
    return pgm.Measurement(m.clique, y, m.sigma, weights)


def _expand(small_codes: np.ndarray, kept: np.ndarray, rng: np.random.Generator,
            noisy: np.ndarray | None = None) -> np.ndarray:
    """Compressed codes -> original codes. The merged code becomes one of its values, with
    probability proportional to that value's noisy 1-way count clipped at 0 (``noisy``; all
    equal when every such count is <= 0 or ``noisy`` is None)."""
    kept_values = np.flatnonzero(kept)
    merged_values = np.flatnonzero(~kept)
    out = np.empty(small_codes.size, dtype=np.int64)
    is_kept = small_codes < kept_values.size
    out[is_kept] = kept_values[small_codes[is_kept]]
    if (~is_kept).any():
        w = (np.ones(merged_values.size) if noisy is None
             else np.maximum(np.asarray(noisy, dtype=float)[merged_values], 0.0))
        if not w.sum() > 0:
            w = np.ones(merged_values.size)
        out[~is_kept] = rng.choice(merged_values, size=int((~is_kept).sum()), p=w / w.sum())
    return out
