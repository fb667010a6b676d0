"""Data: what a run reads.

- :mod:`~harness.data.schema`: column kinds and domains, validation, encoding, ``parameters.json``
  and ``domain.json`` formats;
- :mod:`~harness.data.datasets`: the :class:`Dataset` (private part, public part, schema, privacy
  unit) and its loaders (simulated taxi data, CSV files, the shared benchmark datasets);
- :mod:`harness.data.taxi`, the taxi world in its own room:
  :mod:`~harness.data.taxi.sprint3` (facts of the NIST Sprint 3 challenge: schema, runs,
  caps), :mod:`~harness.data.taxi.sim` (the embedded simulated Chicago taxi data),
  :mod:`~harness.data.taxi.chicago` (the Chicago exports), :mod:`~harness.data.taxi.sequences`
  (per-person location sequences: taxi trips in time order, MSNBC clickstreams);
- your own table: :mod:`~harness.data.infer` (value classes and column types),
  :mod:`~harness.data.hints` (public facts, free of budget), :mod:`~harness.data.propose`
  (schema proposals: public sample, DP, private opt-in; written by
  :mod:`~harness.data.proposal_file`) with its DP releases in
  :mod:`~harness.data.dp_type` and :mod:`~harness.data.dp_numbers` (on
  :mod:`~harness.data.tree_histogram`; exact ranges for public data:
  :mod:`~harness.data.exact_numbers`),
  :mod:`~harness.data.datetimes` (date columns), :mod:`~harness.data.conform` (fitting a table
  to a proposed schema, counting what changed), :mod:`~harness.data.overlap` and
  :mod:`~harness.data.provenance` (a "public" sample that is private data; from-private
  marks), :mod:`~harness.data.guards` (warnings before a sweep);
- :mod:`~harness.data.holdout`: the held-out persons, split off before anything sees the data
  (read by scores only).

May import: :mod:`harness.errors` and :mod:`harness.params` only (the ground floor).
"""
