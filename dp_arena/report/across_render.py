"""The board across datasets (:mod:`dp_arena.report.across_datasets`) as plain text fitted to a
terminal's width (80 columns included), Markdown, a self-contained HTML page and PNG
critical-difference diagrams (:func:`dp_arena.report.critical_difference.draw_cd_diagram`).

Each score at each epsilon reads, in order: what was ranked on what (and what was left out,
and why); the average ranks with their bootstrap intervals; the Friedman test; the Nemenyi
critical difference and the groups it does not tell apart; wins/ties/losses of each
contestant against each other; the coverage of every contestant on every dataset (ok,
failed, n/a, score n/a, with the reasons under it); the reference rows, named and not ranked.
"""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Sequence
from pathlib import Path

from dp_arena.report.across_datasets import OK, AcrossBoard, ranks_frame
from dp_arena.report.cells import md_escape
from dp_arena.report.critical_difference import draw_cd_diagram
from dp_arena.report.render import csv_safe
from dp_arena.report.terminal import WIDTH, cut, fit_table, wrap_lines

#: What the board's method is, said once at its top.
METHOD = ("Per epsilon and score: each mechanism's rank on each dataset (1 = best; ties share "
          "the average place) from its mean over trials, averaged over the datasets where "
          "every compared mechanism has a score; 95% interval: bootstrap over datasets and "
          "trials. Friedman test (Demsar 2006, no tie correction) and Iman-Davenport F; "
          "post-hoc: Nemenyi critical difference (CD), read only when Friedman rejects. "
          "W/T/L: per dataset, the paired t-test over trials of the per-dataset board. "
          "The verdict is the Friedman chi2 test's. Reference rows are named, never ranked.")
#: Short names of cell statuses in the coverage tables.
SHORT = {"ok": "ok", "failed": "failed", "n/a": "n/a", "score n/a": "score n/a",
         "unfinished": "unfinished", "no run": "-"}


def direction(board: AcrossBoard) -> str:
    return "lower is better" if board.lower_is_better else "higher is better"


def title(board: AcrossBoard) -> str:
    return f"{board.score} ({direction(board)}), epsilon {board.epsilon:g}"


def diagram_name(board: AcrossBoard) -> str:
    """The PNG's file name: ``cd_<score>_eps_<e>.png`` (``/`` as ``-``)."""
    return f"cd_{board.score.replace('/', '-')}_eps_{board.epsilon:g}.png"


def summary_lines(board: AcrossBoard) -> list[str]:
    """The prose of one board: what was ranked, the test, the CD, what was left out."""
    n_trials = len(board.trials)
    out = [f"{plural(len(board.contestants), 'mechanism')} "
           f"on {len(board.datasets)} datasets ({', '.join(board.datasets)}); "
           f"up to {n_trials} trial{'s' if n_trials != 1 else ''} each."]
    if board.compared and board.used:
        out.append(f"Ranked: {plural(len(board.compared), 'mechanism')} on the "
                   f"{plural(len(board.used), 'dataset')} where all have a score "
                   f"({', '.join(board.used)}).")
    else:
        out.append("Not ranked: no dataset where every compared mechanism has a score.")
    out += [f"Left out of the ranks: dataset {d}: {why}." for d, why in board.unused]
    out += [f"Left out of the ranks: {c}: {why}." for c, why in board.left_out]
    test = board.friedman
    if test is None:
        out.append("No Friedman test: it needs 2 mechanisms or more on 2 datasets or more.")
    else:
        f_text = ("F unbounded (every dataset ranks them alike)"
                  if math.isinf(test.iman_davenport) else
                  f"F = {test.iman_davenport:.2f} (df {test.df}, {test.df_denominator}), "
                  f"{p_text(test.iman_davenport_p)}")
        verdict = (f"the mechanisms rank differently (alpha {board.alpha:g})" if board.rejects
                   else f"no difference shown at alpha {board.alpha:g}")
        out.append(f"Friedman chi2 = {test.chi2:.2f} (df {test.df}), {p_text(test.p_value)}: "
                   f"{verdict}; Iman-Davenport {f_text}.")
    if board.cd is not None:
        if board.rejects:
            groups = "; ".join(", ".join(g) for g in board.groups) or "none"
            out.append(f"Nemenyi CD (alpha {board.alpha:g}, k = {len(board.compared)}, "
                       f"N = {len(board.used)}): {board.cd:.2f}; average ranks closer than "
                       f"that are not told apart: {groups}.")
        else:
            out.append(f"Nemenyi CD (alpha {board.alpha:g}): {board.cd:.2f}, not read: the "
                       "Friedman test does not reject, so no pair is told apart.")
    return out


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def p_text(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def rank_rows(board: AcrossBoard) -> list[list[str]]:
    """#, mechanism, average rank, its interval."""
    return [[str(i + 1), c, f"{r:.2f}", f"{lo:.2f}-{hi:.2f}"]
            for i, (c, r, (lo, hi)) in enumerate(zip(board.compared, board.average_ranks,
                                                      board.rank_ci))]


RANK_HEADERS = ["#", "mechanism", "avg rank", "95% CI"]


def wtl_rows(board: AcrossBoard) -> tuple[list[str], list[list[str]]]:
    """Headers (the column mechanisms by their number ``m1``...) and rows of the
    wins/ties/losses table, row against column."""
    names = list(board.contestants)
    headers = ["", "mechanism", *(f"m{j + 1}" for j in range(len(names)))]
    rows = []
    for i, a in enumerate(names):
        cells = ["-" if a == b else "/".join(str(v) for v in board.wins_ties_losses[(a, b)])
                 for b in names]
        rows.append([f"m{i + 1}", a, *cells])
    return headers, rows


def coverage_rows(board: AcrossBoard) -> tuple[list[str], list[list[str]], list[str]]:
    """Headers (the datasets), rows (each contestant's status per dataset) and the reasons
    (one line per contestant and reason)."""
    headers = ["mechanism", *board.datasets]
    rows, reasons = [], {}
    for c in board.contestants:
        row = [c]
        for d in board.datasets:
            cell = board.cell(c, d)
            row.append(SHORT.get(cell.status, cell.status))
            if cell.status != OK and cell.reason:
                reasons.setdefault((c, cell.status, without_name(cell.reason, d)),
                                   []).append(d)
        rows.append(row)
    lines = [f"{c} {status} on {', '.join(ds)}: {reason}"
             for (c, status, reason), ds in reasons.items()]
    return headers, rows, lines


def without_name(reason: str, dataset: str) -> str:
    """A reason with the dataset's quoted name as "the dataset", so that one reason given on
    several datasets is said once, with the datasets it holds for."""
    return (reason.replace(f"dataset '{dataset}'", "the dataset")
            .replace(f"'{dataset}'", "the dataset"))


# ----- plain text ---------------------------------------------------------------------------
def column_blocks(headers: Sequence[str], rows: list[list[str]], fixed: int,
                  width: int) -> list[tuple[list[str], list[list[str]]]]:
    """The table split into blocks of columns that fit ``width``, each repeating the first
    ``fixed`` columns (a wide matrix reads as two tables rather than cut cells)."""
    natural = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    base = sum(min(natural[i], 24) + 2 for i in range(fixed))
    blocks, current, used = [], [], base
    for i in range(fixed, len(headers)):
        need = natural[i] + 2
        if current and used + need > width:
            blocks.append(current)
            current, used = [], base
        current.append(i)
        used += need
    if current or not blocks:
        blocks.append(current)
    keep = list(range(fixed))
    return [([headers[i] for i in keep + b], [[r[i] for i in keep + b] for r in rows])
            for b in blocks]


def board_text(board: AcrossBoard, width: int = WIDTH, files: str | None = None,
               compact: bool = False) -> list[str]:
    """One score at one epsilon as plain text lines within ``width``; ``compact``: the prose
    and the average ranks only (wins/ties/losses and coverage are in the files)."""
    lines = ["", cut(f"== {title(board)} ==", width), *wrap_lines(summary_lines(board), width)]
    if board.compared:
        lines += ["", *fit_table(RANK_HEADERS, rank_rows(board), width,
                                 shrinkable=("mechanism",), soft_min={"mechanism": 16}).lines]
    if compact:
        if files:
            lines += wrap_lines([f"wins/ties/losses, coverage, diagram: "
                                 f"{files}/across_datasets.md"], width)
        return lines
    if len(board.contestants) >= 2:
        headers, rows = wtl_rows(board)
        lines += ["", *wrap_lines(["wins/ties/losses of the row against the column, one per "
                                   "dataset where both have a score:"], width)]
        for heads, part in column_blocks(headers, rows, 2, width):
            lines += fit_table(heads, part, width, shrinkable=("mechanism",),
                               soft_min={"mechanism": 14}).lines
    headers, rows, reasons = coverage_rows(board)
    lines += ["", *wrap_lines(["coverage (ok: a score; failed, n/a, score n/a: why below; "
                               "-: no run):"], width)]
    for heads, part in column_blocks(headers, rows, 1, width):
        lines += fit_table(heads, part, width, shrinkable=("mechanism",),
                           soft_min={"mechanism": 14}).lines
    lines += wrap_lines(reasons, width)
    if board.references:
        lines += wrap_lines([f"references, not ranked: {', '.join(board.references)}"], width)
    if files and board.compared:
        lines += wrap_lines([f"critical-difference diagram: {files}/{diagram_name(board)}"],
                            width)
    return lines


def render_text(boards: Sequence[AcrossBoard], heading: str, width: int = WIDTH,
                files: str | None = None) -> str:
    """Every board as plain text within ``width`` columns: the first score (the per-dataset
    board's ranking score when logged) in full at each epsilon, the others compact."""
    lines = [cut(heading, width), *wrap_lines([METHOD], width)]
    if not boards:
        lines += wrap_lines(["no headline score was logged by these runs"], width)
    for board in boards:
        lines += board_text(board, width, files, compact=board.score != boards[0].score)
    return "\n".join(lines)


# ----- Markdown -----------------------------------------------------------------------------
def md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(md_escape(h) for h in headers) + " |",
           "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(md_escape(c) for c in r) + " |" for r in rows]
    return out


def board_markdown(board: AcrossBoard, diagram: bool = True) -> list[str]:
    lines = ["", f"### {md_escape(title(board))}", "",
             *(f"- {md_escape(s)}" for s in summary_lines(board))]
    if board.compared:
        lines += ["", *md_table(RANK_HEADERS, rank_rows(board))]
        if diagram:
            lines += ["", f"![critical-difference diagram]({diagram_name(board)})"]
    if len(board.contestants) >= 2:
        headers, rows = wtl_rows(board)
        lines += ["", "Wins/ties/losses of the row against the column, one per dataset "
                  "where both have a score:", "", *md_table(headers, rows)]
    headers, rows, reasons = coverage_rows(board)
    lines += ["", "Coverage (ok: a score; -: no run):", "", *md_table(headers, rows)]
    lines += [f"- {md_escape(r)}" for r in reasons]
    if board.references:
        lines += ["", f"References, not ranked: {md_escape(', '.join(board.references))}"]
    return lines


def render_markdown(boards: Sequence[AcrossBoard], heading: str, diagrams: bool = True) -> str:
    lines = [f"## {md_escape(heading)}", "", md_escape(METHOD)]
    for board in boards:
        lines += board_markdown(board, diagrams)
    return "\n".join(lines) + "\n"


# ----- HTML ---------------------------------------------------------------------------------
def html_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>"
                   for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_html(boards: Sequence[AcrossBoard], heading: str,
                images: dict[str, Path] | None = None) -> str:
    """A self-contained page: the diagrams embedded as data URIs, every text escaped."""
    images = images or {}
    parts = [f"<h1>{html.escape(heading)}</h1>", f"<p>{html.escape(METHOD)}</p>"]
    for board in boards:
        parts.append(f"<h2>{html.escape(title(board))}</h2><ul>"
                     + "".join(f"<li>{html.escape(s)}</li>" for s in summary_lines(board))
                     + "</ul>")
        if board.compared:
            parts.append(html_table(RANK_HEADERS, rank_rows(board)))
            png = images.get(diagram_name(board))
            if png and png.exists():
                data = base64.b64encode(png.read_bytes()).decode("ascii")
                parts.append(f'<p><img alt="critical-difference diagram" '
                             f'src="data:image/png;base64,{data}"></p>')
        if len(board.contestants) >= 2:
            headers, rows = wtl_rows(board)
            parts.append("<p>Wins/ties/losses of the row against the column, one per dataset "
                         "where both have a score:</p>" + html_table(headers, rows))
        headers, rows, reasons = coverage_rows(board)
        parts.append("<p>Coverage (ok: a score; -: no run):</p>" + html_table(headers, rows))
        if reasons:
            parts.append("<ul>" + "".join(f"<li>{html.escape(r)}</li>" for r in reasons)
                         + "</ul>")
        if board.references:
            parts.append(f"<p>References, not ranked: "
                         f"{html.escape(', '.join(board.references))}</p>")
    style = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
             "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;"
             "padding:2px 8px;text-align:left}img{max-width:100%}")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>"
            f"{html.escape(heading)}</title><style>{style}</style></head><body>"
            + "\n".join(parts) + "</body></html>\n")


# ----- files --------------------------------------------------------------------------------
def write_across(boards: Sequence[AcrossBoard], out: str | Path, heading: str) -> list[Path]:
    """Writes ``across_datasets.md``, ``.html``, ``.csv`` (the average ranks) and one diagram
    per board with ranks into ``out``; returns the files written."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    images = {}
    for board in boards:
        if board.compared:
            name = diagram_name(board)
            position = {c: i for i, c in enumerate(board.compared)}
            images[name] = draw_cd_diagram(
                board.compared, board.average_ranks, board.cd, folder / name,
                f"{title(board)}\naverage rank over {len(board.used)} datasets"
                + ("" if board.rejects or board.cd is None else
                   " (Friedman does not reject: none told apart)"),
                groups=[[position[c] for c in g] for g in board.groups])
    md = folder / "across_datasets.md"
    md.write_text(render_markdown(boards, heading))
    page = folder / "across_datasets.html"
    page.write_text(render_html(boards, heading, images))
    table = folder / "across_datasets.csv"
    csv_safe(ranks_frame(boards)).to_csv(table, index=False)
    return [md, table, page, *images.values()]
