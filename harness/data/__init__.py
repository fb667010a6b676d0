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

May import: :mod:`harness.errors`, :mod:`harness.params` and :mod:`harness.moved` only (the
ground floor).
"""

from harness.moved import keep_old_names

#: The taxi world's modules before they moved into :mod:`harness.data.taxi` (issue 42): their
#: old names still import, with one DeprecationWarning (:mod:`harness.moved`).
MOVED = {"harness.data.taxi_sim": "harness.data.taxi.sim",
         "harness.data.taxi_sim_mix": "harness.data.taxi.sim_mix",
         "harness.data.taxi_sim_tables": "harness.data.taxi.sim_tables",
         **{f"harness.data.{m}": f"harness.data.taxi.{m}"
            for m in ("chicago", "sprint3", "sequences")}}
keep_old_names(MOVED)
