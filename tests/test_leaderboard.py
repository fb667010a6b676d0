"""The leaderboard on hand-made runs: statistics, ties, references, failures, overall, outputs."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from harness.report.leaderboard import (build_leaderboard, compare, overall_board, pareto_front,
                                 render_html, render_markdown, resolve_keys, tuning_gap,
                                 write_outputs)


def run(mech: str, eps: float, trial: int, score: float | None, status: str = "FINISHED",
        reference: str = "", tuning: str = "", private: str = "true", hp: str = "-",
        start: int = 0, reason: str = "", key: str | None = None, seconds: float = 1.0) -> dict:
    return {"run_id": f"{mech}-{eps}-{trial}-{start}", "status": status, "start_time": start,
            "mechanism": mech, "hyperparameters": hp, "tuning": tuning, "private": private,
            "epsilon": eps, "trial": trial, "reference": reference,
            "run_key": key or f"{mech}|{hp}|{tuning}|{eps}|{trial}", "failure_reason": reason,
            "tuning_chosen": "", "kmarginal/score": score if score is not None else math.nan,
            "seconds": seconds, "peak_memory_mb": 300.0, "epsilon_spent": eps}


def frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows)


NOISE = [0.0, 1.0, -1.0, 0.5, -0.5]
OTHER = [0.5, -1.0, 0.8, -0.6, -0.3]


def test_mean_ci_std_n_and_significance_ranks():
    rows = []
    for t, e in enumerate(NOISE):
        rows += [run("a", 1, t, 900 + e), run("b", 1, t, 899.8 + e + OTHER[t]),  # tied with a
                 run("c", 1, t, 800 + e), run("uniform", 1, t, 500 + e, reference="floor")]
    board = build_leaderboard(frame(rows))
    by = board.set_index("mechanism")
    assert by.loc["a", "n"] == 5 and by.loc["a", "mean"] == pytest.approx(900.0)
    assert by.loc["a", "ci95"] == pytest.approx(2.776 * np.std(NOISE, ddof=1) / math.sqrt(5),
                                                rel=1e-3)
    assert by.loc["a", "rank"] == 1 and by.loc["b", "rank"] == 1
    assert by.loc["a", "tied"] and by.loc["b", "tied"]
    assert by.loc["c", "rank"] == 3 and not by.loc["c", "tied"]
    assert pd.isna(by.loc["uniform", "rank"])  # references are never ranked
    text = render_markdown(board)
    assert "| 1= | a |" in text and "| 1= | b |" in text and "| 3 | c |" in text
    assert "| *ref* | *uniform (floor)* |" in text


def test_paired_test_uses_the_pairing():
    a = {t: 100 + 10 * t for t in range(5)}
    b = {t: 99.5 + 10 * t for t in range(5)}  # always 0.5 worse: significant when paired
    assert compare(a, b, higher_better=True) == 1
    assert compare(b, a, higher_better=True) == -1
    assert compare(a, b, higher_better=False) == -1
    assert compare({0: 1.0}, {0: 1.0}, True) == 0


def test_failed_interrupted_and_redone_runs():
    rows = [run("a", 1, 0, 900), run("a", 1, 1, None, "FAILED", reason="boom", start=1),
            run("b", 1, 0, None, "FAILED", reason="time limit of 5 s exceeded"),
            run("c", 1, 0, None, "RUNNING"),
            # failed once, then finished with the same key: not a failure any more
            run("d", 1, 0, None, "FAILED", reason="flaky", start=1, key="d0"),
            run("d", 1, 0, 850, start=2, key="d0")]
    board = build_leaderboard(frame(rows)).set_index("mechanism")
    assert board.loc["a", "n"] == 1 and board.loc["a", "failed"] == 1
    assert board.loc["b", "n"] == 0 and board.loc["b", "failed"] == 1
    assert math.isnan(board.loc["b", "mean"]) and pd.isna(board.loc["b", "rank"])
    assert board.loc["c", "unfinished"] == 1 and board.loc["c", "failed"] == 0
    assert board.loc["d", "failed"] == 0 and board.loc["d", "n"] == 1
    text = render_markdown(build_leaderboard(frame(rows)))
    assert "FAILED (1): time limit of 5 s exceeded" in text and "1 interrupted" in text


def test_resolve_keys_prefers_the_latest_finished_run():
    rows = frame([run("a", 1, 0, 1.0, start=1, key="k"), run("a", 1, 0, 2.0, start=2, key="k"),
                  run("a", 1, 0, None, "FAILED", start=3, key="k")])
    assert resolve_keys(rows)["kmarginal/score"].tolist() == [2.0]


def test_overall_is_the_mean_over_epsilons_and_marks_incomplete_rows():
    rows = []
    for t, e in enumerate(NOISE):
        rows += [run("a", 1, t, 800 + e), run("a", 10, t, 900 + e),
                 run("b", 1, t, 700 + e), run("b", 10, t, 950 + e),
                 run("c", 1, t, 990 + e)]
    overall = overall_board(build_leaderboard(frame(rows))).set_index("mechanism")
    assert overall.loc["a", "mean"] == pytest.approx(850) and overall.loc["a", "n"] == 5
    assert overall.loc["b", "mean"] == pytest.approx(825)
    assert overall.loc["a", "rank"] == 1 and overall.loc["b", "rank"] == 2
    assert not overall.loc["c", "complete"] and pd.isna(overall.loc["c", "rank"])
    text = render_markdown(build_leaderboard(frame(rows)))
    assert "### overall (mean over epsilon 1, 10)" in text
    assert "incomplete (only epsilon 1)" in text


def test_oracle_rows_are_marked_and_the_tuning_gap_is_reported():
    rows = []
    for t, e in enumerate(NOISE[:3]):
        rows += [run("arch", 1, t, 800 + e),
                 run("arch", 1, t, 820 + e, tuning="public", hp="k=6"),
                 run("arch", 1, t, 815 + e, tuning="dp_select", hp="select k∈{2,6}"),
                 run("arch", 1, t, 830 + e, tuning="oracle (non-private)", hp="k=8",
                     private="false")]
    board = build_leaderboard(frame(rows))
    oracle = board[board["tuning"].str.startswith("oracle")].iloc[0]
    assert oracle["kind"] == "non-private" and pd.isna(oracle["rank"])
    gap = tuning_gap(board).iloc[0]
    assert gap["oracle_minus_public"] == pytest.approx(10)
    assert gap["oracle_minus_dp_select"] == pytest.approx(15)
    assert gap["public_minus_untuned"] == pytest.approx(20)
    text = render_markdown(board)
    assert "### tuning modes" in text and "| *n/p* |" in text


def test_pareto_front():
    pts = pd.DataFrame({"seconds": [1, 2, 3, 4], "mean": [10, 5, 20, 15]})
    assert pareto_front(pts, True)["seconds"].tolist() == [1, 3]


def test_outputs_are_written_and_the_html_is_self_contained(tmp_path):
    rows = []
    for t, e in enumerate(NOISE[:3]):
        rows += [run(m, eps, t, base + eps + e, reference=ref)
                 for m, base, ref in (("a", 800, ""), ("uniform", 400, "floor"))
                 for eps in (1.0, 10.0)]
    rows.append(run("broken", 1.0, 0, None, "FAILED", reason="boom"))
    board = build_leaderboard(frame(rows))
    paths = write_outputs(board, frame(rows), tmp_path, title="t")
    names = {p.name for p in paths}
    assert {"leaderboard.md", "leaderboard.csv", "leaderboard_overall.csv", "leaderboard.html",
            "score_vs_epsilon.png", "pareto.png"} <= names
    for png in ("score_vs_epsilon.png", "pareto.png"):
        assert (tmp_path / png).read_bytes()[:4] == b"\x89PNG"
    page = (tmp_path / "leaderboard.html").read_text()
    assert page.count("<table") == 3 and page.count("data:image/png;base64,") == 2
    assert "addEventListener('click'" in page and "src='http" not in page
    assert "class='reference'" in page and "class='failed'" in page
    csv = pd.read_csv(tmp_path / "leaderboard.csv")
    assert {"mean", "ci95", "std", "n", "rank", "tied", "seconds", "peak_memory_mb",
            "epsilon_spent", "failure_reason"} <= set(csv.columns)
    assert render_html(board, "t", None).startswith("<!doctype html>")
