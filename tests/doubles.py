"""Test doubles: mechanisms that fail on purpose. Registered only when this module is imported
(``plugins=[tests.doubles]`` in a run's config), never in the package itself."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from dp_arena.data.datasets import Dataset
from dp_arena.privacy.accounting import Budget
from dp_arena.privacy.release import Releaser
from dp_arena.mechanisms import MECHANISMS
from dp_arena.mechanisms.base import Mechanism
from dp_arena.mechanisms.reference import Uniform


@dataclass
class AlwaysFails(Mechanism):
    """Raises inside fit_sample."""

    name: ClassVar[str] = "test_fails"

    def fit_sample(self, data: Dataset, budget: Budget, release: Releaser,
                   rng: np.random.Generator) -> pd.DataFrame:
        raise RuntimeError("deliberate failure from the test double")


@dataclass
class Sleeper(Mechanism):
    """Sleeps ``seconds``, then releases uniform data (spends nothing)."""

    seconds: float = 60.0
    name: ClassVar[str] = "test_sleeper"

    def fit_sample(self, data: Dataset, budget: Budget, release: Releaser,
                   rng: np.random.Generator) -> pd.DataFrame:
        time.sleep(self.seconds)
        return Uniform().fit_sample(data, budget, release, rng)


@dataclass
class MemoryHog(Mechanism):
    """Allocates and touches ``mb`` megabytes, holding them for ``hold_s`` seconds."""

    mb: int = 2000
    hold_s: float = 5.0
    name: ClassVar[str] = "test_memory_hog"

    def fit_sample(self, data: Dataset, budget: Budget, release: Releaser,
                   rng: np.random.Generator) -> pd.DataFrame:
        block = np.ones(self.mb * 2**20 // 8)
        time.sleep(self.hold_s)
        del block
        return Uniform().fit_sample(data, budget, release, rng)


@dataclass
class NoiseEcho(Mechanism):
    """Releases ``n`` zeros with Gaussian (Laplace when delta = 0) noise of scale 1e6 through
    the run's releaser (a negligible, valid charge), writes the noise divided by the scale to
    ``echo_path`` (a side channel only tests read) and releases uniform data: lets a test see a
    run's privacy noise."""

    echo_path: str = ""
    n: int = 2000
    name: ClassVar[str] = "test_noise_echo"

    def fit_sample(self, data: Dataset, budget: Budget, release: Releaser,
                   rng: np.random.Generator) -> pd.DataFrame:
        draw = release.gaussian if budget.delta > 0 else release.laplace
        np.save(self.echo_path, draw("echo", np.zeros(self.n), 1.0, 1e6) / 1e6)
        return Uniform().fit_sample(data, budget, release, rng)


MECHANISMS.update({
    "test_noise_echo": "tests.doubles:NoiseEcho",
    "test_fails": "tests.doubles:AlwaysFails",
    "test_sleeper": "tests.doubles:Sleeper",
    "test_memory_hog": "tests.doubles:MemoryHog",
})


@dataclass
class LeakyIndependent(Mechanism):
    """``independent`` that lies: it tells the releaser its histograms have ``1/factor`` of
    their true sensitivity, so the noise (calibrated to the stated sensitivity) is ``factor``
    times too small and its true epsilon about ``factor`` times the claimed one, while every
    charge looks in order. ``factor=2`` is "clipping skipped" (half the true sensitivity),
    ``factor=4`` "noise for 4x the epsilon". The privacy audit must catch it
    (tests/test_audit.py)."""

    factor: float = 4.0
    max_contrib: int | None = None
    name: ClassVar[str] = "test_leaky_independent"

    def fit_sample(self, data: Dataset, budget: Budget, release: Releaser,
                   rng: np.random.Generator) -> pd.DataFrame:
        from dp_arena.mechanisms.base import bounded_private, contribution_bound
        from dp_arena.mechanisms.independent import measure_one_way, sample_independent

        schema = data.schema
        bound = contribution_bound(data, self.max_contrib)
        codes = schema.encode(bounded_private(data, bound, rng))
        kind = "gaussian" if budget.delta > 0 else "laplace"
        noisy = measure_one_way(codes, schema.domain(), bound / self.factor, kind, budget, release)
        release.done()
        n_rows = max(1, int(np.rint(np.mean([h.sum() for h in noisy.values()]))))
        return sample_independent(noisy, n_rows, data, rng)


@dataclass
class BypassIndependent(Mechanism):
    """``independent`` that charges the ledger honestly but draws its noise from the run's
    post-processing generator, outside the release API: the conformance suite must fail it
    (tests/test_mechanism_conformance.py)."""

    name: ClassVar[str] = "test_bypass_independent"

    def fit_sample(self, data: Dataset, budget: Budget, release: Releaser,
                   rng: np.random.Generator) -> pd.DataFrame:
        from dp_arena.privacy.accounting import laplace_scale
        from dp_arena.mechanisms.independent import sample_independent

        codes = data.schema.encode(data.private)
        domain = data.schema.domain()
        scale = laplace_scale(budget.epsilon / len(domain), 1.0)
        noisy = {}
        for col, size in domain.items():
            release.ledger.charge(f"1-way marginal {col}", "laplace", 1.0, scale)
            counts = np.bincount(codes[col].to_numpy(), minlength=size).astype(float)
            noisy[col] = counts + rng.laplace(0.0, scale, size)
        return sample_independent(noisy, max(1, len(data.private)), data, rng)


MECHANISMS["test_leaky_independent"] = "tests.doubles:LeakyIndependent"
MECHANISMS["test_bypass_independent"] = "tests.doubles:BypassIndependent"


class _UnderstatingReleaser:
    """A releaser that passes one noise family's sensitivity (and, for Gaussian and Laplace
    noise, the scale calibrated to it) divided by ``factor``: every charge looks in order,
    the noise is ``factor`` times too small (the exponential mechanism: ``factor`` times too
    sharp), so that family's true epsilon is ``factor`` times the claim."""

    def __init__(self, inner: Releaser, family: str, factor: float):
        self.inner, self.family, self.factor = inner, family, factor

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def gaussian(self, name, values, sensitivity, sigma, **kw):
        if self.family == "gaussian":
            sensitivity, sigma = sensitivity / self.factor, sigma / self.factor
        return self.inner.gaussian(name, values, sensitivity, sigma, **kw)

    def laplace(self, name, values, sensitivity, scale, **kw):
        if self.family == "laplace":
            sensitivity, scale = sensitivity / self.factor, scale / self.factor
        return self.inner.laplace(name, values, sensitivity, scale, **kw)

    def exponential(self, name, scores, sensitivity, epsilon, **kw):
        if self.family == "exponential":
            sensitivity = sensitivity / self.factor
        return self.inner.exponential(name, scores, sensitivity, epsilon, **kw)

    def laplace_above(self, name, sizes, family, child, counts, sensitivity, scale, threshold,
                      **kw):
        if self.family == "laplace":  # thresholded counts (the prefix tree's) are Laplace too
            sensitivity, scale = sensitivity / self.factor, scale / self.factor
        return self.inner.laplace_above(name, sizes, family, child, counts, sensitivity, scale,
                                        threshold, **kw)


@dataclass
class Leaky(Mechanism):
    """A planted bug: mechanism ``base`` (with ``base_params``) whose ``family`` releases
    (gaussian, laplace or exponential) understate their sensitivity by ``factor``:
    ``factor=2`` is "clipping skipped" (half the true sensitivity), ``factor=4`` "noise for 4x
    the charged epsilon". The release-view audit must call it a VIOLATION
    (tests/test_audit_releases.py)."""

    base: str = "independent"
    base_params: dict | None = None
    family: str = "gaussian"
    factor: float = 4.0
    name: ClassVar[str] = "test_leaky"

    def fit_sample(self, data: Dataset, budget: Budget, release: Releaser,
                   rng: np.random.Generator) -> pd.DataFrame:
        from dp_arena.mechanisms import make_mechanism

        inner = make_mechanism(self.base, dict(self.base_params or {}))
        return inner.fit_sample(data, budget, _UnderstatingReleaser(  # type: ignore[arg-type]
            release, self.family, self.factor), rng)

    def check_applicable(self, data: Dataset) -> None:
        from dp_arena.mechanisms import make_mechanism

        make_mechanism(self.base, dict(self.base_params or {})).check_applicable(data)


@dataclass
class NoisyModes(Mechanism):
    """Each attribute's most frequent value chosen by the exponential mechanism (score of
    value v: ``count(v) - count(not v)``; a person of ``b`` rows moves every score by at most
    ``b``, up for its value and down for the others, so the sensitivity is ``b`` and a
    selection can leak its whole epsilon; epsilon/d each, basic composition), then every
    synthetic row takes the chosen values: a mechanism made only of exponential-mechanism
    selections, for auditing that family."""

    n_rows: int = 100
    #: the attributes to select modes of (``None``: all); the others take value code 0
    columns: list | None = None
    name: ClassVar[str] = "test_noisy_modes"

    def fit_sample(self, data: Dataset, budget: Budget, release: Releaser,
                   rng: np.random.Generator) -> pd.DataFrame:
        from dp_arena.mechanisms.base import bounded_private, contribution_bound, finish

        bound = contribution_bound(data, None)
        codes = data.schema.encode(bounded_private(data, bound, rng))
        domain = data.schema.domain()
        selected = list(self.columns) if self.columns else list(domain)
        counts = {col: np.bincount(codes[col].to_numpy(), minlength=domain[col])
                  for col in selected}
        chosen = {col: 0 for col in domain}
        chosen.update({col: release.exponential(
            f"mode of {col}", 2 * c - c.sum(), bound, budget.epsilon / len(selected),
            query=f"mode of {col}") for col, c in counts.items()})
        release.done()
        return finish(data, pd.DataFrame({c: [v] * self.n_rows for c, v in chosen.items()}),
                      rng)


MECHANISMS["test_leaky"] = "tests.doubles:Leaky"
MECHANISMS["test_noisy_modes"] = "tests.doubles:NoisyModes"


@dataclass
class CopiesTraining(Mechanism):
    """A planted leak: releases the training rows themselves (``data.private``, no
    noise) and declares the run's budget as an external contestant does (one ``declared``
    ledger charge of the run's epsilon and delta, ``accounting=declared``). Not private at
    all: a membership attack must beat the bound its declared epsilon implies, and the board
    must mark the row."""

    name: ClassVar[str] = "test_copies_training"
    accounting: ClassVar[str] = "declared"

    def fit_sample(self, data: Dataset, budget: Budget, release: Releaser,
                   rng: np.random.Generator) -> pd.DataFrame:
        release.declared(f"contestant {self.name}", budget.epsilon, budget.delta,
                         note="declared by the test double; it releases the training rows")
        release.done()
        return data.private[data.schema.names].reset_index(drop=True)


MECHANISMS["test_copies_training"] = "tests.doubles:CopiesTraining"


@dataclass
class SlowToPlan(Mechanism):
    """Its plan-time notes take ``seconds`` after writing the file ``signal_file`` (so a test
    knows the sweep is being planned); releases uniform data."""

    seconds: float = 120.0
    signal_file: str = "planning-now"
    name: ClassVar[str] = "test_slow_to_plan"

    def notes(self, data: Dataset) -> tuple[str, ...]:
        from pathlib import Path

        Path(self.signal_file).write_text("")
        time.sleep(self.seconds)
        return ()

    def fit_sample(self, data: Dataset, budget: Budget, release: Releaser,
                   rng: np.random.Generator) -> pd.DataFrame:
        return Uniform().fit_sample(data, budget, release, rng)


MECHANISMS["test_slow_to_plan"] = "tests.doubles:SlowToPlan"


@dataclass
class KillsItsWorker(Mechanism):
    """Ends the process it runs in at once (``os._exit``): under ``limits.isolate=false`` that is
    the launcher's worker, whose loss fails the whole launch."""

    name: ClassVar[str] = "test_kills_worker"

    def fit_sample(self, data: Dataset, budget: Budget, release: Releaser,
                   rng: np.random.Generator) -> pd.DataFrame:
        import os

        os._exit(3)


MECHANISMS["test_kills_worker"] = "tests.doubles:KillsItsWorker"
