"""The audit's typed config schema, registered with Hydra's ConfigStore (this room registers
what it owns, on top of :mod:`dp_arena.run.config_store`).

- ``dp_arena_audit_schema``: :class:`dp_arena.audit.settings.AuditRunSettings`
  (``dp_arena/conf/audit.yaml`` starts from it): the run's settings plus
  :class:`~dp_arena.audit.settings.AuditSettings` (``audit``).

:func:`register` stores it, with the run's schema and resolvers (idempotent); importing this
module calls it.
"""

from __future__ import annotations

from dp_arena.audit.settings import AuditRunSettings
from dp_arena.run import config_store as run_store

#: ConfigStore name -> schema (this room's).
SCHEMAS: dict[str, type] = {"dp_arena_audit_schema": AuditRunSettings}


def register() -> None:
    """The audit's schema, and the run's schema and resolvers (idempotent)."""
    run_store.register()
    run_store.store_schemas(SCHEMAS)


register()
