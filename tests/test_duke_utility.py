"""The Duke RDT utility report (dp_arena.metrics.duke_utility): hand-computed numbers on tiny tables,
the controlled-evaluation scores, figures, errors and, with the shared data, Adult.

Tolerances: (a) hand-computed statistics use approx's default (1e-6 relative), far above the
rounding of a few operations; a perfect copy's rmse is 0 up to rounding: abs=1e-9; (c) logistic
fits are Newton's method (stopped at a relative objective decrease of 1e-10 and a step below
~1e-6, converging quadratically) with C = 1e8 (the penalty biases the saturated log-odds by
~1e-8 on 8 rows): abs=1e-3 against -log 3 and 2 log 3 bounds the solver
and the penalty, as does atol=1e-6 for the sign flip.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from dp_arena.data.datasets import Dataset, load_shared_dataset
from dp_arena.data.schema import Column, Schema
from dp_arena.errors import ConfigError
from dp_arena.privacy.accounting import Budget, Ledger
from dp_arena.privacy.release import Releaser
from dp_arena.mechanisms import make_mechanism
from dp_arena.metrics import make_metric
from dp_arena.metrics.duke_utility import (
    DukeUtility,
    association_slopes,
    indicator_agreement,
    joint_proportions,
    label_accuracy,
    logreg_coefficients,
    ls_slope,
    one_hot,
    pearson,
    safe_key,
    same_predictor_rows,
)


def tiny_schema() -> Schema:
    return Schema((
        Column("x", "categorical", values=(0, 1, 2)),
        Column("sex", "categorical", values=(0, 1)),
        Column("race", "categorical", values=("w", "b"), dtype="str"),
    ))


#: real: sex by x = 0/2, 1/2, 2/2;  synthetic (same x rows): 0/2, 2/2, 1/2.
REAL = pd.DataFrame({"x": [0, 0, 1, 1, 2, 2], "sex": [0, 0, 1, 0, 1, 1],
                     "race": ["w", "b", "w", "w", "b", "b"]})
SYNTH = pd.DataFrame({"x": [0, 0, 1, 1, 2, 2], "sex": [0, 0, 1, 1, 1, 0],
                      "race": ["w", "w", "w", "b", "b", "b"]})


def tiny_dataset(real: pd.DataFrame = REAL) -> Dataset:
    return Dataset("tiny", tiny_schema(), real.copy())


# ----- building blocks --------------------------------------------------------------------
def test_joint_proportions_by_hand():
    p = joint_proportions(np.array([0, 0, 1, 1]), np.array([0, 1, 0, 0]), 2, 2)
    assert p.tolist() == [[0.25, 0.25], [0.5, 0.0]]
    assert joint_proportions(np.array([], int), np.array([], int), 2, 2).sum() == 0


def test_association_slope_is_the_indicator_regression_slope():
    p = np.array([1, 1, 0, 0, 0])
    a = np.array([1, 1, 1, 0, 0])
    slopes = association_slopes(p, a, 2, 2)
    # P(p=1 | a=1) - P(p=1 | a=0) = 2/3 - 0
    assert slopes[1, 1] == pytest.approx(2 / 3)
    assert slopes[1, 0] == pytest.approx(-2 / 3)
    assert slopes[0, 1] == pytest.approx(1 / 3 - 1)
    for v in range(2):
        for u in range(2):
            fitted = np.polyfit((a == u).astype(float), (p == v).astype(float), 1)[0]
            assert slopes[v, u] == pytest.approx(fitted)
    # a category with no rows (or all rows) has no slope
    assert np.isnan(association_slopes(p, a, 2, 3)[:, 2]).all()
    assert np.isnan(association_slopes(p, np.zeros(5, int), 2, 2)).all()


def test_weighted_pearson_and_slope_by_hand():
    x, y, w = np.array([0.0, 1, 2]), np.array([0.0, 1, 4]), np.array([1.0, 1, 2])
    # weights 1/4, 1/4, 1/2: means 1.25 and 2.25; cov 1.4375, var x 0.6875, var y 3.1875
    assert ls_slope(x, y, w) == pytest.approx(1.4375 / 0.6875)
    assert pearson(x, y, w) == pytest.approx(1.4375 / math.sqrt(0.6875 * 3.1875))
    assert pearson(x, y) == pytest.approx(np.corrcoef(x, y)[0, 1])
    assert ls_slope(x, y) == pytest.approx(np.polyfit(x, y, 1)[0])
    assert pearson(x, np.ones(3)) == 0.0 and ls_slope(np.ones(3), y) == 0.0


def test_logistic_regression_recovers_saturated_log_odds():
    codes = pd.DataFrame({"x": [0] * 4 + [1] * 4})
    y = np.array([1, 0, 0, 0, 1, 1, 1, 0])  # P(y | x=0) = 1/4, P(y | x=1) = 3/4
    intercept, coefs = logreg_coefficients(one_hot(codes, [("x", 1)]), y, C=1e8)
    assert intercept == pytest.approx(-math.log(3), abs=1e-3)
    assert coefs[0] == pytest.approx(2 * math.log(3), abs=1e-3)
    # a constant label: no association, all-zero coefficients
    intercept, coefs = logreg_coefficients(one_hot(codes, [("x", 1)]), np.ones(8), C=1.0)
    assert coefs.tolist() == [0.0] and intercept == pytest.approx(20)


def test_label_accuracy_and_indicator_agreement_by_hand():
    real, synth = np.array([0, 0, 1, 1]), np.array([0, 1, 1, 1])
    assert label_accuracy(real, synth) == 0.75
    table = indicator_agreement(real, synth, [0, 1]).set_index("value")
    # v = 1: P(syn=1 | real=1) - P(syn=1 | real=0) = 1 - 1/2; phi = 0.125 / sqrt(0.25 * 0.1875)
    assert table.loc[1, "slope"] == pytest.approx(0.5)
    assert table.loc[1, "correlation"] == pytest.approx(0.125 / math.sqrt(0.25 * 0.1875))
    assert table.loc[0, "slope"] == pytest.approx(0.5)  # P(syn=0|real=0) - P(syn=0|real=1)
    with pytest.raises(ValueError, match="one synthetic label per real record"):
        label_accuracy(real, synth[:3])


def test_same_predictor_rows():
    assert same_predictor_rows(REAL, SYNTH, ["x"])
    assert not same_predictor_rows(REAL, SYNTH, ["x", "race"])
    assert not same_predictor_rows(REAL, SYNTH.iloc[:5], ["x"])


def test_safe_key():
    assert safe_key("income>50K") == "income_50K" and safe_key("marital-status") == "marital-status"


# ----- the metric on tiny tables ----------------------------------------------------------
def test_scores_on_a_tiny_table_by_hand():
    metric = DukeUtility(private_attributes=["sex"], predictors=["x"], min_category_count=1)
    result = metric.score(tiny_dataset(), SYNTH)
    s = result.scores
    # joint (sex, x) proportions x 6: real [2, 1, 0, 0, 1, 2], synthetic [2, 0, 1, 0, 2, 1]
    # deviations from the mean 1: [1, 0, -1, -1, 0, 1] and [1, -1, 0, -1, 1, 0]: corr 2/4
    assert s["joint_prop_corr"] == pytest.approx(0.5)
    assert s["joint_prop_corr_sex"] == pytest.approx(0.5)
    # slopes (v=0 row, then v=1) real [.75, 0, -.75, -.75, 0, .75], synthetic
    # [.75, -.75, 0, -.75, .75, 0]; equal weights (every x has share 1/3): corr = fit = 1/2
    assert s["assoc_slope_corr"] == pytest.approx(0.5)
    assert s["assoc_slope_fit"] == pytest.approx(0.5)
    # logistic regression of sex on x (reference x=0): real coefficient of x=2 above x=1,
    # synthetic the other way round; two coefficients -> correlation -1
    coefs = result.tables["duke_logreg_coefficients"].set_index("term")
    assert list(coefs.index) == ["(intercept)", "x=1", "x=2"]
    assert coefs.loc["x=2", "real"] > coefs.loc["x=1", "real"] > 0
    assert coefs.loc["x=1", "synthetic"] > coefs.loc["x=2", "synthetic"] > 0
    assert s["logreg_coef_corr"] == pytest.approx(-1.0)
    expected_rmse = math.sqrt(np.mean((coefs["real"][1:] - coefs["synthetic"][1:]) ** 2))
    assert s["logreg_coef_rmse"] == pytest.approx(expected_rmse)
    # same x rows as the real table: the controlled-evaluation scores are there
    assert s["label_accuracy_sex"] == pytest.approx(4 / 6)
    # P(syn=v | real=v) - P(syn=v | real!=v): v=0: 2/3 - 1/3, v=1: 2/3 - 1/3
    assert s["indicator_slope_sex"] == pytest.approx(1 / 3)


def test_identical_tables_score_perfectly():
    metric = DukeUtility(min_category_count=1)
    s = metric.score(tiny_dataset(), REAL.copy()).scores
    for key in ("joint_prop_corr", "joint_prop_corr_sex", "joint_prop_corr_race",
                "assoc_slope_corr", "assoc_slope_fit", "logreg_coef_corr",
                "label_accuracy_sex", "label_accuracy_race", "indicator_slope_sex"):
        assert s[key] == pytest.approx(1.0), key
    assert s["logreg_coef_rmse"] == pytest.approx(0.0, abs=1e-9)


def test_label_accuracy_only_when_the_rows_correspond():
    other_rows = SYNTH.assign(x=[2, 2, 1, 1, 0, 0])
    s = DukeUtility(min_category_count=1).score(tiny_dataset(), other_rows).scores
    assert not any(k.startswith(("label_accuracy", "indicator_slope")) for k in s)


def test_pairs_cover_predictors_and_later_private_attributes():
    result = DukeUtility(min_category_count=1).score(tiny_dataset(), SYNTH)
    cells = result.tables["duke_joint_proportions"]
    pairs = sorted(set(zip(cells["private"], cells["attribute"])))
    assert pairs == [("race", "x"), ("sex", "race"), ("sex", "x")]
    for _, part in cells.groupby(["private", "attribute"]):
        assert part["real"].sum() == pytest.approx(1)
        assert part["synthetic"].sum() == pytest.approx(1)


def test_positive_value_and_logreg_predictors():
    metric = DukeUtility(binary_target="race", positive_value="b", logreg_predictors=["x"],
                         min_category_count=1)
    coefs = metric.score(tiny_dataset(), SYNTH).tables["duke_logreg_coefficients"]
    assert list(coefs["term"]) == ["(intercept)", "x=1", "x=2"]
    flipped = DukeUtility(binary_target="race", positive_value="w", logreg_predictors=["x"],
                          min_category_count=1).score(tiny_dataset(), SYNTH)
    # the other class as positive flips every coefficient's sign; the correlation is the same
    other = flipped.tables["duke_logreg_coefficients"]
    assert np.allclose(other["real"][1:], -coefs["real"][1:], atol=1e-6)


def test_constant_synthetic_label_scores_zero_correlation():
    s = DukeUtility(min_category_count=1).score(tiny_dataset(), SYNTH.assign(sex=1)).scores
    assert s["logreg_coef_corr"] == 0.0
    assert math.isfinite(s["logreg_coef_rmse"])


def test_figures_are_pngs(tmp_path):
    result = DukeUtility(min_category_count=1).score(tiny_dataset(), SYNTH)
    assert set(result.figures) == {"duke_joint_proportions", "duke_logreg_coefficients",
                                   "duke_level_correlations", "duke_joint_histograms",
                                   "duke_assoc_slopes", "duke_logreg_models"}
    for name, fig in result.figures.items():
        assert isinstance(fig, Figure)
        fig.savefig(tmp_path / f"{name}.png")
        assert (tmp_path / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
    assert DukeUtility(figures=False).score(tiny_dataset(), SYNTH).figures == {}


def test_applies_to_needs_the_private_attributes(small_dataset):
    assert DukeUtility().applies_to(tiny_dataset())
    assert not DukeUtility().applies_to(small_dataset)
    assert DukeUtility(private_attributes=["color"], binary_target="color",
                       positive_value="red").applies_to(small_dataset)


@pytest.mark.parametrize("settings, match", [
    ({"positive_value": 7}, "positive_value 7 is not a value of 'sex'"),
    ({"binary_target": "x"}, "has 3 values; say which one is positive"),
    ({"predictors": ["sex"]}, "predictors"),
    ({"private_attributes": ["nope"]}, r"\['nope'\] are not attributes"),
    ({"logreg_predictors": ["sex"]}, "logreg_predictors"),
])
def test_bad_settings_raise_config_errors(settings, match):
    with pytest.raises(ConfigError, match=match):
        DukeUtility(**settings).score(tiny_dataset(), SYNTH)


def test_registered_under_its_name():
    metric = make_metric("duke_utility", {"private_attributes": ["sex"], "binary_target": "sex"})
    assert isinstance(metric, DukeUtility) and metric.headline == "logreg_coef_corr"


# ----- Adult ------------------------------------------------------------------------------
@pytest.mark.realdata
def test_adult_public_sample_scores_high_and_independent_low(shared_data):
    data = load_shared_dataset("adult", data_dir=str(shared_data), public_fraction=0.5)
    budget = Budget(1.0)
    metric = DukeUtility(figures=False)
    same_population = make_mechanism("public_only", {}).fit_sample(
        data, budget, Releaser(Ledger(budget)), np.random.default_rng(0))
    independent = make_mechanism("independent", {}).fit_sample(
        data, budget, Releaser(Ledger(budget)), np.random.default_rng(0))
    good, bad = metric.score(data, same_population).scores, metric.score(data, independent).scores
    assert good["logreg_coef_corr"] > 0.85 and bad["logreg_coef_corr"] < 0.3
    assert good["assoc_slope_corr"] > 0.9 and abs(bad["assoc_slope_fit"]) < 0.2
    assert good["joint_prop_corr"] > 0.999 > bad["joint_prop_corr"]
    assert "label_accuracy_sex" not in good  # other records than the real ones


# ----- through the runner -----------------------------------------------------------------
@pytest.mark.slow
def test_rdt_run_logs_duke_scores_and_png_figures(tmp_path, tracking_uri):
    from mlflow import MlflowClient

    from dp_arena.run.runner import run_one
    from tests.support.rdt_people import people, people_schema

    people(3000, 1).to_csv(tmp_path / "private.csv", index=False)
    people(3000, 2).to_csv(tmp_path / "public.csv", index=False)
    people_schema().save(tmp_path / "parameters.json")
    cfg = {
        "dataset": {"name": "csv", "path": str(tmp_path / "private.csv"),
                    "schema": str(tmp_path / "parameters.json"),
                    "public_path": str(tmp_path / "public.csv")},
        "mechanism": {"name": "rdt", "n_B": 200},
        "privacy": {"epsilon": 1.0, "delta": 0.0, "accountant": "gdp"},
        "metrics": {"kmarginal": {"k": 2}, "duke_utility": {}},
        "trial": 0, "seed": 0,
        "tracking": {"uri": tracking_uri, "experiment": "rdt", "log_private_synthetic": False,
                     "log_private_tables": True},
    }
    out = run_one(cfg)
    assert out.status == "FINISHED"
    client = MlflowClient(tracking_uri)
    metrics = client.get_run(out.run_id).data.metrics
    for key in ("duke_utility/logreg_coef_corr", "duke_utility/joint_prop_corr",
                "duke_utility/assoc_slope_corr", "duke_utility/logreg_coef_rmse"):
        assert key in metrics, key
    assert metrics["duke_utility/logreg_coef_corr"] > 0.5  # sex follows job, and rdt keeps it
    assert metrics["epsilon_spent"] == pytest.approx(1.0)
    plots = {a.path for a in client.list_artifacts(out.run_id, "plots")}
    assert plots == {"plots/duke_joint_proportions.png", "plots/duke_logreg_coefficients.png",
                     "plots/duke_level_correlations.png", "plots/duke_joint_histograms.png",
                     "plots/duke_assoc_slopes.png", "plots/duke_logreg_models.png"}
