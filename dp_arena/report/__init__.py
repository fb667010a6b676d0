"""Reporting: where runs go and how they are read back.

- :mod:`~dp_arena.report.tracking`: MLflow plumbing (stores, retries, experiments, source
  fingerprints);
- :mod:`~dp_arena.report.leaderboard`: runs -> the board's statistics (grouping by everything
  that changes the guarantee, de-duplication, means, intervals); :mod:`~dp_arena.report.ranks`:
  rows in order of their mean, ranks shared only by rows no test tells apart;
- :mod:`~dp_arena.report.scores`: the held-out utility and risk score names, which scores carry a
  CI column, and reading a row's value of one;
- :mod:`~dp_arena.report.risk`: the bound a row's claimed budget implies on a membership
  attack's TPR, ``min(1, e^epsilon * FPR + delta)``, and the mark when the attack beats it
  (empirical risk, not a DP guarantee);
- :mod:`~dp_arena.report.schema_notes`: the board's notes about schemas (mixed schemas of one
  dataset, what a proposed schema keeps);
- :mod:`~dp_arena.report.cells`: cell text (numbers, ranks, statuses, Markdown escaping), column
  specs, table views and the Markdown pipe table;
- :mod:`~dp_arena.report.views`: the utility view and the risk view tables and their legends;
- :mod:`~dp_arena.report.render`: Markdown (escaped), CSV (formula cells neutralised), HTML and
  :func:`~dp_arena.report.render.write_outputs`;
- :mod:`~dp_arena.report.terminal`: the board as plain text within the terminal's width;
- :mod:`~dp_arena.report.plots`: score vs epsilon, the Pareto plot and ML efficacy vs epsilon;
- :mod:`~dp_arena.report.audits`: audit results attached to the board's rows;
- :mod:`~dp_arena.report.experiments`: an experiment's board read back (the latest
  ``dp-arena/*`` experiment, ``read_board``; ``dp-arena-board`` and :mod:`dp_arena.api`);
- :mod:`~dp_arena.report.headline`: a sweep's headline table logged on its parent run.

May import: :mod:`dp_arena.metrics`, :mod:`dp_arena.data`, :mod:`dp_arena.privacy` and the ground floor;
never :mod:`dp_arena.run` or :mod:`dp_arena.cli`.
"""
