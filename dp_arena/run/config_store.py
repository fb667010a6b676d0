"""The run's typed config schema and the config's own interpolation functions, registered
with Hydra (this room registers what it owns; :mod:`dp_arena.audit.config_store` registers the
audit's).

Hydra checks every composed config (config files, the command line's overrides, each job of a
sweep) against the registered dataclass: values are converted to the field's type or refused,
and unknown keys are refused. ``dp_arena/conf/config.yaml`` starts from it (``defaults: -
dp_arena_schema``):

- ``dp_arena_schema``: :class:`dp_arena.run.settings.RunSettings`, whose groups are
  :class:`~dp_arena.run.settings.PrivacySettings` (``privacy``),
  :class:`~dp_arena.run.settings.TrackingSettings` (``tracking``),
  :class:`~dp_arena.run.settings.Limits` (``limits``), :class:`~dp_arena.run.settings.Tuning`
  (``tuning``) and :class:`~dp_arena.run.settings.CompetitionSettings` (``competition``).

``dataset``, ``mechanism`` and ``metrics`` stay open mappings: their settings are checked by
the dataset loader and by each mechanism's and metric's own dataclass (whose types, such as
``Literal``, OmegaConf cannot describe), before any job starts.

The config's interpolation functions (OmegaConf resolvers):

- ``${dp_arena_sweep:VALUES}``: a list as the sweep of its values (``[1.0, 10.0]`` ->
  ``1.0,10.0``), a count ``n`` as ``0,1,...,n-1``: a competition's sweep is its own lists
  (``competition.mechanisms``, ``epsilons``, ``trials``), written once (dp_arena/conf/competition/);
- ``${dp_arena_swept:KEY}``: what the sweep runs for ``KEY`` (``hydra.sweeper.params``, else
  the config's own value), for the ``--help`` text.

:func:`register` stores both (idempotent). Importing this module calls it: the commands import
it, and so does every worker process Hydra's launchers start, since they import the task
function's module.
"""

from __future__ import annotations

from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from dp_arena.run.settings import RunSettings

#: ConfigStore name -> schema (this room's).
SCHEMAS: dict[str, type] = {"dp_arena_schema": RunSettings}


def store_schemas(schemas: dict[str, type]) -> None:
    """Store each schema in Hydra's ConfigStore under its name (idempotent)."""
    store = ConfigStore.instance()
    for name, schema in schemas.items():
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


#: Resolver name -> function.
RESOLVERS = {"dp_arena_sweep": sweep_of, "dp_arena_swept": swept_values}


def register_resolvers() -> None:
    """The config's own interpolation functions, once per process."""
    for name, function in RESOLVERS.items():
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, function)


def register() -> None:
    """The run's schema and the config's resolvers (idempotent)."""
    store_schemas(SCHEMAS)
    register_resolvers()


register()
