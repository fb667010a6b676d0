"""Reporting: where runs go and how they are read back.

- :mod:`~harness.report.tracking`: MLflow plumbing (stores, retries, experiments, source
  fingerprints);
- :mod:`~harness.report.leaderboard`: runs -> ranked tables, Markdown/CSV/HTML and plots.

May import: :mod:`metrics`, :mod:`harness.data`, :mod:`harness.privacy` and the ground floor;
never :mod:`harness.run` or :mod:`harness.cli`.
"""
