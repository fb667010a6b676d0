"""The sweep's parent run shows the winner per epsilon (metrics and tags) and holds the
board as an MLflow table, so the MLflow UI names the winner without opening an artifact.

Tolerances: (a) every pytest.approx here compares hand-computed arithmetic: its default, 1e-6
relative (and 1e-12 absolute), is far above the rounding of a few operations and far below any
wrong formula.
"""

from __future__ import annotations

import pytest

from dp_arena.report.headline import TABLE_FILE, eps_key, headline, log_headline
from dp_arena.report.leaderboard import build_leaderboard
from tests.support.board import NEW_TAGS, frame, run
from tests.support.terminal_rows import rows


def test_headline_names_the_best_dp_row_per_epsilon_with_its_ci():
    board = build_leaderboard(frame(rows({"mst": 700.0, "independent": 500.0}, public=900.0)))
    metrics, tags = headline(board)
    assert tags["winner/eps_1"] == "mst" and tags["winner/eps_10"] == "mst"  # not public_only
    assert metrics["winner/eps_1/mean"] == pytest.approx(701.0)  # 700 + eps + mean noise 0
    assert metrics["winner/eps_10/mean"] == pytest.approx(710.0)
    assert metrics["winner/eps_1/n"] == 3 and metrics["winner/eps_1/ci95"] > 0
    assert tags["ranked_by"] == "kmarginal/score (higher is better)"


def test_a_tie_is_named_in_the_tag():
    # a - b per trial: 1, -1, 0.5, so no paired test separates them; a has the better mean
    scores = {"a": (700.0, 701.0, 699.0), "b": (699.0, 702.0, 698.5)}
    board = build_leaderboard(frame([run(m, 1.0, t, s[t], **NEW_TAGS)
                                     for m, s in scores.items() for t in range(3)]))
    _, tags = headline(board)
    assert tags["winner/eps_1"] == "a; tied with b"


def test_rows_of_one_trial_name_no_winner_and_no_tie():
    _, tags = headline(build_leaderboard(frame(rows({"a": 700.0, "b": 300.0}, trials=1))))
    assert tags["winner/eps_1"] == "no ranked DP row"


def test_eps_keys_are_valid_mlflow_names():
    assert eps_key(1.0) == "eps_1" and eps_key(0.5) == "eps_0.5" and eps_key(1e-6) == "eps_1e-06"


def test_the_parent_run_gets_metrics_tags_and_the_board_table(tracking_uri):
    from dp_arena.report.tracking import client_for, ensure_experiment

    client = client_for(tracking_uri)
    exp = ensure_experiment(client, "dp-arena/t")
    parent = client.create_run(exp, tags={"kind": "sweep"}).info.run_id
    board = build_leaderboard(frame(rows({"mst": 700.0, "independent": 500.0})))
    log_headline(client, parent, board)
    run = client.get_run(parent)
    assert run.data.tags["winner/eps_10"] == "mst"
    assert run.data.metrics["winner/eps_10/mean"] == pytest.approx(710.0)
    table = client.load_table(exp, TABLE_FILE, run_ids=[parent])
    assert sorted(set(table["mechanism"])) == ["independent", "mst"] and len(table) == 4
