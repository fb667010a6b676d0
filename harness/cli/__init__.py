"""Command-line entry points (the top floor; may import every other room). Only entry points
live here: the sweep's life is :mod:`harness.sweep`, the Python API's front door is
:mod:`harness.api` (one floor below).

- :mod:`~harness.cli.main`: ``dp-arena``, the Hydra sweep app (one job = one run);
- :mod:`~harness.cli.callbacks`: the Hydra callback that opens and closes a sweep;
- :mod:`~harness.cli.board`: ``dp-arena-board``;
- :mod:`~harness.cli.simulate`: ``dp-arena-simulate``;
- :mod:`~harness.cli.score`: ``dp-arena-score``;
- :mod:`~harness.cli.audit`: ``dp-arena-audit``; :mod:`~harness.cli.prepare`: ``dp-arena-prepare``;
- :mod:`~harness.cli.schema`: ``dp-arena-schema``; :mod:`~harness.cli.contestants`:
  ``dp-arena-contestants``;
- :mod:`~harness.cli.compose`: the command line's config checked before Hydra starts (one
  message, exit 2);
- :mod:`~harness.cli.exits`: how the argparse commands end on bad input;
- shims for old addresses: :mod:`~harness.cli.notebook` (the Python API, now
  :mod:`harness.api`) and :mod:`~harness.cli.schemas` (the Hydra schemas, now registered by
  their rooms: :mod:`harness.run.config_store`, :mod:`harness.audit.config_store`).
"""
