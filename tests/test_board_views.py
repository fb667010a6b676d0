"""The held-out scores on the board: the utility view and the risk view ("empirical risk, not a DP
guarantee") appear in every format only when runs logged their metrics; the bound a row's
claimed budget implies, min(1, e^epsilon * FPR + delta), and the mark when a membership attack
beats it significantly; ranking by the new metrics in the right direction; the utility plot.

Tolerances: (a) the tpr bound e^eps * fpr + delta by hand: abs=1e-15 is 18 ulps of 0.27 and 290
of 0.027, above the rounding of exp, a product and a sum (<= 3 ulps); through the board (read
back from logged metrics) abs=1e-12; (d) the pMSE ratio is read back from the printed board, rounded for
display: abs=0.005 is half a unit of a 2-decimal print (more decimals round less) and far
below the ratios that could be confused.
"""

from __future__ import annotations

import math
import os
import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dp_arena.report.direction import ranks_lower
from dp_arena.report.leaderboard import MARK_DECLARED, build_leaderboard
from dp_arena.report.plots import utility_vs_epsilon_figure
from dp_arena.report.render import (
    render_html,
    render_markdown,
    write_outputs,
)
from dp_arena.report.risk import (
    BEATS_BOUND,
    MARK_BEATS_BOUND,
    beats_bound,
    claimed_budget,
    dp_tpr_bound,
)
from dp_arena.report.terminal import render_terminal
from dp_arena.report.views import REAL_REFERENCE
from tests.support.board import frame, md_rows, run
from tests.support.views import LEAK_TAGS, NOISE, REAL, sweep

PLAIN = ("staying under the bound proves nothing; beating it is evidence against the claimed "
         "budget")


@pytest.fixture(autouse=True)
def terminal_of_120_columns(monkeypatch):
    """The terminal board takes the width the terminal reports: 120 here, whatever runs
    the tests."""
    monkeypatch.setenv("COLUMNS", "120")


def by_mechanism(board: pd.DataFrame) -> pd.DataFrame:
    return board.set_index("mechanism")


def section(text: str, title: str) -> str:
    """The Markdown from heading ``### title`` to the next ``### `` heading."""
    start = text.index(f"### {title}")
    end = text.find("\n### ", start + 1)
    return text[start:] if end < 0 else text[start:end]


# ----- the bound ----------------------------------------------------------------------------
def test_the_bound_is_e_to_the_epsilon_times_fpr_plus_delta_capped_at_one():
    # by hand: e = 2.718281828459045
    assert dp_tpr_bound(1.0, 1e-6, 0.1) == pytest.approx(0.2718281828459045 + 1e-6, abs=1e-15)
    assert dp_tpr_bound(1.0, 1e-6, 0.01) == pytest.approx(0.02718281828459045 + 1e-6,
                                                          abs=1e-15)
    assert dp_tpr_bound(0.0, 0.0, 0.1) == pytest.approx(0.1)  # epsilon 0: no better than chance
    assert dp_tpr_bound(5.0, 0.0, 0.1) == 1.0  # e^5 * 0.1 = 14.8: capped
    assert dp_tpr_bound(1e6, 0.0, 0.01) == 1.0  # no overflow


def test_claimed_budget_is_the_rows_epsilon_and_delta_and_none_without_a_claim():
    assert claimed_budget({"kind": "dp", "epsilon": 1.0, "delta": "1e-06"}) == (1.0, 1e-6)
    # a schema proposed with budget: the release claims schema + mechanism
    assert claimed_budget({"kind": "dp", "epsilon": 1.0, "delta": "1e-06",
                           "epsilon_total": 1.5, "delta_total": 2e-6}) == (1.5, 2e-6)
    assert claimed_budget({"kind": "reference", "epsilon": 1.0, "delta": "1e-06",
                           "epsilon_spent": math.inf}) is None  # resample
    assert claimed_budget({"kind": "dp", "epsilon": 1.0, "delta": "1e-06",
                           "epsilon_total": math.inf}) is None  # schema from private data
    assert claimed_budget({"kind": "non-private", "epsilon": 1.0, "delta": "1e-06"}) is None
    assert claimed_budget({"kind": "dp", "epsilon": 1.0, "delta": ""}) is None  # unknown
    # rows that spend nothing claim nothing: public_only and uniform, and any zero spend
    for ref in ("public", "floor"):
        assert claimed_budget({"kind": "reference", "reference": ref, "epsilon": 1.0,
                               "delta": "1e-06", "epsilon_spent": 0.0}) is None
    assert claimed_budget({"kind": "dp", "epsilon": 1.0, "delta": "1e-06",
                           "epsilon_spent": 0.0}) is None
    # a schema spend is a spend
    assert claimed_budget({"kind": "dp", "epsilon": 1.0, "delta": "1e-06", "epsilon_spent": 0.0,
                           "epsilon_total": 0.5, "delta_total": 1e-6}) == (0.5, 1e-6)


def test_the_default_boards_risk_view_shows_no_budget_for_rows_that_spend_nothing():
    from tests.support.default_board import runs_frame, stored_runs, with_trials

    board = build_leaderboard(runs_frame(with_trials(stored_runs(), 3)))
    md = render_markdown(board).split("#### risk view: empirical risk, not a DP guarantee, "
                                      "epsilon = 10")[1]
    rows = {r[0].strip("*"): r for r in md_rows(md) if r[0] != "mechanism"}
    header = next(r for r in md_rows(md) if r[0] == "mechanism")
    claim = header.index("claimed (eps, delta)")
    bounds = [i for i, h in enumerate(header) if h.startswith("bound")]
    assert len(bounds) == 2
    for ref in ("resample (non-private ceiling)", "public\\_only (public data only)",
                "uniform (floor)"):
        assert [rows[ref][i].strip("*") for i in (claim, *bounds)] == ["none"] * 3, ref
    assert rows["independent"][claim] == "10, 2.5e-05"
    assert [rows["independent"][i] for i in bounds] == ["1.000", "1.000"]


def test_the_mark_needs_the_lower_ci_end_above_the_bound():
    bound = math.e * 0.1 + 1e-6  # 0.27183...
    row = {"kind": "dp", "epsilon": 1.0, "delta": "1e-06"}
    assert beats_bound({**row, "membership/tpr_at_fpr_0.1_lo": bound + 1e-4}, 0.1)
    assert not beats_bound({**row, "membership/tpr_at_fpr_0.1_lo": bound - 1e-4}, 0.1)
    # the point estimate above the bound is not enough: its CI must clear it
    assert not beats_bound({**row, "membership/tpr_at_fpr_0.1": 0.5,
                            "membership/tpr_at_fpr_0.1_lo": 0.2}, 0.1)
    # no claim, no mark, however strong the attack
    assert not beats_bound({**row, "epsilon_spent": math.inf,
                            "membership/tpr_at_fpr_0.1_lo": 0.99}, 0.1)
    assert not beats_bound(row, 0.1)  # no attack logged


def test_the_planted_leak_is_marked_and_the_uniform_floor_is_not():
    board = build_leaderboard(frame(sweep()))
    by = by_mechanism(board)
    assert by.loc["test_copies_training", "tpr_bound_fpr_0.1"] == pytest.approx(
        math.e * 0.1 + 1e-6, abs=1e-12)
    assert by.loc["test_copies_training", "tpr_bound_fpr_0.01"] == pytest.approx(
        math.e * 0.01 + 1e-6, abs=1e-12)
    assert by.loc["test_copies_training", BEATS_BOUND] == "0.01,0.1"
    assert MARK_BEATS_BOUND in by.loc["test_copies_training", "marks"]
    for mech in ("independent", "uniform", "resample"):
        assert by.loc[mech, BEATS_BOUND] == "" and MARK_BEATS_BOUND not in by.loc[mech, "marks"]
    assert math.isnan(by.loc["resample", "tpr_bound_fpr_0.1"])  # epsilon spent inf: no bound
    # the risk view: the leak's TPR cells carry "!", its bounds are shown, resample has none
    text = render_markdown(board)
    cells = {r[0]: r for r in md_rows(section(text, "risk view"))[1:]}
    header = md_rows(section(text, "risk view"))[0]
    leak, uni = cells["test\\_copies\\_training"], cells["*uniform (floor)*"]
    at = {h: i for i, h in enumerate(header)}
    assert leak[at["TPR @ FPR 0.1 \\[95% CI\\]"]] == "0.990 \\[0.970, 1.000\\] !"
    assert leak[at["TPR @ FPR 0.01 \\[95% CI\\]"]].endswith(" !")
    assert leak[at["bound @ FPR 0.1"]] == "0.272" and leak[at["bound @ FPR 0.01"]] == "0.027"
    assert leak[at["claimed (eps, delta)"]] == "1, 1e-06"
    assert "!" not in uni[at["TPR @ FPR 0.1 \\[95% CI\\]"]]
    assert cells["*resample (non-private ceiling)*"][at["bound @ FPR 0.1"]] == "*none*"
    assert leak[at["copy share train / held-out"]] == "1.000 / 0.000"


# ----- the views ----------------------------------------------------------------------------
@pytest.mark.parametrize("with_utility,with_risk", [(False, False), (True, False),
                                                    (False, True), (True, True)])
def test_views_appear_in_every_format_only_when_their_metrics_are_logged(
        with_utility, with_risk, tmp_path):
    board = build_leaderboard(frame(sweep(with_utility, with_risk)))
    md = render_markdown(board)
    html = render_html(board, "t")
    term = render_terminal(board, "t")
    flat = " ".join(term.split())
    for shown, needles in ((with_utility, ["utility view", REAL_REFERENCE]),
                           (with_risk, ["empirical risk, not a DP guarantee", PLAIN])):
        for needle in needles:
            assert (needle in md) == shown
            assert (needle in html) == shown
            assert (needle in flat) == shown
    assert max(len(line) for line in term.splitlines()) <= 120
    paths = write_outputs(board, frame([]), tmp_path)
    plot = tmp_path / "utility_vs_epsilon.png"
    assert (plot in paths) == with_utility and plot.is_file() == with_utility
    if with_utility:
        assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_utility_view_shows_score_ci_and_the_train_on_real_reference_once_per_dataset():
    board = build_leaderboard(frame(sweep(with_risk=False, epsilons=(1.0, 10.0))))
    text = render_markdown(board)
    view = section(text, "utility view")
    tables = view.split("#### ")[1:]
    assert [t.splitlines()[0] for t in tables] == ["utility view, epsilon = 1",
                                                   "utility view, epsilon = 10"]
    half = stats.t.ppf(0.975, 2) * np.std(NOISE, ddof=1) / math.sqrt(3)  # 0.0248
    for table in tables:
        rows = md_rows(table)
        names = [r[0] for r in rows[1:]]
        # best ML efficacy first, the reference row last, once (one dataset)
        assert names == ["*resample (non-private ceiling)*", "test\\_copies\\_training",
                         "independent", "*uniform (floor)*",
                         f"*{REAL_REFERENCE}*"]
        score = {r[0]: r[rows[0].index("ml\\_efficacy/score")] for r in rows[1:]}
        assert score["independent"] == f"0.800 ± {half:.3f}"
        assert score[f"*{REAL_REFERENCE}*"] == f"*{REAL:.3f}*"
        ratio = {r[0]: r[rows[0].index("propensity/pmse\\_ratio")] for r in rows[1:]}
        assert float(ratio["independent"]) == pytest.approx(1 / 0.8, abs=0.005)


def test_the_utility_view_reads_the_ranking_metric_when_ranked_by_it():
    board = build_leaderboard(frame(sweep(with_risk=False)), "ml_efficacy/score")
    assert board.attrs["metric"] == "ml_efficacy/score"
    rows = md_rows(section(render_markdown(board), "utility view"))
    score = {r[0]: r[rows[0].index("ml\\_efficacy/score")] for r in rows[1:]}
    assert score["independent"].startswith("0.800 ± ")
    assert score[f"*{REAL_REFERENCE}*"] == f"*{REAL:.3f}*"


def test_the_utility_plot_has_one_line_per_setting_and_the_reference_line():
    board = build_leaderboard(frame(sweep(with_risk=False, epsilons=(1.0, 10.0))))
    fig = utility_vs_epsilon_figure(board)
    ax = fig.axes[0]
    reference = [line for line in ax.lines if line.get_gid() == "train_on_real"]
    assert len(reference) == 1 and reference[0].get_linestyle() == "-."
    assert reference[0].get_ydata()[0] == pytest.approx(REAL)
    drawn = {c.lines[0].get_gid() for c in ax.containers}  # one errorbar container per setting
    assert drawn == {"test_copies_training", "independent", "uniform", "resample"}
    independent, = [c for c in ax.containers if c.lines[0].get_gid() == "independent"]
    assert list(independent.lines[0].get_xdata()) == [1.0, 10.0]
    assert list(independent.lines[0].get_ydata()) == pytest.approx([0.8, 0.8])


# ----- ranking ------------------------------------------------------------------------------
@pytest.mark.parametrize("metric,lower", [
    ("membership/auc", True), ("membership/tpr_at_fpr_0.01", True),
    ("membership/tpr_at_fpr_0.1_lo", True), ("membership/copy_share_train", True),
    ("membership/copy_share_heldout", False), ("propensity/pmse_ratio", True),
    ("propensity/auc", True), ("range_query/mean_rel_error", True),
    ("ml_efficacy/score", False), ("ml_efficacy/real_score", False),
    ("ml_efficacy/gap", False),  # synthetic minus real: higher (closer to 0) is better
    # unchanged
    ("kmarginal/score", False), ("challenge/overall", False),
    ("count_query/mean_relative_error", True), ("frequent_patterns/true_positives", False),
    ("count_query/mre_size_2", True)])
def test_runs_without_direction_tags_rank_as_the_registered_metric_declares(metric, lower):
    assert ranks_lower(metric) is lower


def test_held_out_scores_kept_on_the_owners_side_are_named_not_shown_empty():
    """Runs scored with ml_efficacy and membership whose scores stayed on the owner's side:
    the board names them in one line (with the opt-in) and shows no empty ML column; once a
    run logged them (the owner's opt-in), the line goes and the column comes."""
    keys = {"metric_key:ml_efficacy": "k1", "metric_key:membership": "k2",
            "metric_key:kmarginal": "k3"}
    rows = [{**run(m, 1.0, t, v + NOISE[t] / 10), **keys, "propensity/pmse_ratio": 1.1}
            for t in range(3) for m, v in (("mst", 600.0), ("aim", 610.0))]
    board = build_leaderboard(frame(rows))
    assert board.attrs["owner_side"] == ["membership", "ml_efficacy"]
    text = render_terminal(board, width=100)
    assert "held-out scores not in the store: membership, ml_efficacy" in " ".join(text.split())
    assert "ml_efficacy/score" not in text
    logged = [{**r, "ml_efficacy/score": 0.8, "membership/auc": 0.5} for r in rows]
    board = build_leaderboard(frame(logged))
    assert board.attrs["owner_side"] == []
    assert "held-out scores not in the store" not in render_terminal(board, width=100)


def test_a_contestant_run_without_the_sandbox_is_marked():
    """A contestant's runs carry ``contestant.isolation``; a row run with
    ``contestant.isolation=none`` is marked (and explained), a sandboxed one is not."""
    from dp_arena.report.marks import MARK_LEGEND, MARK_UNSANDBOXED

    rows = [{**run(m, 1.0, t, v + NOISE[t] / 10), "accounting": "declared",
             "contestant_isolation": iso}
            for t in range(3) for m, v, iso in (
                ("external", 600.0, "bubblewrap, as nobody"),
                ("opendp_mst", 610.0, "none (contestant.isolation=none)"))]
    board = build_leaderboard(frame(rows)).set_index("mechanism")
    assert MARK_UNSANDBOXED in board.loc["opendp_mst", "marks"]
    assert MARK_UNSANDBOXED not in board.loc["external", "marks"]
    assert MARK_UNSANDBOXED in dict(MARK_LEGEND)


def test_a_plugin_score_named_score_that_is_lower_is_better_ranks_lowest_first():
    """The board reads each score's direction from the runs' ``lower_is_better/<metric>``
    tags (the metric's declaration): a plugin's ``distance_score/plugin_score`` is a
    distance, so the smallest mean is first, whatever its name says; without the tag (the
    metric not declaring it lower), the same runs rank the other way."""
    key = "distance_score/plugin_score"
    values = {"far": 0.9, "near": 0.1, "middle": 0.5}
    declared = {"lower_is_better": key, "direction_metrics": "distance_score"}
    rows = [{**run(m, 1.0, t, None, **declared), key: v + NOISE[t] / 100}
            for t in range(3) for m, v in values.items()]
    board = build_leaderboard(frame(rows), metric=key)
    assert board["mechanism"].tolist() == ["near", "middle", "far"]
    assert board["rank"].tolist() == [1, 2, 3] and board.attrs["lower_is_better"]
    assert f"ranked by {key} (lower is better" in render_terminal(board, width=100)
    undeclared = [{**r, "lower_is_better": "", "direction_metrics": "distance_score"}
                  for r in rows]
    flipped = build_leaderboard(frame(undeclared), metric=key)
    assert flipped["mechanism"].tolist() == ["far", "middle", "near"]


def dp_rows(metric: str, values: dict[str, float]) -> list[dict]:
    """Three trials of DP rows whose ``metric`` is ``values[mech]`` plus trial noise."""
    return [{**run(mech, 1.0, t, 100.0, **LEAK_TAGS), metric: v + NOISE[t] / 10}
            for t in range(3) for mech, v in values.items()]


@pytest.mark.parametrize("metric,best,worst", [
    ("membership/auc", 0.52, 0.90), ("ml_efficacy/score", 0.85, 0.60),
    ("propensity/pmse_ratio", 1.1, 4.0), ("range_query/mean_rel_error", 0.05, 0.5)])
def test_ranking_by_a_new_metric_puts_the_better_row_first(metric, best, worst):
    board = build_leaderboard(frame(dp_rows(metric, {"good": best, "bad": worst})), metric)
    by = by_mechanism(board)
    assert (by.loc["good", "rank"], by.loc["bad", "rank"]) == (1, 2)
    assert board["mechanism"].tolist() == ["good", "bad"]


def test_dp_arena_board_ranks_by_membership_auc(tmp_path, capsys, monkeypatch):
    from dp_arena.cli.board import main
    from dp_arena.report.tracking import client_for

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = client_for(uri)
    exp = client.create_experiment("dp-arena/adult")
    for row in dp_rows("membership/auc", {"safe": 0.51, "leaky": 0.95}):
        r = client.create_run(exp, tags={k: str(row[k]) for k in (
            "mechanism", "hyperparameters", "epsilon", "trial", "run_key", *LEAK_TAGS)})
        client.log_metric(r.info.run_id, "membership/auc", row["membership/auc"])
        client.log_metric(r.info.run_id, "kmarginal/score", 100.0)
        client.set_terminated(r.info.run_id, "FINISHED")
    monkeypatch.setenv("DP_ARENA_BOARD", "markdown")
    assert main(["--tracking-uri", uri, "--experiment", "dp-arena/adult", "--metric",
                 "membership/auc", "--out", str(tmp_path / "lb")]) == 0
    out = capsys.readouterr().out
    assert "ranked by membership/auc (lower is better)" in out
    first = [r[:2] for r in md_rows(out) if r[0] in ("1", "2")]
    assert first == [["1", "safe"], ["2", "leaky"]]
    assert "risk view" in out and not os.path.exists(tmp_path / "lb" / "utility_vs_epsilon.png")
    # the ranking metric in the risk view: 0.51 +- 0.001 noise, 4.303 * 0.001 / sqrt(3) = 0.0025
    assert re.search(r"\| safe +\| .*\| +0\.510 ± 0\.002 +\|", out)


# ----- end to end: the planted leak through the runner ----------------------------------------
def wide_csv(folder, n: int = 1200, seed: int = 5) -> None:
    """A record-level CSV of ``n`` rows over six 10-valued columns (10^6 cells, so rows are
    almost all distinct and a held-out row rarely equals a training row), and its schema."""
    from dp_arena.data.schema import Column, Schema

    rng = np.random.default_rng(seed)
    names = [f"c{i}" for i in range(6)]
    pd.DataFrame({c: rng.integers(0, 10, size=n) for c in names}).to_csv(
        folder / "private.csv", index=False)
    Schema(tuple(Column(c, "categorical", values=tuple(range(10))) for c in names)).save(
        folder / "parameters.json")


def test_the_planted_leak_run_end_to_end_is_marked_and_uniform_is_not(tmp_path, tracking_uri):
    pytest.importorskip("dp_arena.metrics.membership", reason="the membership metric is not there yet")
    from dp_arena.report.leaderboard import load_runs
    from dp_arena.run.runner import run_one
    from dp_arena.metrics import METRICS

    if "membership" not in METRICS:
        pytest.skip("the membership metric is not registered yet")
    wide_csv(tmp_path)
    for mechanism in ("test_copies_training", "uniform"):
        out = run_one({
            "dataset": {"name": "csv", "path": str(tmp_path / "private.csv"),
                        "schema": str(tmp_path / "parameters.json"),
                        "holdout_fraction": 0.3, "split_seed": 1},
            "mechanism": {"name": mechanism},
            "privacy": {"epsilon": 1.0, "delta": 1e-6, "accountant": "gdp"},
            "metrics": {"membership": {}}, "trial": 0, "seed": 0,
            "plugins": ["tests.doubles"],
            "tracking": {"uri": tracking_uri, "experiment": "test",
                         "log_private_synthetic": False,
                         "log_heldout_scores": True}})  # the owner's own store: opted in
        assert out.status == "FINISHED"
    board = build_leaderboard(load_runs("test", tracking_uri), "membership/auc")
    by = by_mechanism(board)
    assert MARK_DECLARED in by.loc["test_copies_training", "marks"]  # a declared budget
    assert by.loc["test_copies_training", BEATS_BOUND] != ""
    assert MARK_BEATS_BOUND in by.loc["test_copies_training", "marks"]
    assert by.loc["uniform", BEATS_BOUND] == ""
    assert "0.1" in by.loc["test_copies_training", BEATS_BOUND]
    assert by.loc["test_copies_training", "membership/copy_share_train"] == pytest.approx(1.0)
