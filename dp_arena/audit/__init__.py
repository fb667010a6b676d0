"""Privacy audits: an empirical lower bound on a mechanism's epsilon (``dp-arena-audit``).

- :mod:`~dp_arena.audit.settings`: the ``audit`` group's schema and the audit's whole config;
  :mod:`~dp_arena.audit.config_store` registers it with Hydra (``dp_arena_audit_schema``);
- :mod:`~dp_arena.audit.canary`: the canary pair, D (the configured private data) and
  D' = D + one constructed canary person (strategies ``rare_cell``, ``mode_copy``);
- :mod:`~dp_arena.audit.neighbours`: which pair (``canary``, or ``worst_case``: 10 identical
  persons plus one differing on every attribute);
- :mod:`~dp_arena.audit.statistic`: the synthetic view: black-box features of one synthetic
  table about the canary (``canary_cells``, ``distance``);
- :mod:`~dp_arena.audit.releases`: the release view: a run's noisy releases, replayed on the
  other world, and their exact log-likelihood ratio;
- :mod:`~dp_arena.audit.memo`: model fits the replay reuses from the run (identical inputs);
- :mod:`~dp_arena.audit.decision`: the distinguishing test (scorer and threshold chosen on one
  part of the runs, false positives/negatives counted on the rest; the release view's
  symmetrized runs);
- :mod:`~dp_arena.audit.bounds`: Clopper-Pearson bounds and the epsilon (and mu-GDP) lower bound;
- :mod:`~dp_arena.audit.runs`: many runs per world with fresh noise, in isolated children,
  cached so a re-run resumes;
- :mod:`~dp_arena.audit.driver`: the whole audit from a resolved config, logged to MLflow as one
  run (``kind=audit``); :mod:`~dp_arena.audit.entry`: the audit from Python (``dp-arena-audit``
  overrides composed with Hydra's compose API; :func:`dp_arena.api.audit_mechanism`).

Floor: above :mod:`dp_arena.run`, below :mod:`dp_arena.api` and :mod:`dp_arena.cli`. May import :mod:`dp_arena.run`,
:mod:`dp_arena.report`, :mod:`dp_arena.mechanisms`, :mod:`dp_arena.metrics`, :mod:`dp_arena.data`,
:mod:`dp_arena.privacy` and the ground floor; never :mod:`dp_arena.cli`.
"""
