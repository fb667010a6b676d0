"""dp-arena harness: data, schema, privacy accounting, runner, tracking and leaderboard.

The front door is :mod:`harness.api` (its ``__all__``: run a competition, read a board,
propose a schema, audit, the Mechanism and Metric bases, Releaser, Budget, Ledger, the errors).
Its names are re-exported here and loaded on first use (PEP 562 ``__getattr__``), so
``import harness`` stays cheap: ``harness.run_competition is harness.api.run_competition``.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

#: The front door's names (:data:`harness.api.__all__`), loaded from :mod:`harness.api` on
#: first use. (Its audit is ``audit_mechanism``: ``harness.audit`` is the audit's package.)
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
    """A front-door name, from :mod:`harness.api` (imported on first use)."""
    if name in FRONT_DOOR:
        return getattr(importlib.import_module("harness.api"), name)
    raise AttributeError(f"module 'harness' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *FRONT_DOOR} - {"importlib", "annotations"})
