"""Held-out scores read on the data owner's side, for the owner's own board.

Scores of metrics that read held-out persons (``ml_efficacy``, ``membership``,
``attribute_inference``) are kept out of the tracking store by default, in owner-only files
(:mod:`dp_arena.run.heldout`). ``dp-arena-board --heldout-scores`` reads them back on the
owner's machine, so the owner's board gives its verdict under held-out utility and risk too
without the store ever holding them:

- :func:`with_owner_scores`: the runs with each run's owner-side scores added where the store
  has none (a run without an owner file is left as it is);
- :data:`OWNER_READ`: the board attribute that says so, which the board's line about held-out
  scores (:func:`dp_arena.report.headline.heldout_logged_line`) reads: such a board, printed
  and written, is the data owner's, not for publication.

Reading only: nothing here writes to the store.
"""

from __future__ import annotations

import pandas as pd

from dp_arena.run.heldout import read_heldout_scores

#: ``board.attrs`` key: the held-out scores were read from the owner-only files.
OWNER_READ = "heldout_read_owner_side"


def owner_scores(run_id: str) -> dict[str, float]:
    """One run's owner-side scores ({} for an id that is no MLflow run id or has no file)."""
    try:
        return read_heldout_scores(str(run_id))
    except ValueError:  # not a run id: no file can be named after it
        return {}


def with_owner_scores(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with the owner-side scores of each run (column per score) where the store has
    no value; the scores a store holds (the owner's opt-in) are kept as they are."""
    found = pd.DataFrame([owner_scores(r) for r in runs["run_id"]], index=runs.index)
    if found.empty or not len(found.columns):
        return runs
    out = runs.copy()
    for col in found.columns:
        out[col] = out[col].fillna(found[col]) if col in out else found[col]
    return out
