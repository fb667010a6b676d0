"""The board across datasets: average ranks, the Friedman test and the Nemenyi critical
difference against Demsar's worked example, and a hand-made suite of runs for coverage (failed,
n/a, score n/a), wins/ties/losses and the bootstrap interval.

Tolerances: rel=1e-12 / abs=1e-12 compare the same closed form computed twice (a sum of ranks,
a square root) or against scipy on exact inputs: a few ulps of rounding; rel=1e-9 on p-values,
which scipy computes by series and special functions (accurate to about 1e-14, far inside).
"""

from __future__ import annotations

import math
import os
import re
import shutil

import numpy as np
import pytest
from scipy import stats

from dp_arena.report.across_datasets import (
    FAILED,
    NOT_APPLICABLE,
    OK,
    SCORE_NA,
    across_datasets,
    spans_datasets,
)
from dp_arena.report.across_render import render_html, render_markdown, render_text, write_across
from dp_arena.report.critical_difference import (
    cliques,
    draw_cd_diagram,
    friedman,
    nemenyi_cd,
    nemenyi_q,
    rank_table,
)
from dp_arena.report.leaderboard import NotApplicableRow
from tests.conftest import make_small_frame, make_small_schema
from tests.support.board import frame, run
from tests.support.forked import run_forked
from tests.sweep_support import ENV

# Demsar (2006), "Statistical Comparisons of Classifiers over Multiple Data Sets", JMLR 7,
# Table 6: AUC of C4.5 (m = 0, cf = 0.25), C4.5+m, C4.5+cf and C4.5+m+cf on 14 UCI data sets,
# with the ranks the paper gives in parentheses. On "voting" the paper prints 0.975 for both
# C4.5+cf and C4.5+m+cf but ranks them 2 and 3 (its unrounded AUCs differ): the table below
# keeps that order with a fourth decimal, so the ranks are the paper's.
DEMSAR_NAMES = ("C4.5", "C4.5+m", "C4.5+cf", "C4.5+m+cf")
DEMSAR_AUC = np.array([
    [0.763, 0.768, 0.771, 0.798],    # adult (sample)
    [0.599, 0.591, 0.590, 0.569],    # breast cancer
    [0.954, 0.971, 0.968, 0.967],    # breast cancer wisconsin
    [0.628, 0.661, 0.654, 0.657],    # cmc
    [0.882, 0.888, 0.886, 0.898],    # ionosphere
    [0.936, 0.931, 0.916, 0.931],    # iris
    [0.661, 0.668, 0.609, 0.685],    # liver disorders
    [0.583, 0.583, 0.563, 0.625],    # lung cancer
    [0.775, 0.838, 0.866, 0.875],    # lymphography
    [1.000, 1.000, 1.000, 1.000],    # mushroom
    [0.940, 0.962, 0.965, 0.962],    # primary tumor
    [0.619, 0.666, 0.614, 0.669],    # rheum
    [0.972, 0.981, 0.9751, 0.9749],  # voting (see above)
    [0.957, 0.978, 0.946, 0.970],    # wine
])
#: The ranks printed in Table 6 (row by row), which the ranks computed here must equal.
DEMSAR_RANKS = np.array([
    [4, 3, 2, 1], [1, 2, 3, 4], [4, 1, 2, 3], [4, 1, 3, 2], [4, 2, 3, 1], [1, 2.5, 4, 2.5],
    [3, 2, 4, 1], [2.5, 2.5, 4, 1], [4, 3, 2, 1], [2.5, 2.5, 2.5, 2.5], [4, 2.5, 1, 2.5],
    [3, 2, 4, 1], [4, 1, 2, 3], [3, 1, 4, 2]])


def test_demsar_table_6_ranks_friedman_and_critical_difference():
    ranks = rank_table(DEMSAR_AUC, higher_better=True)
    assert np.array_equal(ranks, DEMSAR_RANKS)
    average = ranks.mean(axis=0)
    # the paper prints them to three decimals: 3.143, 2.000, 2.893, 1.964
    assert [round(float(r), 3) for r in average] == [3.143, 2.000, 2.893, 1.964]
    test = friedman(average, 14)
    # printed to two decimals: chi2_F = 9.28, F_F = 3.69 with 3 and 39 degrees of freedom
    assert round(test.chi2, 2) == 9.28 and round(test.iman_davenport, 2) == 3.69
    assert (test.df, test.df_denominator) == (3, 39)
    # "The critical value of F(3, 39) for alpha = 0.05 is 2.85, so we reject"
    assert round(float(stats.f.ppf(0.95, 3, 39)), 2) == 2.85 and test.iman_davenport_p < 0.05
    # Nemenyi: q_0.05 = 2.569, CD = 1.25; q_0.10 = 2.291, CD = 1.12 (the paper's Table 5(a))
    assert round(nemenyi_q(4, 0.05), 3) == 2.569 and round(nemenyi_q(4, 0.10), 3) == 2.291
    assert round(nemenyi_cd(4, 14, 0.05), 2) == 1.25 and round(nemenyi_cd(4, 14, 0.10), 2) == 1.12
    # at 0.05 even the best and worst (3.143 - 1.964 = 1.179) are closer than the CD: one group
    assert [set(g) for g in cliques(average, nemenyi_cd(4, 14, 0.05))] == [{0, 1, 2, 3}]
    # at 0.10, Figure 1(a): C4.5+m+cf, C4.5+m, C4.5+cf joined; C4.5+cf, C4.5 joined
    groups = [{DEMSAR_NAMES[i] for i in g} for g in cliques(average, nemenyi_cd(4, 14, 0.10))]
    assert groups == [{"C4.5+m+cf", "C4.5+m", "C4.5+cf"}, {"C4.5+cf", "C4.5"}]


def test_friedman_by_hand_and_against_scipy_without_ties():
    # three methods in the same order on four datasets: ranks 1, 2, 3;
    # chi2 = 12*4 / (3*4) * (1 + 4 + 9 - 3*16/4) = 4 * 2 = 8, df 2, p = exp(-8/2)
    result = friedman([1.0, 2.0, 3.0], 4)
    assert result.chi2 == pytest.approx(8.0, rel=1e-12)
    assert result.p_value == pytest.approx(math.exp(-4.0), rel=1e-9)
    # every dataset ranks alike: chi2 = N(k-1), Iman-Davenport's F is unbounded
    assert math.isinf(result.iman_davenport) and result.iman_davenport_p == 0.0
    # without ties scipy's statistic (whose tie correction is then 1) is the same
    rng = np.random.default_rng(5)
    table = rng.normal(size=(9, 5)) + np.arange(5) * 0.4
    ours = friedman(rank_table(table).mean(axis=0), 9)
    theirs = stats.friedmanchisquare(*table.T)
    assert ours.chi2 == pytest.approx(theirs.statistic, rel=1e-12)
    assert ours.p_value == pytest.approx(theirs.pvalue, rel=1e-9)


def test_rank_table_refuses_a_missing_score():
    with pytest.raises(ValueError, match="missing"):
        rank_table(np.array([[1.0, math.nan], [1.0, 2.0]]))


def test_the_diagram_is_a_png(tmp_path):
    average = rank_table(DEMSAR_AUC).mean(axis=0)
    path = draw_cd_diagram(DEMSAR_NAMES, average, nemenyi_cd(4, 14, 0.10), tmp_path / "cd.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ----- a hand-made suite --------------------------------------------------------------------
NOISE = [0.0, 1.0, -1.0]
OTHER = [0.5, -1.0, 0.8]  # mean 0.1, sd 0.95: no paired t-test over 3 trials separates it
DATA = {"one": "d1", "two": "d2", "three": "d3"}


def tagged(mech: str, dataset: str, trial: int, score: float | None, **kw: object) -> dict:
    return run(mech, 1.0, trial, score, dataset=dataset, dataset_id=DATA[dataset],
               delta="1e-09", privacy_unit="record", **kw)


def suite_runs() -> list[dict]:
    """Contestants a, b, c, d, e and the uniform floor on three datasets (three trials):
    a beats b on one (by 10 in every trial), ties on two, loses on three; c and d trail; d
    fails on two; e is n/a on one and two."""
    rows = []
    for t, n in enumerate(NOISE):
        rows += [tagged("a", "one", t, 900 + n), tagged("b", "one", t, 890 + n),
                 tagged("c", "one", t, 850 + n), tagged("d", "one", t, 600 + n),
                 tagged("a", "two", t, 800 + n), tagged("b", "two", t, 800 + n + OTHER[t]),
                 tagged("c", "two", t, 750 + n),
                 tagged("d", "two", t, None, status="FAILED", reason="time limit of 60 s"),
                 tagged("a", "three", t, 700 + n), tagged("b", "three", t, 710 + n),
                 tagged("c", "three", t, 650 + n), tagged("d", "three", t, 600 + n),
                 tagged("e", "three", t, 500 + n)]
        rows += [tagged("uniform", d, t, 100 + n, reference="floor") for d in DATA]
    return rows


NA_ROWS = [NotApplicableRow("e", 1.0, dataset=d,
                            reason=f"needs sequences; dataset '{d}' has none")
           for d in ("one", "two")]


def test_a_hand_made_suite_ranks_counts_and_says_what_is_missing():
    runs = frame(suite_runs())
    assert spans_datasets(runs)
    [board] = across_datasets(runs, not_applicable=NA_ROWS, n_boot=400)
    assert board.score == "kmarginal/score" and board.epsilon == 1.0
    assert set(board.datasets) == {"one", "two", "three"}
    # coverage: every missing cell said, with its reason
    assert board.cell("d", "two").status == FAILED
    assert "time limit" in board.cell("d", "two").reason
    assert board.cell("e", "one").status == NOT_APPLICABLE
    assert board.cell("e", "two").reason == "needs sequences; dataset 'two' has none"
    assert board.cell("e", "three").status == OK
    # e has a score on 1 of 3 datasets: left out of the test; d failed on two: two left out
    assert [c for c, _ in board.left_out] == ["e"]
    assert [d for d, _ in board.unused] == ["two"] and set(board.used) == {"one", "three"}
    assert "uniform (floor)" in board.references and "uniform" not in board.contestants
    # ranks on one: a 1, b 2, c 3, d 4; on three: b 1, a 2, c 3, d 4
    assert dict(zip(board.compared, board.average_ranks)) == {"a": 1.5, "b": 1.5, "c": 3.0,
                                                              "d": 4.0}
    # chi2 = 12*2/(4*5) * (1.5^2 + 1.5^2 + 3^2 + 4^2 - 4*5^2/4) = 1.2 * 4.5 = 5.4
    assert board.friedman.chi2 == pytest.approx(5.4, rel=1e-12)
    # F_F = (2-1) * 5.4 / (2*3 - 5.4) = 9 with 3 and 3 degrees of freedom
    assert board.friedman.iman_davenport == pytest.approx(9.0, rel=1e-9)
    assert board.friedman.p_value == pytest.approx(stats.chi2.sf(5.4, 3), rel=1e-12)
    assert board.cd == pytest.approx(nemenyi_q(4) * math.sqrt(4 * 5 / (6 * 2)), rel=1e-12)
    # the bootstrap never moves c or d (50 points below the next in every trial); a and b
    # share places 1 and 2
    ci = dict(zip(board.compared, board.rank_ci))
    assert ci["c"] == (3.0, 3.0) and ci["d"] == (4.0, 4.0)
    assert 1.0 <= ci["a"][0] <= 1.5 <= ci["a"][1] <= 2.0
    # wins/ties/losses, one per dataset where both have a score
    wtl = board.wins_ties_losses
    assert wtl[("a", "b")] == (1, 1, 1) and wtl[("b", "a")] == (1, 1, 1)
    assert wtl[("a", "d")] == (2, 0, 0) and wtl[("d", "a")] == (0, 0, 2)
    assert wtl[("c", "e")] == (1, 0, 0)


def test_a_score_that_does_not_apply_to_a_table_is_said():
    rows = []
    for t, n in enumerate(NOISE):
        for d, base in (("one", 0.8), ("two", None)):
            for mech, shift in (("a", 0.0), ("b", -0.1)):
                extra = ({"ml_efficacy/score": base + shift + n / 100} if base is not None
                         else {"na:ml_efficacy": "ml_efficacy needs dataset.target"})
                rows.append(tagged(mech, d, t, 900 + n, **extra))
    [board] = across_datasets(frame(rows), scores=["ml_efficacy/score"], n_boot=50)
    assert board.cell("a", "two").status == SCORE_NA
    assert board.cell("a", "two").reason == "ml_efficacy needs dataset.target"
    assert board.used == ("one",) and board.friedman is None  # one dataset: no test
    # a table where the score applies to no one counts for no one: a and b are not left out
    assert board.unused == (("two", "no mechanism has this score there"),)
    assert not board.left_out and board.compared == ("a", "b")


def test_the_board_reads_at_80_columns_and_in_markdown_and_html(tmp_path):
    boards = across_datasets(frame(suite_runs()), not_applicable=NA_ROWS, n_boot=100)
    text = render_text(boards, "Across datasets: test", width=80, files="out")
    assert all(len(line) <= 80 for line in text.splitlines())
    assert "Friedman chi2 = 5.40 (df 3)" in text
    assert re.search(r"d failed on two: time limit of 60 s", text)
    # one reason given on two datasets is said once, naming both
    assert "e n/a on one, two: needs sequences; the dataset has none" in text
    md = render_markdown(boards, "Across datasets: test")
    assert "| # | mechanism | avg rank | 95% CI |" in md and "| m1 | a | - | 1/1/1 |" in md
    page = render_html(boards, "<b>x</b>")
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;" in page
    files = write_across(boards, tmp_path, "Across datasets: test")
    names = {p.name for p in files}
    assert {"across_datasets.md", "across_datasets.html", "across_datasets.csv",
            "cd_kmarginal-score_eps_1.png"} <= names
    assert "data:image/png;base64," in (tmp_path / "across_datasets.html").read_text()


# ----- a tiny suite, end to end -------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.realdata
def test_a_tiny_suite_ends_with_the_board_across_datasets(tmp_path, shared_data,
                                                          empty_mlflow_store):
    """competition=suite on a shipped table and a user's CSV with its schema (a dataset option
    in a folder Hydra searches): two DP mechanisms and the floor, epsilon 1, two trials; the
    sweep ends with the board across datasets and its diagram, dp-arena-across reads it back,
    and the same command again resumes (every run skipped)."""
    shutil.copyfile(empty_mlflow_store, tmp_path / "mlflow.db")
    make_small_frame(2000, 1).to_csv(tmp_path / "private.csv", index=False)
    make_small_schema().save(tmp_path / "parameters.json")
    options = tmp_path / "conf" / "dataset"
    options.mkdir(parents=True)
    (options / "toy.yaml").write_text(
        f"defaults:\n  - csv\n  - _self_\npath: {tmp_path / 'private.csv'}\n"
        f"schema: {tmp_path / 'parameters.json'}\nlabel: toy\n")
    command = ("competition=suite", "competition.datasets=[titanic,toy]",
               "competition.mechanisms=[independent,mst_quick,uniform]",
               "competition.epsilons=[1]", "trial=0,1",
               # one score is all the board needs: the suite's held-out scores (ML models,
               # attacks) cost most of each run, and are tested where they are computed
               "metrics=kmarginal",
               f"hydra.searchpath=[file://{tmp_path / 'conf'}]")
    # this test's own secret key and from-private registry (tests/conftest.py): a hand-written
    # schema is not marked by what another test proposed
    env = {**ENV, **{k: v for k, v in os.environ.items() if k.startswith("DP_ARENA_")},
           "DP_ARENA_JOBS": "1"}
    result = run_forked(("dp-arena", *command), tmp_path, env, timeout=1500)
    out = result.stdout
    assert result.returncode == 0, result.stderr[-3000:]
    assert "sweep finished: 12 of 12 runs succeeded" in out
    assert "## Across datasets: dp-arena/suite (this sweep)" in out
    both = r"2 mechanisms on 2 datasets \((titanic, toy|toy, titanic)\); up to 2 trials each"
    assert re.search(both, out), out[-4000:]
    assert "References, not ranked: uniform (floor)" in out
    folder = next(tmp_path.glob("multirun/*/*/leaderboard/across_datasets"))
    png = folder / "cd_kmarginal-score_eps_1.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    ranks = (folder / "across_datasets.csv").read_text()
    assert "kmarginal/score" in ranks and "mst [quick]" in ranks
    # the two ranks of two mechanisms on two datasets sum to 3 = 1 + 2 on each dataset
    table = [line.split(",") for line in ranks.splitlines()[1:]
             if line.startswith("kmarginal/score")]
    assert sum(float(row[4]) for row in table) == pytest.approx(3.0, abs=1e-12)
    again = run_forked(("dp-arena-across", "--experiment", "dp-arena/suite", "--out",
                        "again"), tmp_path, env)
    assert again.returncode == 0, again.stderr
    assert re.search(both, again.stdout), again.stdout[-4000:]
    resumed = run_forked(("dp-arena", *command), tmp_path, env, timeout=900)
    assert resumed.returncode == 0 and "12 already finished earlier (skipped)" in resumed.stdout
    assert "## Across datasets: dp-arena/suite (this sweep)" in resumed.stdout
