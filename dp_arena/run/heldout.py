"""Scores computed on held-out persons stay on the data owner's side.

Held-out persons are given to no mechanism, so nothing a submission releases can reveal them:
only the harness's own scores read them. Those scores (every score of a metric that declares
``reads_heldout``: ``membership``, ``ml_efficacy``) are exact statistics of the held-out rows,
and a submission chooses the table they are computed against, so a submitter who reads them
holds an oracle on held-out people (one guessed row: ``membership/copy_share_heldout`` is
non-zero exactly when the guess is a held-out person's record). Hence:

- they are **not written to the tracking store** (no metric, no ``scores.json`` entry), nor to
  the sweep's records or the console's job lines (:attr:`RunOutcome.scores` leaves them out);
- they are written to an owner-only file, ``<state dir>/heldout-scores/<run id>.json``
  (the state dir is ``$DP_ARENA_STATE_DIR``, else ``~/.local/state/dp-arena``: folders 0700,
  the file 0600), which :func:`read_heldout_scores` reads;
- ``tracking.log_heldout_scores=true`` logs them as scores anyway, for a store only the data's
  owner reads: a labelled opt-in (tag ``heldout_scores``);
- ``dp-arena-board --heldout-scores`` reads them back on the owner's machine
  (:func:`with_owner_scores`: the store's runs with their owner-side scores), so the owner's
  board gives its verdict under held-out utility and risk without the store holding them; that
  board says it is the owner's (:func:`dp_arena.report.headline.heldout_logged_line`).

One held-out person's effect on what a submitter reads is then nothing at all: the store's
content is the same whichever values the held-out rows hold (``tests/test_heldout_oracle.py``).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from dp_arena.data.provenance import STATE_ENV

FOLDER = "heldout-scores"
#: The run tag of a run whose held-out scores were logged to the store (the opt-in).
OPT_IN_TAG = "heldout_scores"
OPT_IN_VALUE = "logged (tracking.log_heldout_scores=true: exact scores of held-out persons)"


def state_dir() -> Path:
    """``$DP_ARENA_STATE_DIR``, else ``~/.local/state/dp-arena`` (the owner's side)."""
    raw = os.environ.get(STATE_ENV)
    return Path(raw).expanduser() if raw else Path.home() / ".local" / "state" / "dp-arena"


def heldout_scores_path(run_id: str) -> Path:
    """Where one run's held-out scores are kept (the run id is MLflow's hex id)."""
    if not run_id or not run_id.isalnum():
        raise ValueError(f"not a run id: {run_id!r}")
    return state_dir() / FOLDER / f"{run_id}.json"


def split_scores(scores: Mapping[str, float], heldout_metrics: frozenset[str]
                 ) -> tuple[dict[str, float], dict[str, float]]:
    """``(store, owner)``: the scores of metrics that do not read held-out persons, and those
    of metrics that do (keys ``<metric>/<score>``)."""
    store, owner = {}, {}
    for key, value in scores.items():
        (owner if key.split("/", 1)[0] in heldout_metrics else store)[key] = value
    return store, owner


def private_folder(path: Path) -> None:
    """``path`` and its missing parents created owner-only (0700)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path, 0o700)


def write_heldout_scores(run_id: str, scores: Mapping[str, float]) -> Path:
    """Write one run's held-out scores to its owner-only file (0600); returns the path."""
    path = heldout_scores_path(run_id)
    private_folder(path.parent)
    body = {"run_id": run_id, "scores": {k: (float(v) if math.isfinite(float(v)) else str(v))
                       for k, v in scores.items()}}
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.chmod(path, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(body, fh, indent=1)
    return path


def read_heldout_scores(run_id: str) -> dict[str, float]:
    """One run's held-out scores from the owner's side ({} when it kept none)."""
    try:
        body = json.loads(heldout_scores_path(run_id).read_text())
    except (OSError, ValueError):
        return {}
    return {k: float(v) for k, v in body.get("scores", {}).items()}


def owner_scores(run_id: str) -> dict[str, float]:
    """One run's owner-side scores ({} for an id that is no run id or has no file)."""
    try:
        return read_heldout_scores(str(run_id))
    except ValueError:  # not a run id: no file is named after it
        return {}


def with_owner_scores(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` (as :func:`dp_arena.report.leaderboard.load_runs` returns them) with each run's
    owner-side scores, a column per score, where the store has no value (scores a store holds
    by the owner's opt-in are kept as they are). Reading only: nothing is written."""
    found = pd.DataFrame([owner_scores(r) for r in runs["run_id"]], index=runs.index)
    if found.empty or not len(found.columns):
        return runs
    out = runs.copy()
    for col in found.columns:
        out[col] = out[col].fillna(found[col]) if col in out else found[col]
    return out
