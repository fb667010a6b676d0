"""dp_arena.mechanisms.pgm.mirror_descent's stopping rule and warm starts: hand-built problems,
no wall time. The properties: the rule stops at the first block where it holds and not
before; a fit warm-started from converged potentials of the same measurements stops in far
fewer steps at the same loss; the early-stopped estimate is within the distance its loss gap
allows of the exact optimum, as a fixed-iteration fit is.

Tolerances: (a) the recorded loss is recomputed from the same marginals (sums in another order:
rel=1e-9) and a shorter fixed-iteration fit follows the same path (the same operations:
rel=1e-12, room for BLAS reassociation); the expanded potentials' joint equals the first one's
(a zero potential adds exactly 0; rtol=1e-12, and atol=1e-15 for entries of a 360-cell joint,
~3e-3 each).
"""

import math

import numpy as np
import pandas as pd
import pytest

from dp_arena.mechanisms import pgm
from dp_arena.mechanisms.pgm.mirror_descent import CALLBACK_EVERY, mirror_descent, stalled

DOMAIN = {"a": 3, "b": 4, "c": 2, "d": 5, "e": 3}
SIGMA = 5.0
N = 4000


def toy_codes(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, N)
    b = (a + rng.integers(0, 2, N)) % 4
    c = (b > 1).astype(int) ^ (rng.random(N) < 0.1)
    d = rng.integers(0, 5, N)
    e = (d + rng.integers(0, 2, N)) % 3
    return pd.DataFrame({"a": a, "b": b, "c": c, "d": d, "e": e})


def noisy(cliques, seed: int = 1) -> list[pgm.Measurement]:
    codes = toy_codes()
    rng = np.random.default_rng(seed)
    return [pgm.Measurement(cl, h + rng.normal(0.0, SIGMA, size=h.shape), SIGMA)
            for cl in cliques for h in [pgm.histogram(codes, cl, DOMAIN)]]


ONE_WAY = [("a",), ("b",), ("c",), ("d",), ("e",)]
TREE = [*ONE_WAY, ("a", "b"), ("b", "c"), ("d", "e")]


def loss_of(model, measurements) -> float:
    """``sum_m ||mu_m - y_m||^2 / (2 sigma_m^2)`` from the model's marginals, computed apart
    from the fit."""
    tm = pgm.TreeMarginals(model)
    return sum(0.5 * float(np.sum((tm.marginal(m.clique) - m.y) ** 2)) / m.sigma**2
               for m in measurements)


def test_stalled_by_hand():
    # improvements 0.001 and 0.001 against 1e-3 * ~10: both within tol
    assert stalled([10.0, 9.999, 9.998], tol=1e-3, patience=2)
    # the earlier of the two improvements (5) is not
    assert not stalled([10.0, 5.0, 4.999], tol=1e-3, patience=2)
    assert stalled([10.0, 5.0, 4.999], tol=1e-3, patience=1)
    # fewer than patience + 1 block losses: never
    assert not stalled([10.0, 10.0], tol=1e-3, patience=2)
    # below a loss of 1 the threshold is absolute (tol * 1)
    assert stalled([0.5, 0.4995, 0.499], tol=1e-3, patience=2)
    assert not stalled([0.5, 0.498, 0.497], tol=1e-3, patience=2)
    # a loss that went up counts as no improvement
    assert stalled([3.0, 3.0, 3.1], tol=0.0, patience=2)


def test_stops_at_the_first_block_where_the_rule_holds_and_not_before():
    ms = noisy(TREE)
    cap = 20_000
    tol = 1e-6
    fit = mirror_descent(DOMAIN, ms, cap, float(N), tol=tol)
    blocks = fit.iterations // CALLBACK_EVERY
    assert fit.iterations < cap and fit.iterations == blocks * CALLBACK_EVERY
    assert len(fit.block_losses) == blocks
    assert stalled(fit.block_losses, tol, 2)
    assert not any(stalled(fit.block_losses[:k], tol, 2) for k in range(1, blocks))
    # the recorded losses are the fit's: the reported loss is recomputed from the marginals,
    # and a fixed-iteration fit of fewer blocks follows the same path
    assert fit.loss == pytest.approx(loss_of(fit, ms), rel=1e-9)
    assert fit.block_losses[-1] == fit.loss
    shorter = mirror_descent(DOMAIN, ms, (blocks - 1) * CALLBACK_EVERY, float(N), tol=None)
    assert shorter.loss == pytest.approx(fit.block_losses[-2], rel=1e-12)
    assert shorter.iterations == (blocks - 1) * CALLBACK_EVERY


def test_without_tol_every_iteration_runs():
    fit = mirror_descent(DOMAIN, noisy(TREE), 120, float(N), tol=None)
    assert fit.iterations == 120  # blocks of 50, 50 and 20
    assert len(fit.block_losses) == 3


@pytest.mark.parametrize("warm_step", [False, True])
def test_warm_start_from_converged_potentials_stops_fast_at_the_same_loss(warm_step):
    ms = noisy(TREE)
    tol = 1e-6
    cold = mirror_descent(DOMAIN, ms, 20_000, float(N), tol=tol)
    warm = mirror_descent(DOMAIN, ms, 20_000, float(N), tol=tol, warm_start=cold,
                          warm_step=warm_step)
    # the fewest steps the rule allows: patience + 1 blocks (the first is never compared)
    assert warm.iterations == 3 * CALLBACK_EVERY
    assert cold.iterations >= 4 * warm.iterations
    # Armijo steps never raise the loss; each of the warm fit's blocks improves it by no
    # more than the cold fit's last blocks did, which the rule bounded by tol * loss
    assert warm.loss <= cold.loss * (1 + 1e-12)
    assert cold.loss - warm.loss <= len(warm.block_losses) * tol * max(cold.loss, 1.0)


def joint(potentials) -> np.ndarray:
    """The model's full joint distribution over the 360-cell toy domain (brute force)."""
    attrs = list(DOMAIN)
    grids = np.meshgrid(*[np.arange(DOMAIN[a]) for a in attrs], indexing="ij")
    logp = np.zeros([DOMAIN[a] for a in attrs])
    for cl, table in potentials.items():
        logp = logp + np.asarray(table)[tuple(grids[attrs.index(a)] for a in cl)]
    p = np.exp(logp - logp.max())
    return p / p.sum()


def test_a_new_clique_warm_starts_from_the_previous_model_extended_by_zeros():
    """AIM's rounds: the previous round's potentials, moved into the new model's cliques and
    a new clique given zeros, are the previous model exactly (the next fit's start)."""
    from dp_arena.mechanisms.pgm.mirror_descent import expand_potentials

    first = mirror_descent(DOMAIN, noisy(TREE), 300, float(N), tol=None)
    new = [("a", "b"), ("b", "c"), ("d", "e"), ("a", "c", "e")]
    start = expand_potentials(first.potentials, new, DOMAIN)
    assert not np.any(start[("a", "c", "e")])
    np.testing.assert_allclose(joint(start), joint(first.potentials), rtol=1e-12, atol=1e-15)


def test_early_stopped_estimate_is_within_its_loss_gap_of_the_exact_optimum():
    """1-way measurements have an exact least-squares model (pgm.fit_one_way), so the loss
    optimum ``L*`` is known. The loss is ``1/sigma^2``-strongly convex in the measured
    marginals and the optimum is the minimiser over a convex set, so any model's measured
    marginals lie within ``sigma sqrt(2 (L - L*))`` (L2, all measurements together) of the
    optimum's: the early-stopped fit and a fixed-iteration fit are then within the sum of
    their two radii of each other."""
    ms = noisy(ONE_WAY, seed=3)
    total = float(N)
    exact = pgm.fit_one_way(DOMAIN, ms, total)
    best = sum(0.5 * float(np.sum((exact.marginal(m.clique) - m.y) ** 2)) / SIGMA**2
               for m in ms)
    stopped = mirror_descent(DOMAIN, ms, 20_000, total, tol=1e-4)
    fixed = mirror_descent(DOMAIN, ms, 3000, total, tol=None)
    assert stopped.iterations < fixed.iterations
    for fit in (stopped, fixed):
        assert fit.loss >= best * (1 - 1e-12)

    def distance(a, b) -> float:
        return math.sqrt(sum(float(np.sum((a.marginal(m.clique) - b.marginal(m.clique)) ** 2))
                             for m in ms))

    s_tm, f_tm = pgm.TreeMarginals(stopped), pgm.TreeMarginals(fixed)
    # the loss gap plus its float rounding (the losses are sums of ~20 terms of size ~best)
    radius = {id(fit): SIGMA * math.sqrt(2 * (max(fit.loss - best, 0.0) + 1e-12 * best))
              for fit in (stopped, fixed)}
    assert distance(s_tm, exact) <= radius[id(stopped)] * (1 + 1e-9) + 1e-9
    assert distance(f_tm, exact) <= radius[id(fixed)] * (1 + 1e-9) + 1e-9
    assert distance(s_tm, f_tm) <= (radius[id(stopped)] + radius[id(fixed)]) * (1 + 1e-9)
    # and tol bounds how far the stopped loss is from the optimum here: well under the
    # noise (a loss gap of 1 is one sigma^2 of squared error over all cells)
    assert stopped.loss - best <= 1.0


def test_tree_problem_early_stop_stays_near_the_fixed_iteration_fit():
    """With 2-way measurements the optimum is not known in closed form; a long fixed run
    stands in for it (its loss ``L_f``, lower than the stopped fit's ``L_s``). Strong
    convexity in the measured marginals bounds their squared distance (scaled by
    ``1/sigma^2``) by ``2 (sqrt(L_s - L*) + sqrt(L_f - L*))^2``; with ``L* <= L_f`` and the
    long run converged (``L_f - L* <= L_s - L_f`` here), that is at most
    ``2 (2 sqrt(L_s - L_f))^2 = 8 (L_s - L_f)``."""
    ms = noisy(TREE)
    stopped = mirror_descent(DOMAIN, ms, 20_000, float(N), tol=1e-4)
    fixed = mirror_descent(DOMAIN, ms, 10 * stopped.iterations, float(N), tol=None)
    assert fixed.loss <= stopped.loss
    s_tm, f_tm = pgm.TreeMarginals(stopped), pgm.TreeMarginals(fixed)
    scaled = sum(float(np.sum((s_tm.marginal(m.clique) - f_tm.marginal(m.clique)) ** 2))
                 / m.sigma**2 for m in ms)
    assert scaled <= 8 * (stopped.loss - fixed.loss) + 1e-9
