"""Command-line entry points (the top floor; may import every other room).

- :mod:`~harness.cli.main`: ``dp-arena``, the Hydra sweep app (one job = one run);
- :mod:`~harness.cli.callbacks`: the sweep's closing callback (summary, tuning, board);
- :mod:`~harness.cli.board`: ``dp-arena-board``;
- :mod:`~harness.cli.simulate`: ``dp-arena-simulate``;
- :mod:`~harness.cli.score`: ``dp-arena-score``.
"""
