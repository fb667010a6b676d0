"""The sweep's own lines (the plan up front, the summary) within the
width the terminal reports; the ETA of a contestant, a lower bound until one of its runs
finished, then its own runs' cost, never a guessed factor; the utility view's legend saying
only what applies.

Tolerances: (a) every pytest.approx here compares hand-computed arithmetic: its default, 1e-6
relative (and 1e-12 absolute), is far above the rounding of a few operations and far below any
wrong formula.
"""

from __future__ import annotations

import pytest

from dp_arena.report.leaderboard import build_leaderboard
from dp_arena.report.terminal import render_terminal
from dp_arena.report.views import UTILITY_PARTS, view_legends
from dp_arena.sweep.progress import RunState, estimate, eta_seconds, measured_costs
from dp_arena.sweep.records import JobPlan, Outcome, SweepPlan
from dp_arena.sweep.summary import announce_lines, print_summary
from tests.support.board import frame
from tests.support.views import sweep

WIDTHS = [80, 120]

# ----- the sweep's own lines within the width ----------------------------------------------------
LONG_REASON = ("prefix_tree needs sequence data (a person id and an ordered location column), "
               "and this dataset has one row per person with no order: choose a mechanism for "
               "tabular data such as independent, mst or aim, or load a dataset with "
               "sequences such as msnbc")
DELTA_NOTE = ("privacy.delta was not set: 1e-06 by the default-delta rule, 1/(10 N) rounded "
              "down to a power of ten for a public bound N = 48,842 on the persons of adult "
              "(set privacy.delta to choose another; a delta above 1/N allows releasing a "
              "person's row outright)")
PLANNING_NOTE = ("aim_quick[quick] on /a/rather/long/path/to/the/users/own/table/"
                 "with_a_name_that_does_not_fit_on_one_line_of_eighty_columns.csv: the "
                 "workload of every 3-way marginal is cut to the 256 cells a round can afford")


def long_plan() -> SweepPlan:
    jobs = (JobPlan(0, "run", "independent eps=1 trial=0", mechanism="independent"),
            *[JobPlan(k, "n/a", f"prefix_tree eps=1 trial={k}", LONG_REASON,
                      mechanism="prefix_tree") for k in (1, 2)],
            JobPlan(3, "duplicate", "independent eps=1 trial=0", same_as=0,
                    mechanism="independent"))
    return SweepPlan(jobs, metrics_na={"challenge on adult": "challenge needs the Sprint 3 taxi "
                                       "columns (pickup_community_area, shift, ...); adult has "
                                       "none of them; the other metrics score it"},
                     notes={DELTA_NOTE: 4, PLANNING_NOTE: 1}, total=1)


def words(lines: list[str]) -> list[str]:
    return " ".join(lines).split()


def letters(lines: list[str]) -> str:
    """The text without its white space (a word longer than the width is broken)."""
    return "".join(words(lines))


@pytest.mark.parametrize("width", WIDTHS)
def test_the_plan_up_front_fits_the_width_and_loses_no_word(width):
    plan = long_plan()
    lines = announce_lines(plan, width)
    assert max(len(line) for line in lines) <= width, lines
    # every item is said whole (wrapping moves words, it drops none)
    expected = ["sweep: 1 run, 2 n/a, 1 identical to another job (run once)",
                f"n/a  prefix_tree: {LONG_REASON} (2 jobs)",
                # a metric's first reason only
                "n/a  metric challenge on adult: challenge needs the Sprint 3 taxi columns "
                "(pickup_community_area, shift, ...)",
                f"note {PLANNING_NOTE}", f"note {DELTA_NOTE} (4 jobs)"]  # notes sorted
    assert letters(lines) == letters(expected)
    # each item starts a line indented by two; its continuation lines are indented by four
    starts = [line for line in lines if line.startswith("  ") and not line.startswith("    ")]
    assert [s.split()[0] for s in starts] == ["n/a", "n/a", "note", "note"]
    assert lines[0].startswith("sweep: 1 run")


@pytest.mark.parametrize("width", WIDTHS)
def test_announce_prints_within_the_width_columns_reports(width, monkeypatch, capsys):
    from dp_arena.sweep.plan import announce

    monkeypatch.setenv("COLUMNS", str(width))
    announce(long_plan())
    out = capsys.readouterr().out.splitlines()
    assert out and max(len(line) for line in out) <= width
    assert letters(out) == letters(announce_lines(long_plan(), width))


@pytest.mark.parametrize("width", WIDTHS)
def test_the_summary_fits_the_width(width, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("COLUMNS", str(width))
    folder = tmp_path / "multirun" / "2026-11-27" / ("15-09-40" + "_x" * 40)
    reason = ("the run exceeded its time limit of 600 s (limits.time_limit_s): raise it "
              "with limits.time_limit_s=1800, or choose a cheaper setting such as "
              "mechanism.iters=200 for this mechanism on a table this wide")
    outcomes = [Outcome("FINISHED", "independent eps=1 trial=0", 0, run_id="a"),
                *[Outcome("FAILED", f"aim[quick] eps=1 trial={k} dataset.path={folder}/d.csv",
                          k, reason) for k in (1, 2)],
                Outcome("N/A", "prefix_tree eps=1 trial=0", 3, LONG_REASON)]
    text = print_summary(outcomes, folder)
    captured = capsys.readouterr()
    printed = (captured.out + captured.err).splitlines()
    assert max(len(line) for line in printed) <= width, printed
    assert "sweep finished: 1 of 3 runs succeeded, 2 failed, 1 n/a" in " ".join(words(printed))
    assert reason.split() == words([line for line in printed if line.startswith("    ")])[
        -len(reason.split()):]
    assert text.count("failed: aim[quick]") == 1  # one reason, once, with the count
    assert "(+1 more)" in " ".join(words(printed))


# ----- the ETA of a contestant: measured like every mechanism, never guessed ---------------------
def run(mechanism: str, status: str, seconds: float = 0.0, eps: float = 1.0,
        trial: int = 0) -> RunState:
    label = f"{mechanism} eps={eps:g} trial={trial}"
    return RunState(mechanism, status, seconds, label, f"{mechanism} eps={eps:g}")


def measured(scale: float = 1.0) -> list[RunState]:
    """independent took 10 s a run, aim 100 s, times ``scale``."""
    return [run("independent", "done", 10.0 * scale, trial=0),
            run("independent", "done", 10.0 * scale, trial=1),
            run("aim", "done", 100.0 * scale)]


def test_a_contestant_with_no_finished_run_is_a_lower_bound_not_a_guess():
    """No factor is guessed for it (a fixed 20 x independent showed 3h15m on an interrupted
    56-column sweep): each of its runs counts at the cheapest measured run (10 s)."""
    runs = measured() + [run("opendp_aim", "pending", trial=t) for t in (0, 1)]
    assert measured_costs(runs) == {"independent": 10.0, "aim eps=1": 100.0}
    eta = estimate(runs, workers=2)
    assert eta.seconds == pytest.approx(10.0) and eta.unseen == ("opendp_aim",)
    assert eta.text() == "ETA >= 10s"


@pytest.mark.parametrize("scale", [0.5, 3.0, 40.0])
def test_the_lower_bound_scales_with_what_the_sweep_measured(scale):
    """A wide table makes every run slower: the bound follows the sweep's measured runs."""
    runs = [*measured(scale), run("opendp_aim", "pending"), run("smartnoise_mst", "pending")]
    base = [*measured(), run("opendp_aim", "pending"), run("smartnoise_mst", "pending")]
    assert eta_seconds(runs, 2) == pytest.approx(scale * eta_seconds(base, 2))


def test_a_contestant_is_priced_by_its_own_runs_once_one_finished():
    runs = measured() + [run("opendp_aim", "done", 400.0, trial=0),
                         run("opendp_aim", "pending", trial=1)]
    eta = estimate(runs, 2)
    assert eta.seconds == pytest.approx(400.0) and not eta.at_least
    assert eta_seconds([run("opendp_aim", "running", 30.0)], 2) is None  # nothing finished


# ----- the utility legend says only what applies ----------------------------------------------
def no_ml_efficacy() -> list[dict]:
    """The board_views sweep with ML efficacy n/a on every row (no target column)."""
    rows = sweep(with_risk=False)
    for r in rows:
        for key in ("ml_efficacy/score", "ml_efficacy/real_score", "ml_efficacy/gap"):
            r.pop(key)
        r["na:ml_efficacy"] = "ml_efficacy needs a target column (dataset.target)"
    return rows


def utility_legend_of(rows: list[dict]) -> str:
    board = build_leaderboard(frame(rows))
    legends = dict(view_legends(board))
    return legends["utility view"]


def test_the_utility_legend_leaves_out_ml_efficacy_when_it_applied_to_no_row(monkeypatch):
    legend = utility_legend_of(no_ml_efficacy())
    assert "ml_efficacy" not in legend and "train on real" not in legend
    assert legend == "; ".join([UTILITY_PARTS["propensity/pmse_ratio"],
                                UTILITY_PARTS["range_query/mean_rel_error"]])
    monkeypatch.setenv("COLUMNS", "80")
    shown = render_terminal(build_leaderboard(frame(no_ml_efficacy())))
    assert "utility view: propensity/pmse_ratio:" in " ".join(shown.split())
    assert "ml_efficacy" not in shown.split("utility view")[1].split("\n\n")[0]


def test_the_utility_legend_says_every_part_when_every_column_shows():
    legend = utility_legend_of(sweep(with_risk=False))
    assert legend == "; ".join(UTILITY_PARTS.values())
    assert legend.count("ml_efficacy/gap") == 1 and "train on real" in legend


def test_the_legend_omits_a_score_no_row_logged():
    rows = sweep(with_risk=False)
    for r in rows:
        r.pop("range_query/mean_rel_error")
    legend = utility_legend_of(rows)
    assert "range_query" not in legend and "propensity/pmse_ratio" in legend
    assert legend.startswith("ml_efficacy/score: ")
