"""The leaderboard on hand-made runs: statistics, ties, references, failures, overall, outputs,
never pooling different guarantees, marks, and escaped output."""

from __future__ import annotations

import csv
import math

import numpy as np
import pandas as pd
import pytest

from harness.report.leaderboard import (MARK_LARGE_DELTA, MARK_PRIVATE_TABLES, MARK_REPLAYABLE,
                                        build_leaderboard, compare, overall_board, resolve_keys,
                                        tuning_gap)
from harness.report.plots import pareto_front
from harness.report.render import csv_cell, md_escape, render_html, render_markdown, write_outputs


def run(mech: str, eps: float, trial: int, score: float | None, status: str = "FINISHED",
        reference: str = "", tuning: str = "", private: str = "true", hp: str = "-",
        start: int = 0, reason: str = "", key: str | None = None, seconds: float = 1.0,
        **tags: object) -> dict:
    """One run as ``load_runs`` returns it; ``tags`` adds the newer tags (delta, privacy_unit,
    dataset_id, ``metric_key/<name>``, noise, ...) and extra scores."""
    return {**tags, "run_id": f"{mech}-{eps}-{trial}-{start}", "status": status,
            "start_time": start,
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


# ----- never pooling different guarantees, data or scores -----------------------------------
NEW_TAGS = {"delta": "2.5e-05", "accountant": "basic", "privacy_unit": "user:taxi_id",
            "dataset": "taxi", "dataset_id": "d1", "metric_key/kmarginal": "k2",
            "metrics_key": "m1", "noise": "secret", "private_tables": "false"}


def tagged(mech: str, trial: int, score: float, eps: float = 1.0, **changes: object) -> dict:
    return run(mech, eps, trial, score, **{**NEW_TAGS, **changes})


@pytest.mark.parametrize("tag,other,header", [
    ("delta", "0.4", "delta"),
    ("privacy_unit", "record", "unit"),
    ("dataset_id", "d2", "data id"),               # two CSVs of the same name
    ("metric_key/kmarginal", "k3", "kmarginal settings"),  # k=2 and k=3 are not one score
])
def test_runs_differing_in_guarantee_data_or_metric_settings_are_never_pooled(tag, other,
                                                                               header):
    rows = [tagged("a", t, 900 + e) for t, e in enumerate(NOISE[:3])]
    rows += [tagged("a", t, 100 + e, **{tag: other}) for t, e in enumerate(NOISE[:3])]
    board = build_leaderboard(frame(rows))
    assert len(board) == 2 and list(board["n"]) == [3, 3]
    assert sorted(board["mean"]) == [pytest.approx(100), pytest.approx(900)]
    # each is alone in its pool: both rank 1, neither is "significantly worse" than the other
    assert list(board["rank"]) == [1, 1] and not board["tied"].any()
    text = render_markdown(board)
    header_line = next(line for line in text.splitlines() if line.startswith("| rank |"))
    assert f"| {md_escape(header)} |" in header_line   # the distinguishing column appears
    assert f">{header}</th>" in render_html(board, "t")


def test_compact_board_hides_columns_that_do_not_vary():
    board = build_leaderboard(frame([tagged("a", 0, 1.0), tagged("b", 0, 2.0)]))
    header_line = next(line for line in render_markdown(board).splitlines()
                       if line.startswith("| rank |"))
    for hidden in ("delta", "unit", "data id", "dataset", "noise", "settings"):
        assert f"| {hidden} |" not in header_line and "settings" not in header_line
    assert list(board["rank"]) == [1, 2]  # same pool: ranked together


def test_accountants_with_the_same_delta_are_ranked_together():
    rows = [tagged("a", t, 900 + e) for t, e in enumerate(NOISE)]
    rows += [tagged("a", t, 800 + e, accountant="zcdp", hp="accountant=zcdp")
             for t, e in enumerate(NOISE)]
    board = build_leaderboard(frame(rows)).set_index("hyperparameters")
    assert board.loc["-", "rank"] == 1 and board.loc["accountant=zcdp", "rank"] == 2


def test_rerunning_a_trial_with_an_extra_metric_does_not_inflate_n():
    first = tagged("a", 0, 1.0, start=1, key="key-before", metrics_key="m1")
    again = tagged("a", 0, 2.0, start=2, key="key-after", metrics_key="m2",
                   **{"metric_key/fidelity": "f1", "fidelity/score": 0.5})
    board = build_leaderboard(frame([first, again]))
    assert len(board) == 1
    row = board.iloc[0]
    assert row["n"] == 1 and row["mean"] == pytest.approx(2.0)  # the latest finished run
    assert row["fidelity/score"] == pytest.approx(0.5)
    assert not any(c.startswith("metric_key") for c in board.columns)  # tags are not scores


def test_runs_from_before_the_ranking_metric_existed_are_a_separate_unscored_row():
    old = tagged("a", 0, 0.0, start=1, key="k1")  # no challenge metric then
    new = tagged("a", 0, 1.0, start=2, key="k2", **{"metric_key/challenge": "c1",
                                                    "challenge/overall": 700.0})
    del old["kmarginal/score"], new["kmarginal/score"]
    board = build_leaderboard(frame([old, new]))
    assert board.attrs["metric"] == "challenge/overall" and len(board) == 2
    assert sorted(board["mean"].fillna(-1)) == [-1, 700.0] and list(board["n"]) == [1, 1]
    assert "no score of the ranking metric" in render_markdown(board)


def test_a_failed_retry_of_a_finished_trial_does_not_hide_the_score():
    rows = [tagged("a", 0, 5.0, start=1, key="k1"),
            tagged("a", 0, 0.0, status="FAILED", start=2, key="k2", reason="boom")]
    rows[1]["kmarginal/score"] = math.nan
    row = build_leaderboard(frame(rows)).iloc[0]
    assert row["n"] == 1 and row["failed"] == 0 and row["mean"] == pytest.approx(5.0)


def test_replayable_and_large_delta_rows_are_labelled_and_never_ranked(tmp_path):
    rows = []
    for t, e in enumerate(NOISE[:3]):
        rows += [tagged("a", t, 500 + e), tagged("b", t, 900 + e, noise="replayable"),
                 tagged("c", t, 950 + e, large_delta="true"),
                 tagged("d", t, 400 + e, private_tables="true")]
    board = build_leaderboard(frame(rows)).set_index("mechanism")
    assert pd.isna(board.loc["b", "rank"]) and pd.isna(board.loc["c", "rank"])
    assert board.loc["a", "rank"] == 1 and board.loc["d", "rank"] == 2  # marked, still ranked
    assert board.loc["b", "marks"] == MARK_REPLAYABLE
    assert board.loc["c", "marks"] == MARK_LARGE_DELTA
    assert board.loc["d", "marks"] == MARK_PRIVATE_TABLES
    write_outputs(build_leaderboard(frame(rows)), frame(rows), tmp_path, title="t")
    text = (tmp_path / "leaderboard.md").read_text()
    b_line = next(line for line in text.splitlines() if "| *b* |" in line)
    assert b_line.startswith("| *-* |") and md_escape(MARK_REPLAYABLE) in b_line
    assert md_escape(MARK_LARGE_DELTA) in text and md_escape(MARK_PRIVATE_TABLES) in text
    table = pd.read_csv(tmp_path / "leaderboard.csv").set_index("mechanism")
    assert table.loc["b", "marks"] == MARK_REPLAYABLE and pd.isna(table.loc["b", "rank"])
    page = (tmp_path / "leaderboard.html").read_text()
    assert "class='marked'" in page and "Marks" in page
    for mark in (MARK_REPLAYABLE, MARK_LARGE_DELTA, MARK_PRIVATE_TABLES):
        assert f"<li><b>{mark.replace('>', '&gt;')}</b>" in page


def test_overall_pools_only_the_same_dataset_unit_and_delta():
    rows = []
    for t, e in enumerate(NOISE[:3]):
        rows += [tagged("a", t, 800 + e, eps=1), tagged("a", t, 900 + e, eps=10),
                 tagged("b", t, 100 + e, eps=1, delta="0.4")]  # only epsilon 1 at its delta
    overall = overall_board(build_leaderboard(frame(rows))).set_index("delta")
    assert overall.loc["2.5e-05", "mean"] == pytest.approx(850)
    assert overall.loc["0.4", "mean"] == pytest.approx(100)  # complete within its own pool
    assert overall["complete"].all() and list(overall["rank"]) == [1, 1]


# ----- escaping -----------------------------------------------------------------------------
def test_md_escape_and_csv_cell_by_hand():
    assert md_escape("a|b") == "a\\|b"
    assert md_escape("x*y_z`<s>\\") == "x\\*y\\_z\\`\\<s\\>\\\\"
    assert md_escape("one\ntwo\r\nthree") == "one two three"
    assert md_escape("[x](javascript:y)") == "\\[x\\](javascript:y)"
    for attack in ("=cmd()", "+1", "-2+3", "@SUM(A1)", "\tx", "\rx"):
        assert csv_cell(attack) == "'" + attack
    assert csv_cell(-2.5) == -2.5 and csv_cell(-3) == -3  # numbers stay numbers
    assert csv_cell("k=2") == "k=2" and csv_cell("-") == "-"


def test_hostile_labels_are_escaped_in_markdown_neutralised_in_csv_and_html(tmp_path):
    hostile = ["a|b", "=cmd()", "<script>alert(1)</script>", "x\ny"]
    rows = [run("m", 1.0, 0, 10.0 + i, hp=hp) for i, hp in enumerate(hostile)]
    rows.append(run("neg", 1.0, 0, -5.0))  # a negative score stays a number in the CSV
    board = build_leaderboard(frame(rows))
    write_outputs(board, frame(rows), tmp_path, title="<b>t</b> | x")
    text = (tmp_path / "leaderboard.md").read_text()
    assert "a\\|b" in text and "\\<script\\>" in text and "<script>" not in text
    assert "## \\<b\\>t\\</b\\> \\| x" in text
    table = [line for line in text.splitlines() if line.startswith("|")]
    cells = {len(line.replace("\\|", "").split("|")) for line in table}
    assert len(cells) == 1  # no label adds or splits a cell
    assert "x y" in text  # a newline cannot end the table row
    with open(tmp_path / "leaderboard.csv", newline="") as f:
        records = list(csv.DictReader(f))
    hps = {r["hyperparameters"] for r in records}
    assert "'=cmd()" in hps and "=cmd()" not in hps and "-" in hps
    assert all(not v.startswith(("=", "+", "@")) for r in records for v in r.values())
    neg = next(r for r in records if r["mechanism"] == "neg")
    assert float(neg["mean"]) == -5.0 and not neg["mean"].startswith("'")
    page = (tmp_path / "leaderboard.html").read_text()
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<b>t</b>" not in page and "&lt;b&gt;t&lt;/b&gt;" in page


def test_old_runs_without_the_new_tags_still_build_a_board_and_are_not_pooled_with_new_ones():
    old = [run("a", 1.0, t, 900 + e) for t, e in enumerate(NOISE[:3])]  # no new tags at all
    board = build_leaderboard(frame(old))
    assert len(board) == 1 and board.iloc[0]["n"] == 3 and board.iloc[0]["rank"] == 1
    assert board.iloc[0]["noise"] == "secret" and board.iloc[0]["marks"] == ""
    mixed = build_leaderboard(frame(old + [tagged("a", 0, 100.0)]))
    assert len(mixed) == 2 and sorted(mixed["n"]) == [1, 3]
    header_line = next(line for line in render_markdown(mixed).splitlines()
                       if line.startswith("| rank |"))
    assert "| delta |" in header_line and "| unit |" in header_line  # "" vs the tagged value
