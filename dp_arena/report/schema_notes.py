"""The board's notes about schemas (printed above the tables in Markdown, HTML and on the
terminal).

- :func:`mixed_schema_notes`: one note per dataset whose rows ran on different schemas
  (distinct keyed digests, tag ``schema_digest``, collected per row as ``schema_digests``),
  since a coarser schema can score higher. The board ranks such rows apart (the schema is part
  of a row's pool, :data:`dp_arena.report.leaderboard.POOL`): one winner per schema, never a
  rank or a tie across schemas, and the note says so;
- :func:`schema_notes`: those notes, then, per dataset on a proposed schema, what the schema
  keeps (tag ``schema_quality``: its source and spend, the columns that keep little, the
  columns loading changed).

The notes name a dataset and how many schemas, never a private value.
"""

from __future__ import annotations

import pandas as pd

from dp_arena.report.leaderboard import is_not_applicable


def schema_notes(board: pd.DataFrame) -> list[str]:
    """The board's notes about schemas: datasets whose runs used different schemas
    (:func:`mixed_schema_notes`), then, per dataset on a proposed schema, what the schema
    keeps (tag ``schema_quality``: its source and spend, the columns that keep little, the
    columns loading changed)."""
    notes = mixed_schema_notes(board)
    if "schema_quality" not in board or "dataset" not in board:
        return notes
    scored = board[~is_not_applicable(board)]
    for name, part in scored.groupby("dataset", sort=True):
        texts = sorted({t for t in part["schema_quality"].fillna("").astype(str) if t})
        notes += [f"schema of dataset {name!r}: {text}" for text in texts]
    return notes


def mixed_schema_notes(board: pd.DataFrame) -> list[str]:
    """One note per dataset whose rows ran on different schemas (distinct ``schema_digest``
    tags): their scores are not measured on the same columns, bins and categories, and a
    coarser schema can score higher."""
    if "schema_digests" not in board or "dataset" not in board:
        return []
    scored = board[~is_not_applicable(board)]
    notes = []
    for name, part in scored.groupby("dataset", sort=True):
        digests = {d for text in part["schema_digests"].dropna().astype(str)
                   for d in text.split(",") if d}
        if len(digests) > 1:
            notes.append(f"dataset {name!r}: its runs used {len(digests)} different schemas "
                         "(tag schema_digest), so its scores are not all measured on the same "
                         "columns, bins and categories, and a coarser schema can score higher: "
                         "rows are ranked within their schema (column schema), never across "
                         "schemas, and each schema has its own winner")
    return notes
