"""Running: one run from config to logged MLflow run.

- :mod:`~harness.run.settings`: the typed schema of the config (one dataclass per group and the
  root), which Hydra and :mod:`~harness.run.config` check against;
- :mod:`~harness.run.config_store`: that schema and the config's resolvers, registered with
  Hydra (``dp_arena_schema``, ``${dp_arena_sweep:...}``, ``${dp_arena_swept:...}``);
- :mod:`~harness.run.config`: a run's config in one shape (the typed settings, converted
  once, and what a sweep adds); the experiment; the components; labels;
- :mod:`~harness.run.content`: what a run computes, described once, and every key derived
  from it (resume, identical jobs, audits);
- :mod:`~harness.run.preflight`: a run checked against its data before it starts;
- :mod:`~harness.run.runner`: ``run_one`` (validate, load, fit, validate output, score, log);
- :mod:`~harness.run.isolation`: the run's computation in a child process under time and memory
  limits;
- :mod:`~harness.run.resources`: wall time and peak memory of a block;
- :mod:`~harness.run.tuning`: tuning modes (public, oracle, dp_select), the public view, search
  spaces; :mod:`~harness.run.dp_select`: private selection as a mechanism wrapping the
  mechanism.

May import: :mod:`harness.report`, :mod:`mechanisms`, :mod:`metrics`, :mod:`harness.data`,
:mod:`harness.privacy` and the ground floor; never :mod:`harness.sweep`, :mod:`harness.audit` or :mod:`harness.cli`.
"""
