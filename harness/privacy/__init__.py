"""Privacy: budgets, calibration, composition and the per-run ledger.

- :mod:`~harness.privacy.accounting`: budgets, (epsilon, delta) conversions, noise calibration,
  composition under the ``gdp`` and ``zcdp`` accountants and the :class:`Ledger`.

May import: :mod:`harness.errors` and :mod:`harness.params` only (the ground floor).
"""
