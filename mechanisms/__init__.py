"""Mechanism families, looked up by name (``conf/mechanism/NAME.yaml``)."""

from __future__ import annotations

from typing import Any

from harness.errors import ConfigError

from .base import Mechanism

#: mechanism name -> "module:Class" (imported on first use, so heavy deps load only if used).
MECHANISMS: dict[str, str] = {
    "independent": "mechanisms.independent:Independent",
    "resample": "mechanisms.reference:Resample",
    "public_only": "mechanisms.reference:PublicOnly",
    "uniform": "mechanisms.reference:Uniform",
    # Families of later issues (each module lands with its issue).
    "mst": "mechanisms.mst:MST",
    "aim": "mechanisms.aim:AIM",
    "adaptive_grid": "mechanisms.adaptive_grid:AdaptiveGrid",
    "archetype": "mechanisms.archetype:Archetype",
    "prefix_tree": "mechanisms.prefix_tree:PrefixTree",
    "rdt": "mechanisms.rdt:RDT",
}


def mechanism_class(name: str) -> type[Mechanism]:
    from harness.params import load_registered

    return load_registered(MECHANISMS, name, "mechanism")


def hyperparameter_label(name: str, params: dict[str, Any]) -> str:
    """``k=5,C=150``: the settings that differ from the mechanism's defaults ("-" if none).
    Used to group runs on the leaderboard; every setting is logged to MLflow regardless."""
    import dataclasses

    try:
        defaults = {f.name: f.default for f in dataclasses.fields(mechanism_class(name))
                    if f.default is not dataclasses.MISSING}
    except (ConfigError, ImportError):
        defaults = {}
    changed = {k: v for k, v in params.items() if k not in defaults or defaults[k] != v}
    return ",".join(f"{k}={v}" for k, v in sorted(changed.items())) or "-"


def mechanism_conf(name: str) -> dict[str, Any]:
    """The hyperparameters ``conf/mechanism/NAME.yaml`` sets (without ``name``), for scripts
    that build a mechanism outside Hydra with the project's configured settings."""
    import yaml

    from harness.data.datasets import PROJECT_ROOT

    path = PROJECT_ROOT / "conf" / "mechanism" / f"{name}.yaml"
    if not path.is_file():
        raise ConfigError(f"no config file for mechanism {name!r} ({path})",
                          f"use one of {sorted(MECHANISMS)}")
    params = yaml.safe_load(path.read_text()) or {}
    params.pop("name", None)
    return params


def make_mechanism(name: str, params: dict[str, Any] | None) -> Mechanism:
    from harness.params import build_dataclass

    return build_dataclass(mechanism_class(name), params or {}, f"mechanism.{name}")


__all__ = ["Mechanism", "MECHANISMS", "mechanism_class", "make_mechanism", "hyperparameter_label",
           "mechanism_conf"]
