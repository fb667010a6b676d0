"""The typed config schemas, registered with Hydra's ConfigStore.

Hydra checks every composed config (config files, the command line's overrides, each job of a
sweep) against these dataclasses: values are converted to the field's type or refused, and
unknown keys are refused. The config files start from them (``defaults: - dp_arena_schema``):

- ``dp_arena_schema``: :class:`harness.run.settings.RunSettings` (conf/config.yaml), whose
  groups are :class:`~harness.run.settings.PrivacySettings` (``privacy``),
  :class:`~harness.run.settings.TrackingSettings` (``tracking``),
  :class:`~harness.run.settings.Limits` (``limits``), :class:`~harness.run.settings.Tuning`
  (``tuning``) and :class:`~harness.run.settings.CompetitionSettings` (``competition``);
- ``dp_arena_audit_schema``: :class:`harness.audit.settings.AuditRunSettings` (conf/audit.yaml),
  the same plus :class:`~harness.audit.settings.AuditSettings` (``audit``).

``dataset``, ``mechanism`` and ``metrics`` stay open mappings: their settings are checked by
the dataset loader and by each mechanism's and metric's own dataclass (whose types, such as
``Literal``, OmegaConf cannot describe), before any job starts.

It also registers the config's own interpolation functions (OmegaConf resolvers):

- ``${dp_arena_sweep:VALUES}``: a list as the sweep of its values (``[1.0, 10.0]`` ->
  ``1.0,10.0``), a count ``n`` as ``0,1,...,n-1``: a competition's sweep is its own lists
  (``competition.mechanisms``, ``epsilons``, ``trials``), written once (conf/competition/);
- ``${dp_arena_swept:KEY}``: what the sweep runs for ``KEY`` (``hydra.sweeper.params``, else
  the config's own value), for the ``--help`` text.

Registering happens when this module is imported: the commands import it, and so does every
worker process Hydra's launchers start, since they import the task function's module.
"""

from __future__ import annotations

from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from harness.audit.settings import AuditRunSettings
from harness.run.settings import RunSettings

#: ConfigStore name -> schema.
SCHEMAS: dict[str, type] = {"dp_arena_schema": RunSettings,
                            "dp_arena_audit_schema": AuditRunSettings}


def register_schemas() -> None:
    """Store every schema in Hydra's ConfigStore (idempotent)."""
    store = ConfigStore.instance()
    for name, schema in SCHEMAS.items():
        store.store(name=name, node=schema)


def sweep_of(values: Any) -> str:
    """``${dp_arena_sweep:VALUES}`` (see the module docstring)."""
    if isinstance(values, int) and not isinstance(values, bool):
        return ",".join(str(i) for i in range(values))
    return ",".join(str(v) for v in values)


def swept_values(key: str, _root_: DictConfig) -> str:
    """``${dp_arena_swept:KEY}`` (see the module docstring)."""
    params = OmegaConf.select(_root_, "hydra.sweeper.params") or {}
    if key in params:
        return str(params[key]).replace(",", ", ")
    return str(OmegaConf.select(_root_, key, default="?"))


def register_resolvers() -> None:
    """The config's own interpolation functions, once per process."""
    for name, function in (("dp_arena_sweep", sweep_of), ("dp_arena_swept", swept_values)):
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, function)


register_schemas()
register_resolvers()
