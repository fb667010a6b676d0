"""The leaderboard on hand-made runs: statistics, ties, references, failures, overall, outputs,
never pooling different guarantees, marks, and escaped output.

Tolerances: (d) the Student t quantile t(0.975, 4) = 2.7764 is written to 4 digits (2.776):
rel=1e-3 is above that rounding (1.6e-4) and below any other quantile.
"""

from __future__ import annotations

import csv
import math
import re

import numpy as np
import pandas as pd
import pytest

from dp_arena.report.cells import column_decimals, first_line, fmt_seconds, md_escape
from dp_arena.report.leaderboard import (
    MARK_DECLARED,
    MARK_LARGE_DELTA,
    MARK_PRIVATE_TABLES,
    MARK_REPLAYABLE,
    build_leaderboard,
    compare,
    not_applicable_rows,
    overall_board,
    resolve_keys,
    tuning_gap,
    with_not_applicable,
)
from dp_arena.report.marks import (
    MARK_DOMAIN_FROM_DATA,
    MARK_READS_UNKNOWN,
    MARK_ROWS_FROM_DATA,
)
from dp_arena.report.plots import (
    mechanism_colours,
    pareto_figure,
    pareto_front,
    place_labels,
    plot_pareto,
    plot_score_vs_epsilon,
    score_vs_epsilon_figure,
)
from dp_arena.report.render import (
    csv_cell,
    csv_safe,
    render_html,
    render_markdown,
    write_outputs,
)
from tests.support.board import NEW_TAGS, frame, md_header, md_rows, run


def td_classes(page: str) -> set[str]:
    """Every class a table cell of ``page`` carries."""
    return {k for attr in re.findall(r'<td class="([^"]*)"', page) for k in attr.split()}


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
    starts = [cells[:2] for cells in md_rows(text)]
    assert ["1=", "a"] in starts and ["1=", "b"] in starts and ["3", "c"] in starts
    assert ["*ref*", "*uniform (floor)*"] in starts


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
            run("e", 1, 0, None, "KILLED"),  # stopped by a signal: interrupted
            # failed once, then finished with the same key: not a failure any more
            run("d", 1, 0, None, "FAILED", reason="flaky", start=1, key="d0"),
            run("d", 1, 0, 850, start=2, key="d0")]
    board = build_leaderboard(frame(rows)).set_index("mechanism")
    assert board.loc["a", "n"] == 1 and board.loc["a", "failed"] == 1
    assert board.loc["b", "n"] == 0 and board.loc["b", "failed"] == 1
    assert math.isnan(board.loc["b", "mean"]) and pd.isna(board.loc["b", "rank"])
    assert board.loc["c", "unfinished"] == 1 and board.loc["c", "failed"] == 0
    assert board.loc["c", "running"] == 1 and board.loc["e", "running"] == 0
    assert board.loc["d", "failed"] == 0 and board.loc["d", "n"] == 1
    text = render_markdown(build_leaderboard(frame(rows)))
    status = {cells[1]: cells[-1] for cells in md_rows(text)}
    assert status["b"] == "FAILED (1): time limit of 5 s exceeded"
    assert status["c"] == "1 running" and status["e"] == "1 interrupted"


def test_a_row_failing_for_several_reasons_shows_the_commonest_first_with_counts():
    """Two runs past the time limit and one killed: sorted text order would show the kill
    (``c`` < ``t``) as the row's reason; the status names the commonest, with counts."""
    limit = "time limit of 3600 s exceeded (stopped after 3600.1 s)\n  fix: raise it"
    rows = [run("x", 1, t, None, "FAILED", reason=limit) for t in (0, 1)]
    rows.append(run("x", 1, 2, None, "FAILED", reason="contestant 'x' failed (signal 9)"))
    rows.append(run("y", 1, 0, None, "FAILED", reason="boom\n  fix: none"))
    board = build_leaderboard(frame(rows)).set_index("mechanism")
    assert board.loc["x", "failure_reason"] == (
        "time limit of 3600 s exceeded (stopped after 3600.1 s) (2 runs); "
        "contestant 'x' failed (signal 9) (1 run)")
    assert board.loc["y", "failure_reason"] == "boom\n  fix: none"  # one reason: as it is
    status = {cells[1]: cells[-1] for cells in md_rows(render_markdown(
        build_leaderboard(frame(rows))))}
    assert status["x"].startswith("FAILED (3): time limit of 3600 s exceeded"), status["x"]


def test_a_cut_reason_says_it_was_cut():
    long = "x" * 119 + "yz"
    assert first_line(long) == "x" * 119 + "…" and len(first_line(long)) == 120
    assert first_line("x" * 120 + "\nsecond") == "x" * 120  # fits: not cut
    assert first_line(None) == ""


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
    assert "### tuning modes" in text and "*n/p*" in [cells[0] for cells in md_rows(text)]


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
    assert {"reference", "failed"} <= td_classes(page)
    csv = pd.read_csv(tmp_path / "leaderboard.csv")
    assert {"mean", "ci95", "std", "n", "rank", "tied", "seconds", "peak_memory_mb",
            "epsilon_spent", "failure_reason"} <= set(csv.columns)
    assert render_html(board, "t", None).startswith("<!doctype html>")


# ----- never pooling different guarantees, data or scores -----------------------------------


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
    assert md_escape(header) in md_header(text)   # the distinguishing column appears
    assert f">{header}</th>" in render_html(board, "t")


def test_compact_board_hides_columns_that_do_not_vary():
    board = build_leaderboard(frame([tagged("a", 0, 1.0), tagged("b", 0, 2.0)]))
    header = md_header(render_markdown(board))
    for hidden in ("delta", "unit", "data id", "dataset", "noise", "settings"):
        assert hidden not in header and not any("settings" in h for h in header)
    # same pool, but one trial each has no CI: neither is ranked, and no tie is claimed
    assert board["rank"].isna().all() and not board["tied"].any()


def test_single_trial_rows_are_not_ranked_against_each_other():
    rows = [tagged("a", 0, 900.0), tagged("b", 0, 800.0), tagged("c", 0, 700.0)]
    rows += [tagged("d", t, 100 + e) for t, e in enumerate(NOISE)]
    board = build_leaderboard(frame(rows)).set_index("mechanism")
    assert board.loc[["a", "b", "c"], "rank"].isna().all() and not board["tied"].any()
    assert board.loc["d", "rank"] == 1  # the one row with a CI; below the others by mean
    assert list(board.index) == ["a", "b", "c", "d"]


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
    b_row = next(cells for cells in md_rows(text) if cells[1] == "*b*")
    assert b_row[0] == "*-*" and md_escape(MARK_REPLAYABLE) in b_row[-1]
    assert md_escape(MARK_LARGE_DELTA) in text and md_escape(MARK_PRIVATE_TABLES) in text
    table = pd.read_csv(tmp_path / "leaderboard.csv").set_index("mechanism")
    assert table.loc["b", "marks"] == MARK_REPLAYABLE and pd.isna(table.loc["b", "rank"])
    page = (tmp_path / "leaderboard.html").read_text()
    assert "marked" in td_classes(page) and "Marks" in page
    for mark in (MARK_REPLAYABLE, MARK_LARGE_DELTA, MARK_PRIVATE_TABLES):
        assert f"<li><b>{mark.replace('>', '&gt;')}</b>" in page


def test_what_a_contestant_reads_from_the_data_marks_its_row():
    """claim.reads_from_data (loaded as ``claim_reads``) marks the row on every format; a row
    that declares nothing, or ``none``, carries no such mark."""
    rows = []
    for t, e in enumerate(NOISE[:3]):
        rows += [tagged("lib", t, 900 + e, accounting="declared", claim_reads="domain,row_count"),
                 tagged("bins", t, 800 + e, accounting="declared", claim_reads="bins"),
                 tagged("vague", t, 700 + e, accounting="declared", claim_reads="unknown"),
                 tagged("ours", t, 600 + e, claim_reads="none"), tagged("plain", t, 500 + e)]
    board = build_leaderboard(frame(rows)).set_index("mechanism")
    marks = {m: set(board.loc[m, "marks"].split("; ")) - {""} for m in board.index}
    assert marks["lib"] == {MARK_DECLARED, MARK_DOMAIN_FROM_DATA, MARK_ROWS_FROM_DATA}
    assert marks["bins"] == {MARK_DECLARED, MARK_DOMAIN_FROM_DATA}
    assert marks["vague"] == {MARK_DECLARED, MARK_READS_UNKNOWN}
    assert marks["ours"] == marks["plain"] == set()
    text = render_markdown(build_leaderboard(frame(rows)))
    for mark in (MARK_DOMAIN_FROM_DATA, MARK_ROWS_FROM_DATA, MARK_READS_UNKNOWN):
        assert f"- {md_escape(mark)}:" in text  # the legend explains each


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
    header = md_header(render_markdown(mixed))
    assert "delta" in header and "unit" in header  # "" vs the tagged value


# ----- formatting, statuses, n/a rows and the audit column ----------------------------------
def test_counts_print_as_integers_seconds_keep_two_digits_and_infinity_reads_not_private():
    rows = []
    for t, e in enumerate(NOISE[:3]):
        rows += [run("a", 1.0, t, 900 + e, seconds=0.012, n_synthetic_rows=24421.0),
                 run("resample", 1.0, t, 990 + e, reference="ceiling", private="false",
                     seconds=12.34)]
        rows[-1]["epsilon_spent"] = math.inf
    board = build_leaderboard(frame(rows))
    text = render_markdown(board)
    cells = {r[1]: dict(zip(md_header(text), r)) for r in md_rows(text) if r[0] != "rank"}
    assert cells["a"]["seconds"] == "0.012" and cells["a"]["eps spent"] == "1"
    assert cells["*resample (non-private ceiling)*"]["eps spent"] == "*∞ (not private)*"
    assert cells["*resample (non-private ceiling)*"]["seconds"] == "*12*"
    page = render_html(board, "t")
    assert ">24421</td>" in page and "24421.0" not in page
    assert "0.0s" not in text and ">0.012</td>" in page
    # MLflow's stored infinity (the largest float) reads as infinity too
    stored = board.assign(epsilon_spent=np.where(board["mechanism"] == "resample",
                                                 1.7976931348623157e308, 1.0))
    assert "1.797" not in render_markdown(stored) and "∞ (not private)" in render_markdown(stored)


def test_number_formats_by_hand():
    assert [fmt_seconds(x) for x in (0.0123, 0.25, 1.234, 9.96, 10.4, 1234.5)] == \
        ["0.012", "0.25", "1.2", "10", "10", "1234"]
    assert fmt_seconds(math.nan) == ""
    assert column_decimals([950.2, 12.0]) == 1 and column_decimals([0.87, 0.1]) == 3
    assert column_decimals([math.nan]) == 1


def test_overall_status_says_running_and_failed_instead_of_incomplete():
    rows = []
    for t, e in enumerate(NOISE[:3]):
        rows += [run("a", 1.0, t, 800 + e), run("a", 10.0, t, 900 + e)]
    rows += [run("b", 1.0, 0, None, "FAILED", reason="MemoryError: out of memory"),
             run("b", 10.0, 0, None, "FAILED", reason="MemoryError: out of memory"),
             run("c", 1.0, 0, None, "RUNNING"), run("c", 10.0, 0, None, "RUNNING"),
             run("d", 1.0, 0, 700.0), run("d", 10.0, 0, None, "FAILED", reason="boom")]
    board = build_leaderboard(frame(rows))
    text = render_markdown(board)
    overall = text.split("### overall")[1].split("### epsilon")[0]
    status = {r[1]: r[-1] for r in md_rows(overall) if r[0] != "rank"}
    assert status["a"] == "ok"
    assert status["b"] == "FAILED (2): MemoryError: out of memory"
    assert status["c"] == "running"
    assert status["d"] == "incomplete (only epsilon 1); 1 failed"
    assert "only epsilon -" not in text
    page = render_html(board, "t")
    overall_html = page.split("Overall (mean over epsilons)")[1].split("epsilon = 1")[0]
    assert ">status</th>" in overall_html and "FAILED (2): MemoryError" in overall_html


NA_RECORD = {"mechanism": "archetype", "hyperparameters": "-", "epsilon": 1.0, "delta": 1e-9,
             "dataset": "adult", "reason": "needs user-level data <b>|=x</b>"}


def test_not_applicable_rows_are_built_from_records():
    rows = not_applicable_rows([NA_RECORD, {**NA_RECORD, "epsilon": 10.0}])
    assert list(rows["status"]) == ["n/a", "n/a"] and list(rows["epsilon"]) == [1.0, 10.0]
    assert rows["rank"].isna().all() and rows["mean"].isna().all() and not rows["ranked"].any()
    assert list(rows["delta"]) == ["1e-09", "1e-09"] and list(rows["n"]) == [0, 0]
    assert not_applicable_rows([]).empty


def test_not_applicable_rows_close_their_table_in_markdown_html_and_csv(tmp_path):
    rows = []
    for t, e in enumerate(NOISE[:3]):
        rows += [run("a", eps, t, 800 + e + eps) for eps in (1.0, 10.0)]
        rows += [run("b", eps, t, 700 + e + eps) for eps in (1.0, 10.0)]
    board = build_leaderboard(frame(rows))
    both = with_not_applicable(board, [NA_RECORD, {**NA_RECORD, "epsilon": 10.0}])
    assert both.attrs["metric"] == board.attrs["metric"]
    write_outputs(both, frame(rows), tmp_path, title="t")
    text = (tmp_path / "leaderboard.md").read_text()
    for section in text.split("### epsilon = ")[1:]:
        body = [r for r in md_rows(section) if r[0] != "rank"]
        assert [r[1] for r in body] == ["a", "b", "*archetype*"]   # last in its table
        assert body[-1][0] == "*n/a*"
        assert body[-1][-1] == "*n/a: needs user-level data \\<b\\>\\|=x\\</b\\>*"
    overall = text.split("### overall")[1].split("### epsilon")[0]
    ranks = {r[1]: r[0] for r in md_rows(overall) if r[0] != "rank"}
    assert ranks == {"a": "1", "b": "2", "*archetype*": "*n/a*"}   # ranks untouched, n/a once
    page = (tmp_path / "leaderboard.html").read_text()
    assert "na" in td_classes(page) and "<b>|=x" not in page
    assert "needs user-level data &lt;b&gt;|=x&lt;/b&gt;" in page
    table = pd.read_csv(tmp_path / "leaderboard.csv")
    na = table[table["status"].str.startswith("n/a: ")]  # a bare n/a would read back as NaN
    assert len(na) == 2 and na["rank"].isna().all()
    # the CSV guards the formula after the '|' a spreadsheet may split on
    assert set(na["reason"]) == {NA_RECORD["reason"].replace("|=", "|'=")}
    assert list(table["mechanism"])[-1] == "archetype"
    overall_csv = pd.read_csv(tmp_path / "leaderboard_overall.csv")
    assert overall_csv["status"].str.startswith("n/a: ").sum() == 1


def test_a_metric_that_did_not_apply_is_an_na_cell_with_its_reason(tmp_path):
    """Runs tagged ``metric_na/challenge`` show ``n/a`` (not a blank, not a zero) in the
    challenge column; scored rows keep their number; the legends say why, once."""
    why = "challenge needs the taxi schema <b>; dataset 'adult' does not have it"
    rows = []
    for t, e in enumerate(NOISE[:3]):
        rows.append(run("a", 1.0, t, 800 + e, **{"na:challenge": why}))
        rows.append(run("b", 1.0, t, 700 + e, **{"challenge/overall": 500.0 + e}))
    board = build_leaderboard(frame(rows))
    assert board.attrs["metric"] == "kmarginal/score"
    write_outputs(board, frame(rows), tmp_path, title="t")
    text = (tmp_path / "leaderboard.md").read_text()
    header = md_header(text)
    col = header.index("challenge/overall")
    cells = {r[1]: r[col] for r in md_rows(text) if r[0] != "rank"}
    assert cells["a"] == "n/a" and cells["b"] == f"{500 + np.mean(NOISE[:3]):.1f}"
    assert text.count("- n/a in a score column, challenge: challenge needs the taxi schema "
                      "\\<b\\>") == 1
    page = (tmp_path / "leaderboard.html").read_text()
    assert "challenge needs the taxi schema &lt;b&gt;" in page and "<b>;" not in page
    table = pd.read_csv(tmp_path / "leaderboard.csv")
    assert table.set_index("mechanism").loc["a", "na:challenge"] == why


def audited(board: pd.DataFrame, eps_lb: dict[str, float], verdict: dict[str, str]
            ) -> pd.DataFrame:
    out = board.copy()
    out["eps_lb"] = out["mechanism"].map(eps_lb).astype(float)
    out["audit_verdict"] = out["mechanism"].map(verdict).astype(object)
    return out


def test_audit_column_appears_only_when_audited_and_a_violation_is_marked():
    rows = []
    for t, e in enumerate(NOISE[:3]):
        rows += [run("a", 1.0, t, 800 + e), run("leaky", 1.0, t, 900 + e)]
    board = build_leaderboard(frame(rows))
    legend = "empirical lower bound on epsilon from dp-arena-audit"
    for none in (board, audited(board, {}, {})):
        assert not any("audit" in h for h in md_header(render_markdown(none)))
        assert legend not in render_html(none, "t")
    both = audited(board, {"a": 0.3, "leaky": 2.5}, {"a": "ok", "leaky": "VIOLATION"})
    both.attrs.update(board.attrs, audit_confidence=0.95)
    text = render_markdown(both)
    header = md_header(text)
    assert header.index("eps lower bound (audit)") == header.index("eps spent") + 1
    cells = {r[1]: dict(zip(header, r)) for r in md_rows(text) if r[0] != "rank"}
    assert cells["a"]["eps lower bound (audit)"] == "0.30" and cells["a"]["status"] == "ok"
    assert cells["leaky"]["eps lower bound (audit)"] == "2.50 VIOLATION"
    assert cells["leaky"]["status"].startswith("AUDIT VIOLATION: lower bound 2.50")
    page = render_html(both, "t")
    assert f"{legend} at 95% confidence" in page and "violation" in td_classes(page)
    violating = re.findall(r'<tr>\s*<td class="([^"]*)"[^>]*>[^<]*</td>\s*<td[^>]*>leaky<', page)
    assert violating and "violation" in violating[0].split()


# ----- plots --------------------------------------------------------------------------------
def plot_board(long: int = 0, epsilons: tuple[float, ...] = (1.0, 10.0)) -> pd.DataFrame:
    """10 mechanisms, 3 trials, a second setting with a label of ``long`` characters for
    every other mechanism, a failed row and an n/a row."""
    rows = []
    for i in range(10):
        ref = "floor" if i == 9 else ""
        for hp in ["-"] + ([f"marginals={'x' * long}"] if long and i % 2 == 0 else []):
            for eps in epsilons:
                for t, e in enumerate(NOISE[:3]):
                    rows.append(run(f"mech{i}", eps, t, 500 + 20 * i + e + math.log(eps), hp=hp,
                                    reference=ref, seconds=0.05 * (i + 1) + e / 100 + 0.1))
    rows.append(run("broken", epsilons[0], 0, None, "FAILED", reason="boom"))
    return with_not_applicable(build_leaderboard(frame(rows)), [
        {**NA_RECORD, "epsilon": epsilons[0]}])


def test_plots_stay_bounded_with_very_long_settings_labels(tmp_path):
    from PIL import Image

    board = plot_board(long=3000, epsilons=(0.1, 0.3, 1.0, 3.0, 10.0, 30.0))
    for plot in (plot_score_vs_epsilon, plot_pareto):
        width, height = Image.open(plot(board, tmp_path / f"{plot.__name__}.png")).size
        assert width <= 2400 and height <= 2400, (plot.__name__, width, height)
        assert width / height < 4, (plot.__name__, width, height)  # no sliver


def test_one_colour_per_mechanism_in_every_panel_of_both_plots():
    from matplotlib.colors import to_rgba

    board = plot_board(long=50)
    expected = mechanism_colours(f"mech{i}" for i in range(10))
    assert len(set(expected.values())) == 10  # distinct colours
    seen: dict[str, set] = {}
    for line in score_vs_epsilon_figure(board).axes[0].get_lines():
        if line.get_gid():
            seen.setdefault(line.get_gid(), set()).add(to_rgba(line.get_color()))
    fig = pareto_figure(board)
    assert sum(ax.get_visible() for ax in fig.axes) == 2
    for ax in fig.axes:
        for points in ax.collections:
            if points.get_gid():
                seen.setdefault(points.get_gid(), set()).add(
                    tuple(points.get_facecolor()[0][:3]) + (1.0,))
    assert set(seen) == set(expected)   # failed and n/a rows are not plotted
    for mech, colours in seen.items():
        assert colours == {expected[mech]}, mech
    # stable: the mapping does not depend on the order the mechanisms come in
    assert mechanism_colours(reversed(list(expected))) == expected


def test_place_labels_avoids_overlaps():
    points = np.array([[100.0, 100.0], [100.0, 100.0], [100.0, 100.0], [103.0, 101.0]])
    offsets = place_labels(points, [(8.0, 8.0)] * 4)
    boxes = [(x + dx, y + dy, x + dx + 8, y + dy + 8) for (x, y), (dx, dy) in zip(points, offsets)]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], (a, b)


# ----- a metric's settings on the board -----------------------------------------------------
def test_the_board_shows_the_metric_setting_not_its_hash():
    from dp_arena.report.render import render_markdown

    rows = [run("a", 1.0, t, 900.0 + t, **{**NEW_TAGS, "metric_key/kmarginal": "h2",
                                           "metric_settings/kmarginal": "k=2"})
            for t in range(2)]
    rows += [run("a", 1.0, t, 700.0 + t, **{**NEW_TAGS, "metric_key/kmarginal": "h3",
                                            "metric_settings/kmarginal": "k=3"})
             for t in range(2)]
    board = build_leaderboard(frame(rows))
    assert sorted(board["metric_setting"]) == ["k=2", "k=3"]
    text = render_markdown(board)
    assert "kmarginal settings" in md_header(text) and "k=3" in text and "h3" not in text


# ----- CSV cells a spreadsheet would evaluate ----------------------------------------------
@pytest.mark.parametrize("cell, safe", [
    ("x;=1+1", "x;'=1+1"), ("a,+SUM(A1)", "a,'+SUM(A1)"), ("a|@cmd", "a|'@cmd"),
    ("a\t=1", "a\t'=1"), ("a\r-1", "a\r'-1"), ("=1;=2", "'=1;'=2"),
    ("k=2", "k=2"), ("rounds=24,iters=100", "rounds=24,iters=100"), ("-", "-")])
def test_every_cell_a_spreadsheet_would_evaluate_is_guarded(cell, safe):
    assert csv_cell(cell) == safe


def test_csv_safe_guards_inner_separators_of_every_text_column():
    frame = csv_safe(pd.DataFrame({"hyperparameters": ["x;=1+1", "k=2"], "n": [1, 2]}))
    assert frame["hyperparameters"].tolist() == ["x;'=1+1", "k=2"]
