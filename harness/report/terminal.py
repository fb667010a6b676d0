"""The leaderboard on a terminal: plain text within 120 columns (the Markdown, CSV and HTML
files keep every column and every epsilon's table).

- :func:`render_terminal`: a headline naming the ranking metric and its direction, the winner
  per epsilon (the DP rows ranked first, ties named together), a line when the ``public_only``
  reference beats every DP row or the best DP row scores below the ``uniform`` floor (with what
  that means), a note per dataset whose runs used different schemas, a note when rows have a
  single trial (no CI: not ranked against each other), then
  the overall table (or the one epsilon's table): rank, mechanism, settings, mean ± 95% CI, n,
  epsilon spent, status. Long settings and statuses are cut with ``…`` so every line fits.
  When some row logged them, the utility view and the risk view ("empirical risk, not a DP
  guarantee", with the bound each row's claimed budget implies) follow, one table per
  epsilon (:func:`view_lines`).
- :func:`fit_columns`: fixed-width text columns cut to a total width, widest text first.
- :func:`board_format`: ``text`` on a terminal, ``markdown`` when stdout is a pipe or a file
  (as before), or what ``$DP_ARENA_BOARD`` says.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

import pandas as pd

from harness.report.cells import (
    board_view,
    column_decimals,
    fmt_epsilon,
    fmt_number,
    overall_status,
    rank_text,
    status_text,
)
from harness.report.leaderboard import is_not_applicable, lower_is_better, row_label
from harness.report.render import overall_table
from harness.report.schema_notes import schema_notes
from harness.report.views import view_legends, view_tables

#: The widest line the terminal board prints.
WIDTH = 120
#: ``$DP_ARENA_BOARD``: ``text`` or ``markdown`` forces the board's format on stdout.
FORMAT_ENV = "DP_ARENA_BOARD"
#: Columns that give way (cut with an ellipsis) when a table is too wide, in this order.
SHRINKABLE = ("status", "settings", "mechanism")


def board_format(stream=None) -> str:
    """``text`` when ``stream`` (stdout) is a terminal, else ``markdown``; ``$DP_ARENA_BOARD``
    overrides."""
    forced = os.environ.get(FORMAT_ENV, "").strip().lower()
    if forced in ("text", "markdown"):
        return forced
    stream = stream or sys.stdout
    return "text" if getattr(stream, "isatty", lambda: False)() else "markdown"


def cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:max(width - 1, 0)] + "…"


def fit_columns(headers: Sequence[str], rows: list[list[str]], width: int = WIDTH,
                shrinkable: Sequence[str] = SHRINKABLE, gap: int = 2) -> list[str]:
    """Header, rule and rows as fixed-width lines of at most ``width`` characters: when too
    wide, the ``shrinkable`` columns are cut (each down to its header's width at least)."""
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    for name in shrinkable:
        if name not in headers:
            continue
        i = headers.index(name)
        excess = sum(widths) + gap * (len(widths) - 1) - width
        if excess <= 0:
            break
        widths[i] = max(len(headers[i]), 8, widths[i] - excess)

    def line(cells: Sequence[str]) -> str:
        return (" " * gap).join(cut(c, w).ljust(w) for c, w in zip(cells, widths)).rstrip()

    out = [line(headers), line(["-" * w for w in widths]), *[line(r) for r in rows]]
    return [cut(text, width) for text in out]


def score_text(row: pd.Series, decimals: int) -> str:
    mean = row.get("mean")
    if mean is None or pd.isna(mean):
        return ""
    ci = row.get("ci95")
    ci_text = f" ± {fmt_number(ci, decimals)}" if ci is not None and not pd.isna(ci) else ""
    return f"{fmt_number(mean, decimals)}{ci_text}"


def table_lines(frame: pd.DataFrame, overall: bool, width: int) -> list[str]:
    decimals = column_decimals(frame["mean"]) if "mean" in frame else 1
    status = overall_status if overall else status_text
    rows = []
    for _, r in frame.iterrows():
        hyper = str(r.get("hyperparameters", "") or "")
        tuning = str(r.get("tuning", "") or "")
        settings = "; ".join(p for p in (hyper if hyper != "-" else "", tuning) if p) or "-"
        n = r.get("n")
        rows.append([rank_text(r), row_label(r), settings, score_text(r, decimals),
                     "" if n is None or pd.isna(n) else str(int(n)),
                     fmt_epsilon(r.get("epsilon_spent")), status(r)])
    headers = ["rank", "mechanism", "settings", "mean ± 95% CI", "n", "eps spent", "status"]
    return fit_columns(headers, rows, width)


def winners(part: pd.DataFrame) -> str:
    """The DP rows ranked first in ``part`` (one epsilon), with their score."""
    top = part[(part["kind"] == "dp") & part["rank"].notna() & (part["rank"] == 1)]
    if top.empty:
        return "no ranked DP row"
    decimals = column_decimals(part["mean"])
    names = [f"{row_label(r)} {score_text(r, decimals)}"
             + ("" if r["hyperparameters"] in ("-", "") else f" ({cut(r['hyperparameters'], 40)})")
             for _, r in top.iterrows()]
    return (" = ".join(names) + " (tied)") if len(names) > 1 else names[0]


def reference_lines(part: pd.DataFrame, eps: float, higher: bool) -> list[str]:
    """A line when ``public_only`` beats every DP row, or the best DP row is below ``uniform``."""
    dp = part[(part["kind"] == "dp") & part["mean"].notna()]
    if dp.empty:
        return []
    best = dp["mean"].max() if higher else dp["mean"].min()
    better = (lambda a, b: a > b) if higher else (lambda a, b: a < b)
    lines = []
    for ref, text in (("public", "public_only (the public data alone) scores better than "
                                 "every DP row: the mechanisms add nothing beyond the public "
                                 "data here"),
                      ("floor", "the best DP row scores worse than the uniform floor (random "
                                "values in the domain): the DP output is less useful than "
                                "noise here")):
        rows = part[(part["reference"] == ref) & part["mean"].notna()]
        if rows.empty:
            continue
        value = float(rows["mean"].iloc[0])
        if better(value, best):
            lines.append(f"epsilon {eps:g}: {text} ({fmt_number(value)} vs best DP "
                         f"{fmt_number(best)})")
    return lines


def render_terminal(board: pd.DataFrame, title: str = "Leaderboard", files: str = "",
                    width: int = WIDTH) -> str:
    """The board as plain text within ``width`` columns (see the module docstring);
    ``files``: where the full tables are, said at the end."""
    key = board.attrs.get("metric", "score")
    higher = not lower_is_better(key)
    scored = board[~is_not_applicable(board)]
    lines = [cut(title, width),
             cut(f"ranked by {key} ({'higher' if higher else 'lower'} is better; --metric "
                 "changes it); mean ± 95% CI over n trials; 2= is a tie",
                 width)]
    for eps, part in scored.groupby("epsilon", sort=True):
        lines.append(cut(f"winner at epsilon {eps:g}: {winners(part)}", width))
    for eps, part in scored.groupby("epsilon", sort=True):
        lines += [cut(text, width) for text in wrap_lines(reference_lines(part, eps, higher),
                                                           width)]
    lines += wrap_lines([f"note: {note}" for note in schema_notes(board)], width)
    single = scored[(scored["kind"] == "dp") & (scored["n"] == 1)]
    if len(single) > 1:
        lines += wrap_lines(["rows with n = 1 have no confidence interval, so they are not "
                             "ranked against each other (shown tied): run trial=0,1,2 for "
                             "a ranking"], width)
    several = scored["epsilon"].nunique() > 1
    if several:
        overall = overall_table(board)
        eps_list = ", ".join(f"{e:g}" for e in overall.attrs.get("epsilons", []))
        lines += ["", f"overall (mean over epsilon {eps_list}):",
                  *table_lines(overall, True, width)]
    else:
        for eps, part in board.groupby("epsilon", sort=True):
            lines += ["", f"epsilon = {eps:g}:", *table_lines(part, False, width)]
    lines += view_lines(board, width)
    if files:
        what = "per-epsilon tables, every score column" if several else "every score column"
        lines += ["", cut(f"{what}: {files}", width)]
    return "\n".join(lines)


def wrap_lines(texts: list[str], width: int) -> list[str]:
    import textwrap

    return [w for t in texts for w in textwrap.wrap(t, width, subsequent_indent="  ")]


def view_lines(board: pd.DataFrame, width: int = WIDTH) -> list[str]:
    """The utility and risk views as plain text (none when no row has their metrics): each
    view's legend, then its table per epsilon (settings and mechanism cut to fit)."""
    lines: list[str] = []
    tables = view_tables(board, compact=True)
    for title, text in view_legends(board):
        lines += ["", *wrap_lines([f"{title}: {text}"], width)]
        for table in (t for t in tables if t.caption.startswith(title + ",")):
            view = board_view(table.rows, table.columns)
            lines += ["", cut(f"{table.caption}:", width),
                      *fit_columns(list(view.columns), view.astype(str).values.tolist(), width,
                                   shrinkable=("settings", "mechanism"))]
    return lines
