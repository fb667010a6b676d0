"""The board on a terminal fits 120 columns as plain text (no Markdown escapes), names
the ranking metric and the winner per epsilon, says when public_only beats every DP row or the
best DP row is below the uniform floor, and says that n = 1 rows are not ranked against each
other; the Markdown file is unchanged."""

from __future__ import annotations

import io
import re

import pytest

from dp_arena.report.leaderboard import build_leaderboard
from dp_arena.report.render import render_markdown
from dp_arena.report.terminal import board_format, fit_columns, render_terminal
from tests.support.board import frame
from tests.support.terminal_rows import rows


@pytest.fixture(autouse=True)
def terminal_of_120_columns(monkeypatch):
    """The terminal board takes the width the terminal reports: 120 here, whatever runs
    the tests."""
    monkeypatch.setenv("COLUMNS", "120")


def test_the_default_board_fits_120_columns_as_plain_text():
    board = build_leaderboard(frame(rows({"aim": 700.0, "mst": 650.0, "independent": 500.0,
                                          "adaptive_grid": 640.0, "prefix_tree": 300.0},
                                         public=600.0, floor=100.0)))
    text = render_terminal(board, "Leaderboard: dp-arena/taxi_sim (this sweep)",
                           files="multirun/2026-01-01/00-00-00/leaderboard/leaderboard.md")
    assert max(len(line) for line in text.splitlines()) <= 120
    assert "\\_" not in text and "|" not in text and "**" not in text
    assert "taxi_sim" in text
    assert "ranked by kmarginal/score (higher is better" in text
    assert "winner at epsilon 1: aim 701.0 ± 2.5 (marginals=" in text
    assert "winner at epsilon 10: aim 710.0 ± 2.5 (" in text
    assert "per-epsilon tables, every score column: multirun/" in text
    assert "…" in text  # the long settings were cut, not wrapped
    # the Markdown (the file) keeps every column and the escapes
    assert "\\<list of 45" in render_markdown(board)


def test_the_winner_follows_the_ranking_metric():
    data = rows({"a": 700.0, "b": 600.0})
    for r in data:
        r["other/score"] = -r["kmarginal/score"]  # b is better by the other metric
    assert "winner at epsilon 1: a " in render_terminal(build_leaderboard(frame(data)))
    text = render_terminal(build_leaderboard(frame(data), metric="other/score"))
    assert "ranked by other/score" in text
    # kmarginal/score is a headline score too: its winner is named beside the ranking one's
    flat = " ".join(text.split())
    assert "winner at epsilon 1 by other/score (higher is better): b " in flat
    assert "winner at epsilon 1 by kmarginal/score (marginals, higher is better): a " in flat


def test_public_only_above_every_dp_row_is_said():
    board = build_leaderboard(frame(rows({"a": 500.0, "b": 400.0}, public=600.0)))
    text = render_terminal(board)
    assert text.count("public_only (the public data alone) scores better") == 2  # per epsilon
    assert "add nothing beyond the" in text and "(600.0 vs best DP 501.0)" in text
    calm = render_terminal(build_leaderboard(frame(rows({"a": 700.0}, public=600.0))))
    assert "public_only (the public data alone)" not in calm


def test_best_dp_row_below_the_uniform_floor_is_said():
    board = build_leaderboard(frame(rows({"a": 50.0, "b": 40.0}, floor=100.0)))
    assert "scores worse than the uniform floor" in render_terminal(board)
    calm = render_terminal(build_leaderboard(frame(rows({"a": 500.0}, floor=100.0))))
    assert "uniform floor" not in calm


def test_single_trial_rows_are_not_ranked_nor_tied_and_the_board_says_why():
    board = build_leaderboard(frame(rows({"a": 700.0, "b": 300.0}, trials=1)))
    text = render_terminal(board)
    assert "rows with n = 1 have no confidence interval, so they are not ranked" in text
    assert "winner at epsilon 1: none ranked (n = 1); best mean a 701.0" in text
    assert "(tied)" not in text and "1=" not in text
    assert re.search(r"^- +a +705\.5 ", text, re.MULTILINE)  # overall: mean of 701, 710
    three = render_terminal(build_leaderboard(frame(rows({"a": 700.0, "b": 300.0}))))
    assert "rows with n = 1" not in three and "winner at epsilon 1: a 701.0" in three


def test_fit_columns_cuts_the_widest_text_first():
    lines = fit_columns(["rank", "settings", "status"], [["1", "x" * 200, "ok"]], width=40)
    assert all(len(line) <= 40 for line in lines) and lines[2].startswith("1     x")
    assert "…" in lines[2] and lines[2].rstrip().endswith("ok")


@pytest.mark.parametrize("env, tty, expected", [("", True, "text"), ("", False, "markdown"),
                                                ("markdown", True, "markdown"),
                                                ("text", False, "text")])
def test_board_format_follows_the_terminal(monkeypatch, env, tty, expected):
    monkeypatch.setenv("DP_ARENA_BOARD", env)
    stream = io.StringIO()
    stream.isatty = lambda: tty  # type: ignore[method-assign]
    assert board_format(stream) == expected
