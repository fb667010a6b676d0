"""Shipped contestants of DataSynthesizer and dpmm, run by the ``external`` protocol
(:mod:`dp_arena.mechanisms.external`) in their own environments (``dp-arena-contestants install
datasynthesizer`` / ``dpmm``).

Algorithms (the adapters, each a script under ``dp_arena/mechanisms/contestants/``):

- ``datasynthesizer_privbayes``: DataSynthesizer 0.1.13's PrivBayes (greedy Bayesian network
  by the exponential mechanism, Laplace-noised conditionals), degree 1 by default
  (``options.degree``); the adapter gives the domain (a domain file and public rows holding
  every code), a noisy output row count (``options.row_count_share`` of epsilon, OpenDP's
  discrete Laplace) and fresh seeds (``datasynthesizer_privbayes.py``);
- ``dpmm_mst``, ``dpmm_aim``, ``dpmm_privbayes``: dpmm 0.1.9's MST, AIM and PrivBayes models
  with ``domain=`` the task's sizes, fitted on the codes (no binner), rows the model's noisy
  total (``dpmm_common.py``).

Privacy argument: declared, not proven (as every contestant's, :mod:`dp_arena.mechanisms.external`):
the whole budget is one ``declared`` ledger charge; what each library spends and reads
outside its budget is its claim (:data:`dp_arena.mechanisms.contestants.claims.SHIPPED`): DataSynthesizer
pure epsilon-DP by its own composition and reading the exact row count inside its fit; dpmm's
MST and AIM zCDP at dpmm's ``cdp_rho(epsilon, delta)`` reading nothing else; dpmm's PrivBayes
(epsilon/2 pure + Gaussian at ``cdp_rho(epsilon/2, delta)``) reading the exact row count for
its structure search's sensitivity. Record-level only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from dp_arena.errors import ConfigError
from dp_arena.params import Interval

from .contestants.claims import SHIPPED, Adapter
from .contestants.protocol import SAMPLING
from .external import External

#: ``datasynthesizer_privbayes`` options checked before launch: name -> accepted values.
DATASYNTHESIZER_OPTIONS: dict[str, Interval] = {
    "degree": Interval(int, 1, None),
    "row_count_share": Interval(float, 0, 1, closed="neither"),
    "processes": Interval(int, 1, None),
}

#: dpmm's shipped options (``dp_arena/conf/mechanism/dpmm_*.yaml``): i.i.d. draws, one core, and 1,000
#: mirror-descent iterations (dpmm's MST and PrivBayes default to 5,000, which did not fit
#: one adult fit in 5.5 minutes on a shared 2-core machine; with 1,000 MST took 292 s).
DPMM_OPTIONS: dict[str, Any] = {"sampling": "sample", "n_jobs": 1, "n_iters": 1000}


def option_problems(options: dict[str, Any], accepted: dict[str, Interval]) -> list[str]:
    """One line per option in ``accepted`` whose value it refuses, and per unknown option."""
    problems = [f"mechanism.options.{k} must be {accepted[k].describe()} (got {v!r})"
                for k, v in options.items() if k in accepted and not accepted[k].accepts(v)]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        problems.append(f"unknown mechanism.options {unknown} (known: {sorted(accepted)})")
    return problems


@dataclass
class DataSynthesizerPrivBayes(External):
    """DataSynthesizer's PrivBayes (module docstring), environment ``datasynthesizer``.
    Pure DP: delta is not used."""

    name: ClassVar[str] = "datasynthesizer_privbayes"
    adapter: ClassVar[Adapter | None] = SHIPPED["datasynthesizer_privbayes"]
    script: str = "datasynthesizer_privbayes"
    env: str = "datasynthesizer"
    options: dict[str, Any] = field(default_factory=lambda: {"degree": 1,
                                                             "row_count_share": 0.01})

    def __post_init__(self) -> None:
        problems = option_problems(self.options, DATASYNTHESIZER_OPTIONS)
        if problems:
            raise ConfigError(f"{self.name}: {'; '.join(problems)}",
                              "use e.g. mechanism.options.degree=1 "
                              "mechanism.options.row_count_share=0.01")
        super().__post_init__()


@dataclass
class Dpmm(External):
    """dpmm's models (``dpmm_common.py``): the task's domain as sizes, zCDP through dpmm's
    own conversion (needs delta > 0)."""

    option_choices: ClassVar[dict[str, tuple[str, ...]]] = {"sampling": SAMPLING}
    needs_delta: ClassVar[bool] = True
    env: str = "dpmm"
    options: dict[str, Any] = field(default_factory=lambda: dict(DPMM_OPTIONS))


@dataclass
class DpmmMST(Dpmm):
    """dpmm's MST (``MSTGM``), adapter ``dpmm_mst.py``."""

    name: ClassVar[str] = "dpmm_mst"
    adapter: ClassVar[Adapter | None] = SHIPPED["dpmm_mst"]
    script: str = "dpmm_mst"


@dataclass
class DpmmAIM(Dpmm):
    """dpmm's AIM (``AIMGM``), adapter ``dpmm_aim.py``."""

    name: ClassVar[str] = "dpmm_aim"
    adapter: ClassVar[Adapter | None] = SHIPPED["dpmm_aim"]
    script: str = "dpmm_aim"


@dataclass
class DpmmPrivBayes(Dpmm):
    """dpmm's PrivBayes (``PrivBayesGM``), adapter ``dpmm_privbayes.py``."""

    name: ClassVar[str] = "dpmm_privbayes"
    adapter: ClassVar[Adapter | None] = SHIPPED["dpmm_privbayes"]
    script: str = "dpmm_privbayes"
