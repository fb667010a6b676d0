"""The verdict across scores: within one table the best mechanism depends on the score, so a
board names the winner under each headline score, not only under the one it ranks by.

- :func:`headline_scores`: the scores a board gives a verdict under: its ranking score, then
  those of :data:`dp_arena.report.scores.HEADLINE_SCORES` some row logged (the marginals, the
  held-out utility ``ml_efficacy/score``, the risks ``membership/auc`` and
  ``attribute_inference/risk``), each with its direction (as its metric declares it);
- :func:`blocks`: the board's rows in blocks of rows that may be compared: one epsilon and one
  pool (the same dataset, schema, unit, delta and metric settings), with a label naming what
  sets a block apart from the others of its epsilon (``dataset adult, schema 3f2a9c1b``). Rows
  of different schemas are in different blocks: never ranked, tied or called winners together;
- :func:`scored_as`: one block as if ranked by another headline score: ``mean``, ``std``,
  ``ci95`` and ``n`` over the trials of that score and a rank by the board's rule
  (:func:`dp_arena.report.ranks.mean_order_ranks`, ties by paired t-tests); the headline
  sentences (:mod:`dp_arena.report.headline`) then name its winner and its reference lines as
  for the ranking score;
- :func:`pareto_rows`: the ranked DP rows of a block that no other ranked DP row matches or
  beats on every headline score (by means), for when the winners disagree.

Everything here is a view of scores already on the board (logged by the runs): no private
data, no budget.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from dp_arena.report.leaderboard import (
    POOL,
    board_ranks_lower,
    is_not_applicable,
    mean_ci,
    rank_order,
)
from dp_arena.report.ranks import ALPHA, mean_order_ranks
from dp_arena.report.scores import HEADLINE_SCORES

#: Characters of a schema digest a block label shows.
DIGEST_CHARS = 8
#: Pool columns a block label may name, with how it names them.
LABELLED = (("dataset", "dataset {}"), ("dataset_id", "data id {}"),
            ("schema_digest", "schema {}"), ("privacy_unit", "unit {}"), ("delta", "delta {}"),
            ("metric_setting", "settings {}"))


@dataclass(frozen=True)
class HeadlineScore:
    """A score the board gives a verdict under: its key, what it measures, its direction."""

    key: str
    what: str
    lower: bool

    @property
    def risk(self) -> bool:
        """Whether the score measures an empirical risk (no utility conclusion is drawn)."""
        return self.what.endswith("risk")

    @property
    def title(self) -> str:
        """``ml_efficacy/score (held-out utility, higher is better)``."""
        return (f"{self.key} ({self.what + ', ' if self.what else ''}"
                f"{'lower' if self.lower else 'higher'} is better)")


@dataclass(frozen=True)
class Block:
    """One epsilon's rows of one pool, and the label that tells it from the epsilon's other
    blocks ("" when it is the epsilon's only block)."""

    epsilon: float
    label: str
    rows: pd.DataFrame


def headline_scores(board: pd.DataFrame) -> list[HeadlineScore]:
    """The board's ranking score, then every other headline score some row has values of."""
    key = board.attrs.get("metric", "score")
    lower = board.attrs.get("score_lower", {})
    out = [HeadlineScore(key, HEADLINE_SCORES.get(key, ""), board_ranks_lower(board))]
    values = board.attrs.get("score_values", {})
    return out + [HeadlineScore(s, what, bool(lower.get(s, False)))
                  for s, what in HEADLINE_SCORES.items() if s != key and values.get(s)]


def block_label(ident: dict, varying: Sequence[str]) -> str:
    """The pool columns of ``ident`` that vary among an epsilon's blocks, named."""
    parts = []
    for col, text in LABELLED:
        if col in varying:
            value = str(ident.get(col, "") or "")
            if col == "schema_digest":
                value = value[:DIGEST_CHARS] or "untagged"
            parts.append(text.format(value or "-"))
    return ", ".join(parts)


def blocks(board: pd.DataFrame) -> list[Block]:
    """The scored rows (not the not-applicable ones) per epsilon and pool, in board order."""
    scored = board[~is_not_applicable(board)]
    pool = [c for c in POOL if c in scored]
    out = []
    for eps, part in scored.groupby("epsilon", sort=True):
        groups = list(part.groupby(pool, sort=False, dropna=False)) if pool else [((), part)]
        varying = varying_pool(part, pool)
        for key, rows in groups:
            ident = dict(zip(pool, key if isinstance(key, tuple) else (key,)))
            ident["dataset"] = rows["dataset"].iloc[0] if "dataset" in rows else ""
            out.append(Block(float(eps), block_label(ident, varying) if len(groups) > 1
                             else "", rows))
    return out


def varying_pool(part: pd.DataFrame, pool: Sequence[str]) -> list[str]:
    """The columns that tell an epsilon's blocks apart: the pool columns that vary, the
    dataset's name for its id when each id has its own name."""
    varying = [c for c in pool if part[c].astype(str).nunique() > 1]
    if "dataset_id" in varying and "dataset" in part:
        names = part.groupby("dataset_id", dropna=False)["dataset"].first()
        varying.remove("dataset_id")
        varying.insert(0, "dataset" if names.nunique() == len(names) else "dataset_id")
    return varying


def row_key(row: pd.Series) -> tuple:
    """The board's key of a row's per-trial values (its ``GROUP`` columns)."""
    from dp_arena.report.leaderboard import GROUP

    return tuple(row[c] for c in GROUP)


def scored_as(rows: pd.DataFrame, board: pd.DataFrame, score: HeadlineScore) -> pd.DataFrame:
    """``rows`` (one block) with ``mean``, ``std``, ``ci95``, ``n`` and ``rank``/``tied``
    under ``score``, best mean first (the rows as they are for the ranking score)."""
    if score.key == board.attrs.get("metric"):
        return rows
    per_row = board.attrs.get("score_values", {}).get(score.key, {})
    out = rows.copy()
    trials = [per_row.get(row_key(r)) for _, r in rows.iterrows()]
    stats = [mean_ci(list(t.values())) if t else (math.nan,) * 3 for t in trials]
    out["mean"] = [s[0] for s in stats]
    out["std"] = [s[1] for s in stats]
    out["ci95"] = [s[2] for s in stats]
    out["n"] = [len(t) if t else 0 for t in trials]
    ranked = [i for i, (_, r) in enumerate(rows.iterrows()) if bool(r.get("ranked"))]
    ranks, tied = mean_order_ranks([trials[i] for i in ranked], not score.lower,
                                   board.attrs.get("alpha", ALPHA),
                                   [out["mean"].iloc[i] for i in ranked])
    rank_of, tied_of = dict(zip(ranked, ranks)), dict(zip(ranked, tied))
    out["rank"] = pd.array([rank_of.get(i, math.nan) for i in range(len(out))],
                           dtype="Float64").astype("Int64")
    out["tied"] = [bool(tied_of.get(i, False)) for i in range(len(out))]
    return out.loc[rank_order(out, not score.lower)]


def winners(rows: pd.DataFrame) -> list:
    """The index of the DP rows ranked first in ``rows`` (as :func:`scored_as` returns them)."""
    top = rows[(rows["kind"] == "dp") & rows["rank"].notna()]
    return list(top.index[top["rank"] == 1])


def dominates(a: Sequence[float], b: Sequence[float], lower: Sequence[bool]) -> bool:
    """Whether ``a`` is at least as good as ``b`` on every score and better on one."""
    signs = [-1.0 if lo else 1.0 for lo in lower]
    at_least = all(s * x >= s * y for x, y, s in zip(a, b, signs))
    return at_least and any(s * x > s * y for x, y, s in zip(a, b, signs))


def pareto_rows(views: Sequence[pd.DataFrame], scores: Sequence[HeadlineScore]) -> list:
    """The index of the ranked DP rows with a mean under every score (``views``: the block
    :func:`scored_as` each score) that no other such row dominates (by means)."""
    first = views[0]
    candidates = [i for i in first.index
                  if first.at[i, "kind"] == "dp" and bool(first.at[i, "ranked"])
                  and all(not pd.isna(v.at[i, "mean"]) for v in views)]
    means = {i: [float(v.at[i, "mean"]) for v in views] for i in candidates}
    lower = [s.lower for s in scores]
    return [i for i in candidates
            if not any(dominates(means[j], means[i], lower) for j in candidates if j != i)]
