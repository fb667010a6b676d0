"""Turning config dicts into dataclass instances with clear errors for unknown keys."""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Mapping
from typing import Any, TypeVar

from .errors import ConfigError

T = TypeVar("T")


def refuse_unknown_fields(cls: type, values: Mapping[str, Any], where: str) -> None:
    """Raise :class:`ConfigError` naming the keys of ``values`` that are not init fields of the
    dataclass ``cls`` (a config group with a typo would otherwise be silently ignored)."""
    fields = {f.name for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(values) - fields)
    if unknown:
        raise ConfigError(f"{where}: unknown setting(s) {unknown}",
                          f"valid settings are {sorted(fields) or 'none'}")


def build_dataclass(cls: type[T], values: dict[str, Any], where: str) -> T:
    """``cls(**values)``, refusing keys that are not fields of ``cls``."""
    refuse_unknown_fields(cls, values, where)
    return cls(**values)


def load_registered(registry: dict[str, str], name: str, kind: str) -> Any:
    """The object ``registry[name]`` names as ``"module:attribute"`` (imported on first use)."""
    if name not in registry:
        raise ConfigError(f"unknown {kind} {name!r}", f"use one of {sorted(registry)}")
    module, attribute = registry[name].split(":")
    try:
        return getattr(importlib.import_module(module), attribute)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise
        raise ConfigError(f"{kind} {name!r} is registered but its module {module} is missing",
                          f"choose another {kind}") from None
