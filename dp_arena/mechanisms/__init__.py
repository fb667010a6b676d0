"""Mechanism families, looked up by name (``dp_arena/conf/mechanism/NAME.yaml``): the registry
:data:`MECHANISMS` (name -> ``module:Class``), :func:`mechanism_class` and
:func:`make_mechanism`. Families with several modules are packages: :mod:`dp_arena.mechanisms.pgm`
(Private-PGM: MST, AIM, adaptive grid), :mod:`dp_arena.mechanisms.rdt` (random decision trees),
:mod:`dp_arena.mechanisms.prefix_tree`; :mod:`dp_arena.mechanisms.contestants` holds the third-party adapters.
A mechanism's shipped options and run labels live in :mod:`dp_arena.mechanisms.options`."""

from __future__ import annotations

from typing import Any

from .base import Mechanism

#: mechanism name -> "module:Class" (imported on first use, so heavy deps load only if used).
MECHANISMS: dict[str, str] = {
    "independent": "dp_arena.mechanisms.independent:Independent",
    "resample": "dp_arena.mechanisms.reference:Resample",
    "subsample": "dp_arena.mechanisms.reference:Subsample",
    "public_only": "dp_arena.mechanisms.reference:PublicOnly",
    "uniform": "dp_arena.mechanisms.reference:Uniform",
    # Families of later issues (each module lands with its issue).
    "mst": "dp_arena.mechanisms.pgm.mst:MST",
    "aim": "dp_arena.mechanisms.pgm.aim:AIM",
    "adaptive_grid": "dp_arena.mechanisms.pgm.adaptive_grid:AdaptiveGrid",
    "archetype": "dp_arena.mechanisms.archetype:Archetype",
    "prefix_tree": "dp_arena.mechanisms.prefix_tree:PrefixTree",
    "rdt": "dp_arena.mechanisms.rdt:RDT",
    # Third-party contestants, each run as a command in its own environment (dp_arena/mechanisms/external.py).
    "external": "dp_arena.mechanisms.external:External",
    "opendp_aim": "dp_arena.mechanisms.external:OpenDPAIM",
    "opendp_mst": "dp_arena.mechanisms.external:OpenDPMST",
    "smartnoise_mst": "dp_arena.mechanisms.external:SmartNoiseMST",
    "smartnoise_aim": "dp_arena.mechanisms.external:SmartNoiseAIM",
    "smartnoise_dpctgan": "dp_arena.mechanisms.smartnoise_synth_more:SmartNoiseDPCTGAN",
    "smartnoise_patectgan": "dp_arena.mechanisms.smartnoise_synth_more:SmartNoisePATECTGAN",
    "smartnoise_mwem": "dp_arena.mechanisms.smartnoise_synth_more:SmartNoiseMWEM",
    "datasynthesizer_privbayes": "dp_arena.mechanisms.external_privbayes_dpmm:DataSynthesizerPrivBayes",
    "dpmm_mst": "dp_arena.mechanisms.external_privbayes_dpmm:DpmmMST",
    "dpmm_aim": "dp_arena.mechanisms.external_privbayes_dpmm:DpmmAIM",
    "dpmm_privbayes": "dp_arena.mechanisms.external_privbayes_dpmm:DpmmPrivBayes",
}


def mechanism_class(name: str) -> type[Mechanism]:
    from dp_arena.params import load_registered

    return load_registered(MECHANISMS, name, "mechanism")


def make_mechanism(name: str, params: dict[str, Any] | None,
                   where: str = "mechanism") -> Mechanism:
    """The mechanism ``name`` with ``params``; unknown settings are refused, named as
    ``<where>.<key>`` (the path a user would write)."""
    from dp_arena.params import build_dataclass

    return build_dataclass(mechanism_class(name), params or {}, where)


__all__ = [
    "MECHANISMS",
    "Mechanism",
    "make_mechanism",
    "mechanism_class",
]
