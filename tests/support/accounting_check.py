"""An independent recomputation of a ledger's (epsilon, delta) with autodp (not with
dp_arena.privacy.accounting)."""

from __future__ import annotations

from autodp import mechanism_zoo, transformer_zoo
from autodp.converter import rdp_to_approxdp


def recomputed_epsilon(charges, delta, accountant):
    """(eps, delta) of the logged charges, composed without dp_arena.privacy.accounting."""
    gauss = [c for c in charges if c.kind == "gaussian"]
    expo = [c for c in charges if c.kind == "exponential"]
    eps_sel = [2 * c.sensitivity / c.scale for c in expo]  # temperature 2 Delta / eps
    if accountant == "zcdp":
        rho = sum(c.sensitivity**2 / (2 * c.scale**2) for c in gauss) + sum(e**2 / 8
                                                                             for e in eps_sel)
        return rdp_to_approxdp(lambda alpha: rho * alpha)(delta)  # Canonne-Kamath-Steinke
    mechs = [mechanism_zoo.GaussianMechanism(c.scale / c.sensitivity) for c in gauss]
    composed = transformer_zoo.ComposeGaussian()(mechs, [1] * len(mechs))
    return composed.get_approxDP(delta) + sum(eps_sel)
