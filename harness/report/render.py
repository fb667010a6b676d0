"""Rendering a leaderboard: Markdown (escaped), CSV (formula cells neutralised), a
self-contained HTML page (every cell HTML-escaped), and :func:`write_outputs`, which writes them
with the plots. Statistics live in :mod:`harness.report.leaderboard`."""

from __future__ import annotations

import base64
import html
import math
from pathlib import Path

import numpy as np
import pandas as pd

from harness.report.leaderboard import (ALPHA, MARK_LEGEND, SHOWN_EXTRAS, VARYING,
                                        lower_is_better, overall_board, row_label, tuning_gap,
                                        varying_columns)
from harness.report.plots import plot_pareto, plot_score_vs_epsilon

#: CSV cells starting with these are read as formulas by spreadsheets (OWASP CSV injection).
CSV_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
#: Characters escaped in Markdown cells.
MD_SPECIAL = "\\|*_`<>[]~&"


# ----- rendering ----------------------------------------------------------------------------
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
        if col and col in board.columns:
            headlines.append(col)
    return parts + headlines


def _fmt(x: object, digits: int = 1) -> str:
    if isinstance(x, (float, np.floating)):
        if math.isnan(x):
            return ""
        if math.isinf(x):
            return "inf"
        return f"{x:.{digits}f}"
    if x is pd.NA:
        return ""
    return str(x)


def rank_text(row: pd.Series | dict) -> str:
    if row["kind"] == "reference":
        return "ref"
    if row["kind"] == "non-private":
        return "n/p"
    if pd.isna(row["rank"]):
        return "-"
    return f"{int(row['rank'])}{'=' if row.get('tied') else ''}"


def status_text(row: pd.Series | dict) -> str:
    """Failures, interruptions and the row's marks ("ok" when there is nothing to say)."""
    failed, n = int(row.get("failed", 0) or 0), int(row.get("n", 0) or 0)
    unfinished = int(row.get("unfinished", 0) or 0)
    marks = str(row.get("marks", "") or "")
    if failed and n == 0:
        reason = (str(row.get("failure_reason", "")).splitlines() or [""])[0]
        return f"FAILED ({failed}): {reason[:120]}" + (f"; {marks}" if marks else "")
    unscored = n and "mean" in row and pd.isna(row["mean"])
    parts = [f"{failed} failed" if failed else "",
             f"{unfinished} interrupted" if unfinished else "",
             "no score of the ranking metric" if unscored else "", marks]
    return "; ".join(p for p in parts if p) or "ok"


def set_apart(row: pd.Series | dict) -> bool:
    """Reference, non-private, replayable and large-delta rows are shown apart, unranked."""
    return row["kind"] != "dp" or not bool(row.get("ranked", True))


def md_escape(text: object) -> str:
    """``text`` safe as one Markdown table cell: newlines become spaces and Markdown's special
    characters (``MD_SPECIAL``: pipe, backslash, emphasis, code, HTML, links) are escaped."""
    flat = " ".join(str(text).splitlines())
    return "".join(f"\\{ch}" if ch in MD_SPECIAL else ch for ch in flat)


def csv_cell(value: object) -> object:
    """A text cell a spreadsheet would read as a formula (starts with = + - @ tab or CR) gets
    a leading ``'``; numbers, and the board's bare placeholder ``-``, are left alone."""
    if isinstance(value, str) and value.startswith(CSV_FORMULA_STARTS) and value != "-":
        return "'" + value
    return value


def csv_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every text cell and column name passed through ``csv_cell``."""
    out = frame.copy()
    for col in out.columns:
        if out[col].dtype == object or pd.api.types.is_string_dtype(out[col]):
            out[col] = out[col].map(csv_cell)
    out.columns = [csv_cell(str(c)) for c in out.columns]
    return out


def _md_table(header: list[str], body: list[list[str]],
              apart: list[bool] | None = None) -> list[str]:
    """A Markdown table of escaped cells; rows flagged in ``apart`` are in italics."""
    apart = apart or [False] * len(body)
    rows = [[f"*{md_escape(c)}*" if flag and str(c) else md_escape(c) for c in cells]
            for cells, flag in zip(body, apart)]
    return ["| " + " | ".join(md_escape(h) for h in header) + " |", "|" + "---|" * len(header),
            *["| " + " | ".join(cells) + " |" for cells in rows], ""]


def _md_legend(board: pd.DataFrame) -> list[str]:
    marks = set("; ".join(board["marks"]).split("; ")) if "marks" in board else set()
    return [f"- {md_escape(m)}: {md_escape(text)}" for m, text in MARK_LEGEND if m in marks]


def render_markdown(board: pd.DataFrame, title: str = "Leaderboard") -> str:
    """Overall section (when there are several epsilons), one section per epsilon, and the
    tuning-mode comparison when tuned rows exist."""
    key = board.attrs.get("metric", "score")
    direction = "lower is better" if lower_is_better(key) else "higher is better"
    extras = shown_scores(board, key)
    varying = varying_columns(board, key)
    lines = [f"## {md_escape(title)}",
             f"ranked by {md_escape(key)} ({direction}); mean ± 95% CI over n trials. Rank = 1 + "
             f"rows of the same dataset, unit, delta and metric settings significantly better "
             f"(paired t-test across trials, alpha {board.attrs.get('alpha', ALPHA)}); `2=` "
             "marks a statistical tie. *Italic* rows are reference points (`ref`), non-private "
             "(`n/p`, e.g. oracle tuning) or marked unranked: shown, never ranked.", ""]
    legend = _md_legend(board)
    if legend:
        lines += ["Marks:", "", *legend, ""]
    if board["epsilon"].nunique() > 1:
        lines += render_overall(overall_board(board), varying)
    for eps, part in board.groupby("epsilon", sort=True):
        lines += [f"### epsilon = {eps:g}", ""]
        header = ["rank", "mechanism", "hyperparameters", "tuning", *[h for _c, h in varying],
                  key, "± CI", "n", *extras, "eps spent", "seconds", "peak MB", "status"]
        body, apart = [], []
        for _, r in part.iterrows():
            body.append([rank_text(r), row_label(r), r["hyperparameters"], r["tuning"] or "-",
                         *[r[c] for c, _h in varying],
                         _fmt(r["mean"]), _fmt(r["ci95"]), str(r["n"]),
                         *[_fmt(r.get(c, math.nan), 3) for c in extras],
                         _fmt(r.get("epsilon_spent", math.nan), 3),
                         _fmt(r.get("seconds", math.nan)),
                         _fmt(r.get("peak_memory_mb", math.nan), 0), status_text(r)])
            apart.append(set_apart(r))
        lines += _md_table(header, body, apart)
    gap = tuning_gap(board)
    if not gap.empty:
        lines += render_gap(gap)
    return "\n".join(lines)


def render_overall(overall: pd.DataFrame, varying: list[tuple[str, str]] | None = None
                   ) -> list[str]:
    if overall.empty:
        return []
    varying = [(c, h) for c, h in varying or [] if c in overall]
    eps = ", ".join(f"{e:g}" for e in overall.attrs.get("epsilons", []))
    lines = [f"### overall (mean over epsilon {eps})", ""]
    header = ["rank", "mechanism", "hyperparameters", "tuning", *[h for _c, h in varying],
              "mean", "± CI", "n", "seconds", "status"]
    body, apart = [], []
    for _, r in overall.iterrows():
        status = "ok" if r["complete"] else f"incomplete (only epsilon {r['epsilons'] or '-'})"
        if r["failed"]:
            status += f", {r['failed']} failed"
        if r.get("marks"):
            status += f"; {r['marks']}"
        body.append([rank_text(r), row_label(r), r["hyperparameters"], r["tuning"] or "-",
                     *[r[c] for c, _h in varying], _fmt(r["mean"]), _fmt(r["ci95"]),
                     str(r["n"]), _fmt(r.get("seconds", math.nan)), status])
        apart.append(set_apart(r))
    return lines + _md_table(header, body, apart)


def render_gap(gap: pd.DataFrame) -> list[str]:
    lines = ["### tuning modes", "",
             "Score of each tuning mode (chosen setting in brackets) and the gaps; oracle is "
             "tuned on the private data and is not private.", ""]
    header = ["epsilon", "mechanism", "untuned", "public", "dp_select", "oracle (n/p)",
              "oracle − public", "oracle − dp_select"]
    body = [[f"{r.epsilon:g}", r.mechanism, _fmt(r.untuned),
             f"{_fmt(r.public)} ({r.public_setting})" if r.public_setting else _fmt(r.public),
             f"{_fmt(r.dp_select)} ({r.dp_select_setting})" if r.dp_select_setting
             else _fmt(r.dp_select),
             f"{_fmt(r.oracle)} ({r.oracle_setting})" if r.oracle_setting else _fmt(r.oracle),
             _fmt(r.oracle_minus_public), _fmt(r.oracle_minus_dp_select)]
            for r in gap.itertuples()]
    return lines + _md_table(header, body)


# ----- HTML ---------------------------------------------------------------------------------
_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table.board{border-collapse:collapse;margin-bottom:2em;font-size:14px}
table.board td,table.board th{padding:4px 8px;border-bottom:1px solid #ddd;text-align:right}
table.board td.t,table.board th.t{text-align:left;white-space:nowrap}
div.scroll{overflow-x:auto;max-width:100%}
table.board th{cursor:pointer;background:#f4f4f4;user-select:none}
table.board th:after{content:" \\2195";color:#aaa}
tr.reference td{color:#666;font-style:italic;background:#f7f7f7}
tr.non-private td{color:#8a4b00;font-style:italic;background:#fff6e8}
tr.failed td{color:#b00020}
tr.marked td{color:#555;font-style:italic;background:#eef3ff}
span.tie{color:#06c;font-weight:bold}
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
        var x=a.cells[i].dataset.v??a.cells[i].textContent,
            y=b.cells[i].dataset.v??b.cells[i].textContent;
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


_TEXT_COLUMNS = ("mechanism", "hyperparameters", "tuning", "status", *[c for c, _h in VARYING])


def _html_table(frame: pd.DataFrame, columns: list[str], caption: str,
                headers: dict[str, str] | None = None) -> str:
    """One sortable table; every header, cell and the caption are HTML-escaped."""
    headers = headers or {}
    head = "".join(f"<th class='{'t' if c in _TEXT_COLUMNS else ''}'>"
                   f"{html.escape(headers.get(c, c))}</th>" for c in columns)
    body = []
    for _, r in frame.iterrows():
        klass = r["kind"] if r["kind"] != "dp" else ("marked" if set_apart(r) else "")
        if r.get("n", 1) == 0 and r.get("failed", 0):
            klass += " failed"
        cells = []
        for c in columns:
            if c == "rank":
                text = rank_text(r)
                shown = (f"<span class='tie' title='statistically tied'>{html.escape(text)}</span>"
                         if r.get("tied") else html.escape(text))
                sort = "" if pd.isna(r["rank"]) else f" data-v='{int(r['rank'])}'"
                cells.append(f"<td{sort}>{shown}</td>")
                continue
            value = row_label(r) if c == "mechanism" else (status_text(r) if c == "status"
                                                        else r.get(c, ""))
            text = _fmt(value, 1 if c in ("mean", "ci95", "std") else 3) \
                if isinstance(value, (float, np.floating)) else str(value)
            klass_c = " class='t'" if c in _TEXT_COLUMNS else ""
            cells.append(f"<td{klass_c}>{html.escape(text)}</td>")
        body.append(f"<tr class='{html.escape(klass.strip())}'>{''.join(cells)}</tr>")
    return (f"<h2>{html.escape(caption)}</h2><div class='scroll'><table class='board'><thead><tr>"
            f"{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>")


def _html_legend(board: pd.DataFrame) -> str:
    """The marks present on the board, each with what it means."""
    marks = set("; ".join(board["marks"]).split("; ")) if "marks" in board else set()
    items = "".join(f"<li><b>{html.escape(m)}</b>: {html.escape(text)}</li>"
                    for m, text in MARK_LEGEND if m in marks)
    return ("<p>Marks (in the status column; blue italic rows are unranked):</p>"
            f"<ul>{items}</ul>") if items else ""


def render_html(board: pd.DataFrame, title: str, plots: list[Path] | None = None) -> str:
    """A self-contained page: sortable tables (click a header), a legend of the row marks and
    the plots embedded."""
    key = board.attrs.get("metric", "")
    extras = shown_scores(board, key)
    headers = dict(varying_columns(board, key))
    cols = ["rank", "mechanism", "hyperparameters", "tuning", *headers, "mean", "ci95", "std",
            "n", *extras, *[c for c in SHOWN_EXTRAS if c in board.columns], "status"]
    parts = []
    if board["epsilon"].nunique() > 1:
        overall = overall_board(board)
        parts.append(_html_table(overall, ["rank", "mechanism", "hyperparameters", "tuning",
                                           *[c for c in headers if c in overall], "mean",
                                           "ci95", "std", "n", "epsilons", "seconds",
                                           "status"],
                                 "Overall (mean over epsilons)", headers))
    for eps, part in board.groupby("epsilon", sort=True):
        parts.append(_html_table(part, [c for c in cols if c in part.columns or c in
                                        ("rank", "status")], f"epsilon = {eps:g}", headers))
    gap = tuning_gap(board)
    if not gap.empty:
        parts.append("<h2>Tuning modes</h2>" + gap.to_html(index=False, na_rep="", escape=True,
                                                            float_format=lambda x: f"{x:.1f}",
                                                            classes="board", border=0))
    images = "".join(
        f"<h2>{html.escape(p.stem.replace('_', ' '))}</h2><img alt='{html.escape(p.stem)}' "
        f"src='data:image/png;base64,{base64.b64encode(p.read_bytes()).decode()}'>"
        for p in plots or [] if p.is_file())
    note = ("ranked by <code>{}</code>; mean ± 95% CI (Student t) over n trials; rank = 1 + rows "
            "of the same dataset, unit, delta and metric settings significantly better (paired "
            "t-test); <span class='tie'>2=</span> marks a tie; grey italic rows are references, "
            "orange rows non-private, blue rows marked and unranked; click a header to sort."
            ).format(html.escape(key))
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1><p>{note}</p>"
            f"{_html_legend(board)}{''.join(parts)}{images}<script>{_JS}</script></body></html>")


def write_outputs(board: pd.DataFrame, runs: pd.DataFrame, out_dir: Path | str,
                  title: str = "dp-arena leaderboard") -> list[Path]:
    """leaderboard.md/.csv/.html, leaderboard_overall.csv, score_vs_epsilon.png, pareto.png
    (and tuning_gap.csv when tuned rows exist) in ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plots = [plot_score_vs_epsilon(board, out / "score_vs_epsilon.png"),
             plot_pareto(board, out / "pareto.png")]
    paths = [out / "leaderboard.md", out / "leaderboard.csv", out / "leaderboard_overall.csv",
             out / "leaderboard.html", *plots]
    paths[0].write_text(render_markdown(board, title))
    csv_safe(board).to_csv(paths[1], index=False)
    csv_safe(overall_board(board)).to_csv(paths[2], index=False)
    paths[3].write_text(render_html(board, title, plots))
    gap = tuning_gap(board)
    if not gap.empty:
        csv_safe(gap).to_csv(out / "tuning_gap.csv", index=False)
        paths.append(out / "tuning_gap.csv")
    return paths
