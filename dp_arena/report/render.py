"""Rendering a leaderboard: Markdown (``DataFrame.to_markdown``, i.e. tabulate, cells escaped
by ``md_escape``), CSV (formula cells neutralised by ``csv_safe``), a self-contained HTML page
(tables by pandas ``Styler`` with ``escape="html"``, the page by a jinja2 template with
autoescaping), and :func:`write_outputs`, which writes them with the plots. Statistics live in
:mod:`dp_arena.report.leaderboard`, cell text and table views in :mod:`dp_arena.report.cells`.

- **columns** (:func:`board_columns`): the columns of an epsilon's table or of the overall
  table (no epsilon spent in it; hyperparameters and tuning only when some row has them), each a ``Column`` spec read into a view (``board_view``), plus each row's kind
  (:func:`row_classes`: ranked, set apart, failed, n/a, audit violation). Not-applicable rows
  (``status == "n/a"``) close their epsilon's table with their reason (:func:`ordered`); an
  audit column (``eps_lb``, ``audit_verdict``) is shown only when some row was audited, and a
  violation is marked in the row's status; the schema's spend and the total only when some
  row spent budget on its schema;
- **findings** (:func:`board_findings`): the sentences the terminal board opens with (winner
  per epsilon, public data or the floor beating the DP rows, single trials; from
  :mod:`dp_arena.report.headline`) and the scores that applied to no row (whose columns are
  left out), above the tables of the Markdown and the HTML page;
- **Markdown** (:func:`render_markdown`): the findings, the legend of the marks, the notes
  about schemas (:func:`dp_arena.report.schema_notes.schema_notes`), the overall table when
  there are several epsilons, one table per epsilon, the utility and risk views
  (:func:`dp_arena.report.views.render_views_markdown`) and the tuning-mode comparison;
- **HTML** (:func:`render_html`): the findings and the same tables, sortable, with the
  legends and the plots embedded; each table in a box that scrolls sideways when wider than
  the window (a line above it says so, and the columns up to the mechanism stay in view);
- **files** (:func:`write_outputs`): the Markdown, the CSVs (every column, formula cells
  neutralised by :func:`csv_safe`), the HTML page and the plots.
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from dp_arena.report.cells import (
    AUDIT_VIOLATION,
    Column,
    audit_violation,
    board_view,
    cell_of,
    column_decimals,
    fmt_count,
    fmt_epsilon,
    fmt_number,
    fmt_seconds,
    has_settings,
    is_tuned,
    markdown_table,
    md_escape,
    overall_status,
    rank_text,
    score_cell,
    set_apart,
    status_text,
    text_cell,
)
from dp_arena.report.crc_scale import (
    EXTERNAL_LEGEND,
    SAMPLE_COLUMN,
    SAMPLE_HEADER,
    SAMPLE_LEGEND,
    is_external,
)
from dp_arena.report.headline import (
    headline_lines,
    heldout_logged_line,
    not_applied_line,
    owner_side_line,
)
from dp_arena.report.leaderboard import (
    ALPHA,
    MARK_LEGEND,
    METRIC_NA_PREFIX,
    board_ranks_lower,
    inapplicable_everywhere,
    is_not_applicable,
    metrics_not_applicable,
    overall_board,
    row_label,
    tuning_gap,
    varying_columns,
)
from dp_arena.report.plots import (
    plot_pareto,
    plot_score_vs_epsilon,
    plot_utility_vs_epsilon,
)
from dp_arena.report.ranks import rank_meaning
from dp_arena.report.schema_notes import schema_notes
from dp_arena.report.scores import ML_SCORE, has_any
from dp_arena.report.views import render_views_markdown, view_legends, view_tables

#: CSV cells starting with these are read as formulas by spreadsheets (OWASP CSV injection).
CSV_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
#: A formula character right after a separator a spreadsheet may split a cell on (comma,
#: semicolon, pipe, tab, CR, LF): ``x;=1+1`` is evaluated when the file is opened with ``;``.
CSV_FORMULA_INSIDE = re.compile(r"([,;|\t\r\n])(?=[=+\-@\t\r])")


# ----- legends and columns ------------------------------------------------------------------
def shown_scores(board: pd.DataFrame, ranked_by: str) -> list[str]:
    """Columns for the Markdown table: the parts of the ranking score (for the challenge:
    its three components), then every other metric family's headline score, except the
    families that applied to no row (``inapplicable_everywhere``: a column of ``n/a`` only;
    :func:`dp_arena.report.headline.not_applied_line` names them)."""
    from dp_arena.metrics import METRICS, metric_class

    family = ranked_by.split("/")[0]
    hidden = set(inapplicable_everywhere(board[~is_not_applicable(board)])) - {family}
    parts = [c for c in board.columns if c.startswith(f"{family}/") and c != ranked_by
             and family == "challenge"]
    headlines = []
    for name in METRICS:
        col = f"{name}/{metric_class(name).headline}" if name not in (family, *hidden) else None
        if col and (col in board.columns or METRIC_NA_PREFIX + name in board.columns):
            headlines.append(col)
    return parts + headlines


def metric_na_legend(board: pd.DataFrame) -> list[str]:
    """One line per metric that did not apply to some rows (not to all: those columns are
    left out, see ``not_applied_line``): ``metric: reason``."""
    hidden = inapplicable_everywhere(board[~is_not_applicable(board)])
    return [f"{metric}: {reason}"
            for metric, reason in sorted(metrics_not_applicable(board).items())
            if metric not in hidden]


# ----- CSV cells ----------------------------------------------------------------------------------
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


# ----- columns ------------------------------------------------------------------------------------
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
    """The columns of an epsilon's table (``overall=False``) or of the overall table
    (hyperparameters and tuning only when some row has them; no
    epsilon spent: a mean over epsilons is no spend; the status names the epsilons of an
    incomplete row); ``full`` (HTML) adds the std and the synthetic row count to an epsilon's
    table."""
    key = board.attrs.get("metric", "score")
    scored = board[~is_not_applicable(board) & ~is_external(board)]
    varying = varying_columns(scored, key)
    decimals = column_decimals(scored["mean"]) if "mean" in scored else 1
    score = (lambda col: cell_of(col, lambda x: fmt_number(x, decimals)))
    cols = [Column("rank", rank_text, False), Column("mechanism", row_label, False, label=True),
            *([Column("hyperparameters", text_cell("hyperparameters"), False, wrap=True)]
              if has_settings(board) else []),
            *([Column("tuning", lambda r: str(r.get("tuning") or "-"), False)]
              if is_tuned(board) else []),
            *[Column(head, text_cell(c), False) for c, head in varying],
            Column("mean" if overall else key, score("mean")), Column("± CI", score("ci95")),
            *([Column("std", score("std"))] if full and not overall else []),
            Column("n", cell_of("n", fmt_count))]
    if not overall and SAMPLE_COLUMN in board:
        cols.append(Column(SAMPLE_HEADER, text_cell(SAMPLE_COLUMN), False))
    if not overall:
        for extra in shown_scores(board, key):
            d = column_decimals(scored[extra]) if extra in scored else 3
            cols.append(Column(extra, score_cell(extra, d)))
        cols.append(Column("eps spent", cell_of("epsilon_spent", fmt_epsilon)))
        if has_schema_spend(board):
            cols += [Column(SCHEMA_EPS, cell_of("schema_epsilon", fmt_epsilon)),
                     Column(TOTAL_EPS, cell_of("epsilon_total", fmt_epsilon))]
    if has_audit(board) and not overall:
        cols.append(Column("eps lower bound (audit)", audit_cell))
    cols.append(Column("seconds", cell_of("seconds", fmt_seconds)))
    if not overall:
        cols.append(Column("peak MB", cell_of("peak_memory_mb", fmt_count)))
        if full and "n_synthetic_rows" in board:
            cols.append(Column("synthetic rows", cell_of("n_synthetic_rows", fmt_count)))
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


def ordered(part: pd.DataFrame) -> pd.DataFrame:
    """Rows in board order, with the not-applicable rows last."""
    na = is_not_applicable(part)
    return pd.concat([part[~na], part[na]])


# ----- Markdown -----------------------------------------------------------------------------
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
    if SAMPLE_COLUMN in board:
        lines.append(f"- {SAMPLE_HEADER}: {md_escape(SAMPLE_LEGEND)}")
    if is_external(board).any():
        lines.append(f"- {md_escape(EXTERNAL_LEGEND)}")
    return lines


def render_markdown(board: pd.DataFrame, title: str = "Leaderboard") -> str:
    """Overall section (when there are several epsilons), one section per epsilon, and the
    tuning-mode comparison when tuned rows exist."""
    key = board.attrs.get("metric", "score")
    direction = "lower is better" if board_ranks_lower(board) else "higher is better"
    scored = board[~is_not_applicable(board)]
    lines = [f"## {md_escape(title)}",
             (f"ranked by {md_escape(key)} ({direction}) among rows of the same dataset, "
              "schema, unit, delta and metric settings; mean ± 95% CI over n trials; "
              f"{md_escape(rank_meaning(board.attrs.get('alpha', ALPHA)))}. *Italic* rows are "
              "reference points (`ref`), "
              "non-private (`n/p`, e.g. oracle tuning), not applicable (`n/a`) or marked "
              "unranked: shown, never ranked."), ""]
    findings = board_findings(board)
    if findings:
        lines += [*[f"- {md_escape(text)}" for text in findings], ""]
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


def board_findings(board: pd.DataFrame) -> list[str]:
    """The sentences above every format's tables: the winner per epsilon, the reference
    lines, the single-trial note (:func:`dp_arena.report.headline.headline_lines`, settings in
    full) and the scores that applied to no row."""
    gone = not_applied_line(board, reasons=True)
    return headline_lines(board, label_width=200) + [
        text for text in (gone, owner_side_line(board), heldout_logged_line(board)) if text]


def overall_table(board: pd.DataFrame) -> pd.DataFrame:
    """``overall_board`` of the scored rows, then one n/a row per not-applicable setting."""
    scored = board[~is_not_applicable(board) & ~is_external(board)]  # published: one epsilon
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


GAP_COLUMNS = [Column(h, text_cell(h), numeric=h not in ("mechanism",)) for h in (
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
ul.findings{background:#f6f8fa;border-left:4px solid #06c;padding:.6em 1em .6em 2em}
ul.findings li{margin:.2em 0;overflow-wrap:anywhere}
p.more{margin:.2em 0;color:#06c;font-size:13px}
table.board{border-collapse:collapse;margin-bottom:2em;font-size:13px}
table.board td,table.board th{padding:3px 6px;border-bottom:1px solid #ddd;text-align:right}
table.board td.t{text-align:left;white-space:nowrap}
table.board td.wrap{white-space:normal;min-width:9em;max-width:28em;overflow-wrap:anywhere}
table.board td.label{white-space:normal;min-width:7em;max-width:14em}
div.scroll{overflow-x:auto;max-width:100%}
table.board th{cursor:pointer;background:#f4f4f4;user-select:none;max-width:8em}
table.board th:after{content:"\\2195";color:#aaa;font-size:.75em;margin-left:1px}
table.board .pin{position:sticky;z-index:1}
td.pin{background:#fff}
td.pin-last,th.pin-last{box-shadow:3px 0 3px -2px rgba(0,0,0,.25)}
td.reference{color:#666;font-style:italic;background:#f7f7f7}
td.non-private{color:#8a4b00;font-style:italic;background:#fff6e8}
td.external{color:#2f5d2f;font-style:italic;background:#f1f8f1}
td.failed{color:#b00020}
td.marked{color:#555;font-style:italic;background:#eef3ff}
td.na{color:#777;font-style:italic;background:#f2f2f2}
td.violation{color:#fff;background:#b00020;font-weight:bold}
td.tie{color:#06c;font-weight:bold}
img{max-width:100%;border:1px solid #eee;margin:0.5em 0}
"""
#: Sorting by a header click; a table wider than its box scrolls sideways with its columns up
#: to the mechanism pinned (``.pin``) and a line above it saying so (``p.more``).
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
document.querySelectorAll('div.scroll').forEach(function(box){
  var t=box.querySelector('table.board');
  if(!t||!t.rows.length) return;
  var heads=Array.from(t.rows[0].cells);
  var last=heads.findIndex(function(h){return /^mechanism/.test(h.textContent.trim())});
  var note=document.createElement('p');
  note.className='more';
  note.textContent='\\u2194 wider than the window: scroll the table sideways'
    +(last>=0?' (the mechanism column stays in view)':'');
  box.parentNode.insertBefore(note,box);
  function layout(){
    var wide=box.scrollWidth>box.clientWidth+1, left=0;
    note.hidden=!wide;
    for(var i=0;i<=last;i++){
      var w=heads[i].getBoundingClientRect().width;
      Array.from(t.rows).forEach(function(r){
        var c=r.cells[i];
        if(!c) return;
        c.classList.toggle('pin',wide);
        c.classList.toggle('pin-last',wide&&i===last);
        c.style.left=wide?left+'px':'';
      });
      left+=w;
    }
  }
  layout();
  window.addEventListener('resize',layout);
});
"""
_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>{{ title }}</title><style>{{ css }}</style></head>
<body><h1>{{ title }}</h1>
<p>ranked by <code>{{ key }}</code> among rows of the same dataset, schema, unit, delta and
metric settings; mean ± 95% CI (Student t) over n trials; {{ ranks }}; grey italic rows are
references, orange rows non-private, green rows published by others (ext), blue rows marked
and unranked, grey rows at the end n/a (the mechanism does not apply); click a header to
sort.</p>
{% if findings %}<ul class="findings">
{% for text in findings %}<li>{{ text }}</li>{% endfor %}</ul>{% endif %}
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
                                  *(["label"] if c.label else []),
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
        ranks=rank_meaning(board.attrs.get("alpha", ALPHA)),
        findings=board_findings(board),
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
    tuned rows exist) in ``out_dir``. The plots leave out published archive rows."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    own = board[~is_external(board)]  # published rows: one point each, no trials, no time
    plots = [plot_score_vs_epsilon(own, out / "score_vs_epsilon.png"),
             plot_pareto(own, out / "pareto.png")]
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
