"""The board's cells and tables as display text, shared by every format (Markdown, HTML,
terminal) and by the utility and risk views.

- **numbers**: :func:`fmt_number` (fixed decimals; ``∞`` for infinite or the largest float),
  :func:`column_decimals` (the decimals a column's magnitude needs), :func:`fmt_count`
  (integers), :func:`fmt_seconds` (two significant digits), :func:`fmt_epsilon` (``∞ (not
  private)`` for an infinite spend);
- **row text**: :func:`rank_text` (``2=`` for a tie, ``ref``, ``n/p``, ``n/a``),
  :func:`status_text` and :func:`overall_status` (failures, running and interrupted runs, an
  audit violation, marks), :func:`set_apart` (rows shown apart, unranked), ``n/a`` where a
  metric did not apply (:func:`metric_na_reason`, :func:`score_cell`);
- **tables**: a column spec (:class:`Column`: header, how to read and format a row), a view
  (:func:`board_view`: a frame of display strings) and its Markdown pipe table
  (:func:`markdown_table`, every cell escaped by :func:`md_escape`, long labels cut).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dp_arena.report.leaderboard import METRIC_NA_PREFIX
from dp_arena.report.tracking import INF_THRESHOLD

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
def metric_na_reason(row: pd.Series | dict, score_column: str) -> str:
    """Why the metric of ``score_column`` (``family/name``) did not apply to this row's runs
    ("" when it did)."""
    reason = row.get(METRIC_NA_PREFIX + score_column.split("/")[0], "")
    return "" if _missing(reason) else str(reason)


def score_cell(col: str, decimals: int) -> Callable[[pd.Series], str]:
    """A score cell: the number, or ``n/a`` where the metric did not apply."""
    return lambda r: "n/a" if metric_na_reason(r, col) else fmt_number(r.get(col, math.nan),
                                                                         decimals)


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
    if row["kind"] == "external":  # a published row (dp_arena.report.crc_scale)
        return "ext"
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


def shorten(text: object, width: int) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= width else flat[:width - 1] + "…"


def has_settings(board: pd.DataFrame) -> bool:
    """Whether some row of ``board`` has hyperparameters other than the defaults (``-``);
    else the tables leave the column out."""
    if "hyperparameters" not in board:
        return False
    return not board["hyperparameters"].fillna("-").astype(str).isin(["-", ""]).all()


def is_tuned(board: pd.DataFrame) -> bool:
    """Whether some row of ``board`` was tuned (else the tables leave the tuning column out:
    it would read ``-`` on every row)."""
    return "tuning" in board and bool(board["tuning"].fillna("").astype(str).ne("").any())


# ----- table views --------------------------------------------------------------------------
@dataclass(frozen=True)
class Column:
    """One shown column: its header, the cell text of a row, whether it is a number
    (right-aligned), whether long text may wrap in HTML, and whether it is the row's label
    (the mechanism: in HTML it wraps at spaces and stays in view when a wide table scrolls)."""
    header: str
    cell: Callable[[pd.Series], str]
    numeric: bool = True
    wrap: bool = False
    label: bool = False


def cell_of(col: str, fmt: Callable[[object], str]) -> Callable[[pd.Series], str]:
    """A cell: the row's ``col`` formatted by ``fmt`` (NaN when the row lacks it)."""
    return lambda r: fmt(r.get(col, math.nan))


def text_cell(col: str) -> Callable[[pd.Series], str]:
    """A text cell: the row's ``col`` as text ("" when missing)."""
    return lambda r: "" if _missing(r.get(col)) else str(r.get(col))


def board_view(frame: pd.DataFrame, columns: list[Column]) -> pd.DataFrame:
    """Display strings: one row per row of ``frame``, one column per ``Column`` (headers as
    given; not yet escaped)."""
    cells = [[c.cell(r) for c in columns] for _, r in frame.iterrows()]
    return pd.DataFrame(cells, columns=[c.header for c in columns], dtype=object)


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
