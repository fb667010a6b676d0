"""A sweep's life: its plan, its jobs and their outcomes, progress, parent runs and stopping,
the summary and the final tuning stage (below :mod:`harness.api` and :mod:`harness.cli`,
beside :mod:`harness.audit`).

- :mod:`~harness.sweep.records`: the typed records (plan, job, started, outcome) and their one
  JSON form in the sweep folder, through which the launching process and the jobs talk;
- :mod:`~harness.sweep.plan`: every job expanded, composed and checked before any starts;
- :mod:`~harness.sweep.launch_checks`: the launcher, tracking server and sweep folder;
- :mod:`~harness.sweep.job`: one job in the worker (verdict, run, outcome, its line);
- :mod:`~harness.sweep.progress`: done / in flight / failed and a cost-weighted ETA;
- :mod:`~harness.sweep.parents`: the MLflow parent runs, and stopping on SIGTERM/SIGINT;
- :mod:`~harness.sweep.summary`: the summary and this sweep's leaderboard;
- :mod:`~harness.sweep.tuning`: a tuning search's final stage (choose, then score);
- :mod:`~harness.sweep.session`: opening and closing a sweep (the Hydra callback's two halves);
- :mod:`~harness.sweep.dataframe`: a competition on a pandas DataFrame (the Python API's
  ``run_competition``, :mod:`harness.api`), through the same plan, jobs and summary.

May import: :mod:`harness.run`, :mod:`harness.report`, :mod:`mechanisms`, :mod:`metrics`,
:mod:`harness.data`, :mod:`harness.privacy` and the ground floor; never :mod:`harness.cli`
or :mod:`harness.audit`.
"""
