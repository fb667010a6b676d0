"""The taxi world: the competition's data and what is built on it.

- :mod:`~harness.data.taxi.sprint3`: the Sprint 3 facts (the taxi schema, its caps);
- :mod:`~harness.data.taxi.sim` (with :mod:`~harness.data.taxi.sim_mix` and
  :mod:`~harness.data.taxi.sim_tables`): the taxi simulator (``taxi_sim``);
- :mod:`~harness.data.taxi.chicago`: the Chicago exports (``chicago_sample``);
- :mod:`~harness.data.taxi.sequences`: trips (and MSNBC-style rows) as sequences of locations.

It may import the rest of ``harness.data``, ``harness.errors`` and ``harness.params`` (its own
floor and below); the generic table machinery (schema, datasets, propose, conform) stays in
``harness.data``.
"""
