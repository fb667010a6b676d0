"""A sweep's headline on its MLflow parent run, so the MLflow UI shows the winner.

- :func:`headline`: per epsilon, the best DP row of the board (rank 1; the first of a tie, the
  tie named in the tag) as metrics ``winner/eps_<e>/mean``, ``.../ci95``, ``.../n`` and tags
  ``winner/eps_<e>`` (mechanism and settings, ``tied with ...``), plus ``ranked_by`` (the
  ranking metric and its direction);
- :func:`log_headline`: logs those on the parent run and the board itself as an MLflow table
  (``leaderboard.json``: the columns of the CSV, one row per board row), which the UI's
  artifact view and ``mlflow.load_table`` read.

Everything here is on the board already (scores are aggregates of the runs' logged metrics).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from harness.report.leaderboard import is_not_applicable, lower_is_better, row_label

#: The board's table artifact on the parent run.
TABLE_FILE = "leaderboard.json"


def eps_key(epsilon: float) -> str:
    """``eps_1``, ``eps_0.5`` (MLflow metric names allow letters, digits, ``_ - . /``)."""
    return f"eps_{epsilon:g}".replace("+", "")


def setting_text(row: pd.Series) -> str:
    hyper = str(row.get("hyperparameters", "") or "")
    return row_label(row) + ("" if hyper in ("", "-") else f" ({hyper})")


def headline(board: pd.DataFrame) -> tuple[dict[str, float], dict[str, str]]:
    """Metrics and tags naming the winner per epsilon (see the module docstring)."""
    key = board.attrs.get("metric", "score")
    metrics: dict[str, float] = {}
    tags = {"ranked_by": f"{key} ({'lower' if lower_is_better(key) else 'higher'} is better)"}
    scored = board[~is_not_applicable(board)]
    for eps, part in scored.groupby("epsilon", sort=True):
        top = part[(part["kind"] == "dp") & part["rank"].notna() & (part["rank"] == 1)]
        if top.empty:
            tags[f"winner/{eps_key(eps)}"] = "no ranked DP row"
            continue
        best = top.iloc[0]
        name = f"winner/{eps_key(eps)}"
        others = [setting_text(r) for _, r in top.iloc[1:].iterrows()]
        tags[name] = setting_text(best) + (f"; tied with {', '.join(others)}" if others else "")
        for stat in ("mean", "ci95", "n"):
            value = best.get(stat)
            if value is not None and not pd.isna(value) and math.isfinite(float(value)):
                metrics[f"{name}/{stat}"] = float(value)
    return metrics, {k: v[:5000] for k, v in tags.items()}


def table_of(board: pd.DataFrame) -> pd.DataFrame:
    """The board as a plain table (no attrs, no per-trial values; text for objects)."""
    out = board.drop(columns=[c for c in board.columns if c.startswith("_")]).copy()
    for col in out.columns:
        if out[col].dtype == object:
            out[col] = out[col].map(lambda v: "" if v is None or (isinstance(v, float)
                                                                  and math.isnan(v)) else str(v))
    return out.astype({c: float for c in out.columns if str(out[c].dtype) == "Int64"})


def log_headline(client: Any, run_id: str, board: pd.DataFrame) -> None:
    """Log :func:`headline` and the board as an MLflow table on the parent run ``run_id``."""
    from mlflow.entities import Metric, RunTag

    metrics, tags = headline(board)
    client.log_batch(run_id, metrics=[Metric(k, v, 0, 0) for k, v in metrics.items()],
                     tags=[RunTag(k, v) for k, v in tags.items()])
    client.log_table(run_id, data=table_of(board), artifact_file=TABLE_FILE)
