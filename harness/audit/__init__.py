"""Privacy audits: an empirical lower bound on a mechanism's epsilon (``dp-arena-audit``).

- :mod:`~harness.audit.settings`: the ``audit`` group's schema and the audit's whole config;
  :mod:`~harness.audit.config_store` registers it with Hydra (``dp_arena_audit_schema``);
- :mod:`~harness.audit.canary`: the canary pair, D (the configured private data) and
  D' = D + one constructed canary person (strategies ``rare_cell``, ``mode_copy``);
- :mod:`~harness.audit.neighbours`: which pair (``canary``, or ``worst_case``: 10 identical
  persons plus one differing on every attribute);
- :mod:`~harness.audit.statistic`: the synthetic view: black-box features of one synthetic
  table about the canary (``canary_cells``, ``distance``);
- :mod:`~harness.audit.releases`: the release view: a run's noisy releases, replayed on the
  other world, and their exact log-likelihood ratio;
- :mod:`~harness.audit.memo`: model fits the replay reuses from the run (identical inputs);
- :mod:`~harness.audit.decision`: the distinguishing test (scorer and threshold chosen on one
  part of the runs, false positives/negatives counted on the rest; the release view's
  symmetrized runs);
- :mod:`~harness.audit.bounds`: Clopper-Pearson bounds and the epsilon (and mu-GDP) lower bound;
- :mod:`~harness.audit.runs`: many runs per world with fresh noise, in isolated children,
  cached so a re-run resumes;
- :mod:`~harness.audit.driver`: the whole audit from a resolved config, logged to MLflow as one
  run (``kind=audit``); :mod:`~harness.audit.entry`: the audit from Python (``dp-arena-audit``
  overrides composed with Hydra's compose API; :func:`harness.api.audit_mechanism`).

Floor: above :mod:`harness.run`, below :mod:`harness.api` and :mod:`harness.cli`. May import :mod:`harness.run`,
:mod:`harness.report`, :mod:`mechanisms`, :mod:`metrics`, :mod:`harness.data`,
:mod:`harness.privacy` and the ground floor; never :mod:`harness.cli`.
"""
