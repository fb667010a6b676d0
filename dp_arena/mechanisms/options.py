"""A mechanism's shipped options and the settings a run changes from them.

- :func:`shipped_settings` / :func:`composed_option`: what ``mechanism=OPTION`` ships, as Hydra
  composes the option alone (its defaults list included); :func:`mechanism_conf`: the same for
  scripts, refused when there is no such option;
- :func:`changed_settings`: the settings that differ from the shipped option (or, without one,
  from the class's defaults, :func:`dataclass_defaults`), long values abbreviated
  (:func:`short_value`); :func:`hyperparameter_label`: with the preset in front. The run's label
  is built from them by :func:`dp_arena.report.record.setting_label`.

Public facts only: configuration, never data.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from dp_arena.errors import ConfigError

from . import MECHANISMS, mechanism_class


def changed_settings(name: str, params: dict[str, Any], preset: str = "") -> str:
    """``k=5,C=150``: the settings that differ from the shipped option of the mechanism
    (``mechanism=NAME``, or the preset ``mechanism=NAME_PRESET``), as Hydra composes it
    (:func:`shipped_settings`); "-" if none. Long values are abbreviated
    (``marginals=<list of 45 #1f2e>``), so a label stays short; every setting is logged to
    MLflow regardless. The run's label is built from it by
    :func:`dp_arena.report.record.setting_label`."""
    baseline = shipped_settings(f"{name}_{preset}" if preset else name)
    if baseline is None:
        baseline = dataclass_defaults(name)
    changed = {k: v for k, v in params.items() if k not in baseline or baseline[k] != v}
    return ",".join(f"{k}={short_value(v)}" for k, v in sorted(changed.items())) or "-"


def hyperparameter_label(name: str, params: dict[str, Any], preset: str = "") -> str:
    """``[preset],k=5``: the preset (when given) and :func:`changed_settings`; "-" if
    neither. (A run's full label, with its accountant: :func:`dp_arena.report.record.setting_label`.)"""
    text = changed_settings(name, params, preset)
    lead = f"[{preset}]" if preset else ""
    return ",".join(p for p in (lead, "" if text == "-" else text) if p) or "-"


def dataclass_defaults(name: str) -> dict[str, Any]:
    import dataclasses

    try:
        return {f.name: f.default for f in dataclasses.fields(mechanism_class(name))
                if f.default is not dataclasses.MISSING}
    except (ConfigError, ImportError):
        return {}


def short_value(value: Any, limit: int = 32) -> str:
    """A setting as text, abbreviated past ``limit`` characters to its type, length and a
    short hash (the full value is an MLflow param)."""
    import hashlib

    text = str(value)
    if len(text) <= limit:
        return text
    size = f" of {len(value)}" if hasattr(value, "__len__") else ""
    return f"<{type(value).__name__}{size} #{hashlib.sha256(text.encode()).hexdigest()[:4]}>"


def shipped_settings(option: str) -> dict[str, Any] | None:
    """The mechanism settings the option ``mechanism=OPTION`` ships (without ``name``), as
    Hydra composes the option alone (its defaults list included: ``aim_quick`` extends
    ``aim``); ``None`` when there is no such option. Inside a running Hydra app the app's
    config search path is used, so options from ``hydra.searchpath`` are found too."""
    composed = composed_option("mechanism", option)
    if composed is None:
        return None
    return {k: v for k, v in copy.deepcopy(composed).items() if k != "name"}


@functools.cache
def composed_option(group: str, option: str) -> dict[str, Any] | None:
    """The node ``group`` of the config Hydra composes from ``+GROUP=OPTION`` alone (no
    primary config), as plain containers; ``None`` when the option does not exist. Cached:
    options do not change while a process runs."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import MissingConfigException
    from omegaconf import OmegaConf

    from dp_arena.resources import config_dir

    overrides = [f"+{group}={option}"]
    try:
        if GlobalHydra.instance().is_initialized():  # inside the app: its search path
            cfg = compose(config_name=None, overrides=overrides)
        else:
            with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
                cfg = compose(config_name=None, overrides=overrides)
    except MissingConfigException:
        return None
    node = OmegaConf.to_container(cfg, resolve=True).get(group)  # type: ignore[union-attr]
    return node if isinstance(node, dict) else None


def mechanism_conf(name: str) -> dict[str, Any]:
    """The hyperparameters the option ``mechanism=NAME`` ships (:func:`shipped_settings`), for
    scripts that build a mechanism outside Hydra with the project's configured settings."""
    settings = shipped_settings(name)
    if settings is None:
        raise ConfigError(f"no config option for mechanism {name!r}",
                          f"use one of {sorted(MECHANISMS)}")
    return settings
