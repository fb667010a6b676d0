"""Privacy accounting: budgets, calibration helpers and the per-run ledger.

Every noisy release of a mechanism is charged to the run's :class:`Ledger`, which composes
all charges with a named accountant and refuses a charge that would exceed the budget.

Accountants
-----------
``gdp`` (default, tight)
    Gaussian charges compose exactly as one Gaussian mechanism with
    ``mu = sqrt(sum_i (Delta_i / sigma_i)^2)`` (Gaussian differential privacy, Dong, Roth & Su
    2019), converted to (eps, delta) with the analytic Gaussian mechanism (Balle & Wang 2018):
    ``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``, evaluated in log space
    (the gap of the two log Phi's as an integral, :func:`log_ndtr_gap`, so it keeps its digits
    at tiny epsilon) and inverted with ``brentq`` (autodp's ``get_eps_ana_gaussian`` agrees to
    ~1e-10 but is jittery at ~1e-12, too coarse for calibrations that must land just below the
    budget).
    When pure-DP charges (Laplace, exponential mechanism) are mixed in, two valid bounds are
    computed and the smaller is reported: their epsilons added on top of the Gaussian part
    (basic composition), and the ``zcdp`` accountant's bound for all the charges. Valid, not
    tight; no privacy filter is known for that minimum, so adaptive stopping rules (AIM) are
    stated in zCDP (rho) instead.
``zcdp``
    Everything is converted to zero-concentrated DP (Bun & Steinke 2016): a Gaussian with
    noise multiplier ``z = sigma/Delta`` is ``1/(2 z^2)``-zCDP, an eps-DP Laplace release
    ``eps^2/2``-zCDP, an eps exponential mechanism ``eps^2/8``-zCDP (bounded range, Cesar &
    Rogers 2021); rho adds up and converts to (eps, delta) with Canonne, Kamath & Steinke's
    (2020) bound (:func:`zcdp_epsilon`; the private-pgm reference, smartnoise-synth and OpenDP
    use it too), never above Bun & Steinke's ``eps = rho + 2 sqrt(rho ln(1/delta))`` (which
    the Sprint 3 adaptive-grid write-up's printed sigmas come from; its text derives the noise
    by Gaussian DP, 003_*.txt lines 78 and 82): at epsilon 1, delta 1e-9 it allows rho 0.01497
    instead of 0.01178 (noise 11% smaller).
``zcdp_bs``
    The ``zcdp`` composition (the same rho for every charge), converted with Bun & Steinke's
    (2016, Prop. 1.3) ``eps = rho + 2 sqrt(rho ln(1/delta))``, i.e. a budget allows
    ``rho = (sqrt(eps + ln(1/delta)) - sqrt(ln(1/delta)))^2`` (:func:`bun_steinke_rho`). Valid
    and looser than ``zcdp``; it is the conversion of the Minutemen's Sprint 3 adaptive-grid
    write-up, whose sigmas it reproduces exactly (66 measurements at delta 2.5e-5: 5739.36 at
    epsilon 1, C 150; 895.42 at epsilon 10, C 200, printed "895"; ``zcdp`` gives 4677.41 and
    833.01, 18.5% and 7.0% smaller). Runs under it are labelled ``accountant=zcdp_bs``.

Every accountant reports a release made only of pure-DP charges as ``(sum eps, 0)``.

Declared charges
----------------
A ``declared`` charge (:meth:`Ledger.declare`) records an ``(epsilon, delta)`` that a
mechanism outside dp-arena's release API claims for itself (an external contestant, whose noise
the ledger never sees). It composes with everything else by basic composition: its epsilon and
delta are added to the total of the other charges. Nothing checks the claim.

Never over budget
-----------------
The ledger refuses any charge after which the composed epsilon (or delta) would exceed the
budget: there is no upward tolerance. Calibration helpers therefore aim a hair below
(:data:`CALIBRATION_HEADROOM`, relative): :func:`laplace_scale` and :func:`gaussian_sigma`
widen the noise by that factor (under gdp, :func:`fitting_gdp_mu` checks mu against the
ledger's own conversion), so releases calibrated to exactly
the budget (and rounding in sums of shares) still fit, ``epsilon_spent`` landing within
``1e-9`` below the budget.
:meth:`Ledger.remaining_pure_epsilon` answers "what is left" for chained mechanisms: the largest
epsilon of further pure-DP releases that keeps the ledger's own composition (:func:`compose`,
including its min of two bounds under ``gdp``) within budget, solved numerically with
``brentq`` on :func:`compose` and stepped down to the feasible side, far enough that the
ledger's own rounding (it recomposes the charges one at a time) cannot take the total over
(:func:`largest_fitting`, which also calibrates whole release plans such as MST's); likewise
:meth:`Ledger.remaining_rho` for further Gaussian releases in zCDP units.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any, Literal

import numpy as np
from scipy.special import erfcx, log_ndtr

from dp_arena.errors import BudgetExceededError, ConfigError

Accountant = Literal["gdp", "zcdp", "zcdp_bs"]
ACCOUNTANTS: tuple[str, ...] = ("gdp", "zcdp", "zcdp_bs")
#: The accountants that compose every charge in rho (zCDP); they differ in the conversion of
#: rho to (epsilon, delta): ``zcdp`` Canonne-Kamath-Steinke, ``zcdp_bs`` Bun-Steinke.
ZCDP_ACCOUNTANTS: tuple[str, ...] = ("zcdp", "zcdp_bs")
#: The accountant runs use unless ``privacy.accountant`` says otherwise.
DEFAULT_ACCOUNTANT: Accountant = "gdp"
NoiseKind = Literal["gaussian", "laplace", "exponential"]
#: What a ledger entry can be: a noisy release, or a budget declared by the mechanism itself.
ChargeKind = Literal["gaussian", "laplace", "exponential", "declared"]
#: Relative amount by which calibrations aim below the budget, so that float rounding never
#: takes a release calibrated to "exactly the budget" over it (the ledger has no tolerance).
CALIBRATION_HEADROOM = 2e-13
#: Relative slack in mu that :func:`fitting_gdp_mu` also checks, for rounding when the ledger
#: recomposes charges calibrated with shares (sums of squares of ~100 terms: ~1e-14).
_SUM_ROUNDING = 1e-13
_FLOAT_EPS = 2.220446049250313e-16


@dataclass(frozen=True)
class Budget:
    """A privacy budget ``(epsilon, delta)``; ``delta = 0`` means pure DP."""

    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        eps, delta = self.epsilon, self.delta
        if not isinstance(eps, (int, float)) or not math.isfinite(eps) or eps <= 0:
            raise ConfigError(f"privacy.epsilon must be a finite number > 0 (got {eps!r})",
                              "set privacy.epsilon to a positive value, e.g. privacy.epsilon=1")
        if not isinstance(delta, (int, float)) or not (0 <= delta < 1):
            raise ConfigError(f"privacy.delta must be in [0, 1) (got {delta!r})",
                              "set privacy.delta to e.g. 1e-6, or 0 for pure DP")

    def split(self, fraction: float) -> Budget:
        """The share ``fraction`` of both epsilon and delta (basic composition)."""
        if not 0 < fraction <= 1:
            raise ConfigError(f"budget fraction must be in (0, 1] (got {fraction})",
                              "use a split whose shares are positive and sum to 1")
        return Budget(self.epsilon * fraction, self.delta * fraction)


# ----- conversions ------------------------------------------------------------------------
#: Gauss-Legendre nodes and weights on [-1, 1] for :func:`log_ndtr_gap` (a fixed rule).
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(12)
_SQRT2, _SQRT_2_OVER_PI = math.sqrt(2.0), math.sqrt(2.0 / math.pi)



def root_between(*args, **kwargs) -> float:
    """scipy's ``brentq``, imported on first use (scipy.optimize costs a third of a second to
    import, which every command would pay before checking its arguments)."""
    from scipy.optimize import brentq

    return brentq(*args, **kwargs)

def log_ndtr_gap(a: float, gap: float) -> float:
    """``log Phi(a) - log Phi(a - gap)`` for ``gap >= 0``. For a gap under 1 it is the
    integral of the inverse Mills ratio ``phi(x) / Phi(x)`` over ``[a - gap, a]`` by 12-point
    Gauss-Legendre (the ratio is analytic in a strip of half-width > 2.5 around the real line,
    so the rule is exact to rounding: within 6e-15 of a 40-digit evaluation for a in [-30, 8];
    the gap is passed, not recomputed from ``a - gap``). The difference of the two logarithms
    loses ``log10(|log Phi(a)| / gap)`` digits: 1e-9 relative at epsilon 1e-6, delta 1e-10,
    which made calibrations aimed 1e-12 below the budget overshoot it."""
    if gap >= 1.0:
        return float(log_ndtr(a) - log_ndtr(a - gap))
    x = a - 0.5 * gap + 0.5 * gap * _GL_NODES
    mills = _SQRT_2_OVER_PI / erfcx(-x / _SQRT2)  # phi(x) / Phi(x), stable at every x
    return float(0.5 * gap * np.dot(_GL_WEIGHTS, mills))


def analytic_gaussian_delta(epsilon: float, mu: float) -> float:
    """delta of a mu-GDP mechanism at ``epsilon`` (Balle & Wang 2018, Thm. 8), evaluated in
    log space, ``Phi(a) (1 - exp(eps - (log Phi(a) - log Phi(b))))`` with ``a, b = -eps/mu
    +- mu/2``, so the difference of two nearly equal terms keeps its digits (``expm1``, and
    :func:`log_ndtr_gap` for the gap of the logarithms)."""
    if mu <= 0:
        return 0.0
    a = -epsilon / mu + mu / 2
    log_ratio = epsilon - log_ndtr_gap(a, mu)
    if log_ratio >= 0:
        return 0.0
    return float(math.exp(log_ndtr(a)) * -math.expm1(log_ratio))


#: The conversions below are pure functions of public numbers (budgets, noise multipliers),
#: computed by root finding; an audit or a sweep asks the same ones thousands of times, so
#: each process remembers its recent answers (the same floats in, the same float out).
CONVERSION_CACHE = 4096


@lru_cache(maxsize=CONVERSION_CACHE)
def gdp_epsilon(mu: float, delta: float) -> float:
    """Smallest epsilon at which a mu-GDP mechanism is (epsilon, delta)-DP: the root of
    :func:`analytic_gaussian_delta` in epsilon (``brentq`` to a few ulps; agrees with autodp's
    ``get_eps_ana_gaussian`` to ~1e-10 and, unlike it, is smooth at the 1e-13 level that
    calibrations aiming just below the budget rely on)."""
    if mu <= 0:
        return 0.0
    if delta <= 0:
        return math.inf
    def excess(eps: float) -> float:
        return analytic_gaussian_delta(eps, mu) - delta

    if excess(0.0) <= 0:
        return 0.0
    hi = max(1.0, mu * mu)
    while excess(hi) > 0:
        hi *= 2.0
    return float(root_between(excess, 0.0, hi, xtol=1e-300, rtol=4 * _FLOAT_EPS, maxiter=500))


@lru_cache(maxsize=CONVERSION_CACHE)
def gdp_mu(epsilon: float, delta: float) -> float:
    """Largest mu such that mu-GDP implies (epsilon, delta)-DP."""
    if delta <= 0:
        raise ConfigError("Gaussian noise needs delta > 0",
                          "set privacy.delta > 0 or use a pure-DP (Laplace) mechanism")
    f = lambda log_mu: analytic_gaussian_delta(epsilon, math.exp(log_mu)) - delta
    lo, hi = math.log(1e-8), math.log(1e4)
    while f(lo) > 0:  # tiny epsilon and delta: mu below 1e-8
        lo -= 10.0
    while f(hi) < 0:  # huge epsilon: mu above 1e4
        hi += 2.0
    return math.exp(root_between(f, lo, hi, xtol=1e-14, rtol=1e-14))


@lru_cache(maxsize=CONVERSION_CACHE)
def fitting_gdp_mu(epsilon: float, delta: float) -> float:
    """:func:`gdp_mu` aimed a hair below: the first ``mu (1 - h 2^k)`` (``h`` =
    :data:`CALIBRATION_HEADROOM`, ``k = 0, 1, ...``) at which the ledger's own conversion
    :func:`gdp_epsilon`, sampled at 9 points within a rounding slack around that mu, stays at
    most ``epsilon`` by more than the spread of those samples (the conversion is a numerical
    root, jittery at ~1e-12 for tiny epsilons; the spread measures that jitter)."""
    mu, step = gdp_mu(epsilon, delta), CALIBRATION_HEADROOM
    for _ in range(80):
        cand = mu * (1.0 - step)
        eps = [gdp_epsilon(cand * (1 + k * _SUM_ROUNDING / 4), delta) for k in range(-4, 5)]
        if max(eps) + (max(eps) - min(eps)) <= epsilon:
            return cand
        step *= 2.0
    raise ValueError(f"no Gaussian calibration fits epsilon={epsilon!r}, delta={delta!r}")


def conversion_edge(rho: float, delta: float) -> float | None:
    """The epsilon of a zCDP-to-(epsilon, delta) conversion at its edges, where every bound
    agrees: 0 for ``rho <= 0`` (nothing spent) or ``delta >= 1`` (no guarantee asked),
    infinite for ``delta <= 0``; None elsewhere."""
    if rho <= 0 or delta >= 1:
        return 0.0
    if delta <= 0:
        return math.inf
    return None


def zcdp_epsilon(rho: float, delta: float) -> float:
    """Smallest epsilon at which rho-zCDP is (epsilon, delta)-DP by Canonne, Kamath & Steinke
    (2020, Prop. 12): for every ``alpha > 1`` it is ``(eps_alpha, delta)``-DP with
    ``eps_alpha = alpha rho + (L + (alpha - 1) ln(alpha - 1) - alpha ln alpha) / (alpha - 1)``,
    ``L = ln(1/delta)``; the minimising ``alpha`` is the root of
    ``rho (alpha - 1)^2 + ln alpha = L``. It is never above Bun & Steinke's (2016)
    ``rho + 2 sqrt(rho L)`` (the same bound without the ``ln`` terms, which are negative), and
    any ``alpha`` gives a valid bound, so an imprecise root only loosens it. The private-pgm
    reference code, smartnoise-synth and OpenDP convert with this bound."""
    edge = conversion_edge(rho, delta)
    if edge is not None:
        return edge
    log_inv = math.log(1.0 / delta)
    bun_steinke = rho + 2.0 * math.sqrt(rho * log_inv)
    hi = 1.0 + math.sqrt(log_inv / rho)
    alpha = root_between(lambda a: rho * (a - 1.0) ** 2 + math.log(a) - log_inv, 1.0, hi,
                   xtol=1e-300, rtol=4 * _FLOAT_EPS, maxiter=500)
    if alpha <= 1.0:
        return bun_steinke
    # (L + (a-1) ln(a-1) - a ln a) / (a-1), written without the cancellation of the two
    # large logarithm terms (a reaches 1e6 at tiny rho)
    eps = (alpha * rho + (log_inv - math.log(alpha)) / (alpha - 1.0)
           + math.log1p(-1.0 / alpha))
    return max(0.0, min(eps, bun_steinke))


def zcdp_rho(epsilon: float, delta: float) -> float:
    """Largest rho whose conversion :func:`zcdp_epsilon` is (epsilon, delta)-DP (solved with
    ``brentq`` from Bun-Steinke's closed-form rho, which it is never below, and stepped down
    to the feasible side)."""
    if delta <= 0:
        raise ConfigError("zCDP accounting needs delta > 0",
                          "set privacy.delta > 0 or use a pure-DP (Laplace) mechanism")
    log_inv = math.log(1.0 / delta)
    # Bun-Steinke's rho, (sqrt(L + eps) - sqrt(L))^2, written without cancellation
    lo = (epsilon / (math.sqrt(log_inv + epsilon) + math.sqrt(log_inv))) ** 2
    if zcdp_epsilon(lo, delta) >= epsilon:
        return lo
    hi = 2.0 * lo
    while zcdp_epsilon(hi, delta) <= epsilon:
        lo, hi = hi, 2.0 * hi
    rho = root_between(lambda r: zcdp_epsilon(r, delta) - epsilon, lo, hi, xtol=1e-300,
                 rtol=4 * _FLOAT_EPS, maxiter=500)
    while zcdp_epsilon(rho, delta) > epsilon:  # never over: step down to the feasible side
        rho -= 4.0 * math.ulp(rho)
    return rho


def bun_steinke_epsilon(rho: float, delta: float) -> float:
    """Bun & Steinke's (2016, Prop. 1.3) conversion: rho-zCDP is
    ``(rho + 2 sqrt(rho ln(1/delta)), delta)``-DP (the ``zcdp_bs`` accountant's)."""
    edge = conversion_edge(rho, delta)
    if edge is not None:
        return edge
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def bun_steinke_rho(epsilon: float, delta: float) -> float:
    """Largest rho whose :func:`bun_steinke_epsilon` is at most ``epsilon``:
    ``(sqrt(eps + L) - sqrt(L))^2`` with ``L = ln(1/delta)`` (written without cancellation),
    stepped down to the feasible side if rounding put it a hair over."""
    if delta <= 0:
        raise ConfigError("zCDP accounting needs delta > 0",
                          "set privacy.delta > 0 or use a pure-DP (Laplace) mechanism")
    log_inv = math.log(1.0 / delta)
    rho = (epsilon / (math.sqrt(log_inv + epsilon) + math.sqrt(log_inv))) ** 2
    while bun_steinke_epsilon(rho, delta) > epsilon:
        rho -= 4.0 * math.ulp(rho)
    return rho


def accountant_rho(epsilon: float, delta: float, accountant: Accountant) -> float:
    """The rho an ``(epsilon, delta)`` budget allows under a zCDP accountant
    (:data:`ZCDP_ACCOUNTANTS`): :func:`zcdp_rho` or :func:`bun_steinke_rho`."""
    if accountant == "zcdp_bs":
        return bun_steinke_rho(epsilon, delta)
    if accountant == "zcdp":
        return zcdp_rho(epsilon, delta)
    raise ValueError(f"{accountant!r} is not a zCDP accountant")


def accountant_epsilon(rho: float, delta: float, accountant: Accountant) -> float:
    """epsilon of rho-zCDP at ``delta`` under a zCDP accountant: :func:`zcdp_epsilon` or
    :func:`bun_steinke_epsilon`."""
    if accountant == "zcdp_bs":
        return bun_steinke_epsilon(rho, delta)
    if accountant == "zcdp":
        return zcdp_epsilon(rho, delta)
    raise ValueError(f"{accountant!r} is not a zCDP accountant")


# ----- calibration ------------------------------------------------------------------------
def laplace_scale(epsilon: float, l1_sensitivity: float) -> float:
    """Laplace scale ``b = Delta_1 / epsilon`` for one epsilon-DP release, widened by
    :data:`CALIBRATION_HEADROOM` so the release costs a hair less than ``epsilon``."""
    return l1_sensitivity / epsilon * (1.0 + CALIBRATION_HEADROOM)


def gaussian_sigma(n: int, l2_sensitivity: float, budget: Budget,
                   accountant: Accountant = "gdp", share: float = 1.0) -> float:
    """Noise sigma for ``n`` Gaussian releases of L2 sensitivity ``Delta`` whose composition
    is exactly ``budget``-DP under ``accountant``; with ``share < 1``, whose composition takes
    that share of the accountant's additive Gaussian budget (mu^2 under gdp, rho under zcdp),
    so releases calibrated with shares summing to 1 compose to exactly ``budget`` (a hair
    below, never above: under gdp via :func:`fitting_gdp_mu`, under zcdp and zcdp_bs sigma
    widened by :data:`CALIBRATION_HEADROOM`)."""
    check_accountant(accountant)
    if n < 1:
        raise ValueError("n must be >= 1")
    if not 0 < share <= 1:
        raise ValueError(f"share must be in (0, 1] (got {share!r})")
    if accountant == "gdp":
        sigma = l2_sensitivity * math.sqrt(n) / fitting_gdp_mu(budget.epsilon, budget.delta)
    else:
        rho = accountant_rho(budget.epsilon, budget.delta, accountant)
        sigma = l2_sensitivity * math.sqrt(n / (2.0 * rho))
        sigma *= 1.0 + CALIBRATION_HEADROOM
    return sigma if share == 1 else sigma / math.sqrt(share)


def analytic_gaussian_sigma(epsilon: float, delta: float, l2_sensitivity: float) -> float:
    """Analytic Gaussian mechanism (Balle & Wang 2018): the smallest sigma that makes one
    release of L2 sensitivity Delta (epsilon, delta)-DP, valid for every epsilon > 0."""
    return gaussian_sigma(1, l2_sensitivity, Budget(epsilon, delta), "gdp")


def check_accountant(name: str) -> None:
    if name not in ACCOUNTANTS:
        raise ConfigError(f"unknown accountant {name!r}",
                          f"set privacy.accountant to one of {list(ACCOUNTANTS)}")


# ----- the ledger -------------------------------------------------------------------------
@dataclass(frozen=True)
class Charge:
    """One (or ``count`` identical) noisy release(s).

    ``sensitivity`` is the L2 sensitivity for Gaussian noise and the L1 sensitivity for
    Laplace noise (for the exponential mechanism: the score's sensitivity). ``scale`` is sigma,
    the Laplace b, or the exponential mechanism's temperature ``2 Delta / epsilon``.
    A ``declared`` charge (:meth:`Ledger.declare`) has no noise: its ``epsilon`` and ``delta``
    are the claim.
    """

    name: str
    kind: ChargeKind
    sensitivity: float
    scale: float
    count: int = 1
    note: str = ""
    epsilon: float = 0.0
    delta: float = 0.0

    @property
    def pure_epsilon(self) -> float:
        """epsilon of one pure-DP release (Laplace / exponential)."""
        if self.kind == "laplace":
            return self.sensitivity / self.scale
        if self.kind == "exponential":
            return 2.0 * self.sensitivity / self.scale
        raise ValueError("a Gaussian release is not pure DP")

    @property
    def gdp_mu_squared(self) -> float:
        return self.count * (self.sensitivity / self.scale) ** 2

    @property
    def rho(self) -> float:
        if self.kind == "gaussian":
            return self.count * self.sensitivity**2 / (2.0 * self.scale**2)
        eps = self.pure_epsilon
        return self.count * (eps**2 / 2.0 if self.kind == "laplace" else eps**2 / 8.0)


def compose(charges: list[Charge], delta: float, accountant: Accountant) -> tuple[float, float]:
    """Total (epsilon, delta) of ``charges`` under ``accountant`` at target ``delta``."""
    check_accountant(accountant)
    declared = [c for c in charges if c.kind == "declared"]
    if declared:  # basic composition on top of the rest
        eps, rest_delta = compose([c for c in charges if c.kind != "declared"], delta,
                                  accountant)
        return (eps + sum(c.epsilon for c in declared),
                rest_delta + sum(c.delta for c in declared))
    if not charges:
        return 0.0, 0.0
    gaussian = [c for c in charges if c.kind == "gaussian"]
    pure = [c for c in charges if c.kind != "gaussian"]
    pure_eps = sum(c.count * c.pure_epsilon for c in pure)
    if not gaussian:
        return pure_eps, 0.0
    by_zcdp = zcdp_epsilon(sum(c.rho for c in charges), delta)
    if accountant == "gdp":
        mu = math.sqrt(sum(c.gdp_mu_squared for c in gaussian))
        by_gdp = pure_eps + gdp_epsilon(mu, delta)
        # Both are valid (epsilon, delta) bounds for the same releases; the smaller one holds.
        return (min(by_gdp, by_zcdp) if pure else by_gdp), delta
    if accountant == "zcdp_bs":
        return bun_steinke_epsilon(sum(c.rho for c in charges), delta), delta
    return by_zcdp, delta


def largest_fitting(plan: Callable[[float], list[Charge]], budget: Budget,
                    accountant: Accountant, prior: Sequence[Charge] = (), guess: float = 1.0,
                    headroom: float = CALIBRATION_HEADROOM) -> float:
    """Largest ``x > 0`` such that ``prior + plan(x)`` composes under ``accountant`` to at most
    ``budget.epsilon * (1 - headroom)`` (``plan`` must get more expensive as ``x`` grows, and
    ``x`` be in budget units: each charge's cost at least proportional to ``sqrt(x)``); 0 if
    no ``x`` fits. The search doubles or halves from ``guess`` to a bracket, solves with
    ``brentq`` and steps down to the feasible side, so it never overshoots; and further down
    until ``x (1 + 1e-13)`` fits too, so the ledger, which recomposes the charges one at a time
    and rounds its sums differently (~1e-16 per term), accepts every one of them at any epsilon
    (at tiny epsilon the conversion to epsilon magnifies a relative change in mu by thousands)."""
    target = budget.epsilon * (1.0 - headroom)

    def excess(x: float) -> float:
        return compose([*prior, *plan(x)], budget.delta, accountant)[0] - target

    if compose(list(prior), budget.delta, accountant)[0] >= target:
        return 0.0
    lo, hi = 0.0, guess
    for _ in range(2000):
        if excess(hi) > 0:
            break
        lo, hi = hi, 2.0 * hi
    if lo == 0.0:
        lo = hi
        while excess(lo) > 0:
            lo /= 2.0
            if lo < 1e-300:
                return 0.0
    x = lo if excess(lo) == 0 else root_between(excess, lo, hi, xtol=1e-300, rtol=4 * _FLOAT_EPS,
                                          maxiter=500)
    step = 4.0 * _FLOAT_EPS
    # never overshoot, not even after the ledger's rounding: step down to the feasible side
    while excess(x) > 0 or excess(x * (1.0 + _SUM_ROUNDING)) > 0:
        x *= 1.0 - step
        step = min(2.0 * step, 0.5)
        if x < 1e-300:
            return 0.0
    return x


@dataclass
class Ledger:
    """The privacy ledger of one run: every noisy release is charged here.

    ``unit`` names the privacy unit the sensitivities refer to (``record`` or ``user:<id>``).
    """

    budget: Budget
    accountant: Accountant = "gdp"
    unit: str = "record"
    charges: list[Charge] = field(default_factory=list)

    def __post_init__(self) -> None:
        check_accountant(self.accountant)

    def charge(self, name: str, kind: NoiseKind, sensitivity: float, scale: float,
               count: int = 1, note: str = "") -> Charge:
        """Record a release; raise :class:`BudgetExceededError` (recording nothing) if the
        composition would exceed the budget."""
        if kind not in ("gaussian", "laplace", "exponential"):
            raise ValueError(f"unknown noise kind {kind!r}")
        if not (sensitivity > 0 and scale > 0 and count >= 1):
            raise ValueError(f"charge {name!r}: sensitivity, scale and count must be positive")
        new = Charge(name, kind, float(sensitivity), float(scale), int(count), note)
        eps, delta = compose([*self.charges, new], self.budget.delta, self.accountant)
        if eps > self.budget.epsilon or delta > self.budget.delta:
            raise BudgetExceededError(
                f"charge {name!r} ({kind}, sensitivity {sensitivity:g}, scale {scale:g}, "
                f"x{count}) would bring the total to epsilon={eps:.6g}, delta={delta:.3g}, over "
                f"the budget epsilon={self.budget.epsilon:g}, delta={self.budget.delta:g}",
                "the mechanism must calibrate its noise to the budget it was given",
            )
        self.charges.append(new)
        return new

    def declare(self, name: str, epsilon: float, delta: float = 0.0, note: str = "") -> Charge:
        """Record a ``declared`` charge: ``(epsilon, delta)`` claimed by a mechanism whose noise
        the ledger does not see (see the module docstring); refused (recording nothing) if the
        total would exceed the budget."""
        if not (epsilon > 0 and math.isfinite(epsilon) and 0 <= delta < 1):
            raise ValueError(f"declared charge {name!r}: epsilon must be finite and > 0, "
                             "delta in [0, 1)")
        new = Charge(name, "declared", 0.0, 0.0, 1, note, float(epsilon), float(delta))
        eps, total_delta = compose([*self.charges, new], self.budget.delta, self.accountant)
        if eps > self.budget.epsilon or total_delta > self.budget.delta:
            raise BudgetExceededError(
                f"declared charge {name!r} (epsilon={epsilon:g}, delta={delta:g}) would bring "
                f"the total to epsilon={eps:.6g}, delta={total_delta:.3g}, over the budget "
                f"epsilon={self.budget.epsilon:g}, delta={self.budget.delta:g}",
                "declare at most the budget the run was given")
        self.charges.append(new)
        return new

    def spent(self) -> tuple[float, float]:
        return compose(self.charges, self.budget.delta, self.accountant)

    def remaining_pure_epsilon(self, shares: Sequence[float] = (1.0,),
                               kind: NoiseKind = "laplace") -> float:
        """The largest ``E`` such that further pure-DP releases (``kind``: Laplace or the
        exponential mechanism) of epsilons ``E * shares[i]`` keep the composed total under the
        ledger's accountant within the budget, aimed :data:`CALIBRATION_HEADROOM` below it;
        0 if nothing is left. Solved with ``brentq`` on :func:`compose` itself."""
        if kind == "gaussian" or not shares or any(not s > 0 for s in shares):
            raise ValueError("remaining_pure_epsilon needs pure-DP kind and positive shares")
        temperature = 2.0 if kind == "exponential" else 1.0

        def plan(total_eps: float) -> list[Charge]:
            return [Charge("plan", kind, 1.0, temperature / (total_eps * s)) for s in shares]

        return largest_fitting(plan, self.budget, self.accountant, self.charges,
                               self.budget.epsilon / sum(shares))

    def remaining_rho(self) -> float:
        """The largest rho (zCDP units; ``mu^2 / 2`` of a Gaussian release) of one further
        Gaussian release that keeps the composed total within budget (a hair below); 0 if
        nothing is left or the budget is pure DP."""
        if self.budget.delta <= 0:
            return 0.0

        def plan(rho: float) -> list[Charge]:
            return [Charge("plan", "gaussian", 1.0, 1.0 / math.sqrt(2.0 * rho))]

        return largest_fitting(plan, self.budget, self.accountant, self.charges,
                               zcdp_rho(self.budget.epsilon, self.budget.delta))

    def to_dict(self) -> dict[str, Any]:
        eps, delta = self.spent()
        return {
            "budget": asdict(self.budget),
            "accountant": self.accountant,
            "unit": self.unit,
            "spent": {"epsilon": eps, "delta": delta},
            "charges": [asdict(c) for c in self.charges],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1)
