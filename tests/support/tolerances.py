"""Tolerances derived from the computation, not constants that held on one machine.

Every numerical tolerance in the suite is one of four kinds, and says which where it is
written (a comment on the line or the line above, the test's docstring, or the module's
``Tolerances:`` note; :mod:`tests.test_tolerances` checks that a note is there):

(a) rounding: exact arithmetic or a hand-computed value; the tolerance is a few ulps of the
    result per floating-point operation (:func:`ulps`), or pytest.approx's default 1e-6
    relative, far above the rounding of any short computation;
(b) statistical: a seeded draw of a known noise scale; the tolerance is ``z`` standard errors
    (:func:`binomial_se`, :func:`mean_se`) with ``z`` = :func:`z_quantile` of a stated
    false-failure probability (:data:`FALSE_FAILURE`, 1e-6 per assertion: a hundred such
    assertions fail by chance less than once in 10^4 runs of the suite, whatever seed a
    numpy version maps to);
(c) an iterative solver: its stopping tolerance times the problem's conditioning;
(d) a published number quoted to k digits: half a unit of its last digit.

A trap: ``pytest.approx(x, rel=r)`` also accepts anything within its default ``abs=1e-12``,
so below ``|x| = 1e-12 / r`` the stated ``rel`` is not the tolerance (test_budget_edges' delta
of 1e-10 "agreed to rel=1e-11" only through it, while the two evaluations differed by 4e-9);
where that matters, write ``abs=0`` or an absolute bound derived from the computation.

Algorithms: the normal quantile (scipy.special.ndtri), the binomial, sample-mean and sample-sd
standard errors, the clustered (sandwich) standard error of a share, a Chernoff tail bound of
a sum of Laplace draws, the spacing of a float (numpy.spacing).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import ndtri

FALSE_FAILURE = 1e-6
"""The chance one statistical assertion may fail on a correct implementation."""


def ulps(x: float, n: float) -> float:
    """``n`` units in the last place of ``x`` (the rounding of about ``n`` operations whose
    result has the magnitude of ``x``)."""
    return float(n * np.spacing(abs(float(x))))


def z_quantile(false_failure: float = FALSE_FAILURE) -> float:
    """The two-sided normal quantile: ``|Z| > z`` with probability ``false_failure``
    (4.89 at 1e-6)."""
    return float(ndtri(1.0 - false_failure / 2.0))


def binomial_se(p: float, n: int) -> float:
    """The standard error of a share estimated from ``n`` independent draws of probability
    ``p``: sqrt(p (1 - p) / n)."""
    return math.sqrt(p * (1.0 - p) / n)


def mean_se(sd: float, n: int) -> float:
    """The standard error of the mean of ``n`` independent draws of standard deviation
    ``sd``."""
    return sd / math.sqrt(n)


def sd_rel_se(n: int, excess_kurtosis: float = 0.0) -> float:
    """The relative standard error of a sample standard deviation of ``n`` draws:
    sqrt((2 + kurtosis excess) / (4 n)) (delta method; 1/sqrt(2n) for normal draws, and
    sqrt(5 / (4n)) for Laplace draws, whose excess kurtosis is 3)."""
    return math.sqrt((2.0 + excess_kurtosis) / (4.0 * n))


def statistical(se: float, false_failure: float = FALSE_FAILURE) -> float:
    """The tolerance of a statistical assertion: ``z_quantile(false_failure)`` standard
    errors."""
    return z_quantile(false_failure) * se


def laplace_sum_tail(k: int, scale: float, beta: float) -> float:
    """A ``t`` with P(sum of ``k`` Laplace(``scale``) draws > t) <= ``beta``, for noise that
    fresh draws or an unseedable sampler give: the Chernoff bound with the Laplace moment
    generating function ``1 / (1 - scale^2 s^2)``, minimised over ``s`` in (0, 1/scale)."""
    def bound(x: float) -> float:  # x = scale * s
        return scale * (-k * math.log1p(-x * x) + math.log(1 / beta)) / x
    return float(minimize_scalar(bound, bounds=(1e-9, 1 - 1e-12), method="bounded").fun)


def cluster_share_se(indicator: np.ndarray, clusters: np.ndarray) -> float:
    """The standard error of a share of rows when rows come in correlated clusters (a taxi's
    trips share its random effects): the ratio estimator's sandwich formula, sqrt(k / (k - 1)
    * sum_i (t_i - p n_i)^2) / N over the k clusters with n_i rows and t_i hits."""
    x = np.asarray(indicator, dtype=float)
    _, index = np.unique(np.asarray(clusters), return_inverse=True)
    hits = np.bincount(index, weights=x)
    sizes = np.bincount(index).astype(float)
    k, share = len(sizes), float(x.mean())
    return math.sqrt(k / (k - 1) * float(np.sum((hits - share * sizes) ** 2))) / len(x)
