"""The Duke report's utility panels (a), (b) over (Sex, Race, attribute) categories and (d)
level correlations (dp_arena.metrics.duke_utility), panel (c) least-squares slopes per
attribute and the Figures 10-14 logistic-regression models: hand-computed numbers on
tiny tables, and their outputs declared private.

Tolerances: (a) every pytest.approx here compares hand-computed arithmetic: its default, 1e-6
relative (and 1e-12 absolute), is far above the rounding of a few operations and far below any
wrong formula; (c) logistic coefficients (Newton's method, stopped after a step below ~1e-6
with quadratic convergence; C = 1e6, whose penalty pulls a coefficient by ~1e-8) against
log-odds by hand: tol = 1e-5; the gradient at the returned point < 1e-6 (see its comment).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from dp_arena.data.datasets import Dataset
from dp_arena.data.schema import Column, Schema
from dp_arena.errors import ConfigError
from dp_arena.metrics.duke_utility import (
    DukeUtility,
    aggregated_rows,
    joint_private_codes,
    level_correlations,
    logreg_coefficients,
    newton_logreg,
    one_hot,
    private_combination_table,
    slope_breakdown,
    slope_improvement,
    weighted_rmse,
)


def test_level_correlation_is_the_indicator_correlation():
    p = np.array([0, 0, 1, 1, 1, 0])
    a = np.array([0, 1, 1, 1, 2, 0])
    joint = np.bincount(p * 3 + a, minlength=6).reshape(2, 3) / 6
    corr = level_correlations(joint)
    for v in range(2):
        for u in range(3):
            expected = np.corrcoef((p == v).astype(float), (a == u).astype(float))[0, 1]
            assert corr[v, u] == pytest.approx(expected)
    # by hand: p = 1 vs a = 1: P(1,1) = 2/6, P(p=1) = 1/2, P(a=1) = 1/2 -> (1/3 - 1/4) / (1/4)
    assert corr[1, 1] == pytest.approx(1 / 3)
    # a constant indicator has no correlation
    assert np.isnan(level_correlations(np.array([[0.5, 0.0], [0.5, 0.0]]))[:, 1]).all()


def test_private_combination_codes_and_table_by_hand():
    frame = pd.DataFrame({"sex": [0, 1, 1, 0], "race": [2, 0, 2, 1], "x": [0, 0, 1, 1]})
    domain = {"sex": 2, "race": 3, "x": 2}
    assert joint_private_codes(frame, ["sex", "race"], domain).tolist() == [2, 3, 5, 1]
    synth = frame.assign(race=[2, 2, 2, 2])  # codes 2, 5, 5, 2
    table = private_combination_table(frame, synth, ["sex", "race"], ["x"], domain)
    assert set(table["private"]) == {"sex*race"} and len(table) == 6 * 2
    real = table.set_index(["private_code", "attribute_code"])["real"]
    syn = table.set_index(["private_code", "attribute_code"])["synthetic"]
    assert real[(2, 0)] == 0.25 and real[(3, 0)] == 0.25 and real[(5, 1)] == 0.25
    assert syn[(2, 0)] == 0.25 and syn[(5, 0)] == 0.25 and syn[(5, 1)] == 0.25
    # slope of 1[sex*race = 5] on 1[x = 1]: real 1/2 - 0, synthetic 1/2 - 1/2
    slope = table.set_index(["private_code", "attribute_code"])
    assert slope.loc[(5, 1), "real_slope"] == pytest.approx(0.5)
    assert slope.loc[(5, 1), "synthetic_slope"] == pytest.approx(0.0)


def _schema() -> Schema:
    return Schema((
        Column("x", "categorical", values=(0, 1, 2)),
        Column("sex", "categorical", values=(0, 1)),
        Column("race", "categorical", values=(0, 1, 2)),
    ))


def _people(n: int, seed: int, linked: bool) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 3, n)
    sex = (rng.random(n) < np.array([0.1, 0.5, 0.9])[x]).astype(int) if linked \
        else rng.integers(0, 2, n)
    race = np.where(rng.random(n) < 0.7, (x + sex) % 3, rng.integers(0, 3, n)) if linked \
        else rng.integers(0, 3, n)
    return pd.DataFrame({"x": x, "sex": sex, "race": race})


def test_scores_see_a_lost_three_way_association():
    data = Dataset("p", _schema(), _people(4000, 1, linked=True))
    metric = DukeUtility(figures=True)
    same = metric.score(data, _people(4000, 2, linked=True))
    lost = metric.score(data, _people(4000, 3, linked=False))
    for key in ("joint3_prop_corr", "assoc3_slope_corr", "level_corr_corr", "level3_corr_corr"):
        assert same.scores[key] > 0.95, key
        assert lost.scores[key] < same.scores[key] - 0.3, key
    assert same.scores["level3_corr_rmse"] < 0.05 < lost.scores["level3_corr_rmse"]
    assert set(same.tables) >= {"duke_private_combinations", "duke_joint_proportions"}
    assert {"duke_joint_histograms", "duke_level_correlations"} <= set(same.figures)
    assert all(isinstance(f, Figure) for f in same.figures.values())
    # every new output is private (nothing public: each compares with the real table)
    public, private = metric.split_result(same)
    assert public.names == frozenset()
    assert {"duke_private_combinations", "duke_joint_histograms",
            "duke_level_correlations"} <= private.names


def test_one_private_attribute_has_no_combination_outputs():
    data = Dataset("p", _schema(), _people(500, 1, linked=True))
    result = DukeUtility(private_attributes=["sex"], figures=True).score(
        data, _people(500, 2, linked=True))
    assert "joint3_prop_corr" not in result.scores
    assert "duke_private_combinations" not in result.tables
    assert "duke_joint_histograms" not in result.figures
    assert math.isfinite(result.scores["level_corr_corr"])


# ----- panel (c): least-squares slopes, per attribute ---------------------------
def _cells(rows: list[tuple[str, float, float, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["attribute", "real_slope", "synthetic_slope", "weight"])


def test_slope_breakdown_by_hand():
    table = _cells([
        ("a", 0.2, 0.2, 1.0), ("a", -0.2, -0.2, 1.0),            # a: on y = x
        ("b", 0.4, 0.0, 1.0), ("b", -0.4, 0.0, 3.0),             # b: association lost
        ("b", np.nan, 0.3, 1.0), ("b", 0.1, 0.5, 0.0),           # skipped: no slope, weight 0
    ])
    out = slope_breakdown(table).set_index("attribute")
    assert list(out.index) == ["a", "b"]
    assert out.loc["a", "cells"] == 2 and out.loc["b", "cells"] == 2
    assert out.loc["a", "slope_rmse"] == pytest.approx(0.0)
    assert out.loc["a", "slope_fit"] == pytest.approx(1.0)
    assert out.loc["a", "slope_corr"] == pytest.approx(1.0)
    # b: every synthetic slope 0 -> RMSE = weighted RMS of the real slopes = 0.4, fit 0
    assert out.loc["b", "slope_rmse"] == pytest.approx(0.4)
    assert out.loc["b", "slope_fit"] == pytest.approx(0.0)
    # weighted RMSE with unequal weights: sqrt((1 * 0.1^2 + 3 * 0.3^2) / 4)
    assert weighted_rmse(np.array([0.0, 0.0]), np.array([0.1, 0.3]),
                         np.array([1.0, 3.0])) == pytest.approx(math.sqrt(0.28 / 4))


def test_slope_improvement_flags_the_attributes_that_moved_towards_y_equals_x():
    before = slope_breakdown(_cells([("agency", 0.4, 0.1, 1.0), ("agency", -0.4, -0.1, 1.0),
                                     ("pay", 0.3, 0.3, 1.0), ("pay", -0.3, -0.3, 1.0)]))
    after = slope_breakdown(_cells([("agency", 0.4, 0.3, 1.0), ("agency", -0.4, -0.3, 1.0),
                                    ("pay", 0.3, 0.1, 1.0), ("pay", -0.3, -0.1, 1.0)]))
    out = slope_improvement(before, after).set_index("attribute")
    assert out.loc["agency", "rmse_change"] == pytest.approx(0.1 - 0.3)
    assert out.loc["agency", "fit_gap_change"] == pytest.approx(0.25 - 0.75)
    assert bool(out.loc["agency", "improved"]) and not bool(out.loc["pay", "improved"])
    assert out.loc["pay", "rmse_change"] == pytest.approx(0.2)


def _two_attribute_schema() -> Schema:
    return Schema((
        Column("a", "categorical", values=(0, 1)),
        Column("b", "categorical", values=(0, 1)),
        Column("sex", "categorical", values=(0, 1)),
    ))


def _block(a: int, b: int, positives: int, negatives: int) -> pd.DataFrame:
    return pd.DataFrame({"a": a, "b": b, "sex": [1] * positives + [0] * negatives})


def test_metric_breaks_slopes_down_per_attribute_by_hand():
    # real: sex follows a (P(1 | a=1) = 3/4, P(1 | a=0) = 1/4) and not b; the synthetic table
    # keeps b's (absent) association and loses a's: every synthetic share is 1/2
    real = pd.concat([_block(0, 0, 10, 30), _block(1, 1, 30, 10), _block(0, 1, 10, 30),
                      _block(1, 0, 30, 10)], ignore_index=True)
    synth = pd.concat([_block(0, 0, 20, 20), _block(1, 1, 20, 20), _block(0, 1, 20, 20),
                       _block(1, 0, 20, 20)], ignore_index=True)
    data = Dataset("p", _two_attribute_schema(), real)
    result = DukeUtility(private_attributes=["sex"], min_category_count=1,
                         figures=True).score(data, synth)
    s = result.scores
    # real slopes of 1[sex = v] on 1[a = u]: +-(3/4 - 1/4) = +-1/2; synthetic 0 -> RMSE 1/2
    assert s["assoc_slope_rmse_a"] == pytest.approx(0.5)
    assert s["assoc_slope_fit_a"] == pytest.approx(0.0)
    # b: real and synthetic slopes all 0 -> on the line; correlation with constants counts 0
    assert s["assoc_slope_rmse_b"] == pytest.approx(0.0)
    assert s["assoc_slope_corr_b"] == 0.0
    # overall: four a cells at 1/2 and four b cells at 0, equal weights 1/4
    assert s["assoc_slope_rmse"] == pytest.approx(math.sqrt(0.5 * 0.25))
    table = result.tables["duke_assoc_slopes_by_attribute"]
    assert list(table["attribute"]) == ["a", "b"] and set(table["cells_of"]) == {"pairs"}
    assert isinstance(result.figures["duke_assoc_slopes"], Figure)


# ----- Figures 10-14: logistic-regression models, authentic vs synthetic -------------------
def test_logreg_models_give_the_log_odds_by_hand():
    # odds of sex = 1 multiply: 1 at (0, 0), x2 for a = 1, x3 for b = 1 (no interaction). The
    # reference of each predictor is its most frequent real category: a = 1 (100 of 180 rows),
    # b = 1 (110). So the two-predictor MLE is intercept log 6 (the odds at (1, 1)), a=0: -log 2,
    # b=0: -log 3; the one-predictor model of a has intercept log(80/20) (odds at a = 1) and
    # a=0: log((40/20) / (80/20)) = -log 2.
    real = pd.concat([_block(0, 0, 10, 10), _block(1, 0, 20, 10), _block(0, 1, 30, 10),
                      _block(1, 1, 60, 10)], ignore_index=True)
    synth = pd.concat([_block(0, 0, 10, 10), _block(1, 0, 10, 10), _block(0, 1, 10, 10),
                       _block(1, 1, 10, 10)], ignore_index=True)
    data = Dataset("p", _two_attribute_schema(), real)
    # C large: the L2 penalty's pull on a coefficient b is b / (C * n p (1 - p)) ~ 1e-8 here
    metric = DukeUtility(private_attributes=["sex"], min_category_count=1, C=1e6,
                         logreg_models={"a": ["a"], "a_b": ["a", "b"]}, figures=True)
    result = metric.score(data, synth)
    table = result.tables["duke_logreg_models"].set_index(["model", "term"])
    tol = 1e-5
    assert table.loc[("a_b", "(intercept)"), "real"] == pytest.approx(math.log(6), abs=tol)
    assert table.loc[("a_b", "a=0"), "real"] == pytest.approx(-math.log(2), abs=tol)
    assert table.loc[("a_b", "b=0"), "real"] == pytest.approx(-math.log(3), abs=tol)
    assert table.loc[("a", "(intercept)"), "real"] == pytest.approx(math.log(4), abs=tol)
    assert table.loc[("a", "a=0"), "real"] == pytest.approx(-math.log(2), abs=tol)
    assert len(table) == 3 + 2
    # the synthetic table has sex independent of both, odds 1: every coefficient 0
    assert np.allclose(table["synthetic"], 0.0, atol=tol)
    s = result.scores
    expected = math.sqrt((math.log(6) ** 2 + math.log(2) ** 2 + math.log(3) ** 2) / 3)
    assert s["logreg_a_b_coef_rmse"] == pytest.approx(expected, abs=tol)
    assert s["logreg_a_coef_rmse"] == pytest.approx(
        math.sqrt((math.log(4) ** 2 + math.log(2) ** 2) / 2), abs=tol)
    assert s["logreg_a_coef_corr"] == 0.0  # the synthetic coefficients are constant
    assert isinstance(result.figures["duke_logreg_models"], Figure)
    # default: one model per predictor alone
    default = DukeUtility(private_attributes=["sex"], min_category_count=1, figures=False)
    models = default.score(data, synth).tables["duke_logreg_models"]
    assert list(dict.fromkeys(models["model"])) == ["a", "b"]


def test_newton_fit_on_distinct_rows_is_the_penalised_optimum():
    rng = np.random.default_rng(4)
    codes = pd.DataFrame({"a": rng.integers(0, 4, 3000), "b": rng.integers(0, 3, 3000)})
    y = rng.random(3000) < 1 / (1 + np.exp(-(codes["a"] * 0.5 - codes["b"] * 0.7)))
    design = one_hot(codes, [("a", 1), ("a", 2), ("a", 3), ("b", 1), ("b", 2)])
    rows, labels, counts = aggregated_rows(design, y)
    assert counts.sum() == 3000 and len(rows) <= 4 * 3 * 2
    b0, b = newton_logreg(rows, labels, counts, C=1.0)
    # the gradient of C * sum(logloss) + |b|^2 / 2 vanishes at the returned point, computed
    # on the full rows (not the aggregated ones)
    X = np.column_stack([np.ones(3000), design.toarray()])
    beta = np.concatenate([[b0], b])
    prob = 1 / (1 + np.exp(-(X @ beta)))
    grad = X.T @ (prob - y) + np.concatenate([[0.0], b])
    # Newton stops after a step below ~1e-6 and converges quadratically there: the gradient
    # left is ~|H| * 1e-12 (|H| <= 3,000 / 4), plus the rounding of 3,000-term sums (~1e-12)
    assert np.abs(grad).max() < 1e-6
    assert logreg_coefficients(design, y)[1] == pytest.approx(b)


@pytest.mark.parametrize("models", [{"m": []}, {"m": ["nope"]}, {"m": ["sex"]}])
def test_bad_logreg_models_raise_config_errors(models):
    data = Dataset("p", _two_attribute_schema(), _block(0, 0, 5, 5))
    with pytest.raises(ConfigError, match="logreg_models"):
        DukeUtility(private_attributes=["sex"], logreg_models=models).score(data, data.private)


def test_new_outputs_are_private():
    data = Dataset("p", _schema(), _people(600, 1, linked=True))
    metric = DukeUtility(figures=True)
    result = metric.score(data, _people(600, 2, linked=True))
    public, private = metric.split_result(result)
    assert public.names == frozenset()
    assert {"duke_assoc_slopes_by_attribute", "duke_assoc_slopes", "duke_logreg_models"} \
        <= private.names
    assert {"assoc3_slope_rmse_x", "assoc_slope_rmse_x", "logreg_x_coef_rmse"} \
        <= set(result.scores)
