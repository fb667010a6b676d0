"""A sweep's headline on its MLflow parent run, so the MLflow UI shows the winner.

- :func:`headline`: per epsilon, the best DP row of the board (rank 1; the first of a tie, the
  tie named in the tag) as metrics ``winner/eps_<e>/mean``, ``.../ci95``, ``.../n`` and tags
  ``winner/eps_<e>`` (mechanism and settings, ``tied with ...``), plus ``ranked_by`` (the
  ranking metric and its direction);
- :func:`log_headline`: logs those on the parent run and the board itself as an MLflow table
  (``leaderboard.json``: the columns of the CSV, one row per board row), which the UI's
  artifact view and ``mlflow.load_table`` read.

- :func:`headline_lines`: the same findings as sentences, shared by the terminal board and
  the HTML page: the winner per epsilon (:func:`winner_text`, ties named together), a line when
  the ``public_only`` reference beats every DP row or the best DP row scores below the
  ``uniform`` floor (:func:`reference_lines`), and why rows with a single trial are tied;
  :func:`not_applied_line` names the scores that applied to no row (their columns are left
  out).

Everything here is on the board already (scores are aggregates of the runs' logged metrics).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from dp_arena.report.cells import column_decimals, fmt_number
from dp_arena.report.leaderboard import (
    board_ranks_lower,
    inapplicable_everywhere,
    is_not_applicable,
    row_label,
)

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
    tags = {"ranked_by": f"{key} ({'lower' if board_ranks_lower(board) else 'higher'} is better)"}
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


def score_text(row: pd.Series, decimals: int) -> str:
    """``mean ± ci95`` of a row ("" without a mean; no ``±`` without an interval)."""
    mean = row.get("mean")
    if mean is None or pd.isna(mean):
        return ""
    ci = row.get("ci95")
    ci_text = f" ± {fmt_number(ci, decimals)}" if ci is not None and not pd.isna(ci) else ""
    return f"{fmt_number(mean, decimals)}{ci_text}"


def named_score(r: pd.Series, decimals: int, label_width: int = 40) -> str:
    """``mechanism mean ± ci (settings)``, the settings cut to ``label_width``."""
    hyper = str(r.get("hyperparameters", "") or "")
    label = hyper if len(hyper) <= label_width else hyper[:label_width - 1] + "…"
    return (f"{row_label(r)} {score_text(r, decimals)}"
            + ("" if hyper in ("-", "") else f" ({label})"))


def winner_text(part: pd.DataFrame, label_width: int = 40, higher: bool = True) -> str:
    """The DP rows ranked first in ``part`` (one epsilon) with their score and settings (cut
    to ``label_width``), ties joined by `` = `` and marked; when no DP row is ranked, "no
    ranked DP row", with the best DP mean (``higher``: bigger is better) when its rows have a
    single trial (no tie is claimed between rows without an interval)."""
    decimals = column_decimals(part["mean"])
    top = part[(part["kind"] == "dp") & part["rank"].notna() & (part["rank"] == 1)]
    if top.empty:
        single = part[(part["kind"] == "dp") & (part["n"] == 1) & part["mean"].notna()]
        if single.empty:
            return "no ranked DP row"
        best = single.sort_values("mean", ascending=not higher, kind="stable").iloc[0]
        return f"none ranked (n = 1); best mean {named_score(best, decimals, label_width)}"
    names = [named_score(r, decimals, label_width) for _, r in top.iterrows()]
    return (" = ".join(names) + " (tied)") if len(names) > 1 else names[0]


#: What the board says when a reference row beats the DP rows: (reference, sentence).
REFERENCE_FINDINGS = (
    ("public", ("public_only (the public data alone) scores better than every DP row: the "
                "mechanisms add nothing beyond the public data here")),
    ("floor", ("the best DP row scores worse than the uniform floor (random values in the "
               "domain): the DP output is less useful than noise here")))


def reference_lines(part: pd.DataFrame, eps: float, higher: bool) -> list[str]:
    """A line when ``public_only`` beats every DP row, or the best DP row is below ``uniform``
    (``part``: one epsilon's rows)."""
    dp = part[(part["kind"] == "dp") & part["mean"].notna()]
    if dp.empty:
        return []
    best = dp["mean"].max() if higher else dp["mean"].min()
    lines = []
    for ref, text in REFERENCE_FINDINGS:
        rows = part[(part["reference"] == ref) & part["mean"].notna()]
        if rows.empty:
            continue
        value = float(rows["mean"].iloc[0])
        if (value > best) if higher else (value < best):
            lines.append(f"epsilon {eps:g}: {text} ({fmt_number(value)} vs best DP "
                         f"{fmt_number(best)})")
    return lines


SINGLE_TRIAL_NOTE = ("rows with n = 1 have no confidence interval, so they are not ranked "
                     "(rank -), against each other or any row: run trial=0,1,2 for a ranking")


def headline_lines(board: pd.DataFrame, label_width: int = 40) -> list[str]:
    """The board's findings as sentences (unwrapped): ``winner at epsilon <e>: ...`` per
    epsilon, then the reference lines per epsilon, then the single-trial note when a DP row
    has n = 1."""
    higher = not board_ranks_lower(board)
    scored = board[~is_not_applicable(board)]
    lines = [f"winner at epsilon {eps:g}: {winner_text(part, label_width, higher)}"
             for eps, part in scored.groupby("epsilon", sort=True)]
    for eps, part in scored.groupby("epsilon", sort=True):
        lines += reference_lines(part, eps, higher)
    single = scored[(scored["kind"] == "dp") & (scored["n"] == 1)]
    if len(single):
        lines.append(SINGLE_TRIAL_NOTE)
    return lines


def not_applied_line(board: pd.DataFrame, reasons: bool = False) -> str:
    """One sentence naming the scores that applied to no row of the board (their columns are
    not shown), with why when ``reasons``; "" when every score applied somewhere."""
    missing = inapplicable_everywhere(board[~is_not_applicable(board)])
    if not missing:
        return ""
    if not reasons:
        return ("scores not shown, as they apply to no row here: "
                + ", ".join(sorted(missing)))
    return ("scores not shown, as they apply to no row here: "
            + "; ".join(reason if reason.startswith(family) else f"{family}: {reason}"
                        for family, reason in sorted(missing.items())))


def owner_side_line(board: pd.DataFrame) -> str:
    """One sentence naming the held-out scores kept on the data owner's side (not in the
    store this board reads), and how an owner puts them there; "" when there are none."""
    names = board.attrs.get("owner_side", [])
    if not names:
        return ""
    return (f"held-out scores not in the store: {', '.join(names)} (kept on the data owner's "
            "side, so that a submitter cannot read held-out people through them; an owner's "
            "own store takes them with tracking.log_heldout_scores=true)")


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
