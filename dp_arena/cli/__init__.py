"""Command-line entry points (the top floor; may import every other room). Only entry points
live here: the sweep's life is :mod:`dp_arena.sweep`, the Python API's front door is
:mod:`dp_arena.api` (one floor below).

- :mod:`~dp_arena.cli.main`: ``dp-arena``, the Hydra sweep app (one job = one run);
- :mod:`~dp_arena.cli.callbacks`: the Hydra callback that opens and closes a sweep;
- :mod:`~dp_arena.cli.board`: ``dp-arena-board``;
- :mod:`~dp_arena.cli.simulate`: ``dp-arena-simulate``;
- :mod:`~dp_arena.cli.score`: ``dp-arena-score``;
- :mod:`~dp_arena.cli.audit`: ``dp-arena-audit``; :mod:`~dp_arena.cli.prepare`: ``dp-arena-prepare``;
- :mod:`~dp_arena.cli.schema`: ``dp-arena-schema``; :mod:`~dp_arena.cli.contestants`:
  ``dp-arena-contestants``;
- :mod:`~dp_arena.cli.compose`: the command line's config checked before Hydra starts (one
  message, exit 2);
- :mod:`~dp_arena.cli.exits`: how the argparse commands end on bad input.
"""
