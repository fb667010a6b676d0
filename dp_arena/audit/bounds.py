"""From a test's error counts to a lower bound on epsilon.

A mechanism that is (epsilon, delta)-DP bounds every test that tells D from D' by its output:
``FPR + e^epsilon FNR >= 1 - delta`` and ``FNR + e^epsilon FPR >= 1 - delta`` (Kairouz et al.
2015). With upper confidence bounds on both error rates, each rearranges to a lower bound:

    eps_lb = max(ln((1 - delta - FNR_upper) / FPR_upper), ln((1 - delta - FPR_upper) / FNR_upper), 0)

(the second is the first with the roles of D and D' swapped). The upper bounds are one-sided
Clopper-Pearson (exact binomial) bounds, ``beta.ppf(level, k + 1, n - k)``. Both must hold at
once, so the confidence is split between the two rates (Bonferroni): each is computed at
``1 - (1 - confidence) / 2``; then both formulas (they use the same two bounds) hold together
with probability at least ``confidence``.

Pooled counts (the release view's symmetrized runs): an error count that is the sum of two
independent binomials with rates ``q1``, ``q2`` over ``n`` runs each (a Poisson-binomial with
mean ``2 n q``, ``q`` the mean rate) has a lighter lower tail than ``Binomial(2n, q)`` at least
one below its mean (Hoeffding 1956, Theorem 4: ``P(S <= c) <= P(B <= c)`` for ``c <= 2nq - 1``).
The Clopper-Pearson upper bound computed for ``k + 1`` errors of ``2n`` is then a valid upper
bound on ``q`` for the observed ``k``: it excludes ``q`` only if ``k + 1 <= w*``, where ``w*``,
the largest count with binomial CDF below ``1 - level < 1/2``, lies below the median, hence
``w* - 1 <= 2nq - 1``, and ``P(S <= w* - 1) <= P(B <= w* - 1) < 1 - level``.

mu-GDP (Dong, Roth & Su 2019): a mu-GDP mechanism has ``FNR >= Phi(Phi^-1(1 - FPR) - mu)``
for every test, so ``mu_lb = max(Phi^-1(1 - FPR_upper) - Phi^-1(FNR_upper), 0)`` (and the
swapped form) is a lower bound on mu at the same confidence. ``eps_gdp`` converts it to epsilon
at the run's delta (:func:`dp_arena.privacy.accounting.gdp_epsilon`): an *estimate* that assumes
the mechanism's privacy curve is Gaussian (true of Gaussian-noise mechanisms, not in general),
never used for the verdict.

Power yardstick (:func:`attainable_eps_lb`): the largest bound these numbers of evaluation runs
could give even for a mechanism that leaks *exactly* its claim to the strongest possible test
(its errors on the (epsilon, delta)-DP trade-off curve ``FNR = max(0, 1 - delta - e^eps FPR,
e^-eps (1 - delta - FPR))``, error counts at their expected values). A measured bound far below
it means the canary and statistic see much less than the claim allows (typical for a black-box
audit of a mechanism composing many releases); a yardstick near 0 means more runs are needed
before any bound can show.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from dp_arena.privacy.accounting import gdp_epsilon


@dataclass(frozen=True)
class ErrorCounts:
    """A test's errors on the evaluation runs: false positives among ``n0`` runs on D (said
    D'), false negatives among ``n1`` runs on D' (said D). ``pooled``: each count is a sum of
    two binomials with different rates (the symmetrized runs of
    :func:`dp_arena.audit.decision.symmetrized`), bounded as described in the module
    docstring."""

    fp: int
    n0: int
    fn: int
    n1: int
    pooled: bool = False


@dataclass(frozen=True)
class Bound:
    """Point error rates, their upper confidence bounds and the lower bounds they give."""

    fpr: float
    fnr: float
    fpr_upper: float
    fnr_upper: float
    eps_lb: float
    mu_lb: float
    confidence: float
    eps_gdp: float = math.nan


def cp_upper(k: int, n: int, level: float) -> float:
    """One-sided Clopper-Pearson upper bound at ``level`` on a rate with ``k`` of ``n``."""
    if n <= 0 or k >= n:
        return 1.0
    return float(stats.beta.ppf(level, k + 1, n - k))


def eps_from_rates(fpr_upper: float, fnr_upper: float, delta: float) -> float:
    """max of both rearranged DP inequalities, floored at 0."""
    best = 0.0
    for a, b in ((fnr_upper, fpr_upper), (fpr_upper, fnr_upper)):
        top = 1.0 - delta - a
        if top > 0 and b > 0:
            best = max(best, math.log(top / b))
    return best


def mu_from_rates(fpr_upper: float, fnr_upper: float) -> float:
    """Lower bound on mu-GDP from the two upper bounds (symmetric), floored at 0."""
    ppf = stats.norm.ppf
    best = 0.0
    for a, b in ((fpr_upper, fnr_upper), (fnr_upper, fpr_upper)):
        if 0 < a < 1 and 0 < b < 1:
            best = max(best, float(ppf(1 - a) - ppf(b)))
    return best


def lower_bound(counts: ErrorCounts, delta: float, confidence: float) -> Bound:
    """The audit's bounds at ``confidence`` (split between the two rates, Bonferroni)."""
    level = 1.0 - (1.0 - confidence) / 2.0
    extra = 1 if counts.pooled else 0  # module docstring: sums of two binomials
    fpr_u = cp_upper(counts.fp + extra, counts.n0, level)
    fnr_u = cp_upper(counts.fn + extra, counts.n1, level)
    mu_lb = mu_from_rates(fpr_u, fnr_u)
    eps_gdp = gdp_epsilon(mu_lb, delta) if delta > 0 else (0.0 if mu_lb == 0 else math.nan)
    return Bound(fpr=counts.fp / counts.n0 if counts.n0 else math.nan,
                 fnr=counts.fn / counts.n1 if counts.n1 else math.nan,
                 fpr_upper=fpr_u, fnr_upper=fnr_u,
                 eps_lb=eps_from_rates(fpr_u, fnr_u, delta), mu_lb=mu_lb,
                 confidence=confidence, eps_gdp=eps_gdp)


def claim_fnr(fpr: float, epsilon: float, delta: float) -> float:
    """The smallest FNR any test can have at ``fpr`` against an (epsilon, delta)-DP
    mechanism (the trade-off curve of the claim)."""
    return max(0.0, 1.0 - delta - math.exp(epsilon) * fpr,
               math.exp(-epsilon) * (1.0 - delta - fpr))


def gdp_fnr(fpr: float, mu: float) -> float:
    """The smallest FNR any test can have at ``fpr`` against a mu-GDP mechanism."""
    return float(stats.norm.cdf(stats.norm.ppf(1.0 - fpr) - mu))


def attainable_eps_lb(epsilon: float, delta: float, n0: int, n1: int, confidence: float,
                      mu: float | None = None, points: int = 400) -> float:
    """The best bound an ideal test could show with ``n0``/``n1`` evaluation runs on a
    mechanism exactly at its claim (see the module docstring): the maximum over false-positive
    rates of the bound from the expected error counts. ``mu``: the claim is mu-GDP (a Gaussian
    mechanism under the gdp accountant), whose curve is stricter than its (epsilon, delta)."""
    if n0 <= 0 or n1 <= 0:
        return 0.0
    level = 1.0 - (1.0 - confidence) / 2.0
    best = 0.0
    for fpr in np.geomspace(1.0 / n0, 0.5, points):
        fp = int(round(fpr * n0))
        fnr = gdp_fnr(fp / n0, mu) if mu is not None else claim_fnr(fp / n0, epsilon, delta)
        fn = int(round(fnr * n1))
        best = max(best, eps_from_rates(cp_upper(fp, n0, level), cp_upper(fn, n1, level), delta))
    return best
