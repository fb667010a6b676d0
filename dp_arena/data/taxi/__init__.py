"""The taxi world: the competition's data and what is built on it.

- :mod:`~dp_arena.data.taxi.sprint3`: the Sprint 3 facts (the taxi schema, its caps);
- :mod:`~dp_arena.data.taxi.sim` (with :mod:`~dp_arena.data.taxi.sim_mix` and
  :mod:`~dp_arena.data.taxi.sim_tables`): the taxi simulator (``taxi_sim``);
- :mod:`~dp_arena.data.taxi.chicago`: the Chicago exports (``chicago_sample``);
- :mod:`~dp_arena.data.taxi.sequences`: trips (and MSNBC-style rows) as sequences of locations.

It may import the rest of ``dp_arena.data``, ``dp_arena.errors`` and ``dp_arena.params`` (its own
floor and below); the generic table machinery (schema, datasets, propose, conform) stays in
``dp_arena.data``.
"""
