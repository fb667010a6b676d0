"""Running: one run from config to logged MLflow run.

- :mod:`~dp_arena.run.settings`: the typed schema of the config (one dataclass per group and the
  root), which Hydra and :mod:`~dp_arena.run.config` check against;
- :mod:`~dp_arena.run.config_store`: that schema and the config's resolvers, registered with
  Hydra (``dp_arena_schema``, ``${dp_arena_sweep:...}``, ``${dp_arena_swept:...}``);
- :mod:`~dp_arena.run.config`: a run's config in one shape (the typed settings, converted
  once, and what a sweep adds); the experiment; the components; labels;
- :mod:`~dp_arena.run.content`: what a run computes, described once, and every key derived
  from it (resume, identical jobs, audits);
- :mod:`~dp_arena.run.preflight`: a run checked against its data before it starts;
- :mod:`~dp_arena.run.runner`: ``run_one`` (validate, load, fit, validate output, score, log);
- :mod:`~dp_arena.run.heldout`: scores computed on held-out persons, kept on the owner's side
  (an owner-only file, not the tracking store);
- :mod:`~dp_arena.run.isolation`: the run's computation in a child process under time and memory
  limits;
- :mod:`~dp_arena.run.resources`: wall time and peak memory of a block;
- :mod:`~dp_arena.run.tuning`: tuning modes (public, oracle, dp_select), the public view, search
  spaces; :mod:`~dp_arena.run.dp_select`: private selection as a mechanism wrapping the
  mechanism.

May import: :mod:`dp_arena.report`, :mod:`dp_arena.mechanisms`, :mod:`dp_arena.metrics`, :mod:`dp_arena.data`,
:mod:`dp_arena.privacy` and the ground floor; never :mod:`dp_arena.sweep`, :mod:`dp_arena.audit` or :mod:`dp_arena.cli`.
"""
