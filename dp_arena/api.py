"""dp-arena's Python front door: everything a notebook, a script or a plugin needs, from one
import (``from dp_arena.api import run_competition, read_board, ...``; ``import dp_arena`` and
``dp_arena.run_competition`` give the same objects, loaded on first use).

- **run a competition**: :func:`run_competition` (mechanisms x epsilons x trials on a pandas
  DataFrame, the board returned as a DataFrame; :mod:`dp_arena.sweep.dataframe`), the same
  planning, runner and records as ``dp-arena dataset=csv ...``;
- **read a board**: :func:`read_board` (``dp-arena-board`` as a DataFrame;
  :mod:`dp_arena.report.experiments`);
- **propose a schema**: :func:`propose` with :class:`ProposalSettings` (a public sample, a DP
  proposal charged to its own ledger, or the private table labelled not DP), giving a
  :class:`Proposal`; :class:`Schema` and :class:`Column` to write one by hand;
  :func:`write_proposal` writes one as ``dp-arena-schema`` does;
- **audit**: :func:`audit_mechanism` (``dp-arena-audit OVERRIDES`` without the shell; an
  :class:`AuditResult`; :mod:`dp_arena.audit.entry`);
- **write a contestant**: the bases :class:`Mechanism` (``fit_sample(data, budget, release,
  rng)``) and :class:`Metric`, the release API :class:`Releaser` (every noisy draw on private
  data, charged to a :class:`Ledger`) and the :class:`Budget`;
- **errors**: :class:`DPArenaError` (every user-facing error: one message naming the problem
  and the fix) and its kinds :class:`ConfigError`, :class:`SchemaError`,
  :class:`BudgetExceededError`, :class:`NotApplicable`.

Floor: the top of the library (above :mod:`dp_arena.sweep` and :mod:`dp_arena.audit`, below
the command line, :mod:`dp_arena.cli`, whose commands call it). Nothing here computes: it names
what lives in the rooms below.
"""

from __future__ import annotations

from dp_arena.audit.driver import AuditResult
from dp_arena.audit.entry import audit_mechanism
from dp_arena.data.proposal_file import write_proposal
from dp_arena.data.propose import Proposal, ProposalSettings, propose
from dp_arena.data.schema import Column, Schema
from dp_arena.errors import (
    BudgetExceededError,
    ConfigError,
    DPArenaError,
    NotApplicable,
    SchemaError,
)
from dp_arena.privacy.accounting import Budget, Ledger
from dp_arena.privacy.release import Releaser
from dp_arena.report.experiments import read_board
from dp_arena.sweep.dataframe import run_competition
from dp_arena.mechanisms.base import Mechanism
from dp_arena.metrics.base import Metric

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
    "audit_mechanism",
    "propose",
    "read_board",
    "run_competition",
    "write_proposal",
]
