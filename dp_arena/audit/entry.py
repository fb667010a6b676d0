"""The audit from Python: `audit_mechanism` is ``dp-arena-audit OVERRIDES`` without the shell.

It composes ``dp_arena/conf/audit.yaml`` with the overrides the command line would carry (Hydra's
compose API, the audit's typed schema registered by :mod:`dp_arena.audit.config_store`; a
composition problem is one :class:`~dp_arena.errors.ConfigError` naming it and the fix) and
runs :func:`dp_arena.audit.driver.run_audit` on the resolved config. The result is the
:class:`~dp_arena.audit.driver.AuditResult` (its ``summary_lines()`` are what the command
prints; ``violation`` is the verdict).

Privacy: as :mod:`dp_arena.audit.driver`: the audit runs the mechanism through the runner, and
nothing it returns or logs holds a private value (the canary is described, not listed).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_dir
from hydra.errors import MissingConfigException
from omegaconf import OmegaConf

from dp_arena.audit import config_store
from dp_arena.audit.driver import AuditResult, run_audit
from dp_arena.errors import ConfigError, DPArenaError
from dp_arena.params import config_problem
from dp_arena.resources import config_dir


def audit_config(overrides: Sequence[str]) -> dict[str, Any]:
    """``dp_arena/conf/audit.yaml`` composed with ``overrides`` and resolved, as plain containers
    (without Hydra's own node)."""
    if isinstance(overrides, str):
        raise ConfigError("overrides must be a list of key=value strings",
                          "e.g. audit_mechanism(['dataset=titanic', 'mechanism=independent'])")
    config_store.register()
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3",
                               job_name="audit"):
        try:
            cfg = compose("audit", overrides=list(overrides))
        except DPArenaError:
            raise
        except MissingConfigException as exc:  # an option no search path holds
            raise ConfigError(str(exc).strip().splitlines()[0],
                              f"choose from {', '.join(exc.options)}" if exc.options
                              else "check the option's name") from None
        except Exception as exc:  # noqa: BLE001 - Hydra's composition error, said once
            raise config_problem(exc) from None
    plain: dict[str, Any] = OmegaConf.to_container(cfg, resolve=True)  # type: ignore[assignment]
    return plain


def audit_mechanism(overrides: Sequence[str] = (), out_dir: str | Path | None = None,
          echo: Callable[[str], None] = print) -> AuditResult:
    """One audit (see the module docstring): ``overrides`` as ``dp-arena-audit`` takes them,
    e.g. ``["dataset=titanic", "mechanism=independent", "privacy.epsilon=1"]``; ``audit.json``
    goes to ``out_dir`` when given; ``echo`` receives the progress lines."""
    return run_audit(audit_config(overrides), Path(out_dir) if out_dir is not None else None,
                     echo=echo)
