"""A board's place on NIST's CRC scale: the archive's published rows (placed by score, marked,
never ranked, only beside runs on the same columns and budget) and the "as good as a k% sample"
column read from the board's own sample rows (hand-computed interpolations).

Tolerances: rel=1e-12 on shares read from the curve: exp(interp(log)) of exact inputs, a few
ulps of rounding; scores pooled by isotonic regression are means of two exact values (approx's
default).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dp_arena.report.cells import rank_text
from dp_arena.report.crc_scale import (
    ARCHIVE_METRIC,
    SAMPLE_COLUMN,
    ArchiveRow,
    archive_rows,
    is_external,
    on_crc_scale,
    rows_for,
    sample_curve,
    with_archive_rows,
    with_sample_equivalent,
)
from dp_arena.report.leaderboard import build_leaderboard
from dp_arena.report.record import SAMPLE_FRACTION_TAG
from dp_arena.report.render import overall_table, render_markdown
from dp_arena.report.terminal import render_terminal
from tests.support.board import NEW_TAGS, frame, md_rows, run

ACS = {**NEW_TAGS, "dataset": "acs_demographic", "dataset_id": "acs1",
       "privacy_unit": "record", "metric_key/sdnist": "s1"}


def acs_run(mech: str, eps: float, trial: int, score: float, **tags: object) -> dict:
    return run(mech, eps, trial, None, **{**ACS, ARCHIVE_METRIC: score, **tags})


def sample_runs(eps: float, means: dict[float, float], spread: float = 1.0) -> list[dict]:
    """Three draws per share: mean +- spread."""
    return [acs_run("subsample", eps, t, m + d, reference="ceiling", hp=f"[{share:g}]",
                    **{SAMPLE_FRACTION_TAG: f"{share:g}"})
            for share, m in means.items() for t, d in enumerate((-spread, 0.0, spread))]


def test_sample_runs_carry_the_tag_the_board_reads():
    from dp_arena.mechanisms.reference import Subsample

    assert Subsample(fraction=0.05).setting_tags() == {SAMPLE_FRACTION_TAG: "0.05"}


def test_the_packaged_archive_holds_nists_published_rows_with_their_provenance():
    rows = {r.report: r for r in archive_rows()}
    aim = rows["r_aim_e_1_demographic"]
    # the report's own figures (SDNist sample report on SmartNoise AIM, epsilon 1, 0.3 of it
    # spent by its preprocessor): as the issue and NIST's report quote them
    assert (aim.kmarginal, aim.epsilon, aim.preprocessing_epsilon) == (976.0, 1.0, 0.3)
    assert aim.epsilons() == (0.7, 1.0) and aim.dataset == "acs_demographic"
    assert rows["r_mst_e_1_demographic_na2019"].kmarginal == 958.0
    assert rows["r_patectgan_e_10_demographic_focused_na2019"].epsilons() == (7.0, 10.0)
    assert all(r.source.startswith("usnistgov/SDNist@") and r.source.endswith("/ui.json")
               for r in rows.values())
    # NIST's custom feature sets match no dataset=acs feature set: never joined to a board
    assert rows["r_cart_cf21_na2019"].dataset == ""


def test_published_rows_join_only_their_columns_and_their_budget():
    published = archive_rows()
    at_07 = {r.report for r in rows_for("acs_demographic", 0.7, published)}
    assert at_07 == {"r_aim_e_1_demographic", "r_mst_e_1_demographic_na2019",
                     "r_k_anonymity_k_6_demographic_focused_na2019"}  # non-DP: every table
    at_10 = {r.report for r in rows_for("acs_demographic", 10.0, published)}
    assert at_10 == {"r_patectgan_e_10_demographic_focused_na2019",
                     "r_k_anonymity_k_6_demographic_focused_na2019"}
    assert {r.report for r in rows_for("acs_all", 3.0, published)} == {"r_arf_all", "r_rtvae_all"}
    assert rows_for("adult", 0.7, published) == []


def archive_row(score: float, epsilon: float | None = 1.0, pre: str = "0.3") -> ArchiveRow:
    return ArchiveRow("r_x", "acs_demographic", "algo", "lib", "demographic-focused", epsilon,
                      f"preprocessor-epsilon: {pre}" if pre else "", "2.5", score, "20", "src")


def test_archive_rows_are_placed_by_score_marked_and_never_ranked():
    runs = frame([acs_run("aim", 0.7, t, s) for t, s in enumerate((975.0, 977.0, 976.0))]
                 + [acs_run("mst", 0.7, t, s) for t, s in enumerate((957.0, 959.0, 958.0))])
    board = build_leaderboard(runs, metric=ARCHIVE_METRIC)
    out = with_archive_rows(board, (archive_row(966.0), archive_row(900.0, None, "")))
    assert list(out["mechanism"]) == ["aim", "CRC algo e1 (lib)", "mst", "CRC algo (lib)"]
    ext = out[is_external(out)]
    assert not ext["ranked"].any() and ext["rank"].isna().all()
    assert [rank_text(r) for _, r in ext.iterrows()] == ["ext", "ext"]
    assert list(out.loc[~is_external(out), "rank"]) == [1, 2]  # the ranks are the board's own
    assert "0.3 of it on its own preprocessing" in ext["marks"].iloc[0]
    assert ext["marks"].iloc[1].endswith("not DP")
    # the overall table (a mean over epsilons) has no published row: each has one epsilon
    two = build_leaderboard(frame([*runs.to_dict("records"),
                                   *[acs_run("aim", 1.0, t, 980.0 + t) for t in range(3)],
                                   *[acs_run("mst", 1.0, t, 960.0 + t) for t in range(3)]]),
                            metric=ARCHIVE_METRIC)
    overall = overall_table(with_archive_rows(two, (archive_row(966.0),)))
    assert not overall["mechanism"].str.startswith("CRC ").any()
    # a board ranked by another score has none
    other = build_leaderboard(frame([run("aim", 0.7, t, 0.5 + t) for t in range(3)]))
    assert with_archive_rows(other, (archive_row(966.0),)).equals(other)


def test_the_sample_curve_is_read_in_log_share_between_the_samples():
    curve = sample_curve([0.01, 0.1], [900.0, 960.0], higher=True)
    assert curve.share(930.0) == pytest.approx(math.sqrt(0.01 * 0.1), rel=1e-12)
    assert curve.share(900.0) == pytest.approx(0.01, rel=1e-12)
    assert (curve.share(899.0), curve.share(961.0)) == (0.0, math.inf)
    # a lower-is-better score: the samples' scores fall as the share grows
    lower = sample_curve([0.01, 0.1], [0.4, 0.1], higher=False)
    assert lower.share(0.25) == pytest.approx(math.sqrt(0.01 * 0.1), rel=1e-12)


def test_noisy_sample_means_are_made_monotone_before_they_are_read():
    # 5% and 10% out of order (draw noise): pooled to their mean 945 (isotonic regression);
    # a score on the flat step reads as its first share
    curve = sample_curve([0.01, 0.05, 0.1, 0.2], [900.0, 950.0, 940.0, 980.0], higher=True)
    assert curve.scores == pytest.approx((900.0, 945.0, 945.0, 980.0))
    assert curve.share(945.0) == pytest.approx(0.05, rel=1e-12)
    # between the step's first share and the next: 962.5 is halfway from 945 (5%) to 980 (20%)
    assert curve.share(962.5) == pytest.approx(math.sqrt(0.05 * 0.2), rel=1e-12)


def test_every_row_beside_sample_rows_says_which_sample_it_is_as_good_as():
    means = {0.01: 900.0, 0.1: 960.0, 0.5: 990.0}
    runs = frame(sample_runs(0.7, means)
                 + [acs_run("aim", 0.7, t, 930.0 + d) for t, d in enumerate((-3.0, 0.0, 3.0))]
                 + [acs_run("mst", 0.7, t, 995.0) for t in range(2)]
                 + [acs_run("independent", 0.7, t, 890.0 + t) for t in range(3)])
    board = with_sample_equivalent(build_leaderboard(runs, metric=ARCHIVE_METRIC))
    text = dict(zip(board["mechanism"], board[SAMPLE_COLUMN]))
    # aim: mean 930 -> sqrt(0.01 x 0.1) = 3.2%; its CI 930 +- t(0.975, 2) x 3 / sqrt(3)
    half = 4.302652729911275 * 3.0 / math.sqrt(3.0)
    lo, hi = (math.exp(np.interp(930.0 + s * half, [900.0, 960.0], np.log([0.01, 0.1])))
              for s in (-1, 1))
    assert text["aim"] == f"3.2% [{100 * lo:.2g}%-{100 * hi:.2g}%]"
    assert text["mst"] == ">50%"     # above every sample (no CI: both trials equal)
    assert text["independent"].startswith("<1%")
    assert set(board.loc[board["mechanism"] == "subsample", SAMPLE_COLUMN]) == {""}


def test_a_board_without_sample_rows_has_no_sample_column():
    board = build_leaderboard(frame([acs_run("aim", 0.7, t, 970.0 + t) for t in range(3)]),
                              metric=ARCHIVE_METRIC)
    assert SAMPLE_COLUMN not in with_sample_equivalent(board)


def test_the_crc_board_shows_both_in_markdown_and_at_80_columns():
    runs = frame(sample_runs(0.7, {0.01: 900.0, 0.05: 950.0, 0.1: 968.0, 0.2: 979.0, 0.5: 989.0})
                 + [acs_run("aim", 0.7, t, 976.0 + d) for t, d in enumerate((-1.0, 0.0, 1.0))]
                 + [acs_run("mst", 0.7, t, 958.0 + d) for t, d in enumerate((-1.0, 0.0, 1.0))])
    board = on_crc_scale(build_leaderboard(runs, metric=ARCHIVE_METRIC))
    md = render_markdown(board)
    rows = md_rows(md)
    header = rows[0]
    assert "as good as a k% sample" in header
    aim_row = next(r for r in rows if r[1] == "aim")
    assert aim_row[header.index("as good as a k% sample")].startswith("1")  # between 10 and 20%
    assert any(r[1].startswith("*CRC aim e1") for r in rows) and "- ext: a published row" in md
    text = render_terminal(board, width=80)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "k% sample" in text and "CRC aim e1" in text and "ext: a published row" in text
