"""Test doubles: mechanisms that fail on purpose. Registered only when this module is imported
(``plugins=[tests.doubles]`` in a run's config), never in the package itself."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from harness.data.datasets import Dataset
from harness.privacy.accounting import Budget, Ledger
from mechanisms import MECHANISMS
from mechanisms.base import Mechanism
from mechanisms.reference import Uniform


@dataclass
class AlwaysFails(Mechanism):
    """Raises inside fit_sample."""

    name: ClassVar[str] = "test_fails"

    def fit_sample(self, data: Dataset, budget: Budget, ledger: Ledger,
                   rng: np.random.Generator) -> pd.DataFrame:
        raise RuntimeError("deliberate failure from the test double")


@dataclass
class Sleeper(Mechanism):
    """Sleeps ``seconds``, then releases uniform data (spends nothing)."""

    seconds: float = 60.0
    name: ClassVar[str] = "test_sleeper"

    def fit_sample(self, data: Dataset, budget: Budget, ledger: Ledger,
                   rng: np.random.Generator) -> pd.DataFrame:
        time.sleep(self.seconds)
        return Uniform().fit_sample(data, budget, ledger, rng)


@dataclass
class MemoryHog(Mechanism):
    """Allocates and touches ``mb`` megabytes, holding them for ``hold_s`` seconds."""

    mb: int = 2000
    hold_s: float = 5.0
    name: ClassVar[str] = "test_memory_hog"

    def fit_sample(self, data: Dataset, budget: Budget, ledger: Ledger,
                   rng: np.random.Generator) -> pd.DataFrame:
        block = np.ones(self.mb * 2**20 // 8)
        time.sleep(self.hold_s)
        del block
        return Uniform().fit_sample(data, budget, ledger, rng)


@dataclass
class NoiseEcho(Mechanism):
    """Draws ``n`` standard normals from the run's generator, charges them as Gaussian noise of
    scale 1e6 (a negligible, valid charge), writes the raw draws to ``echo_path`` (a side channel
    only tests read) and releases uniform data: lets a test see a run's noise."""

    echo_path: str = ""
    n: int = 2000
    name: ClassVar[str] = "test_noise_echo"

    def fit_sample(self, data: Dataset, budget: Budget, ledger: Ledger,
                   rng: np.random.Generator) -> pd.DataFrame:
        draws = rng.standard_normal(self.n)
        ledger.charge("echo", "gaussian" if budget.delta > 0 else "laplace", 1.0, 1e6)
        np.save(self.echo_path, draws)
        return Uniform().fit_sample(data, budget, ledger, rng)


MECHANISMS.update({
    "test_noise_echo": "tests.doubles:NoiseEcho",
    "test_fails": "tests.doubles:AlwaysFails",
    "test_sleeper": "tests.doubles:Sleeper",
    "test_memory_hog": "tests.doubles:MemoryHog",
})


@dataclass
class LeakyIndependent(Mechanism):
    """``independent`` that lies: it charges the run's ledger as if its noise were calibrated to
    the budget's epsilon, but adds the (smaller) noise calibrated to ``factor`` x epsilon, so
    its true epsilon is about ``factor`` times the claimed one. The privacy audit must catch
    it (tests/test_audit.py)."""

    factor: float = 4.0
    max_contrib: int | None = None
    name: ClassVar[str] = "test_leaky_independent"

    def fit_sample(self, data: Dataset, budget: Budget, ledger: Ledger,
                   rng: np.random.Generator) -> pd.DataFrame:
        from harness.privacy.accounting import gaussian_sigma, laplace_scale
        from mechanisms.base import bounded_private, contribution_bound
        from mechanisms.independent import measure_one_way, sample_independent

        schema = data.schema
        bound = contribution_bound(data, self.max_contrib)
        codes = schema.encode(bounded_private(data, bound, rng))
        kind = "gaussian" if budget.delta > 0 else "laplace"
        under = Budget(budget.epsilon * self.factor, budget.delta)
        noisy = measure_one_way(codes, schema.domain(), bound, kind, under,
                                Ledger(under, ledger.accountant, unit=ledger.unit), rng)
        d = len(noisy)
        claimed = (gaussian_sigma(d, bound, budget, ledger.accountant) if kind == "gaussian"
                   else laplace_scale(budget.epsilon / d, bound))
        for col in noisy:  # the lie: the honest scale is charged, a smaller one was added
            ledger.charge(f"1-way marginal {col}", kind, bound, claimed)  # type: ignore[arg-type]
        n_rows = max(1, int(np.rint(np.mean([h.sum() for h in noisy.values()]))))
        return sample_independent(noisy, n_rows, data, rng)


MECHANISMS["test_leaky_independent"] = "tests.doubles:LeakyIndependent"
