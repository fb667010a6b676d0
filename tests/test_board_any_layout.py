"""Every board renderer survives any combination of views and columns: the default
competition's board (stored runs, with its utility and risk views, whose risk tables have two
columns headed ``bound``) at 60, 80 and 120 columns, in-process and through a pseudo-terminal
with ``dp-arena-board`` itself; random boards (views, labels with repeats and long names, the
ranking metric, widths 60-200) through the terminal, Markdown and HTML renderers; and
``fit_table`` on random headers, repeated ones included."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from dp_arena.report.leaderboard import build_leaderboard
from dp_arena.report.render import render_html, render_markdown
from dp_arena.report.terminal import fit_table, render_terminal, view_lines
from tests.support.default_board import (
    EXPERIMENT,
    runs_frame,
    store_runs,
    stored_runs,
    with_trials,
)
from tests.terminal_screen import PtyRun, render

RISK_HEADERS = ["mechanism", "settings", "eps, delta", "AUC", "TPR@0.01 [lo,hi]", "bound",
                "TPR@0.1 [lo,hi]", "bound", "copies tr/ho"]


def default_board(trials: int = 3):
    return build_leaderboard(runs_frame(with_trials(stored_runs(), trials)))


def widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


# ----- fit_table with repeated headers (the default board's risk table) -----------------------
def test_fit_table_leaves_out_both_columns_of_a_repeated_header_right_to_left():
    row = ["independent", "-", "10, 2.5e-05", "0.516", "0.022 [0.007,0.043]", "1.000",
           "0.105 [0.085,0.155]", "1.000", "0.007/0.004"]
    droppable = list(reversed(RISK_HEADERS[3:]))
    # 11 + 8 + 11 + 5 + 19 + 5 + 19 + 5 + 12 + 8 gaps of 2 = 111
    assert fit_table(RISK_HEADERS, [row], 111, droppable=droppable).dropped == ()
    # at 80: copies (12 + 2), then the second bound (5 + 2), then TPR@0.1 (19 + 2) go: 69
    fitted = fit_table(RISK_HEADERS, [row], 80, droppable=droppable)
    assert fitted.dropped == ("copies tr/ho", "bound", "TPR@0.1 [lo,hi]")
    assert fitted.lines[0].split()[-1] == "bound"  # the first bound stays
    assert fitted.lines[2] == ("independent  -         10, 2.5e-05  0.516  "
                               "0.022 [0.007,0.043]  1.000")
    # at 60 the first bound goes too (the name is listed once)
    narrow = fit_table(RISK_HEADERS, [row], 60, droppable=droppable)
    assert "bound" not in narrow.lines[0] and narrow.dropped.count("bound") == 1
    assert max(map(len, narrow.lines)) <= 60


def test_fit_table_cuts_every_column_of_a_repeated_shrinkable_header():
    fitted = fit_table(["mechanism", "mechanism", "n"], [["a" * 40, "b" * 40, "3"]], 40,
                       shrinkable=("mechanism",), soft_min={})
    # 40 + 40 + 1 + 2 gaps of 2 = 85, 45 too many: the first is cut to its floor (its
    # header, 9), then the second by the 14 left (to 26)
    assert fitted.lines[2] == "a" * 8 + "…  " + "b" * 25 + "…  3"
    assert max(map(len, fitted.lines)) == 40


def test_fit_table_pads_a_short_row():
    assert fit_table(["a", "b"], [["x"]], 60).lines == ["a  b", "-  -", "x"]


def test_fit_table_keeps_every_line_within_the_width_on_random_tables():
    rng = np.random.default_rng(58)
    names = ["mechanism", "settings", "status", "bound", "bound", "n", "eps spent",
             "a header longer than sixty characters, as a long metric name could be",
             "AUC", "x" * 130]
    for _ in range(400):
        headers = [str(rng.choice(names)) for _ in range(int(rng.integers(1, 12)))]
        rows = [["y" * int(rng.integers(0, 90)) for _ in headers]
                for _ in range(int(rng.integers(0, 5)))]
        width = int(rng.integers(60, 201))
        droppable = [str(rng.choice(names)) for _ in range(int(rng.integers(0, 8)))]
        shrinkable = [str(rng.choice(names)) for _ in range(int(rng.integers(0, 4)))]
        fitted = fit_table(headers, rows, width, shrinkable=shrinkable, droppable=droppable,
                           soft_min={n: int(rng.integers(0, 30)) for n in names[:3]})
        assert len(fitted.lines) == 2 + len(rows)
        assert max(map(len, fitted.lines)) <= width, (headers, width)
        assert set(fitted.dropped) <= set(droppable) & set(headers)


# ----- the default competition's board --------------------------------------------------------
@pytest.mark.parametrize("trials", [1, 3])
@pytest.mark.parametrize("width", [60, 80, 120])
def test_the_default_competitions_board_fits_every_width(width, trials):
    board = default_board(trials)
    text = render_terminal(board, f"Leaderboard: {EXPERIMENT}", width=width)
    assert widest(text) <= width
    for table in ("risk view: empirical risk, not a DP guarantee, epsilon = 1:",
                  "utility view, epsilon = 10:", "overall (mean over epsilon 1, 10):"):
        assert table in " ".join(text.split("\n")), table
    assert "adaptive_grid" in text and "uniform (floor)" in text


def test_the_default_boards_risk_tables_show_both_bounds_at_120_columns():
    lines = view_lines(default_board(), 200)
    headers = [line for line in lines if line.startswith("mechanism ") and "AUC" in line]
    assert len(headers) == 2 and all(h.split().count("bound") == 2 for h in headers)


# ----- random boards through every renderer ---------------------------------------------------
VIEW_METRICS = {"utility": ("ml_efficacy/", "propensity/", "range_query/"),
                "risk": ("membership/",), "challenge": ("challenge/",),
                "counts": ("count_query/", "frequent_patterns/")}
LABELS = ["aim", "aim", "m", "a_mechanism_with_a_name_longer_than_forty_characters_xx",
          "mst | pipe *star* <b>", "é ü ∞ ±", "independent"]
METRICS = [None, "kmarginal/score", "membership/auc", "ml_efficacy/score",
           "count_query/mean_relative_error"]


def random_runs(rng: np.random.Generator) -> list[dict]:
    """A random board's runs from the stored ones: some mechanisms, epsilons and views, labels
    (repeats, long and odd ones), settings and trials drawn at random."""
    runs = with_trials(stored_runs(), int(rng.integers(1, 4)), seed=int(rng.integers(1000)))
    mechanisms = sorted({r["tags"]["mechanism"] for r in runs})
    chosen = set(rng.choice(mechanisms, size=int(rng.integers(1, len(mechanisms) + 1)),
                            replace=False))
    epsilons = set(rng.choice(["1", "10"], size=int(rng.integers(1, 3)), replace=False))
    dropped = [p for view, prefixes in VIEW_METRICS.items() if rng.random() < 0.4
               for p in prefixes]
    label = {m: str(rng.choice(LABELS)) if rng.random() < 0.5 else m for m in mechanisms}
    hyper = {m: "x=" + "1" * int(rng.integers(1, 120)) if rng.random() < 0.3 else None
             for m in mechanisms}
    out = []
    for run in runs:
        tags = run["tags"]
        if tags["mechanism"] not in chosen or tags["epsilon"] not in epsilons:
            continue
        new = {**run, "metrics": {k: v for k, v in run["metrics"].items()
                                  if not k.startswith(tuple(dropped))},
               "tags": {**tags, "mechanism": label[tags["mechanism"]]}}
        if hyper[tags["mechanism"]]:
            new["tags"]["hyperparameters"] = hyper[tags["mechanism"]]
        out.append(new)
    return out


def test_random_boards_render_in_every_format_within_the_width():
    rng = np.random.default_rng(5800)
    seen_views = set()
    for case in range(25):
        runs = random_runs(rng)
        metric = METRICS[int(rng.integers(len(METRICS)))]
        frame = runs_frame(runs)
        if metric and metric not in frame:
            metric = None
        board = build_leaderboard(frame, metric)
        width = int(rng.integers(60, 201))
        text = render_terminal(board, "Leaderboard: " + "t" * int(rng.integers(1, 150)),
                               files="multirun/" + "f" * int(rng.integers(1, 150)), width=width)
        assert widest(text) <= width, (case, width)
        seen_views |= {v for v in ("utility view", "risk view") if v in text}
        assert render_markdown(board).startswith("#")
        assert "</html>" in render_html(board, "t")
    assert seen_views == {"utility view", "risk view"}  # the cases drew both views


# ----- dp-arena-board in a pseudo-terminal ----------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("columns", [60, 80])
def test_dp_arena_board_shows_the_default_board_in_a_terminal(tmp_path, empty_mlflow_store,
                                                              columns):
    shutil.copyfile(empty_mlflow_store, tmp_path / "mlflow.db")
    store_runs(f"sqlite:///{tmp_path / 'mlflow.db'}", with_trials(stored_runs(), 3))
    board = Path(sys.executable).with_name("dp-arena-board")  # the installed command
    run = PtyRun([str(board)], tmp_path,
                 {"PATH": "/usr/bin:/bin", "TERM": "xterm", "HOME": str(tmp_path)},
                 cols=columns)
    code = run.finish(timeout=300)
    text = run.text().replace("\r\n", "\n")
    assert code == 0, text
    lines = text.splitlines()
    assert max(map(len, lines)) <= columns, [line for line in lines if len(line) > columns]
    assert len(render(run.text(), width=columns)) == len(lines)  # so no line wrapped
    assert "risk view" in text and "Traceback" not in text
    assert "written to leaderboard: leaderboard.md" in text
