"""dp-arena: DP synthetic-data competitions: data, schema, privacy accounting, mechanisms,
metrics, runner, tracking and leaderboard, in one package.

The front door is :mod:`dp_arena.api` (its ``__all__``: run a competition, read a board,
propose a schema, audit, the Mechanism and Metric bases, Releaser, Budget, Ledger, the errors).
Its names are re-exported here and loaded on first use (PEP 562 ``__getattr__``), so
``import dp_arena`` stays cheap: ``dp_arena.run_competition is dp_arena.api.run_competition``.
"""

from __future__ import annotations

import importlib

from dp_arena.version import VERSION as __version__

#: The front door's names (:data:`dp_arena.api.__all__`), loaded from :mod:`dp_arena.api` on
#: first use. (Its audit is ``audit_mechanism``: ``dp_arena.audit`` is the audit's package.)
__all__ = [
    "AuditResult",
    "Budget",
    "BudgetExceededError",
    "Column",
    "ConfigError",
    "DPArenaError",
    "Ledger",
    "Mechanism",
    "Metric",
    "NotApplicable",
    "Proposal",
    "ProposalSettings",
    "Releaser",
    "Schema",
    "SchemaError",
    "__version__",
    "audit_mechanism",
    "propose",
    "read_board",
    "run_competition",
    "write_proposal",
]
FRONT_DOOR = frozenset(__all__) - {"__version__"}


def __getattr__(name: str) -> object:
    """A front-door name, from :mod:`dp_arena.api` (imported on first use)."""
    if name in FRONT_DOOR:
        return getattr(importlib.import_module("dp_arena.api"), name)
    raise AttributeError(f"module 'dp_arena' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *FRONT_DOOR} - {"importlib", "annotations"})
