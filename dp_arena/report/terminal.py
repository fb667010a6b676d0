"""The leaderboard on a terminal: plain text within the width the terminal reports (80
columns included; the Markdown, CSV and HTML files keep every column and every epsilon's
table).

- :func:`render_terminal`: a headline naming the ranking metric and its direction, then the
  findings shared with the HTML page (:func:`dp_arena.report.headline.headline_lines`: the
  winner per epsilon, ties named together, or, when the board has several headline scores,
  the winner under each, each score's public-data and floor line and the Pareto set; a line
  when the ``public_only`` reference beats every DP row or the best DP row scores below the
  ``uniform`` floor; the single-trial note), a note per dataset whose runs used different
  schemas, the scores that applied to no row, then the overall table (or the one epsilon's
  table), one per pool when rows of several datasets or schemas are on the board
  (:func:`pool_parts`: never ranked together): rank, mechanism, settings (when some row has
  any), mean ± 95% CI, n, "k% sample" (where the table has sample rows:
  :mod:`dp_arena.report.crc_scale`), epsilon spent (per-epsilon tables only: a mean over
  epsilons is no spend), status. When
  some row logged them, the utility view and the risk view ("empirical risk, not a DP
  guarantee", with the bound each row's claimed budget implies) follow, one table per
  epsilon (:func:`view_lines`).
- :func:`fit_table`: fixed-width text columns within a width: the ``shrinkable`` columns are
  cut with ``…`` (down to a readable width), then the ``droppable`` columns are left out in
  order (the table says which), then the shrinkable ones are cut further; columns are
  handled by position, so any headers work, repeated ones included (the risk view has two
  ``bound`` columns);
  :func:`fit_columns` returns its lines.
- :func:`terminal_width` (``shutil.get_terminal_size``: ``$COLUMNS``, else the terminal,
  else 120), :func:`wrap_lines` (prose wrapped, a word longer than the width broken) and
  :func:`files_lines` (where the files went, the folder relative to the current one, wrapped).
- :func:`board_format`: ``text`` on a terminal, ``markdown`` when stdout is a pipe or a file
  (as before), or what ``$DP_ARENA_BOARD`` says.
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dp_arena.report.cells import (
    board_view,
    column_decimals,
    fmt_epsilon,
    overall_status,
    rank_text,
    status_text,
)
from dp_arena.report.crc_scale import EXTERNAL_LEGEND, SAMPLE_COLUMN, is_external
from dp_arena.report.headline import (
    headline_lines,
    heldout_logged_line,
    not_applied_line,
    owner_side_line,
    score_text,
)
from dp_arena.report.leaderboard import POOL, board_ranks_lower, is_not_applicable, row_label
from dp_arena.report.ranks import ALPHA, rank_meaning
from dp_arena.report.render import overall_table
from dp_arena.report.schema_notes import schema_notes
from dp_arena.report.verdict import block_label, varying_pool
from dp_arena.report.views import view_legends, view_tables

#: The width when neither ``$COLUMNS`` nor a terminal says one.
WIDTH = 120
#: The narrowest width the board lays itself out for (a narrower terminal wraps its lines).
MIN_WIDTH = 40
#: ``$DP_ARENA_BOARD``: ``text`` or ``markdown`` forces the board's format on stdout.
FORMAT_ENV = "DP_ARENA_BOARD"
#: Columns that give way (cut with an ellipsis) when a table is too wide, in this order.
SHRINKABLE = ("status", "settings", "mechanism")
#: Columns left out, in this order, when cutting the shrinkable ones to ``SOFT_MIN`` is not
#: enough.
DROPPABLE = ("eps spent",)
#: Header of the sample equivalent (:mod:`dp_arena.report.crc_scale`) in a terminal's table.
SAMPLE_SHORT = "k% sample"
#: How far a shrinkable column is cut before a droppable column is left out.
SOFT_MIN = {"status": 24, "settings": 16, "mechanism": 20}


def board_format(stream=None) -> str:
    """``text`` when ``stream`` (stdout) is a terminal, else ``markdown``; ``$DP_ARENA_BOARD``
    overrides."""
    forced = os.environ.get(FORMAT_ENV, "").strip().lower()
    if forced in ("text", "markdown"):
        return forced
    stream = stream or sys.stdout
    return "text" if getattr(stream, "isatty", lambda: False)() else "markdown"


def terminal_width() -> int:
    """The width the terminal reports (``$COLUMNS`` first, as ``shutil.get_terminal_size``
    reads it; ``WIDTH`` when there is no terminal), at least ``MIN_WIDTH``."""
    return max(MIN_WIDTH, shutil.get_terminal_size((WIDTH, 24)).columns)


def cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:max(width - 1, 0)] + "…"


@dataclass(frozen=True)
class FittedTable:
    """A table laid out within a width: its lines (header, rule, rows) and the headers of the
    columns left out to fit."""
    lines: list[str]
    dropped: tuple[str, ...] = ()


def _total(widths: Sequence[int], gap: int) -> int:
    return sum(widths) + gap * (len(widths) - 1)


def _shrink(headers: Sequence[str], widths: list[int], shrinkable: Sequence[str], width: int,
            gap: int, floor: dict[str, int]) -> list[int]:
    """``widths`` with the ``shrinkable`` columns (every column of each such header, left to
    right) cut, in order, each down to its ``floor`` (never below its header or 8), until the
    total fits ``width``."""
    widths = list(widths)
    for name in shrinkable:
        for i in (i for i, head in enumerate(headers) if head == name):
            excess = _total(widths, gap) - width
            if excess <= 0:
                return widths
            least = max(len(headers[i]), 8, floor.get(name, 0))
            widths[i] = max(min(widths[i], least), widths[i] - excess)
    return widths


def drop_order(headers: Sequence[str], droppable: Sequence[str]) -> list[int]:
    """The positions of the ``droppable`` columns in the order they are left out: each name
    in turn takes the rightmost column of that header not taken yet (so a table with two
    columns headed ``bound`` can leave out both, right to left); a name no column has is
    skipped."""
    order: list[int] = []
    for name in droppable:
        left = [i for i, head in enumerate(headers) if head == name and i not in order]
        if left:
            order.append(left[-1])
    return order


def fit_table(headers: Sequence[str], rows: list[list[str]], width: int = WIDTH,
              shrinkable: Sequence[str] = SHRINKABLE, droppable: Sequence[str] = (),
              gap: int = 2, soft_min: dict[str, int] | None = None) -> FittedTable:
    """Header, rule and rows as fixed-width lines of at most ``width`` characters. When too
    wide: the ``shrinkable`` columns are cut down to ``soft_min``; if that is not enough, the
    ``droppable`` columns are left out in order until it is; then the shrinkable columns are
    cut down to their header's width (8 at least); a line still too wide is cut. Any headers
    work (repeated ones included); a row with fewer cells than headers is padded with ""."""
    soft = SOFT_MIN if soft_min is None else soft_min
    headers = [str(h) for h in headers]
    rows = [[str(c) for c in r] + [""] * (len(headers) - len(r)) for r in rows]
    keep = list(range(len(headers)))
    natural = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    dropped: list[str] = []
    for i in [None, *drop_order(headers, droppable)]:
        if i is not None:
            keep.remove(i)
            dropped.append(headers[i])
        heads = [headers[i] for i in keep]
        widths = _shrink(heads, [natural[i] for i in keep], shrinkable, width, gap, soft)
        if _total(widths, gap) <= width:
            break
    else:
        widths = _shrink(heads, widths, shrinkable, width, gap, {})

    def line(cells: Sequence[str]) -> str:
        return (" " * gap).join(cut(c, w).ljust(w) for c, w in zip(cells, widths)).rstrip()

    out = [line(heads), line(["-" * w for w in widths]),
           *[line([r[i] for i in keep]) for r in rows]]
    return FittedTable([cut(text, width) for text in out], tuple(dict.fromkeys(dropped)))


def fit_columns(headers: Sequence[str], rows: list[list[str]], width: int = WIDTH,
                shrinkable: Sequence[str] = SHRINKABLE, gap: int = 2) -> list[str]:
    """The lines of :func:`fit_table` with nothing droppable and no soft minimum (each
    shrinkable column cut down to its header's width, 8 at least)."""
    return fit_table(headers, rows, width, shrinkable, (), gap, soft_min={}).lines


def dropped_line(dropped: Sequence[str], width: int) -> list[str]:
    """The line under a table that left columns out ([] when none was)."""
    if not dropped:
        return []
    text = f"(not shown at this width: {', '.join(dropped)}; the files have every column)"
    return wrap_lines([text], width)


def table_lines(frame: pd.DataFrame, overall: bool, width: int) -> list[str]:
    """One board table (an epsilon's, or the overall one, which has no epsilon spent)."""
    decimals = column_decimals(frame["mean"]) if "mean" in frame else 1
    status = overall_status if overall else status_text
    with_sample = not overall and SAMPLE_COLUMN in frame and frame[SAMPLE_COLUMN].ne("").any()
    rows = []
    for _, r in frame.iterrows():
        hyper = str(r.get("hyperparameters", "") or "")
        tuning = str(r.get("tuning", "") or "")
        settings = "; ".join(p for p in (hyper if hyper != "-" else "", tuning) if p) or "-"
        n = r.get("n")
        sample = [] if not with_sample else [str(r.get(SAMPLE_COLUMN) or "")]
        rows.append([rank_text(r), row_label(r), settings, score_text(r, decimals),
                     "" if n is None or pd.isna(n) else str(int(n)), *sample,
                     *([] if overall else [fmt_epsilon(r.get("epsilon_spent"))]), status(r)])
    headers = ["rank", "mechanism", "settings", "mean ± 95% CI", "n",
               *([SAMPLE_SHORT] if with_sample else []),
               *([] if overall else ["eps spent"]), "status"]
    if all(r[2] == "-" for r in rows):  # no row has settings: no column of dashes
        headers, rows = headers[:2] + headers[3:], [r[:2] + r[3:] for r in rows]
    table = fit_table(headers, rows, width, droppable=DROPPABLE)
    return table.lines + dropped_line(table.dropped, width)


def render_terminal(board: pd.DataFrame, title: str = "Leaderboard", files: str = "",
                    width: int | None = None) -> str:
    """The board as plain text within ``width`` columns (default: :func:`terminal_width`;
    see the module docstring); ``files``: where the full tables are, said at the end."""
    width = width or terminal_width()
    key = board.attrs.get("metric", "score")
    higher = not board_ranks_lower(board)
    scored = board[~is_not_applicable(board)]
    ranked_by = (f"ranked by {key} ({'higher' if higher else 'lower'} is better; --metric "
                 "changes it); mean ± 95% CI over n trials; "
                 + rank_meaning(board.attrs.get("alpha", ALPHA)))
    lines = wrap_lines([title, ranked_by], width)
    findings = headline_lines(board, label_width=40)
    lines += [line for text in findings
              for line in ([cut(text, width)] if is_ranking_winner(text)
                           else wrap_lines([text], width))]
    lines += wrap_lines([f"note: {note}" for note in schema_notes(board)], width)
    gone = not_applied_line(board)
    external = EXTERNAL_LEGEND if is_external(board).any() else ""
    lines += wrap_lines([text for text in (gone, owner_side_line(board),
                                           heldout_logged_line(board), external) if text], width)
    several = scored["epsilon"].nunique() > 1
    if several:
        overall = overall_table(board)
        eps_list = ", ".join(f"{e:g}" for e in overall.attrs.get("epsilons", []))
        for label, part in pool_parts(overall):
            caption = f"overall (mean over epsilon {eps_list}{'; ' + label if label else ''}):"
            lines += ["", *wrap_lines([caption], width), *table_lines(part, True, width)]
    else:
        for eps, part in board.groupby("epsilon", sort=True):
            for label, rows in pool_parts(part):
                caption = f"epsilon = {eps:g}{', ' + label if label else ''}:"
                lines += ["", *wrap_lines([caption], width), *table_lines(rows, False, width)]
    lines += view_lines(board, width)
    if files:
        what = "per-epsilon tables, every score column" if several else "every score column"
        lines += ["", *wrap_lines([f"{what}: {relative(files)}"], width)]
    return "\n".join(lines)


def is_ranking_winner(text: str) -> bool:
    """Whether a finding is the ranking score's winner line (``winner at epsilon 1: ...``,
    one line, cut to the width: what is cut is the winner's settings); the winner lines under
    each headline score (``winner at epsilon 1 by <score> (...): ...``) are wrapped, so the
    winner's name is never cut."""
    return text.startswith("winner at") and " by " not in text.partition(": ")[0]


def pool_parts(frame: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """``frame``'s rows per pool (rows ranked together: one dataset, schema, unit, delta and
    metric settings), each with the label that tells it from the others ("" when there is one
    pool); rows without a pool (not-applicable rows) go with the first part."""
    pool = [c for c in POOL if c in frame]
    na = is_not_applicable(frame)
    scored = frame[~na]
    if not pool or scored.empty:
        return [("", frame)]
    varying = varying_pool(scored, pool)
    if not varying:
        return [("", frame)]
    parts = []
    for key, rows in scored.groupby(pool, sort=False, dropna=False):
        ident = dict(zip(pool, key))
        ident["dataset"] = rows["dataset"].iloc[0] if "dataset" in rows else ""
        parts.append((block_label(ident, varying), rows))
    label, first = parts[0]
    parts[0] = (label, pd.concat([first, frame[na]]) if na.any() else first)
    return parts


def wrap_lines(texts: Sequence[str], width: int) -> list[str]:
    """Each text wrapped to ``width`` (continuation lines indented by two; a word longer than
    the width, such as a long path, is broken)."""
    return [w for t in texts for w in textwrap.wrap(t, width, subsequent_indent="  ",
                                                      break_on_hyphens=False)]


def relative(path: str | Path, cwd: str | Path | None = None) -> str:
    """``path`` relative to ``cwd`` (default: the current folder) when it lies inside it,
    else as given."""
    here = Path(cwd or Path.cwd()).resolve()
    try:
        return str(Path(path).resolve().relative_to(here))
    except ValueError:
        return str(path)


def files_lines(folder: str | Path, names: Sequence[str], width: int | None = None,
                cwd: str | Path | None = None) -> list[str]:
    """``written to <folder>: <names>`` within ``width`` (default :func:`terminal_width`):
    the folder relative to ``cwd`` when inside it, the names wrapped after it."""
    width = width or terminal_width()
    return wrap_lines([f"written to {relative(folder, cwd)}: {', '.join(names)}"], width)


def view_lines(board: pd.DataFrame, width: int = WIDTH) -> list[str]:
    """The utility and risk views as plain text (none when no row has their metrics): each
    view's legend, then its table per epsilon (settings and mechanism cut to fit; the last
    columns left out, from the right, when that is not enough)."""
    lines: list[str] = []
    tables = view_tables(board, compact=True)
    for title, text in view_legends(board):
        lines += ["", *wrap_lines([f"{title}: {text}"], width)]
        for table in (t for t in tables if t.caption.startswith(title + ",")):
            view = board_view(table.rows, table.columns)
            headers = list(view.columns)
            kept = 3 + ("settings" in headers)  # the identity and the first two scores
            fitted = fit_table(headers, view.astype(str).values.tolist(), width,
                               shrinkable=("settings", "mechanism"),
                               droppable=list(reversed(headers[kept:])),
                               soft_min={"settings": 12, "mechanism": 20})
            lines += ["", *wrap_lines([f"{table.caption}:"], width), *fitted.lines,
                      *dropped_line(fitted.dropped, width)]
    return lines
