"""Reporting: where runs go and how they are read back.

- :mod:`~harness.report.tracking`: MLflow plumbing (stores, retries, experiments, source
  fingerprints);
- :mod:`~harness.report.leaderboard`: runs -> the board's statistics (grouping by everything
  that changes the guarantee, de-duplication, means, intervals, significance ranks);
- :mod:`~harness.report.scores`: issue 38's utility and risk score names, which scores carry a
  CI column, and reading a row's value of one;
- :mod:`~harness.report.risk`: the bound a row's claimed budget implies on a membership
  attack's TPR, ``min(1, e^epsilon * FPR + delta)``, and the mark when the attack beats it
  (empirical risk, not a DP guarantee);
- :mod:`~harness.report.schema_notes`: the board's notes about schemas (mixed schemas of one
  dataset, what a proposed schema keeps);
- :mod:`~harness.report.cells`: cell text (numbers, ranks, statuses, Markdown escaping), column
  specs, table views and the Markdown pipe table;
- :mod:`~harness.report.views`: the utility view and the risk view tables and their legends;
- :mod:`~harness.report.render`: Markdown (escaped), CSV (formula cells neutralised), HTML and
  :func:`~harness.report.render.write_outputs`;
- :mod:`~harness.report.terminal`: the board as plain text within the terminal's width;
- :mod:`~harness.report.plots`: score vs epsilon, the Pareto plot and ML efficacy vs epsilon;
- :mod:`~harness.report.audits`: audit results attached to the board's rows;
- :mod:`~harness.report.experiments`: an experiment's board read back (the latest
  ``dp-arena/*`` experiment, ``read_board``; ``dp-arena-board`` and :mod:`harness.api`);
- :mod:`~harness.report.headline`: a sweep's headline table logged on its parent run.

May import: :mod:`metrics`, :mod:`harness.data`, :mod:`harness.privacy` and the ground floor;
never :mod:`harness.run` or :mod:`harness.cli`.
"""
