"""Turning config dicts into dataclass instances with clear errors for unknown keys."""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from .errors import ConfigError

T = TypeVar("T")


def build_dataclass(cls: type[T], values: dict[str, Any], where: str) -> T:
    """``cls(**values)``, refusing keys that are not fields of ``cls``."""
    fields = {f.name for f in dataclasses.fields(cls) if f.init}  # type: ignore[arg-type]
    unknown = sorted(set(values) - fields)
    if unknown:
        raise ConfigError(f"{where}: unknown setting(s) {unknown}",
                          f"valid settings are {sorted(fields) or 'none'}")
    return cls(**values)
