"""Reporting: where runs go and how they are read back.

- :mod:`~harness.report.tracking`: MLflow plumbing (stores, retries, experiments, source
  fingerprints);
- :mod:`~harness.report.leaderboard`: runs -> the board's statistics (grouping by everything
  that changes the guarantee, de-duplication, means, intervals, significance ranks);
- :mod:`~harness.report.render`: Markdown (escaped), CSV (formula cells neutralised), HTML and
  :func:`~harness.report.render.write_outputs`;
- :mod:`~harness.report.plots`: score vs epsilon and the Pareto plot.

May import: :mod:`metrics`, :mod:`harness.data`, :mod:`harness.privacy` and the ground floor;
never :mod:`harness.run` or :mod:`harness.cli`.
"""
