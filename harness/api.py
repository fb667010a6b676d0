"""dp-arena's Python front door: everything a notebook, a script or a plugin needs, from one
import (``from harness.api import run_competition, read_board, ...``; ``import harness`` and
``harness.run_competition`` give the same objects, loaded on first use).

- **run a competition**: :func:`run_competition` (mechanisms x epsilons x trials on a pandas
  DataFrame, the board returned as a DataFrame; :mod:`harness.sweep.dataframe`), the same
  planning, runner and records as ``dp-arena dataset=csv ...``;
- **read a board**: :func:`read_board` (``dp-arena-board`` as a DataFrame;
  :mod:`harness.report.experiments`);
- **propose a schema**: :func:`propose` with :class:`ProposalSettings` (a public sample, a DP
  proposal charged to its own ledger, or the private table labelled not DP), giving a
  :class:`Proposal`; :class:`Schema` and :class:`Column` to write one by hand;
  :func:`write_proposal` writes one as ``dp-arena-schema`` does;
- **audit**: :func:`audit_mechanism` (``dp-arena-audit OVERRIDES`` without the shell; an
  :class:`AuditResult`; :mod:`harness.audit.entry`);
- **write a contestant**: the bases :class:`Mechanism` (``fit_sample(data, budget, release,
  rng)``) and :class:`Metric`, the release API :class:`Releaser` (every noisy draw on private
  data, charged to a :class:`Ledger`) and the :class:`Budget`;
- **errors**: :class:`DPArenaError` (every user-facing error: one message naming the problem
  and the fix) and its kinds :class:`ConfigError`, :class:`SchemaError`,
  :class:`BudgetExceededError`, :class:`NotApplicable`.

Floor: the top of the library (above :mod:`harness.sweep` and :mod:`harness.audit`, below
the command line, :mod:`harness.cli`, whose commands call it). Nothing here computes: it names
what lives in the rooms below.
"""

from __future__ import annotations

from harness.audit.driver import AuditResult
from harness.audit.entry import audit_mechanism
from harness.data.proposal_file import write_proposal
from harness.data.propose import Proposal, ProposalSettings, propose
from harness.data.schema import Column, Schema
from harness.errors import (
    BudgetExceededError,
    ConfigError,
    DPArenaError,
    NotApplicable,
    SchemaError,
)
from harness.privacy.accounting import Budget, Ledger
from harness.privacy.release import Releaser
from harness.report.experiments import read_board
from harness.sweep.dataframe import run_competition
from mechanisms.base import Mechanism
from metrics.base import Metric

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
