"""The utility view and the risk view ("empirical risk, not a DP guarantee") of the held-out scores, as
tables that follow the per-epsilon tables when some row logged their metrics.

- **utility view** (:func:`utility_frame`, :func:`utility_columns`): ML efficacy ± its 95% CI
  with the train-on-real reference row once per dataset (:func:`real_reference_rows`), the
  gap, the propensity pMSE ratio and the range-query error; best ML efficacy first;
- **risk view** (:func:`risk_frame`, :func:`risk_columns`): membership AUC, TPR at each FPR
  with its CI, copy shares, each row's claimed budget and the bound it implies
  (:mod:`dp_arena.report.risk`), ``!`` where the attack beats it; the attribute-inference
  residual risk (largest and mean over secrets) with its CI; each part only when some row
  logged it; highest AUC first (highest residual risk without membership);
- :func:`view_tables` (one :class:`ViewTable` per view and epsilon, full or ``compact`` for a
  terminal), :func:`view_legends` (what each view means) and :func:`render_views_markdown`
  (the Markdown sections); the HTML page and the terminal lay out the same tables.

Display of logged scores only: no private data, no budget.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dp_arena.report.cells import (
    Column,
    board_view,
    cell_of,
    column_decimals,
    fmt_count,
    fmt_number,
    has_settings,
    markdown_table,
    md_escape,
    metric_na_reason,
    set_apart,
    text_cell,
)
from dp_arena.report.leaderboard import (
    inapplicable_everywhere,
    is_not_applicable,
    row_label,
    varying_columns,
)
from dp_arena.report.risk import BOUND_PREFIX, beats_bound, claimed_budget
from dp_arena.report.scores import (
    AI_RISK,
    AI_RISK_MEAN,
    COPY_HELDOUT,
    COPY_TRAIN,
    MEMBERSHIP_METRICS,
    MIA_AUC,
    MIA_FPRS,
    ML_GAP,
    ML_REAL,
    ML_SCORE,
    PMSE_RATIO,
    RANGE_ERROR,
    RISK_METRICS,
    UTILITY_METRICS,
    has_any,
    metric_value,
)

#: The label of the train-on-real row of a utility table (one per dataset).
REAL_REFERENCE = "train on real, test on real: non-private reference"
UTILITY_TITLE = "utility view"
RISK_TITLE = "risk view: empirical risk, not a DP guarantee"
#: After a TPR cell: the attack beats the row's bound at that FPR significantly.
BEATS = "!"
#: What each utility column means, in the order the columns come; the legend a board shows
#: says only the parts whose column it shows (:func:`utility_legend`).
UTILITY_PARTS = {
    ML_SCORE: (f"{ML_SCORE}: mean over models (fixed hyperparameters) trained on the synthetic "
               "table of AUROC / macro-F1 / R^2 on held-out real rows (higher is better), ± "
               f"its 95% CI over trials; the '{REAL_REFERENCE}' row is the same models trained "
               f"on the real training rows ({ML_REAL}), once per dataset"),
    ML_GAP: f"{ML_GAP}: the gap to that reference as the metric logs it",
    PMSE_RATIO: (f"{PMSE_RATIO}: propensity pMSE over its value when synthetic and real come "
                 "from one distribution (1 = indistinguishable, lower is better)"),
    RANGE_ERROR: f"{RANGE_ERROR}: mean relative error of random range queries (lower is better)",
}
#: The whole utility legend (every column shown).
UTILITY_LEGEND = "; ".join(UTILITY_PARTS.values())
RISK_LEGEND = (
    "membership inference from the synthetic table alone, held-out persons as non-members. "
    "AUC 0.5 = no signal; TPR at FPR with its 95% CI [lo, hi] (means over trials); copy "
    "share: share of synthetic rows that copy a training row / a held-out row. bound @ FPR: "
    "min(1, e^epsilon * FPR + delta) for the row's claimed "
    "(epsilon, delta) (none: no claim: reference rows such as resample, public_only and "
    "uniform, rows that spend no budget, non-private rows); "
    f"{BEATS} after a TPR: the attack beats the bound significantly (lo > bound): staying "
    "under the bound proves nothing; beating it is evidence against the claimed budget.")
#: The attribute-inference part of the risk legend.
AI_LEGEND = (
    "attribute inference: residual risk (acc_members - acc_controls) / (1 - acc_controls) of "
    "guessing secret columns of training persons from quasi-identifiers and the synthetic "
    "table, held-out persons as controls; 0 = no better than for people never seen, 1 = every "
    "member's secret; the largest over secrets and the mean, with the 95% bootstrap CI "
    "[lo, hi] (means over trials); no bound is drawn from the claimed budget.")


def risk_legend(board: pd.DataFrame) -> str:
    """The risk legend's parts for the risk scores some row of ``board`` has."""
    parts = [(MEMBERSHIP_METRICS, RISK_LEGEND), ((AI_RISK, AI_RISK_MEAN), AI_LEGEND)]
    return " ".join(text for metrics, text in parts if has_any(board, metrics))


def view_value(col: str, key: str, decimals: int, ci: bool = True) -> Callable[[pd.Series], str]:
    """A cell of ``col`` (the row's mean over trials), with ``± CI`` when ``ci`` and known."""
    def cell(r: pd.Series) -> str:
        if metric_na_reason(r, col):
            return "n/a"
        text = fmt_number(metric_value(r, col, key), decimals)
        half = metric_value(r, col, key, ci=True) if ci else math.nan
        return f"{text} ± {fmt_number(half, decimals)}" if text and not math.isnan(half) \
            else text
    return cell


def interval_cell(name: str, sep: str = ", ") -> Callable[[pd.Series], str]:
    """``value [lo, hi]`` of the score ``name`` and its logged CI ends (means over trials)."""
    def cell(r: pd.Series) -> str:
        value = fmt_number(r.get(name, math.nan), 3)
        if not value:
            return ""
        lo, hi = (fmt_number(r.get(f"{name}_{end}", math.nan), 3) for end in ("lo", "hi"))
        return f"{value} [{lo}{sep}{hi}]" if lo and hi else value
    return cell


def tpr_cell(fpr: float, sep: str = ", ") -> Callable[[pd.Series], str]:
    """``TPR [lo, hi]`` at ``fpr`` (means over trials), then ``BEATS`` when the attack beats
    the row's bound."""
    interval = interval_cell(f"membership/tpr_at_fpr_{fpr:g}", sep)

    def cell(r: pd.Series) -> str:
        text = interval(r)
        return f"{text} {BEATS}" if text and beats_bound(r, fpr) else text
    return cell


def bound_cell(fpr: float) -> Callable[[pd.Series], str]:
    """The bound the row's claimed budget implies at ``fpr`` ("none" without a claim)."""
    return lambda r: ("none" if claimed_budget(r) is None
                      else fmt_number(r.get(f"{BOUND_PREFIX}{fpr:g}", math.nan), 3))


def claim_cell(r: pd.Series) -> str:
    """The row's claimed budget as ``epsilon, delta`` ("none" without a claim)."""
    budget = claimed_budget(r)
    return "none" if budget is None else f"{budget[0]:g}, {budget[1]:g}"


def copy_cell(sep: str = " / ") -> Callable[[pd.Series], str]:
    """Copy shares ``train / held-out`` (3 decimals)."""
    def cell(r: pd.Series) -> str:
        train, held = (fmt_number(r.get(c, math.nan), 3) for c in (COPY_TRAIN, COPY_HELDOUT))
        return f"{train}{sep}{held}" if train or held else ""
    return cell


def view_identity(board: pd.DataFrame, key: str, compact: bool) -> list[Column]:
    """The first columns of a view: mechanism, hyperparameters (``compact``: headed
    ``settings``; only when some row has them) and the varying columns."""
    scored = board[~is_not_applicable(board)]
    return [Column("mechanism", row_label, False, label=True),
            *([Column("settings" if compact else "hyperparameters",
                      text_cell("hyperparameters"), False, wrap=True)]
              if has_settings(board) else []),
            *[Column(head, text_cell(c), False) for c, head in varying_columns(scored, key)
              if c != "metric_setting"]]


def utility_columns(board: pd.DataFrame, compact: bool = False) -> list[Column]:
    """Columns of a utility table (``compact``: for a terminal); no ML efficacy column when
    it applied to no row (all ``n/a``)."""
    key = board.attrs.get("metric", "score")
    present = [c for c in (ML_GAP, PMSE_RATIO, RANGE_ERROR) if has_any(board, [c])]
    inapplicable = inapplicable_everywhere(board[~is_not_applicable(board)])
    ml = [] if ML_SCORE.split("/")[0] in inapplicable or not has_any(board, [ML_SCORE]) else [
        Column(ML_SCORE, view_value(ML_SCORE, key, 3))]
    decimals = {c: column_decimals([metric_value(r, c, key) for _, r in board.iterrows()])
                for c in present}
    return [*view_identity(board, key, compact),
            *ml, Column("n", cell_of("n", fmt_count)),
            *[Column(c, view_value(c, key, decimals[c], ci=False)) for c in present]]


def risk_columns(board: pd.DataFrame, compact: bool = False) -> list[Column]:
    """Columns of a risk table (``compact``: short headers, no AUC interval and no ``n``, so
    the table fits a 120-column terminal)."""
    key = board.attrs.get("metric", "score")
    cols = [*view_identity(board, key, compact),
            Column("eps, delta" if compact else "claimed (eps, delta)", claim_cell)]
    if has_any(board, MEMBERSHIP_METRICS):
        cols += [Column("AUC" if compact else MIA_AUC,
                        view_value(MIA_AUC, key, 3, ci=not compact))]
        for fpr in MIA_FPRS:
            cols += [Column(f"TPR@{fpr:g} [lo,hi]" if compact else f"TPR @ FPR {fpr:g} [95% CI]",
                            tpr_cell(fpr, "," if compact else ", ")),
                     Column("bound" if compact else f"bound @ FPR {fpr:g}", bound_cell(fpr))]
        cols += [Column("copies tr/ho", copy_cell("/")) if compact else
                 Column("copy share train / held-out", copy_cell())]
    if has_any(board, (AI_RISK, AI_RISK_MEAN)):
        cols += [Column("attr. risk [lo,hi]" if compact else f"{AI_RISK} [95% CI]",
                        interval_cell(AI_RISK, "," if compact else ", "))]
        if not compact:
            cols += [Column(f"{AI_RISK_MEAN} [95% CI]", interval_cell(AI_RISK_MEAN))]
    return cols if compact else cols + [Column("n", cell_of("n", fmt_count))]


def real_reference_rows(part: pd.DataFrame, board: pd.DataFrame) -> list[dict]:
    """One train-on-real row per dataset of ``part``: the mean of ``ml_efficacy/real_score``
    over the board's rows of that dataset (it is computed once per dataset and split)."""
    key = board.attrs.get("metric", "score")
    scored = board[~is_not_applicable(board)]
    by = "dataset_id" if "dataset_id" in scored else None
    rows = []
    for ident in (part[by].dropna().unique() if by else [None]):
        same = scored[scored[by] == ident] if by else scored
        values = [metric_value(r, ML_REAL, key) for _, r in same.iterrows()]
        values = [v for v in values if not math.isnan(v)]
        if not values:
            continue
        first = same.iloc[0]
        rows.append({**{c: first[c] for c in ("dataset", "dataset_id", "privacy_unit", "delta",
                                              "sampler") if c in first},
                     "mechanism": REAL_REFERENCE, "reference": "", "hyperparameters": "",
                     "kind": "non-private", "ranked": False, "n": math.nan, "mean": math.nan,
                     "metric_setting": first.get("metric_setting", ""),
                     ("mean" if key == ML_SCORE else ML_SCORE): float(np.mean(values))})
    return rows


def sorted_by(part: pd.DataFrame, metric: str, key: str, descending: bool) -> pd.DataFrame:
    """``part`` ordered by ``metric`` (missing values last)."""
    values = pd.Series([metric_value(r, metric, key) for _, r in part.iterrows()],
                       index=part.index)
    return part.loc[values.sort_values(ascending=not descending, na_position="last").index]


def utility_frame(part: pd.DataFrame, board: pd.DataFrame) -> pd.DataFrame:
    """One epsilon's utility table rows: rows with a utility score, best ML efficacy first,
    then the train-on-real row of each dataset."""
    key = board.attrs.get("metric", "score")
    scored = part[~is_not_applicable(part)]
    has = [any(not math.isnan(metric_value(r, c, key)) for c in UTILITY_METRICS)
           for _, r in scored.iterrows()]
    rows = sorted_by(scored[has], ML_SCORE, key, descending=True)
    real = pd.DataFrame(real_reference_rows(rows, board))
    return pd.concat([rows, real], ignore_index=True) if len(real) else rows


def risk_frame(part: pd.DataFrame, board: pd.DataFrame) -> pd.DataFrame:
    """One epsilon's risk table rows: rows with a risk score, highest membership AUC first
    (without membership scores: highest attribute-inference risk first)."""
    key = board.attrs.get("metric", "score")
    scored = part[~is_not_applicable(part)]
    has = [any(not math.isnan(metric_value(r, c, key)) for c in RISK_METRICS)
           for _, r in scored.iterrows()]
    first = MIA_AUC if has_any(board, MEMBERSHIP_METRICS) else AI_RISK
    return sorted_by(scored[has], first, key, descending=True)


@dataclass(frozen=True)
class ViewTable:
    """One table of a view: its caption, rows, columns and which rows are set apart."""
    caption: str
    rows: pd.DataFrame
    columns: list[Column]

    @property
    def apart(self) -> list[bool]:
        return [r.get("mechanism") == REAL_REFERENCE or set_apart(r)
                for _, r in self.rows.iterrows()]


def view_tables(board: pd.DataFrame, compact: bool = False) -> list[ViewTable]:
    """The utility tables (one per epsilon), then the risk tables, for every epsilon that has
    such rows; none when no row has the metrics (``compact``: a terminal's columns)."""
    tables = []
    for title, metrics, frame_of, columns_of in (
            (UTILITY_TITLE, UTILITY_METRICS, utility_frame, utility_columns),
            (RISK_TITLE, RISK_METRICS, risk_frame, risk_columns)):
        if not has_any(board, metrics):
            continue
        columns = columns_of(board, compact)
        for eps, part in board.groupby("epsilon", sort=True):
            rows = frame_of(part, board)
            if len(rows):
                tables.append(ViewTable(f"{title}, epsilon = {eps:g}", rows, columns))
    return tables


def utility_legend(board: pd.DataFrame) -> str:
    """The utility view's legend for ``board``: the parts of :data:`UTILITY_PARTS` whose
    column the view shows (no ML efficacy and no train-on-real sentence when ML efficacy
    applied to no row; no gap sentence when no row logged the gap)."""
    shown = {c.header for c in utility_columns(board)}
    if ML_SCORE not in shown:
        shown.discard(ML_GAP)  # "the gap to that reference" needs the reference
    return "; ".join(text for col, text in UTILITY_PARTS.items() if col in shown)


def view_legends(board: pd.DataFrame) -> list[tuple[str, str]]:
    """(title, legend) of each view the board shows, each saying only what applies."""
    out = []
    if has_any(board, UTILITY_METRICS):
        out.append((UTILITY_TITLE, utility_legend(board)))
    if has_any(board, RISK_METRICS):
        out.append((RISK_TITLE, risk_legend(board)))
    return out


def render_views_markdown(board: pd.DataFrame) -> list[str]:
    """The utility and risk sections of the Markdown board ([] when no row has the metrics)."""
    lines: list[str] = []
    for title, text in view_legends(board):
        tables = [t for t in view_tables(board) if t.caption.startswith(title + ",")]
        lines += [f"### {md_escape(title)}", "", md_escape(text), ""]
        for table in tables:
            lines += [f"#### {md_escape(table.caption)}", ""]
            lines += markdown_table(board_view(table.rows, table.columns), table.columns,
                                    table.apart)
    return lines
