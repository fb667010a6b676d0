"""A sweep's headline on its MLflow parent run, so the MLflow UI shows the winner.

- :func:`headline`: per epsilon, the best DP row of the board (rank 1; the first of a tie, the
  tie named in the tag) as metrics ``winner/eps_<e>/mean``, ``.../ci95``, ``.../n`` and tags
  ``winner/eps_<e>`` (mechanism and settings, ``tied with ...``), plus ``ranked_by`` (the
  ranking metric and its direction), and the winner under each other headline score on the
  board as tags ``winner_by/<score>/eps_<e>``;
- :func:`log_headline`: logs those on the parent run and the board itself as an MLflow table
  (``leaderboard.json``: the columns of the CSV, one row per board row), which the UI's
  artifact view and ``mlflow.load_table`` read.

- :func:`headline_lines`: the same findings as sentences, shared by the terminal board and
  the HTML page, per block of rows that may be compared (one epsilon, dataset, schema, unit,
  delta and metric settings: :func:`dp_arena.report.verdict.blocks`; a block's label in
  brackets when its epsilon has several, so rows of two schemas are never one tie). With one
  headline score: the winner (:func:`winner_text`, ties named together), a line when the
  ``public_only`` reference beats every DP row or the best DP row scores below the ``uniform``
  floor (:func:`reference_lines`). With several (:func:`verdict_lines`: the ranking score and
  the marginals, held-out utility and risks some row logged): the winner under each, each
  score's public-data and floor line (:func:`score_reference_line`), then the row that wins
  them all or, when they disagree, the Pareto set (:func:`agreement_line`). Then why rows
  with a single trial are not ranked. :func:`not_applied_line` names the scores that applied
  to no row (their columns are left out), :func:`owner_side_line` the held-out scores kept on
  the owner's side (so the winners are by the other scores alone), and
  :func:`heldout_logged_line` labels a board that shows held-out scores as the owner's.

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
from dp_arena.report.verdict import (
    HeadlineScore,
    blocks,
    headline_scores,
    pareto_rows,
    scored_as,
    winners,
)

#: The board's table artifact on the parent run.
TABLE_FILE = "leaderboard.json"
#: ``board.attrs`` key set by ``dp-arena-board --heldout-scores``: the board's held-out scores
#: were read from the owner-only files (:func:`dp_arena.run.heldout.with_owner_scores`).
OWNER_READ = "heldout_read_owner_side"


def eps_key(epsilon: float) -> str:
    """``eps_1``, ``eps_0.5`` (MLflow metric names allow letters, digits, ``_ - . /``)."""
    return f"eps_{epsilon:g}".replace("+", "")


def setting_text(row: pd.Series) -> str:
    hyper = str(row.get("hyperparameters", "") or "")
    return row_label(row) + ("" if hyper in ("", "-") else f" ({hyper})")


def headline(board: pd.DataFrame) -> tuple[dict[str, float], dict[str, str]]:
    """Metrics and tags naming the winner per epsilon (see the module docstring). When an
    epsilon has several blocks (datasets, schemas, ...: rows never ranked together), the tag
    names each block's winner after its label and no winner metric is logged for it."""
    key = board.attrs.get("metric", "score")
    metrics: dict[str, float] = {}
    tags = {"ranked_by": f"{key} ({'lower' if board_ranks_lower(board) else 'higher'} is better)"}
    by_eps: dict[float, list] = {}
    for block in blocks(board):
        by_eps.setdefault(block.epsilon, []).append(block)
    scores = headline_scores(board)
    for eps, parts in by_eps.items():
        name = f"winner/{eps_key(eps)}"
        tops = [top_rows(block.rows) for block in parts]
        tags[name] = " | ".join(labelled(block.label, winner_tag(top))
                                for block, top in zip(parts, tops))
        if len(parts) == 1 and not tops[0].empty:
            for stat in ("mean", "ci95", "n"):
                value = tops[0].iloc[0].get(stat)
                if value is not None and not pd.isna(value) and math.isfinite(float(value)):
                    metrics[f"{name}/{stat}"] = float(value)
        for score in scores[1:]:  # the winner under each other headline score, as a tag
            texts = [labelled(block.label, winner_tag(top_rows(view)))
                     for block in parts
                     for view in [scored_as(block.rows, board, score)]
                     if view["mean"].notna().any()]
            if texts:
                tags[f"winner_by/{score.key}/{eps_key(eps)}"] = " | ".join(texts)
    return metrics, {k: v[:5000] for k, v in tags.items()}


def top_rows(part: pd.DataFrame) -> pd.DataFrame:
    """The DP rows ranked first in ``part``."""
    return part[(part["kind"] == "dp") & part["rank"].notna() & (part["rank"] == 1)]


def winner_tag(top: pd.DataFrame) -> str:
    """``mst (settings); tied with aim`` ("no ranked DP row" when ``top`` is empty)."""
    if top.empty:
        return "no ranked DP row"
    others = [setting_text(r) for _, r in top.iloc[1:].iterrows()]
    return setting_text(top.iloc[0]) + (f"; tied with {', '.join(others)}" if others else "")


def labelled(label: str, text: str) -> str:
    return f"{label}: {text}" if label else text


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


def reference_lines(part: pd.DataFrame, eps: float, higher: bool,
                    label: str = "") -> list[str]:
    """A line when ``public_only`` beats every DP row, or the best DP row is below ``uniform``
    (``part``: one block's rows; ``label``: the block's, when its epsilon has several)."""
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
            lines.append(f"{at_text(eps, label)}: {text} ({fmt_number(value)} vs best DP "
                         f"{fmt_number(best)})")
    return lines


def at_text(eps: float, label: str) -> str:
    """``epsilon 1`` or ``epsilon 1 (schema 3f2a9c1b)``."""
    return f"epsilon {eps:g}" + (f" ({label})" if label else "")


def side_text(value: float, best: float, higher: bool, best_text: str) -> str:
    """Where a reference value lies against the best DP mean (``best_text``: how the best
    is named, e.g. `` (0.700)``, or "" when the line said it already)."""
    if (value > best) if higher else (value < best):
        return f"better than every DP row{best_text}"
    if value == best:
        return f"equal to the best DP row{best_text}"
    return f"worse than the best DP row{best_text}"


def score_reference_line(view: pd.DataFrame, at: str, score: HeadlineScore) -> str:
    """One line for ``score`` in one block (``view``: :func:`scored_as`): the public-data row
    and the uniform floor against the best DP row, with the finding when a reference beats
    every DP row ("" without DP rows or references)."""
    dp = view[(view["kind"] == "dp") & view["mean"].notna()]
    if dp.empty:
        return ""
    higher = not score.lower
    best = float(dp["mean"].max() if higher else dp["mean"].min())
    decimals = column_decimals(view["mean"])
    parts = []
    for ref in ("public", "floor"):
        rows = view[(view["reference"] == ref) & view["mean"].notna()]
        if rows.empty:
            continue
        value = float(rows["mean"].iloc[0])
        best_text = "" if parts else f" ({fmt_number(best, decimals)})"
        text = (f"{row_label(rows.iloc[0])} {fmt_number(value, decimals)}, "
                f"{side_text(value, best, higher, best_text)}")
        beats = (value > best) if higher else (value < best)
        if beats and not score.risk:
            text += dict(REFERENCE_CONCLUSIONS)[ref]
        parts.append(text)
    return f"{at}, {score.key}: " + "; ".join(parts) if parts else ""


#: What a reference that beats every DP row means, on a utility score.
REFERENCE_CONCLUSIONS = (("public", ": the mechanisms add nothing beyond the public data here"),
                         ("floor", ": the DP output is less useful than noise here"))


def short_name(r: pd.Series, label_width: int) -> str:
    """``mechanism (settings)``, the settings cut to ``label_width``."""
    hyper = str(r.get("hyperparameters", "") or "")
    label = hyper if len(hyper) <= label_width else hyper[:label_width - 1] + "…"
    return row_label(r) + ("" if hyper in ("-", "") else f" ({label})")


def agreement_line(views: list[pd.DataFrame], scores: list[HeadlineScore], at: str,
                   label_width: int) -> str:
    """Whether one DP row wins under every headline score; else the Pareto set."""
    sets = [set(winners(v)) for v in views]
    common = set.intersection(*sets) if all(sets) else set()
    first = views[0]
    if common:
        names = ", ".join(short_name(first.loc[i], label_width) for i in sorted(common))
        tied = [s.key for s, v in zip(scores, views) if v.loc[sorted(common), "tied"].any()]
        return (f"{at}: {names} {'win' if len(common) > 1 else 'wins'} under every headline "
                f"score" + (f" (tied under {', '.join(tied)})" if tied else ""))
    front = pareto_rows(views, scores)
    if not front:
        return ""
    why = ("the headline scores disagree on the winner" if all(sets)
           else "no ranked winner under every headline score")
    names = ", ".join(short_name(first.loc[i], label_width) for i in front)
    return (f"{at}: {why}; Pareto set (DP rows no other DP row matches or beats on every "
            f"headline score, by means): {names}")


def verdict_lines(board: pd.DataFrame, label_width: int = 40) -> list[str]:
    """Per block (:func:`dp_arena.report.verdict.blocks`): the winner under each headline
    score some row of the block has (the ranking score always), the public-data and floor line
    of each, then whether one row wins them all, else the Pareto set (when the block has
    several scores)."""
    every = headline_scores(board)
    lines = []
    for block in blocks(board):
        at = at_text(block.epsilon, block.label)
        pairs = [(s, scored_as(block.rows, board, s)) for s in every]
        pairs = pairs[:1] + [(s, v) for s, v in pairs[1:] if v["mean"].notna().any()]
        scores, views = [s for s, _ in pairs], [v for _, v in pairs]
        lines += [f"winner at {at} by {s.title}: {winner_text(v, label_width, not s.lower)}"
                  for s, v in zip(scores, views)]
        lines += [text for text in (score_reference_line(v, at, s)
                                    for s, v in zip(scores, views)) if text]
        agreement = agreement_line(views, scores, at, label_width) if len(scores) > 1 else ""
        lines += [agreement] if agreement else []
    return lines


SINGLE_TRIAL_NOTE = ("rows with n = 1 have no confidence interval, so they are not ranked "
                     "(rank -), against each other or any row: run trial=0,1,2 for a ranking")


def headline_lines(board: pd.DataFrame, label_width: int = 40) -> list[str]:
    """The board's findings as sentences (unwrapped). With one headline score:
    ``winner at epsilon <e>: ...`` per block (an epsilon's rows of one dataset, schema, unit,
    delta and metric settings; its label in brackets when the epsilon has several), then the
    reference lines; with several (:func:`verdict_lines`): per block, the winner under each,
    each score's public-data and floor line, and the agreement or Pareto line. Then the
    single-trial note when a DP row has n = 1."""
    higher = not board_ranks_lower(board)
    scored = board[~is_not_applicable(board)]
    if len(headline_scores(board)) > 1:
        lines = verdict_lines(board, label_width)
    else:
        parts = blocks(board)
        lines = [f"winner at {at_text(b.epsilon, b.label)}: "
                 f"{winner_text(b.rows, label_width, higher)}" for b in parts]
        for b in parts:
            lines += reference_lines(b.rows, b.epsilon, higher, b.label)
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
    shown = ", ".join(s.key for s in headline_scores(board))
    return (f"held-out scores not in the store: {', '.join(names)} (kept on the data owner's "
            "side, so that a submitter cannot read held-out people through them; the owner "
            "reads them on this machine with dp-arena-board --heldout-scores, and an owner's "
            "own store takes them with tracking.log_heldout_scores=true); the winners above "
            f"are by {shown} alone")


def heldout_logged_line(board: pd.DataFrame) -> str:
    """One sentence when the board shows scores of metrics that read held-out persons (they
    reach a store only by the owner's opt-in ``tracking.log_heldout_scores=true``, or a board
    by ``dp-arena-board --heldout-scores``: :func:`dp_arena.run.heldout.with_owner_scores`):
    the board is the data owner's, not for publication; "" when it shows none."""
    names = heldout_families(board)
    if not names:
        return ""
    how = ("read from this machine's owner-only files (dp-arena-board --heldout-scores)"
           if board.attrs.get(OWNER_READ) else
           "logged by the data owner's opt-in tracking.log_heldout_scores=true")
    return (f"held-out scores shown: {', '.join(names)}: exact statistics of held-out persons, "
            f"{how}; this board is for the data owner, not for publication")


def heldout_families(board: pd.DataFrame) -> list[str]:
    """The metric families on ``board`` (columns ``<family>/<score>`` with a value, or the
    ranking score) whose metric reads held-out persons."""
    from dp_arena.errors import ConfigError
    from dp_arena.metrics import metric_class

    key = board.attrs.get("metric", "")
    families = {c.split("/", 1)[0] for c in board.columns
                if "/" in c and not c.startswith(("ci95:", "na:", "metric_"))
                and pd.to_numeric(board[c], errors="coerce").notna().any()}
    families |= {key.split("/", 1)[0]} if "/" in key else set()
    out = []
    for name in sorted(families):
        try:
            if metric_class(name).reads_heldout:
                out.append(name)
        except ConfigError:
            continue
    return out


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
