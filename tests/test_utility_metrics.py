"""ml_efficacy, propensity and range_query on hand-built tables whose answers are known.

Tolerances: (b) the AUC of a propensity model on two samples of one distribution (2,000 rows
each): standard error sqrt((n1 + n2 + 1) / (12 n1 n2)) = 0.009, abs=0.05 is 5.5 of them; (c)
Newton-CG stopped at gradient 1e-4 against lbfgs to 1e-10: rel=0.02 (the test's comment gives
the measured stop and what a far stop moves).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dp_arena.data.datasets import Dataset
from dp_arena.data.schema import Column, Schema
from dp_arena.errors import ConfigError
from dp_arena.metrics import make_metric
from dp_arena.metrics.range_query import RangeWorkload, answer_range_queries, range_errors
from tests.support.tolerances import statistical, z_quantile


def xy_schema(target_kind: str = "binary") -> Schema:
    target = Column("y", "numeric", dtype="float64", min=-100, max=100) \
        if target_kind == "regression" else Column("y", "categorical", values=(0, 1))
    return Schema((Column("pid", "id", min=0, max=10**6),
                   Column("a", "categorical", values=tuple(range(6))),
                   Column("b", "categorical", values=tuple(range(6))),
                   Column("c", "categorical", values=("u", "v", "w"), dtype="str"), target))


def rule_frame(n: int, seed: int, regression: bool = False) -> pd.DataFrame:
    """y = 1 when a + b >= 5 (or y = 2a - 3b + noise), c is noise."""
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 6, n), rng.integers(0, 6, n)
    y = (2.0 * a - 3.0 * b + rng.normal(0, 0.5, n)) if regression else (a + b >= 5).astype(int)
    return pd.DataFrame({"pid": np.arange(n), "a": a, "b": b,
                         "c": rng.choice(["u", "v", "w"], n), "y": y})


def dataset(train: pd.DataFrame, heldout: pd.DataFrame | None, target: str | None = "y",
            kind: str = "binary") -> Dataset:
    return Dataset("toy", xy_schema(kind), train, heldout=heldout, target=target)


# ----- ml_efficacy ------------------------------------------------------------------------
def test_ml_efficacy_synthetic_from_the_same_rule_matches_train_on_real() -> None:
    data = dataset(rule_frame(3000, 0), rule_frame(2000, 1))
    scores = make_metric("ml_efficacy", None).score(data, rule_frame(3000, 2)).scores
    # the rule is deterministic and learnable by both models: AUROC near 1 on held-out rows
    assert scores["score"] > 0.99 and scores["real_score"] > 0.99
    assert abs(scores["gap"]) < 0.01  # both AUROCs lie in (0.99, 1]: so must their gap
    assert scores["gap"] == pytest.approx(scores["score"] - scores["real_score"])
    assert scores["auroc"] == pytest.approx((scores["linear_auroc"] + scores["hgb_auroc"]) / 2)


def test_ml_efficacy_shuffled_target_gives_chance_auroc() -> None:
    # Held-out labels drawn independently of everything else: any model's held-out scores are
    # then independent of the labels, so its AUROC is a Mann-Whitney statistic under the null,
    # mean 1/2 and variance at most (n0 + n1 + 1) / (12 n0 n1) (ties only shrink it; the
    # models see 108 distinct feature cells). Were the test labels the rule itself, the
    # AUROC's noise would come from the few random coefficients a model fits to a shuffled
    # target, not from the 2,000 rows, and has no such bound. A metric that scored on
    # training rows would see the shuffled synthetic labels its trees memorised.
    heldout = rule_frame(2000, 1)
    heldout["y"] = np.random.default_rng(4).integers(0, 2, len(heldout))
    synthetic = rule_frame(3000, 2)
    synthetic["y"] = np.random.default_rng(3).permutation(synthetic["y"].to_numpy())
    scores = make_metric("ml_efficacy", None).score(dataset(rule_frame(3000, 0), heldout),
                                                    synthetic).scores
    n1 = int(heldout["y"].sum())
    n0 = len(heldout) - n1
    se = math.sqrt((n0 + n1 + 1) / (12 * n1 * n0))  # AUROC standard error under no signal
    # z = 4.89 of it (false failure 1e-6 each; the constant 4 was 6e-5)
    for prefix in ("", "real_"):
        for model in ("linear", "hgb"):
            assert abs(scores[f"{prefix}{model}_auroc"] - 0.5) < z_quantile() * se


def test_ml_efficacy_one_class_synthetic_gives_auroc_one_half() -> None:
    synthetic = rule_frame(500, 2).assign(y=0)
    scores = make_metric("ml_efficacy", None).score(
        dataset(rule_frame(1000, 0), rule_frame(1000, 1)), synthetic).scores
    assert scores["linear_auroc"] == 0.5 and scores["hgb_auroc"] == 0.5
    heldout_zero_share = float((rule_frame(1000, 1)["y"] == 0).mean())
    assert scores["accuracy"] == pytest.approx(heldout_zero_share)


def test_ml_efficacy_regression_r2_on_a_linear_rule() -> None:
    data = dataset(rule_frame(3000, 0, True), rule_frame(2000, 1, True), kind="regression")
    scores = make_metric("ml_efficacy", None).score(data, rule_frame(3000, 2, True)).scores
    # var(2a - 3b) = 13 * 35/12 ~ 37.9, noise variance 0.25: the best R^2 is ~0.993. The
    # boosting (30 iterations, learning rate 0.1, trees of 31 leaves over 36 (a, b) cells)
    # leaves about 0.9^30 ~ 0.04 of the signal's deviation, 0.04^2 ~ 0.002 of its variance.
    assert scores["linear_r2"] > 0.98
    assert scores["hgb_r2"] > 0.98
    # gap = score - real_score: the same models trained on two 3,000-row samples of one rule,
    # each within 0.007 (noise) + 0.002 (boosting) of R^2 = 1 on the same held-out rows
    assert abs(scores["gap"]) < 0.01


def test_ml_efficacy_not_applicable_reasons() -> None:
    metric = make_metric("ml_efficacy", None)
    assert "dataset.holdout_fraction > 0" in metric.not_applicable_reason(
        dataset(rule_frame(100, 0), None))
    assert "dataset.target" in metric.not_applicable_reason(
        dataset(rule_frame(100, 0), rule_frame(100, 1), target=None))
    assert metric.not_applicable_reason(dataset(rule_frame(100, 0), rule_frame(100, 1))) is None
    with pytest.raises(ConfigError, match="not an attribute"):
        metric.not_applicable_reason(dataset(rule_frame(100, 0), rule_frame(100, 1),
                                             target="nope"))


def test_ml_efficacy_settings_are_checked() -> None:
    with pytest.raises(ConfigError):
        make_metric("ml_efficacy", {"models": ["forest"]})
    with pytest.raises(ConfigError):
        make_metric("propensity", {"folds": 1})
    with pytest.raises(ConfigError):
        make_metric("range_query", {"sanity_fraction": 0.0})


# ----- propensity -------------------------------------------------------------------------
def test_propensity_same_distribution_ratio_near_one() -> None:
    metric = make_metric("propensity", {"max_rows": 2000})
    ratios = [metric.score(dataset(rule_frame(2000, s), None), rule_frame(2000, 100 + s))
              .scores["pmse_ratio"] for s in range(6)]
    # k = 1 + 5 + 5 + 2 + 1 + 6 = 20 parameters (4 groups: a, b -> 3 groups of 6 codes, c 3,
    # y 2): under one distribution the pMSE ratio is ~ chi^2_(k-1) / (k - 1), sd
    # sqrt(2 / (k - 1)) = 0.32 per draw, 0.13 for the mean of six; z = 4.89 of those (1e-6)
    # is 0.65: it catches a normalisation off by a factor of 1.65 or more (the draws are
    # seeded, so the outcome is fixed; the bound says how far chance alone could move it)
    k = 20
    assert abs(np.mean(ratios) - 1.0) < statistical(math.sqrt(2 / (k - 1)) / math.sqrt(6))
    assert metric.score(dataset(rule_frame(2000, 0), None), rule_frame(2000, 9)) \
        .scores["auc"] == pytest.approx(0.5, abs=0.05)


def test_propensity_fit_reaches_the_optimum_of_a_tight_fit() -> None:
    # The L2-penalised logistic loss is strictly convex, so Newton-CG (the metric's solver,
    # stopped at its default gradient tolerance 1e-4) and lbfgs run to 1e-10 approach the same
    # optimum; what is left is Newton-CG's stopping error (0.2-0.4% of the pMSE on this design
    # for three seeds) plus rounding. The 2% bound leaves room for the stop, not for a fit
    # stopped far away (lbfgs capped at 200 iterations moved adult's pMSE ratio by 5-7%).
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold

    from dp_arena.metrics.propensity import (
        cross_fitted_propensities,
        propensity_design,
        stacked_sample,
    )

    data = dataset(rule_frame(1500, 0), None)
    synthetic = rule_frame(1500, 5).assign(y=lambda f: (f["a"] >= 3).astype(int))
    codes, labels = stacked_sample(data.schema, data.private, synthetic, 1500, 0)
    design, _ = propensity_design(codes, [data.schema[a].size for a in data.schema.attributes],
                                  4)
    fast = cross_fitted_propensities(design, labels, 2, 100.0, 0)
    tight = np.empty(len(labels))
    folds = StratifiedKFold(n_splits=2, shuffle=True, random_state=0)
    for train, test in folds.split(np.zeros(len(labels)), labels):
        model = LogisticRegression(C=100.0, tol=1e-10, max_iter=100_000)
        tight[test] = model.fit(design[train], labels[train]).predict_proba(design[test])[:, 1]
    assert np.mean((fast - 0.5) ** 2) == pytest.approx(np.mean((tight - 0.5) ** 2), rel=0.02)


def test_propensity_disjoint_supports_reach_the_maximum() -> None:
    real = rule_frame(1000, 0)
    real["a"] = real["a"] % 3           # real rows use codes 0..2 of a
    synthetic = rule_frame(1000, 1)
    synthetic["a"] = 3 + synthetic["a"] % 3  # synthetic rows codes 3..5
    scores = make_metric("propensity", None).score(dataset(real, None), synthetic).scores
    assert scores["auc"] > 0.999
    # c = 1/2: the largest pMSE is c(1 - c) = 1/4 (propensity 0 for real, 1 for synthetic)
    assert 0.95 * 0.25 < scores["pmse"] <= 0.25


# ----- range queries ----------------------------------------------------------------------
def test_range_query_identical_tables_have_zero_error() -> None:
    frame = rule_frame(2000, 0)
    scores = make_metric("range_query", None).score(dataset(frame, None), frame).scores
    assert scores == {"mean_rel_error": 0.0, "median_rel_error": 0.0, "p90_rel_error": 0.0}


def test_range_query_answers_a_hand_made_shift() -> None:
    # real: x in 0..3 ten rows each, z = x; synthetic: every x shifted up by one (3 -> 3)
    x = np.repeat(np.arange(4), 10)
    real = np.c_[x, x]
    fake = np.c_[np.minimum(x + 1, 3), x]
    queries = RangeWorkload(attributes=np.array([[0, -1], [0, -1], [0, 1], [1, 0]]),
                            lo=np.array([[0, -1], [3, -1], [1, 0], [0, 2]]),
                            hi=np.array([[1, -1], [3, -1], [2, 1], [3, 3]]),
                            sizes=np.array([1, 1, 2, 2]))
    # x in [0,1]: 20 real, 10 fake; x = 3: 10 vs 20; x in [1,2] & z in [0,1]: 10 (x=1) vs
    # 20 (x' = 1, 2 from z = 0, 1); z in [0,3] & x in [2,3]: 20 vs 30
    assert list(answer_range_queries(real, [4, 4], queries)) == [20, 10, 10, 20]
    assert list(answer_range_queries(fake, [4, 4], queries)) == [10, 20, 20, 30]
    errors = range_errors(real, fake, [4, 4], queries, sanity_fraction=0.001)
    assert np.allclose(errors, [10 / 20, 10 / 10, 10 / 10, 10 / 20])
    # the small-count rule: a query true count 0 is divided by s = sanity_fraction * |D|
    empty = RangeWorkload(np.array([[0]]), np.array([[0]]), np.array([[0]]), np.array([1]))
    zero_real = np.c_[np.full(40, 2), x]
    assert range_errors(zero_real, real, [4, 4], empty, 0.5)[0] == pytest.approx(10 / 20)


def test_range_query_scales_synthetic_counts_and_skips_text_columns() -> None:
    frame = rule_frame(1000, 0)
    doubled = pd.concat([frame, frame], ignore_index=True)
    scores = make_metric("range_query", None).score(dataset(frame, None), doubled).scores
    assert scores["mean_rel_error"] == pytest.approx(0.0)
    text_only = Schema((Column("c", "categorical", values=("u", "v"), dtype="str"),))
    data = Dataset("text", text_only, pd.DataFrame({"c": ["u", "v"]}))
    assert "ordinal column" in make_metric("range_query", None).not_applicable_reason(data)
