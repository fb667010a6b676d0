"""Mechanism families, looked up by name (``conf/mechanism/NAME.yaml``): the registry
:data:`MECHANISMS` (name -> ``module:Class``), :func:`mechanism_class` and
:func:`make_mechanism`. Families with several modules are packages: :mod:`mechanisms.pgm`
(Private-PGM: MST, AIM, adaptive grid), :mod:`mechanisms.rdt` (random decision trees),
:mod:`mechanisms.prefix_tree`; :mod:`mechanisms.contestants` holds the third-party adapters.
A mechanism's shipped options and run labels live in :mod:`mechanisms.options`."""

from __future__ import annotations

import importlib
from typing import Any

from harness.moved import keep_old_names

from .base import Mechanism

#: Modules that moved into the families' packages (issue 42): their old names still import,
#: with one DeprecationWarning (:mod:`harness.moved`).
MOVED = {**{f"mechanisms.{m}": f"mechanisms.pgm.{m}"
            for m in ("aim", "mst", "adaptive_grid", "mirror_descent", "cliques", "mbi_setup")},
         "mechanisms.pgm_marginals": "mechanisms.pgm.marginals",
         "mechanisms.rdt_attributes": "mechanisms.rdt.attributes",
         "mechanisms.rdt_leaf_size": "mechanisms.rdt.leaf_size"}
keep_old_names(MOVED)

#: mechanism name -> "module:Class" (imported on first use, so heavy deps load only if used).
MECHANISMS: dict[str, str] = {
    "independent": "mechanisms.independent:Independent",
    "resample": "mechanisms.reference:Resample",
    "public_only": "mechanisms.reference:PublicOnly",
    "uniform": "mechanisms.reference:Uniform",
    # Families of later issues (each module lands with its issue).
    "mst": "mechanisms.pgm.mst:MST",
    "aim": "mechanisms.pgm.aim:AIM",
    "adaptive_grid": "mechanisms.pgm.adaptive_grid:AdaptiveGrid",
    "archetype": "mechanisms.archetype:Archetype",
    "prefix_tree": "mechanisms.prefix_tree:PrefixTree",
    "rdt": "mechanisms.rdt:RDT",
    # Third-party contestants, each run as a command in its own environment (mechanisms/external.py).
    "external": "mechanisms.external:External",
    "opendp_aim": "mechanisms.external:OpenDPAIM",
    "opendp_mst": "mechanisms.external:OpenDPMST",
    "smartnoise_mst": "mechanisms.external:SmartNoiseMST",
    "smartnoise_aim": "mechanisms.external:SmartNoiseAIM",
    "smartnoise_dpctgan": "mechanisms.smartnoise_synth_more:SmartNoiseDPCTGAN",
    "smartnoise_patectgan": "mechanisms.smartnoise_synth_more:SmartNoisePATECTGAN",
    "smartnoise_mwem": "mechanisms.smartnoise_synth_more:SmartNoiseMWEM",
    "datasynthesizer_privbayes": "mechanisms.external_privbayes_dpmm:DataSynthesizerPrivBayes",
    "dpmm_mst": "mechanisms.external_privbayes_dpmm:DpmmMST",
    "dpmm_aim": "mechanisms.external_privbayes_dpmm:DpmmAIM",
    "dpmm_privbayes": "mechanisms.external_privbayes_dpmm:DpmmPrivBayes",
}


def mechanism_class(name: str) -> type[Mechanism]:
    from harness.params import load_registered

    return load_registered(MECHANISMS, name, "mechanism")


def make_mechanism(name: str, params: dict[str, Any] | None,
                   where: str = "mechanism") -> Mechanism:
    """The mechanism ``name`` with ``params``; unknown settings are refused, named as
    ``<where>.<key>`` (the path a user would write)."""
    from harness.params import build_dataclass

    return build_dataclass(mechanism_class(name), params or {}, where)


#: Names that lived here before :mod:`mechanisms.options` (older scripts import them from here).
OPTIONS_NAMES = frozenset({"changed_settings", "hyperparameter_label", "mechanism_conf",
                           "shipped_settings"})


def __getattr__(name: str) -> object:
    """An :data:`OPTIONS_NAMES` name, from :mod:`mechanisms.options`."""
    if name in OPTIONS_NAMES:
        return getattr(importlib.import_module("mechanisms.options"), name)
    raise AttributeError(f"module 'mechanisms' has no attribute {name!r}")


__all__ = [
    "MECHANISMS",
    "Mechanism",
    "make_mechanism",
    "mechanism_class",
]
