"""Command-line entry points (the top floor; may import every other room).

- :mod:`~harness.cli.main`: ``dp-arena``, the Hydra sweep app (one job = one run);
- :mod:`~harness.cli.callbacks`: the sweep's opening and closing callback (checks, summary,
  tuning, board);
- :mod:`~harness.cli.board`: ``dp-arena-board``;
- :mod:`~harness.cli.simulate`: ``dp-arena-simulate``;
- :mod:`~harness.cli.score`: ``dp-arena-score``;
- :mod:`~harness.cli.audit`: ``dp-arena-audit``; :mod:`~harness.cli.prepare`: ``dp-arena-prepare``;
- :mod:`~harness.cli.schemas`: the typed config schemas, registered with Hydra's ConfigStore;
- :mod:`~harness.cli.compose`: the command line's config checked before Hydra starts (one
  message, exit 2);
- :mod:`~harness.cli.sweep`: a sweep's plan, parent runs, progress and stop handling;
- :mod:`~harness.cli.exits`: how the argparse commands end on bad input.
"""
