"""Data: what a run reads.

- :mod:`~dp_arena.data.schema`: column kinds and domains, validation, encoding, ``parameters.json``
  and ``domain.json`` formats;
- :mod:`~dp_arena.data.datasets`: the :class:`Dataset` (private part, public part, schema, privacy
  unit) and its loaders (simulated taxi data, CSV files, the shared benchmark datasets);
- :mod:`dp_arena.data.taxi`, the taxi world in its own room:
  :mod:`~dp_arena.data.taxi.sprint3` (facts of the NIST Sprint 3 challenge: schema, runs,
  caps), :mod:`~dp_arena.data.taxi.sim` (the embedded simulated Chicago taxi data),
  :mod:`~dp_arena.data.taxi.chicago` (the Chicago exports), :mod:`~dp_arena.data.taxi.sequences`
  (per-person location sequences: taxi trips in time order, MSNBC clickstreams);
- your own table: :mod:`~dp_arena.data.infer` (value classes and column types),
  :mod:`~dp_arena.data.hints` (public facts, free of budget), :mod:`~dp_arena.data.propose`
  (schema proposals: public sample, DP, private opt-in; written by
  :mod:`~dp_arena.data.proposal_file`) with its DP releases in
  :mod:`~dp_arena.data.dp_type` and :mod:`~dp_arena.data.dp_numbers` (on
  :mod:`~dp_arena.data.tree_histogram`; exact ranges for public data:
  :mod:`~dp_arena.data.exact_numbers`),
  :mod:`~dp_arena.data.datetimes` (date columns), :mod:`~dp_arena.data.conform` (fitting a table
  to a proposed schema, counting what changed), :mod:`~dp_arena.data.overlap` and
  :mod:`~dp_arena.data.provenance` (a "public" sample that is private data; from-private
  marks), :mod:`~dp_arena.data.guards` (warnings before a sweep);
- :mod:`~dp_arena.data.holdout`: the held-out persons, split off before anything sees the data
  (read by scores only).

May import: :mod:`dp_arena.errors` and :mod:`dp_arena.params` only (the ground floor).
"""
