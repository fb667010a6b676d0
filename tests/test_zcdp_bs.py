"""The ``zcdp_bs`` accountant: zCDP composition converted with Bun & Steinke (2016), the
conversion of the Minutemen's Sprint 3 write-up, whose sigmas it reproduces to the printed
digits (``../shared/seeds/003_*.txt`` line 82).

Tolerances: (a) Bun-Steinke's closed forms evaluated two ways (square roots, a log and sums):
rel=1e-12 is ~4,500 ulps; (c) spending checks rel=1e-9 (the calibrations' root-finding target,
test_budget_edges.assert_spends_the_budget).
"""

import math
import re

import pytest

from dp_arena.data.datasets import PROJECT_ROOT
from dp_arena.errors import BudgetExceededError, ConfigError
from dp_arena.privacy.accounting import (
    ACCOUNTANTS,
    Budget,
    Ledger,
    accountant_epsilon,
    accountant_rho,
    bun_steinke_epsilon,
    bun_steinke_rho,
    check_accountant,
    compose,
    gaussian_sigma,
    zcdp_epsilon,
    zcdp_rho,
)
from dp_arena.run.dp_select import remaining_budget
from tests.support.tolerances import ulps

DELTA = 2.5e-5
#: The source documents (read-only, beside the checkout; tests needing them skip without).
SEEDS_DIR = PROJECT_ROOT.parent / "shared" / "seeds"
#: The write-up's figures as printed (003 line 82): epsilon, clipping C, sigma.
WRITEUP = [(1.0, 150, "5739.36"), (10.0, 200, "895")]


@pytest.mark.parametrize("eps, delta", [(1.0, DELTA), (10.0, DELTA), (0.01, 1e-9),
                                        (1e-6, 1e-10), (300.0, 1e-6)])
def test_bun_steinke_rho_is_the_closed_form_and_round_trips(eps, delta):
    log_inv = math.log(1 / delta)
    rho = bun_steinke_rho(eps, delta)
    # the reference's difference of two square roots is known to 2 ulps of sqrt(eps + L), and
    # its square to twice that relative to the difference (1.7e-8 relative at epsilon 1e-6,
    # where rel=1e-9 held only through approx's implicit abs=1e-12, 92 times rho itself)
    gap = math.sqrt(eps + log_inv) - math.sqrt(log_inv)
    assert rho == pytest.approx(gap**2, abs=2 * gap * ulps(math.sqrt(eps + log_inv), 2)
                                + ulps(gap**2, 4))
    back = bun_steinke_epsilon(rho, delta)
    assert back <= eps and back == pytest.approx(eps, rel=1e-12, abs=0)
    # CKS (the zcdp accountant) is never looser: it allows at least as much rho
    assert zcdp_rho(eps, delta) >= rho
    assert zcdp_epsilon(rho, delta) <= back
    assert accountant_rho(eps, delta, "zcdp_bs") == rho
    assert accountant_rho(eps, delta, "zcdp") == zcdp_rho(eps, delta)
    assert accountant_epsilon(rho, delta, "zcdp_bs") == back


def test_bun_steinke_edges_and_the_accountant_name():
    assert bun_steinke_epsilon(0.0, DELTA) == 0.0
    assert bun_steinke_epsilon(0.1, 0.0) == math.inf
    with pytest.raises(ConfigError, match="delta"):
        bun_steinke_rho(1.0, 0.0)
    with pytest.raises(ValueError, match="zCDP accountant"):
        accountant_rho(1.0, DELTA, "gdp")
    assert "zcdp_bs" in ACCOUNTANTS
    check_accountant("zcdp_bs")
    with pytest.raises(ConfigError, match="accountant"):
        check_accountant("bun_steinke")


def writeup_figures() -> list[tuple[float, int, str]]:
    """The (epsilon, C, sigma) sentences of the Minutemen write-up, parsed from its text."""
    text = " ".join(next(SEEDS_DIR.glob("003_*.txt")).read_text().split())
    found = re.findall(r"epsilon=(\d+\.\d+)\$ and .*?clipping value of \$C=(\d+)\$.*?"
                       r"noise scale of (\d+(?:\.\d+)?)\.", text, flags=re.IGNORECASE)
    return [(float(e), int(c), s) for e, c, s in found]


def test_the_figures_checked_are_the_writeups():
    if not SEEDS_DIR.is_dir():
        pytest.skip(f"the source documents are not at {SEEDS_DIR}")
    assert writeup_figures() == WRITEUP


@pytest.mark.parametrize("eps, C, printed", WRITEUP)
def test_zcdp_bs_reproduces_the_writeup_sigmas(eps, C, printed):
    """66 Gaussian measurements of L2 sensitivity C at delta 2.5e-5, calibrated by the
    zcdp_bs accountant, round to the write-up's printed sigma; the ledger under zcdp_bs
    spends exactly the budget with them (a hair below), and refuses one more."""
    budget = Budget(eps, DELTA)
    sigma = gaussian_sigma(66, C, budget, "zcdp_bs")
    digits = len(printed.partition(".")[2])
    assert f"{sigma:.{digits}f}" == printed
    ledger = Ledger(budget, "zcdp_bs")
    ledger.charge("marginals", "gaussian", C, sigma, count=66)
    rho = 66 * C**2 / (2 * sigma**2)
    spent = ledger.spent()[0]
    assert spent == pytest.approx(rho + 2 * math.sqrt(rho * math.log(1 / DELTA)), rel=1e-12)
    assert spent <= eps and spent == pytest.approx(eps, rel=1e-9)
    with pytest.raises(BudgetExceededError):
        ledger.charge("one more", "gaussian", C, sigma)
    # the zcdp (CKS) accountant reports less for the same releases and calibrates less noise
    assert compose(ledger.charges, DELTA, "zcdp")[0] < spent
    assert gaussian_sigma(66, C, budget, "zcdp") < sigma


def test_pure_charges_compose_in_rho_under_zcdp_bs():
    ledger = Ledger(Budget(5.0, 1e-6), "zcdp_bs")
    ledger.charge("laplace", "laplace", 1.0, 1.0 / 0.5)  # eps 0.5: rho 0.125
    ledger.charge("exp", "exponential", 1.0, 2.0 / 0.4)  # eps 0.4: rho 0.02
    ledger.charge("gauss", "gaussian", 2.0, 4.0)  # rho 4 / 32 = 0.125
    rho = 0.125 + 0.02 + 0.125
    assert ledger.spent() == (pytest.approx(rho + 2 * math.sqrt(rho * math.log(1e6)),
                                            rel=1e-12), 1e-6)
    assert Ledger(Budget(5.0, 1e-6), "zcdp_bs").to_dict()["accountant"] == "zcdp_bs"


@pytest.mark.parametrize("eps", [1.0, 10.0])
def test_budget_left_after_a_selection_fits_the_zcdp_bs_ledger(eps):
    """DP selection (an exponential mechanism of eps_sel, rho ``eps_sel^2 / 8``) then a
    Gaussian release calibrated to what ``remaining_budget`` leaves: the zcdp_bs ledger
    accepts both. Basic composition's ``eps - eps_sel`` does not always fit under this
    conversion: the selection adds about ``eps_sel^2 L / (4 eps_left)`` to the Bun-Steinke
    epsilon (``L = ln(1/delta)``), more than eps_sel when ``eps_sel L > 4 eps_left``, as here
    with 35% of the budget on the selection (3.7 > 2.6 in units of epsilon)."""
    total, eps_sel = Budget(eps, DELTA), 0.35 * eps
    left = remaining_budget(total, eps_sel, "zcdp_bs")
    assert left.epsilon < eps - eps_sel
    ledger = Ledger(total, "zcdp_bs")
    ledger.charge("select", "exponential", 1.0, 2.0 / eps_sel)
    ledger.charge("release", "gaussian", 1.0, gaussian_sigma(1, 1.0, left, "zcdp_bs"))
    assert ledger.spent()[0] <= eps and ledger.spent()[0] == pytest.approx(eps, rel=1e-9)
    naive = Ledger(total, "zcdp_bs")
    naive.charge("select", "exponential", 1.0, 2.0 / eps_sel)
    with pytest.raises(BudgetExceededError):
        naive.charge("release", "gaussian", 1.0,
                     gaussian_sigma(1, 1.0, Budget(eps - eps_sel, DELTA), "zcdp_bs"))
