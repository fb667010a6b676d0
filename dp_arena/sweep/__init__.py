"""A sweep's life: its plan, its jobs and their outcomes, progress, parent runs and stopping,
the summary and the final tuning stage (below :mod:`dp_arena.api` and :mod:`dp_arena.cli`,
beside :mod:`dp_arena.audit`).

- :mod:`~dp_arena.sweep.records`: the typed records (plan, job, started, outcome) and their one
  JSON form in the sweep folder, through which the launching process and the jobs talk;
- :mod:`~dp_arena.sweep.plan`: every job expanded, composed and checked before any starts;
- :mod:`~dp_arena.sweep.launch_checks`: the launcher, tracking server and sweep folder;
- :mod:`~dp_arena.sweep.job`: one job in the worker (verdict, run, outcome, its line);
- :mod:`~dp_arena.sweep.progress`: done / in flight / failed and a cost-weighted ETA;
- :mod:`~dp_arena.sweep.parents`: the MLflow parent runs, and stopping on SIGTERM/SIGINT;
- :mod:`~dp_arena.sweep.summary`: the summary and this sweep's leaderboard;
- :mod:`~dp_arena.sweep.tuning`: a tuning search's final stage (choose, then score);
- :mod:`~dp_arena.sweep.session`: opening and closing a sweep (the Hydra callback's two halves);
- :mod:`~dp_arena.sweep.dataframe`: a competition on a pandas DataFrame (the Python API's
  ``run_competition``, :mod:`dp_arena.api`), through the same plan, jobs and summary.

May import: :mod:`dp_arena.run`, :mod:`dp_arena.report`, :mod:`dp_arena.mechanisms`, :mod:`dp_arena.metrics`,
:mod:`dp_arena.data`, :mod:`dp_arena.privacy` and the ground floor; never :mod:`dp_arena.cli`
or :mod:`dp_arena.audit`.
"""
