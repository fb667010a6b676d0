"""Rendering a leaderboard: Markdown (``DataFrame.to_markdown``, i.e. tabulate, cells escaped
by ``md_escape``), CSV (formula cells neutralised by ``csv_safe``), a self-contained HTML page
(tables by pandas ``Styler`` with ``escape="html"``, the page by a jinja2 template with
autoescaping), and :func:`write_outputs`, which writes them with the plots. Statistics live in
:mod:`harness.report.leaderboard`.

Every table is first a *view*: a frame of display strings (``board_view``), built from column
specs (``Column``: header, how to read the row, how to format it), plus each row's kind
(ranked, set apart, failed, n/a, audit violation). Numbers are formatted per column: counts as
integers, seconds with two significant digits (``<0.1`` below 0.1), scores with the decimals
their column's magnitude needs, an infinite epsilon (a non-private reference; MLflow stores it
as the largest float) as ``∞ (not private)``. Not-applicable rows (``status == "n/a"``) close
their epsilon's table with their reason; an audit column (``eps_lb``, ``audit_verdict``) is
shown only when some row was audited, and a violation is marked in the row's status. A dataset
whose runs used different schemas gets a note above the tables (Markdown, HTML and terminal:
:func:`harness.report.leaderboard.schema_notes`).

Two views follow the per-epsilon tables when some row logged their metrics
(:func:`view_tables`): the **utility view** (ML efficacy ± CI with the train-on-real
reference row once per dataset, propensity pMSE ratio, range-query error; best ML efficacy
first) and the **risk view**, "empirical risk, not a DP guarantee" (membership AUC, TPR at
FPR 0.01 and 0.1 with CIs, copy shares, each row's claimed budget and the bound it implies,
``!`` where the attack beats it; highest AUC first).
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from harness.report.leaderboard import (
    ALPHA,
    BOUND_PREFIX,
    COPY_HELDOUT,
    COPY_TRAIN,
    MARK_LEGEND,
    METRIC_NA_PREFIX,
    MIA_AUC,
    MIA_FPRS,
    ML_GAP,
    ML_REAL,
    ML_SCORE,
    PMSE_RATIO,
    RANGE_ERROR,
    RISK_METRICS,
    UTILITY_METRICS,
    beats_bound,
    claimed_budget,
    has_any,
    is_not_applicable,
    lower_is_better,
    metric_value,
    metrics_not_applicable,
    overall_board,
    row_label,
    schema_notes,
    tuning_gap,
    varying_columns,
)
from harness.report.plots import (
    plot_pareto,
    plot_score_vs_epsilon,
    plot_utility_vs_epsilon,
)
from harness.report.tracking import INF_THRESHOLD

#: CSV cells starting with these are read as formulas by spreadsheets (OWASP CSV injection).
CSV_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
#: A formula character right after a separator a spreadsheet may split a cell on (comma,
#: semicolon, pipe, tab, CR, LF): ``x;=1+1`` is evaluated when the file is opened with ``;``.
CSV_FORMULA_INSIDE = re.compile(r"([,;|\t\r\n])(?=[=+\-@\t\r])")
#: Characters escaped in Markdown cells.
MD_SPECIAL = "\\|*_`<>[]~&"
#: Longest hyperparameters label in the Markdown board (printed on a terminal; the CSV and
#: HTML have the full text).
MD_MAX_LABEL = 60
#: Longest status in the Markdown board (a failure or n/a reason is cut; CSV/HTML have it all).
MD_MAX_STATUS = 100
AUDIT_VIOLATION = "VIOLATION"
NOT_PRIVATE = "∞ (not private)"


# ----- cell text ----------------------------------------------------------------------------
def shown_scores(board: pd.DataFrame, ranked_by: str) -> list[str]:
    """Columns for the Markdown table: the parts of the ranking score (for the challenge:
    its three components), then every other metric family's headline score."""
    from metrics import METRICS, metric_class

    family = ranked_by.split("/")[0]
    parts = [c for c in board.columns if c.startswith(f"{family}/") and c != ranked_by
             and family == "challenge"]
    headlines = []
    for name in METRICS:
        col = f"{name}/{metric_class(name).headline}" if name != family else None
        if col and (col in board.columns or METRIC_NA_PREFIX + name in board.columns):
            headlines.append(col)
    return parts + headlines


def metric_na_reason(row: pd.Series | dict, score_column: str) -> str:
    """Why the metric of ``score_column`` (``family/name``) did not apply to this row's runs
    ("" when it did)."""
    reason = row.get(METRIC_NA_PREFIX + score_column.split("/")[0], "")
    return "" if _missing(reason) else str(reason)


def score_cell(col: str, decimals: int) -> Callable[[pd.Series], str]:
    """A score cell: the number, or ``n/a`` where the metric did not apply."""
    return lambda r: "n/a" if metric_na_reason(r, col) else fmt_number(r.get(col, math.nan),
                                                                         decimals)


def metric_na_legend(board: pd.DataFrame) -> list[str]:
    """One line per metric that did not apply to some rows: ``metric: reason``."""
    return [f"{metric}: {reason}"
            for metric, reason in sorted(metrics_not_applicable(board).items())]


def _missing(x: object) -> bool:
    return x is None or x is pd.NA or (isinstance(x, (float, np.floating)) and math.isnan(x))


def column_decimals(values: object, significant: int = 3) -> int:
    """Decimals that show ``significant`` digits of the column's largest magnitude (at least
    1, at most 4): 950.2 -> 1, 12.3 -> 1, 0.87 -> 3."""
    arr = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(float)
    arr = np.abs(arr[np.isfinite(arr)])
    if not len(arr) or arr.max() == 0:
        return 1
    return int(min(4, max(1, significant - 1 - math.floor(math.log10(arr.max())))))


def fmt_number(x: object, decimals: int = 1) -> str:
    """A float with ``decimals``; "" when missing, ``∞`` when infinite (or stored as the
    largest float)."""
    if _missing(x):
        return ""
    if isinstance(x, (int, float, np.integer, np.floating)):
        if math.isinf(x) or abs(float(x)) > INF_THRESHOLD:
            return "∞" if x > 0 else "-∞"
        return f"{float(x):.{decimals}f}"
    return str(x)


def fmt_count(x: object) -> str:
    """An integer count (a mean over trials is rounded): 24421.0 -> ``24421``."""
    if _missing(x):
        return ""
    try:
        return f"{float(x):.0f}"  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(x)


def fmt_seconds(x: object) -> str:
    """Seconds with two significant digits (0.012, 0.25, 1.2), whole seconds from 10 on."""
    if _missing(x):
        return ""
    s = float(x)  # type: ignore[arg-type]
    if s <= 0:
        return "0"
    decimals = min(6, max(0, 1 - math.floor(math.log10(s))))
    return f"{s:.0f}" if round(s, decimals) >= 10 else f"{s:.{decimals}f}"


def fmt_epsilon(x: object) -> str:
    """An epsilon spent: four significant digits, ``∞ (not private)`` when infinite."""
    if _missing(x):
        return ""
    e = float(x)  # type: ignore[arg-type]
    return NOT_PRIVATE if math.isinf(e) or e > INF_THRESHOLD else f"{e:.4g}"


def rank_text(row: pd.Series | dict) -> str:
    if row.get("status") == "n/a":
        return "n/a"
    if row["kind"] == "reference":
        return "ref"
    if row["kind"] == "non-private":
        return "n/p"
    if pd.isna(row["rank"]):
        return "-"
    return f"{int(row['rank'])}{'=' if row.get('tied') else ''}"


def first_line(text: object, width: int = 120) -> str:
    """The first line of ``text``, at most ``width`` characters (a cut one ends in "…")."""
    line = (str(text or "").splitlines() or [""])[0]
    return line if len(line) <= width else line[:width - 1] + "…"


def audit_violation(row: pd.Series | dict) -> bool:
    return row.get("audit_verdict") == AUDIT_VIOLATION


def audit_text(row: pd.Series | dict) -> str:
    if not audit_violation(row):
        return ""
    return (f"AUDIT VIOLATION: lower bound {fmt_number(row.get('eps_lb'), 2)} exceeds the "
            f"claimed epsilon {row['epsilon']:g}" if "epsilon" in row else "AUDIT VIOLATION")


def status_text(row: pd.Series | dict) -> str:
    """One epsilon's row: n/a with its reason, failures, running and interrupted runs, an audit
    violation, and the row's marks ("ok" when there is nothing to say)."""
    if row.get("status") == "n/a":
        return f"n/a: {first_line(row.get('reason'))}"
    failed, n = int(row.get("failed", 0) or 0), int(row.get("n", 0) or 0)
    unfinished = int(row.get("unfinished", 0) or 0)
    running = int(row.get("running", 0) or 0) if not _missing(row.get("running")) else 0
    marks = str(row.get("marks", "") or "")
    audit = audit_text(row)
    if failed and n == 0:
        return "; ".join(p for p in (f"FAILED ({failed}): {first_line(row.get('failure_reason'))}",
                                     f"{running} running" if running else "", audit, marks) if p)
    unscored = n and "mean" in row and pd.isna(row["mean"])
    parts = [audit, f"{failed} failed" if failed else "",
             f"{running} running" if running else "",
             f"{unfinished - running} interrupted" if unfinished > running else "",
             "no score of the ranking metric" if unscored else "", marks]
    return "; ".join(p for p in parts if p) or "ok"


def overall_status(row: pd.Series | dict) -> str:
    """A setting over epsilons: complete ("ok"), running, failed with the reason, or
    incomplete with the epsilons it has a score at."""
    if row.get("status") == "n/a":
        return f"n/a: {first_line(row.get('reason'))}"
    failed = int(row.get("failed", 0) or 0)
    running = int(row.get("running", 0) or 0) if not _missing(row.get("running")) else 0
    interrupted = int(row.get("unfinished", 0) or 0) - running if not _missing(
        row.get("unfinished")) else 0
    scored_at = str(row.get("epsilons", "") or "")
    if row.get("complete"):
        head = "ok"
    elif scored_at:
        head = f"incomplete (only epsilon {scored_at})"
    elif failed:
        head = f"FAILED ({failed}): {first_line(row.get('failure_reason'))}"
    elif running:
        head = "running"
    else:
        head = "interrupted" if interrupted > 0 else "no score at any epsilon"
    parts = [head, f"{failed} failed" if failed and not head.startswith("FAILED") else "",
             f"{running} running" if running and head != "running" else "",
             f"{interrupted} interrupted" if interrupted > 0 and head != "interrupted" else "",
             str(row.get("marks", "") or "")]
    return "; ".join(p for p in parts if p)


def set_apart(row: pd.Series | dict) -> bool:
    """Reference, non-private, replayable, large-delta and n/a rows are shown apart, unranked."""
    return row["kind"] != "dp" or not bool(row.get("ranked", True))


def md_escape(text: object) -> str:
    """``text`` safe as one Markdown table cell: newlines become spaces and Markdown's special
    characters (``MD_SPECIAL``: pipe, backslash, emphasis, code, HTML, links) are escaped."""
    flat = " ".join(str(text).splitlines())
    return "".join(f"\\{ch}" if ch in MD_SPECIAL else ch for ch in flat)


def csv_cell(value: object) -> object:
    """A text cell a spreadsheet would read as a formula gets a ``'`` before every place one
    could start: at the start (= + - @ tab or CR) and after each separator a spreadsheet may
    split on (``x;=1`` -> ``x;'=1``). Numbers, and the board's bare placeholder ``-``, are left
    alone."""
    if not isinstance(value, str) or value == "-":
        return value
    guarded = CSV_FORMULA_INSIDE.sub(r"\1'", value)
    return "'" + guarded if guarded.startswith(CSV_FORMULA_STARTS) else guarded


def csv_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every text cell and column name passed through ``csv_cell``."""
    out = frame.copy()
    for col in out.columns:
        if out[col].dtype == object or pd.api.types.is_string_dtype(out[col]):
            out[col] = out[col].map(csv_cell)
    out.columns = [csv_cell(str(c)) for c in out.columns]
    return out


def shorten(text: object, width: int) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= width else flat[:width - 1] + "…"


# ----- table views --------------------------------------------------------------------------
@dataclass(frozen=True)
class Column:
    """One shown column: its header, the cell text of a row, whether it is a number
    (right-aligned) and whether long text may wrap in HTML."""
    header: str
    cell: Callable[[pd.Series], str]
    numeric: bool = True
    wrap: bool = False


def _get(col: str, fmt: Callable[[object], str]) -> Callable[[pd.Series], str]:
    return lambda r: fmt(r.get(col, math.nan))


def _text(col: str) -> Callable[[pd.Series], str]:
    return lambda r: "" if _missing(r.get(col)) else str(r.get(col))


#: Headers of the schema proposal's spend and the run's total (shown when some row has them).
SCHEMA_EPS = "eps schema"
TOTAL_EPS = "eps schema + mechanism (basic)"
SCHEMA_EPS_LEGEND = ("epsilon of the schema proposal (dp-arena-schema --epsilon; ∞ when read "
                     "from the private file); eps schema + mechanism (basic): the two added, "
                     "basic sequential composition (deltas likewise: delta_total in the CSV)")


def has_schema_spend(board: pd.DataFrame) -> bool:
    """Whether some row's runs used a proposed schema that spent budget (``schema_epsilon``)."""
    return "schema_epsilon" in board and bool(pd.to_numeric(board["schema_epsilon"],
                                                            errors="coerce").notna().any())


def has_audit(board: pd.DataFrame) -> bool:
    return "eps_lb" in board and bool(pd.to_numeric(board["eps_lb"], errors="coerce")
                                      .notna().any())


def audit_cell(r: pd.Series) -> str:
    text = fmt_number(r.get("eps_lb", math.nan), 2)
    text = f"{text} {AUDIT_VIOLATION}" if audit_violation(r) else text
    view = r.get("audit_view")
    return f"{text} ({view})" if isinstance(view, str) and view else text


def board_columns(board: pd.DataFrame, *, overall: bool, full: bool) -> list[Column]:
    """The columns of an epsilon's table (``overall=False``) or of the overall table; ``full``
    (HTML) adds std, the epsilons list and the synthetic row count."""
    key = board.attrs.get("metric", "score")
    scored = board[~is_not_applicable(board)]
    varying = varying_columns(scored, key)
    decimals = column_decimals(scored["mean"]) if "mean" in scored else 1
    score = (lambda col: _get(col, lambda x: fmt_number(x, decimals)))
    cols = [Column("rank", rank_text, False), Column("mechanism", row_label, False),
            Column("hyperparameters", _text("hyperparameters"), False, wrap=True),
            Column("tuning", lambda r: str(r.get("tuning") or "-"), False),
            *[Column(head, _text(c), False) for c, head in varying],
            Column("mean" if overall else key, score("mean")), Column("± CI", score("ci95")),
            *([Column("std", score("std"))] if full else []), Column("n", _get("n", fmt_count))]
    if overall:
        cols += [Column("epsilons", _text("epsilons"), False)] if full else []
    else:
        for extra in shown_scores(board, key):
            d = column_decimals(scored[extra]) if extra in scored else 3
            cols.append(Column(extra, score_cell(extra, d)))
        cols.append(Column("eps spent", _get("epsilon_spent", fmt_epsilon)))
        if has_schema_spend(board):
            cols += [Column(SCHEMA_EPS, _get("schema_epsilon", fmt_epsilon)),
                     Column(TOTAL_EPS, _get("epsilon_total", fmt_epsilon))]
    if has_audit(board) and not overall:
        cols.append(Column("eps lower bound (audit)", audit_cell))
    cols.append(Column("seconds", _get("seconds", fmt_seconds)))
    if not overall:
        cols.append(Column("peak MB", _get("peak_memory_mb", fmt_count)))
        if full and "n_synthetic_rows" in board:
            cols.append(Column("synthetic rows", _get("n_synthetic_rows", fmt_count)))
    cols.append(Column("status", overall_status if overall else status_text, False,
                       wrap=True))
    return cols


def row_classes(row: pd.Series) -> list[str]:
    """HTML classes of a row: its kind, set apart, failed, n/a, audit violation."""
    if row.get("status") == "n/a":
        return ["na"]
    klass = [str(row["kind"])] if row["kind"] != "dp" else (["marked"] if set_apart(row)
                                                             else [])
    if int(row.get("n", 1) or 0) == 0 and int(row.get("failed", 0) or 0):
        klass.append("failed")
    if audit_violation(row):
        klass.append("violation")
    return klass


def board_view(frame: pd.DataFrame, columns: list[Column]) -> pd.DataFrame:
    """Display strings: one row per row of ``frame``, one column per ``Column`` (headers as
    given; not yet escaped)."""
    cells = [[c.cell(r) for c in columns] for _, r in frame.iterrows()]
    return pd.DataFrame(cells, columns=[c.header for c in columns], dtype=object)


def ordered(part: pd.DataFrame) -> pd.DataFrame:
    """Rows in board order, with the not-applicable rows last."""
    na = is_not_applicable(part)
    return pd.concat([part[~na], part[na]])


# ----- utility and risk views (issue 38) --------------------------------------------------
#: The label of the train-on-real row of a utility table (one per dataset).
REAL_REFERENCE = "train on real, test on real: non-private reference"
UTILITY_TITLE = "utility view"
RISK_TITLE = "risk view: empirical risk, not a DP guarantee"
#: After a TPR cell: the attack beats the row's bound at that FPR significantly.
BEATS = "!"
UTILITY_LEGEND = (
    f"{ML_SCORE}: mean over models (fixed hyperparameters) trained on the synthetic table of "
    "AUROC / macro-F1 / R^2 on held-out real rows (higher is better), ± its 95% CI over "
    f"trials; the '{REAL_REFERENCE}' row is the same models trained on the real training "
    f"rows ({ML_REAL}), once per dataset; {ML_GAP}: the gap to that reference as the metric "
    f"logs it; {PMSE_RATIO}: propensity pMSE over its value when synthetic and real come from "
    f"one distribution (1 = indistinguishable, lower is better); {RANGE_ERROR}: mean relative "
    "error of random range queries (lower is better)")
RISK_LEGEND = (
    "membership inference from the synthetic table alone, held-out persons as non-members. "
    "AUC 0.5 = no signal; TPR at FPR with its 95% CI [lo, hi] (means over trials); copy "
    "share: share of synthetic rows that copy a training row / a held-out row. bound @ FPR: "
    "min(1, e^epsilon * FPR + delta) for the row's claimed "
    "(epsilon, delta) (none: no claim, e.g. resample or non-private rows); "
    f"{BEATS} after a TPR: the attack beats the bound significantly (lo > bound): staying "
    "under the bound proves nothing; beating it is evidence against the claimed budget.")


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


def tpr_cell(fpr: float, sep: str = ", ") -> Callable[[pd.Series], str]:
    """``TPR [lo, hi]`` at ``fpr`` (means over trials), then ``BEATS`` when the attack beats
    the row's bound."""
    name = f"membership/tpr_at_fpr_{fpr:g}"

    def cell(r: pd.Series) -> str:
        tpr = fmt_number(r.get(name, math.nan), 3)
        if not tpr:
            return ""
        lo, hi = (fmt_number(r.get(f"{name}_{end}", math.nan), 3) for end in ("lo", "hi"))
        text = f"{tpr} [{lo}{sep}{hi}]" if lo and hi else tpr
        return f"{text} {BEATS}" if beats_bound(r, fpr) else text
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
    ``settings``) and the varying columns."""
    scored = board[~is_not_applicable(board)]
    return [Column("mechanism", row_label, False),
            Column("settings" if compact else "hyperparameters", _text("hyperparameters"),
                   False, wrap=True),
            *[Column(head, _text(c), False) for c, head in varying_columns(scored, key)
              if c != "metric_setting"]]


def utility_columns(board: pd.DataFrame, compact: bool = False) -> list[Column]:
    """Columns of a utility table (``compact``: for a terminal)."""
    key = board.attrs.get("metric", "score")
    present = [c for c in (ML_GAP, PMSE_RATIO, RANGE_ERROR) if has_any(board, [c])]
    decimals = {c: column_decimals([metric_value(r, c, key) for _, r in board.iterrows()])
                for c in present}
    return [*view_identity(board, key, compact),
            Column(ML_SCORE, view_value(ML_SCORE, key, 3)), Column("n", _get("n", fmt_count)),
            *[Column(c, view_value(c, key, decimals[c], ci=False)) for c in present]]


def risk_columns(board: pd.DataFrame, compact: bool = False) -> list[Column]:
    """Columns of a risk table (``compact``: short headers, no AUC interval and no ``n``, so
    the table fits a 120-column terminal)."""
    key = board.attrs.get("metric", "score")
    cols = [*view_identity(board, key, compact),
            Column("eps, delta" if compact else "claimed (eps, delta)", claim_cell),
            Column("AUC" if compact else MIA_AUC, view_value(MIA_AUC, key, 3, ci=not compact))]
    for fpr in MIA_FPRS:
        cols += [Column(f"TPR@{fpr:g} [lo,hi]" if compact else f"TPR @ FPR {fpr:g} [95% CI]",
                        tpr_cell(fpr, "," if compact else ", ")),
                 Column("bound" if compact else f"bound @ FPR {fpr:g}", bound_cell(fpr))]
    if compact:
        return cols + [Column("copies tr/ho", copy_cell("/"))]
    return cols + [Column("copy share train / held-out", copy_cell()),
                   Column("n", _get("n", fmt_count))]


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
    """One epsilon's risk table rows: rows with a risk score, highest membership AUC first."""
    key = board.attrs.get("metric", "score")
    scored = part[~is_not_applicable(part)]
    has = [any(not math.isnan(metric_value(r, c, key)) for c in RISK_METRICS)
           for _, r in scored.iterrows()]
    return sorted_by(scored[has], MIA_AUC, key, descending=True)


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


def view_legends(board: pd.DataFrame) -> list[tuple[str, str]]:
    """(title, legend) of each view the board shows."""
    return [(title, text) for title, metrics, text in (
        (UTILITY_TITLE, UTILITY_METRICS, UTILITY_LEGEND),
        (RISK_TITLE, RISK_METRICS, RISK_LEGEND)) if has_any(board, metrics)]


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


# ----- Markdown -----------------------------------------------------------------------------
def markdown_table(view: pd.DataFrame, columns: list[Column], apart: list[bool]) -> list[str]:
    """A pipe table via tabulate: every cell and header ``md_escape``-d first, set-apart rows
    in italics, numbers right-aligned, long hyperparameters and statuses cut (``MD_MAX_LABEL``,
    ``MD_MAX_STATUS``) so the board stays readable on a terminal."""
    shown = view.copy()
    for col, width in (("hyperparameters", MD_MAX_LABEL), ("status", MD_MAX_STATUS)):
        if col in shown:
            shown[col] = shown[col].map(lambda t, w=width: shorten(t, w))
    for i, flag in enumerate(apart):
        shown.iloc[i] = [f"*{md_escape(c)}*" if flag and str(c) else md_escape(c)
                         for c in shown.iloc[i]]
    shown.columns = [md_escape(c) for c in shown.columns]
    align = ["right" if c.numeric else "left" for c in columns]
    return [shown.to_markdown(index=False, tablefmt="pipe", disable_numparse=True,
                              colalign=align), ""]


def md_legend(board: pd.DataFrame) -> list[str]:
    marks = set("; ".join(board["marks"].fillna("")).split("; ")) if "marks" in board else set()
    lines = [f"- {md_escape(m)}: {md_escape(text)}" for m, text in MARK_LEGEND if m in marks]
    if has_audit(board):
        lines.append(f"- eps lower bound (audit): {md_escape(audit_legend(board))}")
    if is_not_applicable(board).any():
        lines.append("- n/a: the mechanism does not apply to this dataset (not run, never "
                     "ranked); the status says why")
    lines += [f"- n/a in a score column, {md_escape(text)}" for text in metric_na_legend(board)]
    if has_schema_spend(board):
        lines.append(f"- {SCHEMA_EPS}: {md_escape(SCHEMA_EPS_LEGEND)}")
    return lines


def render_markdown(board: pd.DataFrame, title: str = "Leaderboard") -> str:
    """Overall section (when there are several epsilons), one section per epsilon, and the
    tuning-mode comparison when tuned rows exist."""
    key = board.attrs.get("metric", "score")
    direction = "lower is better" if lower_is_better(key) else "higher is better"
    scored = board[~is_not_applicable(board)]
    lines = [f"## {md_escape(title)}",
             (f"ranked by {md_escape(key)} ({direction}); mean ± 95% CI over n trials. "
              "Rank = 1 + "
              "rows of the same dataset, unit, delta and metric settings significantly better "
              f"(paired t-test across trials, alpha {board.attrs.get('alpha', ALPHA)}); `2=` "
              "marks a statistical tie. *Italic* rows are reference points (`ref`), "
              "non-private (`n/p`, e.g. oracle tuning), not applicable (`n/a`) or marked "
              "unranked: shown, never ranked."), ""]
    legend = md_legend(board)
    if legend:
        lines += ["Marks:", "", *legend, ""]
    notes = schema_notes(board)
    if notes:
        lines += ["Notes:", "", *[f"- {md_escape(note)}" for note in notes], ""]
    if scored["epsilon"].nunique() > 1:
        lines += render_overall(overall_table(board), board)
    columns = board_columns(board, overall=False, full=False)
    for eps, part in board.groupby("epsilon", sort=True):
        part = ordered(part)
        lines += [f"### epsilon = {eps:g}", ""]
        lines += markdown_table(board_view(part, columns), columns,
                                [set_apart(r) for _, r in part.iterrows()])
    lines += render_views_markdown(board)
    gap = tuning_gap(scored)
    if not gap.empty:
        lines += render_gap(gap)
    return "\n".join(lines)


def overall_table(board: pd.DataFrame) -> pd.DataFrame:
    """``overall_board`` of the scored rows, then one n/a row per not-applicable setting."""
    scored = board[~is_not_applicable(board)]
    overall = overall_board(scored) if len(scored) else pd.DataFrame()
    na = board[is_not_applicable(board)].drop_duplicates(
        ["mechanism", "hyperparameters", "dataset", "delta"])
    if na.empty:
        return overall
    out = pd.concat([overall, na.drop(columns="epsilon")], ignore_index=True)
    out.attrs.update(overall.attrs)
    return out


def render_overall(overall: pd.DataFrame, board: pd.DataFrame) -> list[str]:
    if overall.empty:
        return []
    eps = ", ".join(f"{e:g}" for e in overall.attrs.get("epsilons", []))
    columns = board_columns(board, overall=True, full=False)
    return [f"### overall (mean over epsilon {eps})", "",
            *markdown_table(board_view(overall, columns), columns,
                            [set_apart(r) for _, r in overall.iterrows()])]


def gap_view(gap: pd.DataFrame) -> pd.DataFrame:
    def with_setting(value: float, setting: str) -> str:
        return f"{fmt_number(value)} ({setting})" if setting else fmt_number(value)

    rows = [[f"{r.epsilon:g}", r.mechanism, fmt_number(r.untuned),
             with_setting(r.public, r.public_setting),
             with_setting(r.dp_select, r.dp_select_setting),
             with_setting(r.oracle, r.oracle_setting),
             fmt_number(r.oracle_minus_public), fmt_number(r.oracle_minus_dp_select)]
            for r in gap.itertuples()]
    return pd.DataFrame(rows, dtype=object, columns=[
        "epsilon", "mechanism", "untuned", "public", "dp_select", "oracle (n/p)",
        "oracle − public", "oracle − dp_select"])


GAP_COLUMNS = [Column(h, _text(h), numeric=h not in ("mechanism",)) for h in (
    "epsilon", "mechanism", "untuned", "public", "dp_select", "oracle (n/p)", "oracle − public",
    "oracle − dp_select")]


def render_gap(gap: pd.DataFrame) -> list[str]:
    lines = ["### tuning modes", "",
             ("Score of each tuning mode (chosen setting in brackets) and the gaps; oracle is "
              "tuned on the private data and is not private."), ""]
    return lines + markdown_table(gap_view(gap), GAP_COLUMNS, [False] * len(gap))


# ----- HTML ---------------------------------------------------------------------------------
_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table.board{border-collapse:collapse;margin-bottom:2em;font-size:14px}
table.board td,table.board th{padding:4px 8px;border-bottom:1px solid #ddd;text-align:right}
table.board td.t{text-align:left;white-space:nowrap}
table.board td.wrap{white-space:normal;min-width:12em;max-width:32em;overflow-wrap:anywhere}
div.scroll{overflow-x:auto;max-width:100%}
table.board th{cursor:pointer;background:#f4f4f4;user-select:none;max-width:9em}
table.board th:after{content:" \\2195";color:#aaa}
td.reference{color:#666;font-style:italic;background:#f7f7f7}
td.non-private{color:#8a4b00;font-style:italic;background:#fff6e8}
td.failed{color:#b00020}
td.marked{color:#555;font-style:italic;background:#eef3ff}
td.na{color:#777;font-style:italic;background:#f2f2f2}
td.violation{color:#fff;background:#b00020;font-weight:bold}
td.tie{color:#06c;font-weight:bold}
img{max-width:100%;border:1px solid #eee;margin:0.5em 0}
"""
_JS = """
document.querySelectorAll('table.board').forEach(function(t){
  t.querySelectorAll('th').forEach(function(th,i){
    th.addEventListener('click',function(){
      var body=t.tBodies[0], rows=Array.from(body.rows), asc=th.dataset.asc!=='1';
      t.querySelectorAll('th').forEach(function(h){h.dataset.asc=''});
      th.dataset.asc=asc?'1':'0';
      rows.sort(function(a,b){
        var x=a.cells[i].textContent, y=b.cells[i].textContent;
        var fx=parseFloat(x), fy=parseFloat(y);
        if(!isNaN(fx)&&!isNaN(fy)) return asc?fx-fy:fy-fx;
        if(isNaN(fx)!==isNaN(fy)) return isNaN(fx)?1:-1;
        return asc?String(x).localeCompare(y):String(y).localeCompare(x);
      });
      rows.forEach(function(r){body.appendChild(r)});
    });
  });
});
"""
_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>{{ title }}</title><style>{{ css }}</style></head>
<body><h1>{{ title }}</h1>
<p>ranked by <code>{{ key }}</code>; mean ± 95% CI (Student t) over n trials; rank = 1 + rows
of the same dataset, unit, delta and metric settings significantly better (paired t-test);
<b style="color:#06c">2=</b> marks a tie; grey italic rows are references, orange rows
non-private, blue rows marked and unranked, grey rows at the end n/a (the mechanism does not
apply); click a header to sort.</p>
{% if notes %}<p><b>Notes:</b></p>
<ul>{% for text in notes %}<li>{{ text }}</li>{% endfor %}</ul>{% endif %}
{% if marks %}<p>Marks (in the status column; blue italic rows are unranked):</p>
<ul>{% for mark, text in marks %}<li><b>{{ mark }}</b>: {{ text }}</li>{% endfor %}</ul>{% endif %}
{% if audit %}<p><b>eps lower bound (audit)</b>: {{ audit }}. Rows marked
<span style="color:#fff;background:#b00020;font-weight:bold">&nbsp;VIOLATION&nbsp;</span>
have a lower bound above the epsilon they claim.</p>{% endif %}
{% if metrics_na %}<p><b>n/a</b> in a score column: the metric does not apply to that row's
data (not scored, not a zero):</p>
<ul>{% for text in metrics_na %}<li>{{ text }}</li>{% endfor %}</ul>{% endif %}
{% for title, text in views %}<p><b>{{ title }}</b>: {{ text }}</p>{% endfor %}
{% for caption, table in tables %}<h2>{{ caption }}</h2><div class="scroll">{{ table }}</div>
{% endfor %}{% for name, data in images %}<h2>{{ name }}</h2>
<img alt="{{ name }}" src="data:image/png;base64,{{ data }}">
{% endfor %}<script>{{ js }}</script></body></html>
"""


def audit_legend(board: pd.DataFrame) -> str:
    """What the audit column means, with the audit's confidence (``audit_confidence`` column
    or board attribute, a fraction) when known."""
    conf = board.attrs.get("audit_confidence")
    if "audit_confidence" in board and board["audit_confidence"].notna().any():
        conf = board["audit_confidence"].dropna().iloc[0]
    at = f"at {float(conf):.0%} confidence" if conf is not None else "at the audit's confidence"
    return (f"empirical lower bound on epsilon from dp-arena-audit {at}, with what the audit "
            "read (synthetic: the synthetic table; releases: the mechanism's noisy releases) "
            "and its neighbouring pair (canary: real data plus a constructed person; "
            "worst_case: a tiny table plus a person differing everywhere); a value above the "
            "claimed epsilon means the implementation leaks more than it claims")


def breakable(header: str) -> str:
    """``header`` with a zero-width space after each ``/`` and ``_``, so a long metric name
    (``count_query/mean_relative_error``) may wrap in its header cell."""
    return header.replace("/", "/\u200b").replace("_", "_\u200b")


def html_table(view: pd.DataFrame, columns: list[Column], classes: list[list[str]],
               uuid: str, tie: list[bool] | None = None) -> str:
    """One sortable table by pandas ``Styler``: every cell and header HTML-escaped, each
    cell classed by its row's kind (``row_classes``) and ``t`` for text columns."""
    from pandas.io.formats.style import Styler

    frame = view.reset_index(drop=True)
    frame.columns = [breakable(h) for h in frame.columns]
    td = pd.DataFrame([[" ".join([*klass, *([] if c.numeric else ["t"]),
                                  *(["wrap"] if c.wrap else []),
                                  *(["tie"] if j == 0 and tie and tie[i] else [])])
                        for j, c in enumerate(columns)] for i, klass in enumerate(classes)],
                      index=frame.index, columns=frame.columns, dtype=object)
    styler = (Styler(frame, uuid=uuid, cell_ids=False).format(escape="html")
              .format_index(escape="html", axis=1).hide(axis="index")
              .set_table_attributes('class="board"'))
    left = {breakable(c.header): [{"selector": "th", "props": "text-align:left"}]
            for c in columns if not c.numeric}
    if left:
        styler = styler.set_table_styles(left, overwrite=False)
    if len(frame):
        styler = styler.set_td_classes(td)
    return styler.to_html()


def _board_html(frame: pd.DataFrame, columns: list[Column], uuid: str) -> str:
    return html_table(board_view(frame, columns), columns,
                      [row_classes(r) for _, r in frame.iterrows()], uuid,
                      [bool(r.get("tied")) is True for _, r in frame.iterrows()])


def render_html(board: pd.DataFrame, title: str, plots: list[Path] | None = None) -> str:
    """A self-contained page (jinja2, autoescaped): sortable tables (click a header), a
    legend of the row marks and of the audit column, and the plots embedded."""
    from jinja2 import Environment
    from markupsafe import Markup

    scored = board[~is_not_applicable(board)]
    tables = []
    if scored["epsilon"].nunique() > 1:
        tables.append(("Overall (mean over epsilons)",
                       _board_html(overall_table(board),
                                   board_columns(board, overall=True, full=True), "overall")))
    columns = board_columns(board, overall=False, full=True)
    for i, (eps, part) in enumerate(board.groupby("epsilon", sort=True)):
        tables.append((f"epsilon = {eps:g}", _board_html(ordered(part), columns, f"eps{i}")))
    for i, table in enumerate(view_tables(board)):
        tables.append((table.caption, html_table(
            board_view(table.rows, table.columns), table.columns,
            [["reference"] if apart else [] for apart in table.apart], f"view{i}")))
    gap = tuning_gap(scored)
    if not gap.empty:
        tables.append(("Tuning modes", html_table(gap_view(gap), GAP_COLUMNS,
                                                  [[] for _ in range(len(gap))], "gap")))
    marks = set("; ".join(board["marks"].fillna("")).split("; ")) if "marks" in board else set()
    page = Environment(autoescape=True).from_string(_PAGE)
    return page.render(
        title=title, key=board.attrs.get("metric", ""), css=Markup(_CSS), js=Markup(_JS),
        marks=[(m, text) for m, text in MARK_LEGEND if m in marks],
        audit=audit_legend(board) if has_audit(board) else "",
        metrics_na=metric_na_legend(board), notes=schema_notes(board),
        views=view_legends(board),
        tables=[(caption, Markup(table)) for caption, table in tables],
        images=[(p.stem.replace("_", " "), base64.b64encode(p.read_bytes()).decode())
                for p in plots or [] if p.is_file()])


# ----- files --------------------------------------------------------------------------------
def with_status(frame: pd.DataFrame, status: Callable[[pd.Series], str]) -> pd.DataFrame:
    """``frame`` with its ``status`` column as the tables show it (for the CSV). An n/a row
    reads ``n/a: <reason>``: a bare ``n/a`` would be read back as a missing value by pandas
    and most spreadsheets."""
    if frame.empty:
        return frame
    return frame.assign(status=[status(r) for _, r in frame.iterrows()])


def write_outputs(board: pd.DataFrame, runs: pd.DataFrame, out_dir: Path | str,
                  title: str = "dp-arena leaderboard") -> list[Path]:
    """leaderboard.md/.csv/.html, leaderboard_overall.csv, score_vs_epsilon.png, pareto.png
    (utility_vs_epsilon.png when some row has ``ml_efficacy/score``; tuning_gap.csv when
    tuned rows exist) in ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plots = [plot_score_vs_epsilon(board, out / "score_vs_epsilon.png"),
             plot_pareto(board, out / "pareto.png")]
    if has_any(board[~is_not_applicable(board)], [ML_SCORE]):
        plots.append(plot_utility_vs_epsilon(board, out / "utility_vs_epsilon.png"))
    paths = [out / "leaderboard.md", out / "leaderboard.csv", out / "leaderboard_overall.csv",
             out / "leaderboard.html", *plots]
    paths[0].write_text(render_markdown(board, title))
    csv_safe(with_status(board, status_text)).to_csv(paths[1], index=False)
    csv_safe(with_status(overall_table(board), overall_status)).to_csv(paths[2], index=False)
    paths[3].write_text(render_html(board, title, plots))
    gap = tuning_gap(board[~is_not_applicable(board)])
    if not gap.empty:
        csv_safe(gap).to_csv(out / "tuning_gap.csv", index=False)
        paths.append(out / "tuning_gap.csv")
    return paths
