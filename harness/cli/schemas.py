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

Registering happens when this module is imported: the commands import it, and so does every
worker process Hydra's launchers start, since they import the task function's module.
"""

from __future__ import annotations

from hydra.core.config_store import ConfigStore

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


register_schemas()
