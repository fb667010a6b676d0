"""Builders shared by test modules (a test module never imports another test module; what two
of them share lives here or in ``tests/conftest.py``):

- :mod:`~tests.support.board`: hand-made runs as ``load_runs`` returns them, Markdown parsing;
- :mod:`~tests.support.terminal_rows`, :mod:`~tests.support.views`: whole boards of such runs
  (the terminal board's, the utility and risk views');
- :mod:`~tests.support.people`, :mod:`~tests.support.rdt_people`: small census-like tables;
- :mod:`~tests.support.sequences`: the sequence papers' examples and frames;
- :mod:`~tests.support.external`: the external contestant double and its fit;
- :mod:`~tests.support.runs`: one run's config and its logged files;
- :mod:`~tests.support.mlflow_server`: a throwaway MLflow server;
- :mod:`~tests.support.accounting_check`: a ledger's epsilon recomputed with autodp;
- :mod:`~tests.support.tolerances`: tolerances derived from the computation (ulps, standard
  errors, a z for a stated false-failure probability);
- :mod:`~tests.support.forked`: a console script run as a user runs it, in a child of a fork
  server that imported dp-arena once (a fresh interpreter per command cost 2-3 s of CPU).
"""
