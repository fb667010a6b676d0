"""Data: what a run reads.

- :mod:`~harness.data.schema`: column kinds and domains, validation, encoding, ``parameters.json``
  and ``domain.json`` formats;
- :mod:`~harness.data.datasets`: the :class:`Dataset` (private part, public part, schema, privacy
  unit) and its loaders (simulated taxi data, CSV files, the shared benchmark datasets);
- :mod:`~harness.data.sprint3`: facts of the NIST Sprint 3 challenge (schema, runs, caps);
- :mod:`~harness.data.taxi_sim`: the embedded simulated Chicago taxi data;
- :mod:`~harness.data.sequences`: per-person location sequences (taxi trips in time order,
  MSNBC clickstreams).

May import: :mod:`harness.errors` and :mod:`harness.params` only (the ground floor).
"""
