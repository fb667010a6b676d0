"""The typed config schemas and the config's resolvers, registered with Hydra (a shim).

Each room registers its own: :mod:`harness.run.config_store` (``dp_arena_schema``, the
``dp_arena_sweep`` / ``dp_arena_swept`` resolvers) and :mod:`harness.audit.config_store`
(``dp_arena_audit_schema``). Importing this module registers both, as it always did, for
scripts and tests that import it.
"""

from __future__ import annotations

from harness.audit.config_store import SCHEMAS as AUDIT_SCHEMAS
from harness.audit.config_store import register
from harness.run.config_store import SCHEMAS as RUN_SCHEMAS
from harness.run.config_store import register_resolvers, sweep_of, swept_values

__all__ = ["SCHEMAS", "register_resolvers", "register_schemas", "sweep_of", "swept_values"]

#: ConfigStore name -> schema, every room's.
SCHEMAS: dict[str, type] = {**RUN_SCHEMAS, **AUDIT_SCHEMAS}


def register_schemas() -> None:
    """Store every schema in Hydra's ConfigStore (idempotent)."""
    register()


register()
