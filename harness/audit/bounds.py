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

mu-GDP (Dong, Roth & Su 2019): a mu-GDP mechanism has ``FNR >= Phi(Phi^-1(1 - FPR) - mu)``
for every test, so ``mu_lb = max(Phi^-1(1 - FPR_upper) - Phi^-1(FNR_upper), 0)`` (and the
swapped form) is a lower bound on mu at the same confidence. ``eps_gdp`` converts it to epsilon
at the run's delta (:func:`harness.privacy.accounting.gdp_epsilon`): an *estimate* that assumes
the mechanism's privacy curve is Gaussian (true of Gaussian-noise mechanisms, not in general),
never used for the verdict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import stats

from harness.privacy.accounting import gdp_epsilon


@dataclass(frozen=True)
class ErrorCounts:
    """A test's errors on the evaluation runs: false positives among ``n0`` runs on D (said
    D'), false negatives among ``n1`` runs on D' (said D)."""

    fp: int
    n0: int
    fn: int
    n1: int


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
    fpr_u = cp_upper(counts.fp, counts.n0, level)
    fnr_u = cp_upper(counts.fn, counts.n1, level)
    mu_lb = mu_from_rates(fpr_u, fnr_u)
    eps_gdp = gdp_epsilon(mu_lb, delta) if delta > 0 else (0.0 if mu_lb == 0 else math.nan)
    return Bound(fpr=counts.fp / counts.n0 if counts.n0 else math.nan,
                 fnr=counts.fn / counts.n1 if counts.n1 else math.nan,
                 fpr_upper=fpr_u, fnr_upper=fnr_u,
                 eps_lb=eps_from_rates(fpr_u, fnr_u, delta), mu_lb=mu_lb,
                 confidence=confidence, eps_gdp=eps_gdp)
