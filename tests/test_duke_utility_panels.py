"""The Duke report's utility panels (a), (b) over (Sex, Race, attribute) categories and (d)
level correlations (metrics.duke_utility, issue 30): hand-computed numbers on tiny tables, and
their outputs declared private."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from harness.data.datasets import Dataset
from harness.data.schema import Column, Schema
from metrics.duke_utility import (
    DukeUtility,
    joint_private_codes,
    level_correlations,
    private_combination_table,
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
