"""The marks a board row carries, and their legend.

A mark says why a row must not be read like an audited DP row: noise a key holder can replay,
an opted-in large delta, private tables logged, a schema read from the private file, a budget
the ledger could not check (an external contestant), what a contestant reads from the private
data outside its budget (its ``claim.reads_from_data`` tag: the domain or bins, the row
count), or an attack that beats the bound a claimed budget implies. :func:`group_marks` reads
them from a row's runs; ``MARK_LEGEND`` explains each on every board format.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from dp_arena.report.risk import BOUND_LEGEND, MARK_BEATS_BOUND

MARK_REPLAYABLE = "replayable (not DP to key holders)"
MARK_LARGE_DELTA = "large delta (delta >= 1/n allowed)"
MARK_PRIVATE_TABLES = "private tables logged"
MARK_SCHEMA_PRIVATE = "schema from private data (not DP)"
MARK_DECLARED = "budget declared by the contestant, not checked by the ledger"
MARK_DOMAIN_FROM_DATA = "domain from data"
MARK_ROWS_FROM_DATA = "row count from data"
MARK_READS_UNKNOWN = "reads from data: unknown"
MARK_UNSANDBOXED = "contestant not sandboxed"
#: The run tag saying which isolation a contestant ran under (``none (...)`` when the user
#: set ``contestant.isolation=none``; :mod:`dp_arena.sandbox`).
ISOLATION_TAG = "contestant.isolation"
#: The run tag where a contestant declares what it reads from the private data outside its
#: budget (:mod:`dp_arena.mechanisms.contestants.claims`): ``domain``, ``bins``, ``row_count`` (a comma
#: list), ``none`` or ``unknown``.
CLAIM_READS_TAG = "claim.reads_from_data"
MARK_LEGEND = (
    (MARK_REPLAYABLE, ("noise derived from the local secret key: reproducible, but not a DP "
                       "release to anyone who holds the key; never ranked")),
    (MARK_LARGE_DELTA, ("run with delta >= 1/(number of persons) by explicit opt-in: a weak "
                        "guarantee; never ranked")),
    (MARK_PRIVATE_TABLES, ("the run logged tables computed on the private data (opt-in); its "
                           "synthetic data is still ranked")),
    (MARK_SCHEMA_PRIVATE, ("the schema's values and ranges were read from the private file "
                           "(dp-arena-schema --from-private): the release is not DP as a "
                           "whole (epsilon_total = inf)")),
    (MARK_DECLARED, ("an external contestant run in its own environment, in an operating-"
                     "system sandbox unless marked otherwise (accounting=declared): the ledger "
                     "records the budget it was given as one charge and cannot see its noise; "
                     "the audit column measures it like any row")),
    (MARK_UNSANDBOXED, ("the contestant ran without the sandbox (contestant.isolation=none, "
                        "set by the user): it could read what the harness's user can read")),
    (MARK_DOMAIN_FROM_DATA, ("the contestant's library reads the categories or bins from the "
                             "private data outside its budget (declared in claim.reads_from_"
                             "data): its release is not DP as a whole")),
    (MARK_ROWS_FROM_DATA, ("the contestant's library reads the exact private row count "
                           "outside its budget (declared in claim.reads_from_data)")),
    (MARK_READS_UNKNOWN, ("the contestant does not say what it reads from the private data "
                          "outside its budget")),
    (MARK_BEATS_BOUND, BOUND_LEGEND))


def row_marks(noise: str, large_delta: str, private_tables: str) -> list[str]:
    """The labels a row's settings give it (see ``MARK_LEGEND``)."""
    return [mark for mark, on in ((MARK_REPLAYABLE, noise == "replayable"),
                                  (MARK_LARGE_DELTA, large_delta == "true"),
                                  (MARK_PRIVATE_TABLES, private_tables == "true")) if on]


def claim_marks(reads: set[str]) -> list[str]:
    """The marks of what a contestant declares it reads from the private data."""
    return [mark for mark, on in (
        (MARK_DOMAIN_FROM_DATA, bool(reads & {"domain", "bins"})),
        (MARK_ROWS_FROM_DATA, "row_count" in reads),
        (MARK_READS_UNKNOWN, "unknown" in reads)) if on]


def declared_reads(group: pd.DataFrame) -> set[str]:
    """Everything any run of the row declares it reads (``claim_reads`` column)."""
    if "claim_reads" not in group:
        return set()
    return {part.strip() for value in group["claim_reads"].fillna("").astype(str)
            for part in value.split(",") if part.strip() not in ("", "none", "nan")}


def group_marks(group: pd.DataFrame, ident: dict[str, Any]) -> list[str]:
    """Every mark of a board row from its runs (``group``) and identity."""
    return (row_marks(ident["noise"], ident["large_delta"], ident["private_tables"])
            + ([MARK_SCHEMA_PRIVATE] if "schema_source" in group
               and (group["schema_source"] == "private").any() else [])
            + ([MARK_DECLARED] if "accounting" in group
               and (group["accounting"] == "declared").any() else [])
            + ([MARK_UNSANDBOXED] if "contestant_isolation" in group
               and group["contestant_isolation"].fillna("").astype(str)
               .str.startswith("none").any() else [])
            + claim_marks(declared_reads(group)))
