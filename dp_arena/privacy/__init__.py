"""Privacy: budgets, calibration, composition and the per-run ledger.

- :mod:`~dp_arena.privacy.accounting`: budgets, (epsilon, delta) conversions, noise calibration,
  composition under the ``gdp`` and ``zcdp`` accountants and the :class:`Ledger`;
- :mod:`~dp_arena.privacy.release`: the release API: every noisy draw of a mechanism, charged to
  the ledger and drawn in one call, by the ``numpy`` or ``opendp`` sampler;
- :mod:`~dp_arena.privacy.thresholded`: thresholded Laplace counts of a sparse histogram (the
  exact empty-cell shortcut) and their likelihood;
- :mod:`~dp_arena.privacy.noise`: where a run's noise comes from (fresh OS entropy by default;
  an explicit, labelled replayable mode);
- :mod:`~dp_arena.privacy.secret`: the local secret key and keyed (HMAC) digests of private data.

May import: :mod:`dp_arena.errors` and :mod:`dp_arena.params` only (the ground floor).
"""
