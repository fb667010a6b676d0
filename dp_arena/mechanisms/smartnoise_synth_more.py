"""smartnoise-synth's DP-CTGAN, PATE-CTGAN and MWEM as contestants, each run by its
adapter (``dp_arena/mechanisms/contestants/smartnoise_{dpctgan,patectgan,mwem}.py``) in the
``smartnoise`` environment (``dp-arena-contestants install smartnoise``).

Algorithms (all in smartnoise-synth 1.0.8; the adapters' side is
``dp_arena/mechanisms/contestants/smartnoise_common.py``):

- ``smartnoise_dpctgan``: DP-CTGAN, a conditional tabular GAN whose discriminator is trained
  with DP-SGD (opacus 0.14, RDP accountant converted to (epsilon, delta));
- ``smartnoise_patectgan``: PATE-CTGAN, the same generator trained against a student
  discriminator labelled by Laplace-noised teacher votes (PATE moments accountant);
- ``smartnoise_mwem``: MWEM (multiplicative weights over the exponential mechanism and Laplace
  measurements, pure epsilon-DP by basic composition), over groups of ``split_factor`` columns
  treated as independent.

Privacy argument: declared, not checked (``accounting=declared``: the library draws the noise).
The adapter passes epsilon minus ``row_count_share`` of it (basic composition) and delta to the
library, and spends the share on a discrete-Laplace row count (sensitivity 1). What each one
reads from the private data outside its budget is its claim
(:data:`dp_arena.mechanisms.contestants.claims.SHIPPED`): MWEM none (the adapter sizes its histograms
from the schema and starts it from the noisy count); the GANs the exact category frequencies
and the row count (smartnoise's ``DataSampler``; not closed). PATE-CTGAN at an epsilon its
accountant cannot reach on the first step (smartnoise #594: ``log(1/delta) / moments_order``)
is refused before anything is charged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from dp_arena.data.datasets import Dataset
from dp_arena.errors import ConfigError
from dp_arena.privacy.accounting import Budget
from dp_arena.privacy.release import Releaser

from .contestants.claims import SHIPPED, Adapter
from .external import SmartNoise

#: The adapters' default share of epsilon for the noisy row count (``smartnoise_common``).
ROW_COUNT_SHARE = 0.01
#: PATE-CTGAN's default number of Renyi orders (``moments_order``).
PATE_MOMENTS_ORDER = 100


def pate_first_step_epsilon(delta: float, moments_order: int = PATE_MOMENTS_ORDER) -> float:
    """The epsilon PATE-CTGAN's accountant reports before its first step:
    ``min over l in 1..moments_order of log(1/delta) / l`` (its moments are all 0), i.e.
    ``log(1/delta) / moments_order``. smartnoise raises at a budget not above it (#594)."""
    return math.log(1 / delta) / moments_order


def pate_epsilon_problem(epsilon: float, delta: float, share: float,
                         moments_order: int = PATE_MOMENTS_ORDER) -> str:
    """Why PATE-CTGAN cannot run at (epsilon, delta) with ``share`` for the row count, or
    ``""`` (public: the budget and settings only)."""
    floor = pate_first_step_epsilon(delta, moments_order)
    if epsilon * (1 - share) > floor:
        return ""
    return (f"smartnoise_patectgan needs epsilon above {floor / (1 - share):.3g} at delta "
            f"{delta:g} (its accountant reports log(1/delta)/{moments_order} = {floor:.3g} "
            "before the first step and smartnoise then raises, smartnoise #594)")


@dataclass
class SmartNoiseGAN(SmartNoise):
    """The GANs: no ``sampling`` option (they are not mbi models); delta > 0 (their
    accountants convert to (epsilon, delta); smartnoise would otherwise take delta from the
    private row count)."""

    option_choices: ClassVar[dict[str, tuple[str, ...]]] = {}
    needs_delta: ClassVar[bool] = True


@dataclass
class SmartNoiseDPCTGAN(SmartNoiseGAN):
    """smartnoise-synth's DP-CTGAN (module docstring), adapter ``smartnoise_dpctgan.py``."""

    name: ClassVar[str] = "smartnoise_dpctgan"
    adapter: ClassVar[Adapter | None] = SHIPPED["smartnoise_dpctgan"]
    script: str = "smartnoise_dpctgan"


@dataclass
class SmartNoisePATECTGAN(SmartNoiseGAN):
    """smartnoise-synth's PATE-CTGAN (module docstring), adapter ``smartnoise_patectgan.py``;
    refused before launch below the epsilon its accountant needs (:func:`pate_epsilon_problem`)."""

    name: ClassVar[str] = "smartnoise_patectgan"
    adapter: ClassVar[Adapter | None] = SHIPPED["smartnoise_patectgan"]
    script: str = "smartnoise_patectgan"

    def fit_sample(self, data: Dataset, budget: Budget, release: Releaser,
                   rng: np.random.Generator) -> pd.DataFrame:
        if budget.delta > 0:
            problem = pate_epsilon_problem(
                budget.epsilon, budget.delta,
                float(self.options.get("row_count_share", ROW_COUNT_SHARE)),
                int(self.options.get("moments_order", PATE_MOMENTS_ORDER)))
            if problem:
                raise ConfigError(problem, "raise privacy.epsilon or privacy.delta, or run "
                                  "smartnoise_dpctgan")
        return super().fit_sample(data, budget, release, rng)


@dataclass
class SmartNoiseMWEM(SmartNoise):
    """smartnoise-synth's MWEM (module docstring), adapter ``smartnoise_mwem.py``: pure
    epsilon-DP (delta 0 is fine), histograms over groups of ``options.split_factor``
    columns."""

    name: ClassVar[str] = "smartnoise_mwem"
    adapter: ClassVar[Adapter | None] = SHIPPED["smartnoise_mwem"]
    option_choices: ClassVar[dict[str, tuple[str, ...]]] = {}
    needs_delta: ClassVar[bool] = False
    script: str = "smartnoise_mwem"
    options: dict[str, Any] = field(default_factory=lambda: {
        "split_factor": 2, "iterations": 5, "row_count_share": 0.01})
