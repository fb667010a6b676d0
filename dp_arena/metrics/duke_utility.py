"""``duke_utility``: the utility report of the Duke random-decision-tree project.

Compares how the private attributes P (default ``sex`` and ``race``) relate to the other
attributes in the real table (``data.private``) and in the synthetic one.

The scores, their definitions and which outputs are private: :class:`DukeUtility`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from dp_arena.data.datasets import Dataset
from dp_arena.data.schema import Schema
from dp_arena.errors import ConfigError

from .base import Metric, MetricResult
from .duke_models import (  # noqa: F401 - re-exported: the panels' statistics and models
    aggregated_rows,
    design_categories,
    logreg_coefficients,
    logreg_model_scores,
    logreg_model_table,
    ls_slope,
    newton_logreg,
    one_hot,
    pearson,
    rmse,
    safe_key,
)


# ----- joint proportions and association slopes -------------------------------------------
def joint_proportions(p_codes: np.ndarray, a_codes: np.ndarray, p_size: int,
                      a_size: int) -> np.ndarray:
    """Proportions of the joint categories (``p_size`` x ``a_size``; zeros for no rows)."""
    counts = np.bincount(p_codes * a_size + a_codes, minlength=p_size * a_size).astype(float)
    total = counts.sum()
    return (counts / total if total else counts).reshape(p_size, a_size)


def association_slopes(p_codes: np.ndarray, a_codes: np.ndarray, p_size: int,
                       a_size: int) -> np.ndarray:
    """LS slope of ``1[p = v]`` on ``1[a = u]`` for every cell: ``P(v | u) - P(v | not u)``
    (NaN where ``a = u`` holds for no row or for every row)."""
    joint = np.bincount(p_codes * a_size + a_codes,
                        minlength=p_size * a_size).astype(float).reshape(p_size, a_size)
    n_u = joint.sum(axis=0)
    n_v = joint.sum(axis=1)
    n = joint.sum()
    rest = n - n_u
    with np.errstate(divide="ignore", invalid="ignore"):
        in_u = joint / n_u
        out_u = (n_v[:, None] - joint) / rest
        out = in_u - out_u
    out[:, (n_u == 0) | (rest == 0)] = np.nan
    return out


def pair_table(real: pd.DataFrame, synth: pd.DataFrame, pairs: list[tuple[str, str]],
               domain: dict[str, int]) -> pd.DataFrame:
    """One row per cell ``(p = v, a = u)`` of every pair: real and synthetic joint proportions
    and association slopes."""
    parts = []
    for p, a in pairs:
        ps, as_ = domain[p], domain[a]
        args_r = (real[p].to_numpy(), real[a].to_numpy(), ps, as_)
        args_s = (synth[p].to_numpy(), synth[a].to_numpy(), ps, as_)
        v, u = np.meshgrid(np.arange(ps), np.arange(as_), indexing="ij")
        share_u = np.bincount(args_r[1], minlength=as_) / max(len(real), 1)
        parts.append(pd.DataFrame({
            "private": p, "attribute": a, "private_code": v.ravel(), "attribute_code": u.ravel(),
            "weight": (share_u * (1.0 - share_u))[u.ravel()],
            "real": joint_proportions(*args_r).ravel(),
            "synthetic": joint_proportions(*args_s).ravel(),
            "real_slope": association_slopes(*args_r).ravel(),
            "synthetic_slope": association_slopes(*args_s).ravel(),
            "real_corr": level_correlations(joint_proportions(*args_r)).ravel(),
            "synthetic_corr": level_correlations(joint_proportions(*args_s)).ravel(),
        }))
    return pd.concat(parts, ignore_index=True)


def level_correlations(joint: np.ndarray) -> np.ndarray:
    """Pearson (phi) correlation of the indicators ``1[p = v]`` and ``1[a = u]`` for every
    cell of a joint proportion table: ``(P(v, u) - P(v) P(u)) / sqrt(P(v)(1 - P(v)) P(u)(1 -
    P(u)))``; NaN where either indicator is constant."""
    pv, pu = joint.sum(axis=1), joint.sum(axis=0)
    den = np.sqrt(np.outer(pv * (1 - pv), pu * (1 - pu)))
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (joint - np.outer(pv, pu)) / den
    out[den <= 1e-15] = np.nan
    return out


def level_correlation_scores(table: pd.DataFrame, name: str = "level") -> dict[str, float]:
    """Correlation and RMSE of synthetic vs real level correlations over the cells where both
    exist."""
    ok = np.isfinite(table["real_corr"]) & np.isfinite(table["synthetic_corr"])
    r, s = table.loc[ok, "real_corr"].to_numpy(), table.loc[ok, "synthetic_corr"].to_numpy()
    return {f"{name}_corr_corr": pearson(r, s),
            f"{name}_corr_rmse": rmse(r, s) if len(r) else 0.0}


def joint_private_codes(frame: pd.DataFrame, private: list[str],
                        domain: dict[str, int]) -> np.ndarray:
    """One code per combination of the private attributes' codes (mixed radix, the first
    attribute most significant): the report's (Sex, Race) categories."""
    code = np.zeros(len(frame), dtype=np.int64)
    for p in private:
        code = code * domain[p] + frame[p].to_numpy()
    return code


def private_combination_table(real: pd.DataFrame, synth: pd.DataFrame, private: list[str],
                              predictors: list[str], domain: dict[str, int]) -> pd.DataFrame:
    """:func:`pair_table` over the (private combination, attribute) categories, e.g. (Sex,
    Race, Occupation) for every predictor; ``private`` names the combination (``sex*race``)."""
    name = "*".join(private)
    size = int(np.prod([domain[p] for p in private]))
    real = pd.DataFrame({name: joint_private_codes(real, private, domain),
                         **{a: real[a] for a in predictors}})
    synth = pd.DataFrame({name: joint_private_codes(synth, private, domain),
                          **{a: synth[a] for a in predictors}})
    return pair_table(real, synth, [(name, a) for a in predictors], {**domain, name: size})


def slope_scores(table: pd.DataFrame) -> dict[str, float]:
    """Weighted correlation, LS fit and RMSE of synthetic vs real association slopes over the
    cells where both exist (weights: the ``weight`` column)."""
    ok = (np.isfinite(table["real_slope"]) & np.isfinite(table["synthetic_slope"])
          & (table["weight"] > 0))
    if not ok.any():
        return {"assoc_slope_corr": 0.0, "assoc_slope_fit": 0.0, "assoc_slope_rmse": 0.0}
    r, s = table.loc[ok, "real_slope"].to_numpy(), table.loc[ok, "synthetic_slope"].to_numpy()
    w = table.loc[ok, "weight"].to_numpy()
    return {"assoc_slope_corr": pearson(r, s, w), "assoc_slope_fit": ls_slope(r, s, w),
            "assoc_slope_rmse": weighted_rmse(r, s, w)}


def weighted_rmse(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> float:
    """Weighted root mean square of ``y - x`` (weights normalised to sum 1); 0 for no cells."""
    x, y, w = (np.asarray(v, float) for v in (x, y, weights))
    if len(x) == 0 or w.sum() <= 0:
        return 0.0
    return float(np.sqrt((w / w.sum()) @ ((y - x) ** 2)))


def slope_breakdown(table: pd.DataFrame) -> pd.DataFrame:
    """Panel (c) per attribute of a :func:`pair_table`: for each ``attribute``, over its cells
    where both slopes exist and the weight is positive, the number of cells and the weighted
    correlation, LS fit and RMSE of synthetic vs real slopes (the weights of
    :func:`slope_scores`). Attributes keep their order of appearance."""
    rows = []
    for attr, part in table.groupby("attribute", sort=False):
        ok = (np.isfinite(part["real_slope"]) & np.isfinite(part["synthetic_slope"])
              & (part["weight"] > 0))
        r = part.loc[ok, "real_slope"].to_numpy()
        s = part.loc[ok, "synthetic_slope"].to_numpy()
        w = part.loc[ok, "weight"].to_numpy()
        rows.append({"attribute": attr, "cells": int(ok.sum()),
                     "slope_corr": pearson(r, s, w) if len(r) else 0.0,
                     "slope_fit": ls_slope(r, s, w) if len(r) else 0.0,
                     "slope_rmse": weighted_rmse(r, s, w)})
    return pd.DataFrame(rows, columns=["attribute", "cells", "slope_corr", "slope_fit",
                                       "slope_rmse"])


def slope_improvement(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """Per attribute present in both :func:`slope_breakdown` tables: the change in RMSE
    (``after - before``; negative: the points moved towards y = x), in distance of the fit
    from 1, and whether both say ``after`` is better (``improved``). This is how to check the
    report's "Improvements in slope are observed for Agency and Occupation" between a Method 1
    and a Method 2 run."""
    b = before.set_index("attribute")
    a = after.set_index("attribute")
    common = [x for x in b.index if x in a.index]
    d_rmse = a.loc[common, "slope_rmse"] - b.loc[common, "slope_rmse"]
    d_fit = (a.loc[common, "slope_fit"] - 1).abs() - (b.loc[common, "slope_fit"] - 1).abs()
    return pd.DataFrame({"attribute": common, "rmse_change": d_rmse.to_numpy(),
                         "fit_gap_change": d_fit.to_numpy(),
                         "improved": ((d_rmse < 0) & (d_fit < 0)).to_numpy()})


def breakdown_scores(breakdown: pd.DataFrame, prefix: str = "assoc") -> dict[str, float]:
    """``<prefix>_slope_{corr,fit,rmse}_<attribute>`` for every row of a breakdown."""
    out = {}
    for row in breakdown.itertuples(index=False):
        key = safe_key(row.attribute)
        out[f"{prefix}_slope_corr_{key}"] = float(row.slope_corr)
        out[f"{prefix}_slope_fit_{key}"] = float(row.slope_fit)
        out[f"{prefix}_slope_rmse_{key}"] = float(row.slope_rmse)
    return out


# ----- controlled evaluation --------------------------------------------------------------
def label_accuracy(real: np.ndarray, synthetic: np.ndarray) -> float:
    """Share of records whose synthetic label equals the true one (rows aligned)."""
    real, synthetic = np.asarray(real), np.asarray(synthetic)
    if len(real) != len(synthetic):
        raise ValueError("label_accuracy needs one synthetic label per real record")
    return float(np.mean(real == synthetic)) if len(real) else float("nan")


def indicator_agreement(real: np.ndarray, synthetic: np.ndarray, values: list[Any]) -> pd.DataFrame:
    """Per category ``v``, over aligned records: the share of real ``v``, the LS slope of
    ``1[synthetic = v]`` on ``1[real = v]`` (``P(syn = v | real = v) - P(syn = v | real != v)``;
    1 for a perfect copy, 0 for labels drawn independently of the truth) and the correlation
    of the two indicators (phi coefficient)."""
    real, synthetic = np.asarray(real), np.asarray(synthetic)
    rows = []
    for v in values:
        r, s = (real == v).astype(float), (synthetic == v).astype(float)
        rows.append({"value": v, "real_share": float(r.mean()) if len(r) else float("nan"),
                     "slope": ls_slope(r, s), "correlation": pearson(r, s)})
    return pd.DataFrame(rows)


def same_predictor_rows(real: pd.DataFrame, synthetic: pd.DataFrame, columns: list[str]) -> bool:
    """Whether ``synthetic`` has exactly ``real``'s rows on ``columns``, in the same order."""
    if len(real) != len(synthetic):
        return False
    return all(np.array_equal(real[c].to_numpy(), synthetic[c].to_numpy()) for c in columns)


# ----- figures ----------------------------------------------------------------------------
def joint_proportion_figure(table: pd.DataFrame, corr: float) -> Figure:
    """Scatter of real (x) vs synthetic (y) joint proportions with the line y = x."""
    fig = Figure(figsize=(5.5, 5))
    ax = fig.subplots()
    for p, part in table.groupby("private", sort=False):
        ax.scatter(part["real"], part["synthetic"], s=8, alpha=0.6, label=str(p))
    top = max(float(table["real"].max()), float(table["synthetic"].max()), 1e-6) * 1.05
    ax.plot([0, top], [0, top], color="black", linewidth=0.8, label="y = x")
    ax.set_xlim(0, top), ax.set_ylim(0, top)
    ax.set_xlabel("real proportion"), ax.set_ylabel("synthetic proportion")
    ax.set_title(f"Joint category proportions (corr {corr:.3f})")
    ax.legend(title="private attribute", fontsize=8)
    return fig


def panel_grid(panels: int, height: float) -> tuple[Figure, np.ndarray]:
    """A figure of ``panels`` panels, three a row (each 5 wide, ``height`` tall), and its
    axes flattened; the axes beyond ``panels`` are hidden."""
    cols = min(3, max(panels, 1))
    rows = max(math.ceil(panels / cols), 1)
    fig = Figure(figsize=(5 * cols, height * rows))
    axes = np.atleast_1d(fig.subplots(rows, cols)).ravel()
    for ax in axes[panels:]:
        ax.set_visible(False)
    return fig, axes


def joint_histogram_figure(table: pd.DataFrame, max_cells: int) -> Figure:
    """Panel (a): per attribute, the proportions of its joint (private combination,
    attribute) categories, real and synthetic bars side by side (the ``max_cells`` largest
    real cells, in decreasing real order)."""
    attrs = list(dict.fromkeys(table["attribute"]))
    fig, axes = panel_grid(len(attrs), 3.0)
    for ax, attr in zip(axes, attrs):
        part = table[table["attribute"] == attr].sort_values("real", ascending=False,
                                                             kind="stable").head(max_cells)
        x = np.arange(len(part))
        ax.bar(x - 0.2, part["real"], width=0.4, label="real")
        ax.bar(x + 0.2, part["synthetic"], width=0.4, label="synthetic")
        ax.set_xticks(x, [f"{v},{u}" for v, u in zip(part["private_code"],
                                                     part["attribute_code"])],
                      rotation=90, fontsize=5)
        ax.set_title(f"({part['private'].iloc[0]}, {attr})" if len(part) else attr, fontsize=8)
    if attrs:
        axes[0].legend(fontsize=7)
    fig.suptitle("Joint category proportions (private combination code, attribute code)")
    return fig


def level_correlation_figure(table: pd.DataFrame, corr: float) -> Figure:
    """Panel (d): real (x) vs synthetic (y) level correlations with the line y = x."""
    fig = Figure(figsize=(5.5, 5))
    ax = fig.subplots()
    for p, part in table.groupby("private", sort=False):
        ax.scatter(part["real_corr"], part["synthetic_corr"], s=8, alpha=0.6, label=str(p))
    ax.plot([-1, 1], [-1, 1], color="black", linewidth=0.8, label="y = x")
    ax.set_xlim(-1, 1), ax.set_ylim(-1, 1)
    ax.set_xlabel("real correlation"), ax.set_ylabel("synthetic correlation")
    ax.set_title(f"Correlations between attribute levels (corr {corr:.3f})")
    ax.legend(fontsize=8)
    return fig


def coefficient_figure(coefs: pd.DataFrame, target: str, corr: float) -> Figure:
    """Coefficients per term (sorted by the real value) and real vs synthetic scatter."""
    fig = Figure(figsize=(11, 4.5))
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [2, 1]})
    order = coefs.sort_values("real").reset_index(drop=True)
    x = np.arange(len(order))
    left.plot(x, order["real"], "o", markersize=3, label="real")
    left.plot(x, order["synthetic"], "x", markersize=3, label="synthetic")
    left.axhline(0, color="grey", linewidth=0.5)
    left.set_xlabel("term (sorted by real coefficient)"), left.set_ylabel("coefficient")
    left.set_title(f"Logistic regression of {target}")
    left.legend(fontsize=8)
    right.scatter(order["real"], order["synthetic"], s=8, alpha=0.6)
    lo = float(min(order["real"].min(), order["synthetic"].min(), 0)) if len(order) else -1.0
    hi = float(max(order["real"].max(), order["synthetic"].max(), 0)) if len(order) else 1.0
    right.plot([lo, hi], [lo, hi], color="black", linewidth=0.8)
    right.set_xlabel("real"), right.set_ylabel("synthetic")
    right.set_title(f"corr {corr:.3f}")
    return fig


def slope_figure(table: pd.DataFrame, breakdown: pd.DataFrame, corr: float) -> Figure:
    """Panel (c): real (x) vs synthetic (y) association slopes, one colour per attribute, with
    the line y = x; beside it the weighted RMSE per attribute (:func:`slope_breakdown`)."""
    fig = Figure(figsize=(11, 5))
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
    for attr, part in table.groupby("attribute", sort=False):
        left.scatter(part["real_slope"], part["synthetic_slope"], s=8, alpha=0.6,
                     label=str(attr))
    left.plot([-1, 1], [-1, 1], color="black", linewidth=0.8, label="y = x")
    left.set_xlim(-1, 1), left.set_ylim(-1, 1)
    left.set_xlabel("slope in the real data (AD)"), left.set_ylabel("slope in the synthetic data")
    left.set_title(f"(c) Least-squares slopes of level indicators (corr {corr:.3f})")
    left.legend(fontsize=7, ncol=2)
    y = np.arange(len(breakdown))
    right.barh(y, breakdown["slope_rmse"])
    right.set_yticks(y, [str(a) for a in breakdown["attribute"]], fontsize=7)
    right.invert_yaxis()
    right.set_xlabel("weighted RMSE of synthetic - real slope")
    right.set_title("per attribute (lower: nearer y = x)")
    return fig


def logreg_models_figure(table: pd.DataFrame, target: str) -> Figure:
    """Figures 10-14: one panel per model, its coefficients per term, real and synthetic side
    by side."""
    models = list(dict.fromkeys(table["model"]))
    fig, axes = panel_grid(len(models), 3.5)
    for ax, name in zip(axes, models):
        part = table[table["model"] == name]
        x = np.arange(len(part))
        ax.bar(x - 0.2, part["real"], width=0.4, label="real (AD)")
        ax.bar(x + 0.2, part["synthetic"], width=0.4, label="synthetic")
        ax.axhline(0, color="grey", linewidth=0.5)
        ax.set_xticks(x, list(part["term"]), rotation=90, fontsize=5)
        ax.set_title(f"{target}: {name}", fontsize=8)
    if models:
        axes[0].legend(fontsize=7)
        axes[0].set_ylabel("coefficient (log odds)")
    fig.suptitle(f"Logistic regression coefficients of {target}, real vs synthetic")
    return fig


# ----- the metric -------------------------------------------------------------------------
@dataclass
class DukeUtility(Metric):
    """The Duke report's utility panels of a synthetic table against ``data.private``.

    Scores
    ------
    Joint proportions
        For every private attribute ``p`` and every other attribute ``a`` (the predictors, and the
        private attributes after ``p``): the proportions of the joint categories ``(p, a)``, real and
        synthetic. ``joint_prop_corr`` is the Pearson correlation of real vs synthetic proportions
        over all cells of all pairs (each pair's cells sum to 1); ``joint_prop_corr_<p>`` the same
        per private attribute. Figure ``duke_joint_proportions``: real on x, synthetic on y, the
        line y = x.
    Association slopes (the report's "least-squares slopes between category indicator vectors")
        Within one table, the least-squares slope of the indicator ``1[p = v]`` on the indicator
        ``1[a = u]`` is ``P(p = v | a = u) - P(p = v | a != u)``: how much being in category ``u``
        of ``a`` moves the share of ``v``. It is computed for every cell on the real and on the
        synthetic table (cells where ``a = u`` holds for no row or for every row have no slope and
        are skipped). ``assoc_slope_corr`` is their correlation real vs synthetic and
        ``assoc_slope_fit`` the least-squares slope of the synthetic slopes on the real ones
        (1: associations kept at full strength; 0: lost, e.g. P drawn independently of X), both
        weighted by ``s_u (1 - s_u)``, ``s_u`` the real share of ``a = u``: the variance of the
        regressor, to which a slope's precision is proportional, so that categories of a handful
        of rows (whose real slopes are mostly sampling noise) do not dominate. This is the
        report's panel (c) (section 6: "the least squares slope between attributes and levels
        within SD (y-axis) and ... within AD (x-axis)"), not a logistic regression.
        ``assoc_slope_rmse`` is the weighted root mean square of (synthetic - real) slope: the
        distance of the panel's points from its reference line y = x.
    Panel (c) per attribute (:func:`slope_breakdown`)
        The same three numbers over the cells of one attribute ``a`` (all private attributes
        paired with it): ``assoc_slope_corr_<a>``, ``assoc_slope_fit_<a>``,
        ``assoc_slope_rmse_<a>``, and over the (Sex, Race, ``a``) cells ``assoc3_slope_*_<a>``;
        table ``duke_assoc_slopes_by_attribute`` and figure ``duke_assoc_slopes`` (panel (c):
        real slope on x, synthetic on y, one colour per attribute, the line y = x, and the
        per-attribute RMSE as bars). The report's claim "Improvements in slope are observed for
        Agency and Occupation" (Figure 4, Method 1 vs 2) is a comparison of two runs' rows of this
        table: :func:`slope_improvement` (lower RMSE and a fit nearer 1 is an improvement).
    Logistic regression
        ``1[binary_target = positive_value]`` (default: sex, its second value) is regressed on
        one-hot indicators of every other attribute (``logreg_predictors``; default the predictors
        plus the other private attributes), with scikit-learn's L2-regularised logistic regression
        fitted separately on the real and on the synthetic table with the same design: per
        attribute the real data's most frequent category is the reference, and categories with
        fewer than ``min_category_count`` real rows are pooled with it. ``logreg_coef_corr``
        (headline) and ``logreg_coef_rmse`` compare the two coefficient vectors (intercept
        excluded); table ``duke_logreg_coefficients`` and figure ``duke_logreg_coefficients``.
        A constant label gives all-zero coefficients ("no association"), and a correlation with a
        constant vector counts as 0.
    Logistic-regression models as the report's Figures 10-14 (:func:`logreg_model_table`)
        The report fits, on the authentic and on the synthetic data, "logistic regression models
        ... with proportion female as the response" with a few predictors each (Figures 10-11:
        Agency alone; 12-13: Agency and Occupation; 14: Occupation alone) and compares the
        coefficients. ``logreg_models`` names such models (``{name: [predictor, ...]}``; default:
        one model per predictor alone). Each is fitted like the model above (same target, same
        reference and pooling rule, same ``C``); table ``duke_logreg_models`` (model, term, real,
        synthetic; the intercept included: in a one-predictor model it is the reference
        category's log odds), figure ``duke_logreg_models`` (one panel per model: coefficient per
        term, authentic and synthetic side by side), scores ``logreg_<model>_coef_rmse`` and
        ``logreg_<model>_coef_corr`` over all of the model's terms, intercept included. With
        ``C`` large the coefficients are the maximum-likelihood ones: for one predictor, the
        intercept is the log odds of the target in the reference category and each coefficient
        the log odds ratio of its category against the reference.
    (Sex, Race, attribute) categories (the report's panels (a) and (b))
        With two or more private attributes, their combinations are one attribute (``sex*race``,
        codes in mixed radix) and the joint proportions and association slopes above are also
        computed over the (combination, predictor) categories: ``joint3_prop_corr``,
        ``assoc3_slope_corr`` / ``assoc3_slope_fit``, table ``duke_private_combinations``, and
        figure ``duke_joint_histograms`` (panel (a): per predictor, the histogram of its joint
        (Sex, Race, predictor) categories, real and synthetic bars side by side, the
        ``hist_cells`` largest real cells shown).
    Level correlations (the report's panel (d))
        For every cell of every pair above, the correlation (phi) of the level indicators
        ``1[p = v]`` and ``1[a = u]`` in each table (:func:`level_correlations`):
        ``level_corr_corr`` / ``level_corr_rmse`` compare real and synthetic over the pairs'
        cells (columns ``real_corr`` / ``synthetic_corr`` of ``duke_joint_proportions``),
        ``level3_corr_corr`` / ``level3_corr_rmse`` over the combination cells; figure
        ``duke_level_correlations``.
    Label accuracy (controlled evaluation only)
        When the synthetic table has exactly the real table's X rows (same length, same values of
        every predictor row by row, e.g. a mechanism asked to re-synthesise P for the real records),
        also ``label_accuracy_<p>`` (share of rows whose synthetic label equals the real one) and
        ``indicator_slope_<p>`` (mean over categories of the least-squares slope of the synthetic
        indicator on the real one, see :func:`indicator_agreement`). In the harness the synthetic
        rows normally are other records (e.g. the public part's), so these are absent; the
        benchmark calls :func:`label_accuracy` directly on targets whose true labels are known.

    Tables and figures hold aggregates only (proportions, slopes, coefficients), but aggregates of
    the private table: ``duke_joint_proportions`` (exact real joint proportions, many of them
    single-person cells), ``duke_private_combinations`` (likewise, finer), ``duke_logreg_coefficients``,
    ``duke_logreg_models``, ``duke_assoc_slopes_by_attribute`` (real slopes),
    ``duke_label_agreement_<p>`` and every figure are private: they are logged only when the run
    opts in to private outputs. No output is public (``public_outputs`` is empty).
    """
    private_attributes: list[str] = field(default_factory=lambda: ["sex", "race"])
    predictors: list[str] | None = None
    binary_target: str = "sex"
    positive_value: Any = None
    logreg_predictors: list[str] | None = None
    logreg_models: dict[str, list[str]] | None = None
    min_category_count: int = 30
    C: float = 1.0
    max_iter: int = 1000
    figures: bool = True
    hist_cells: int = 24
    name: ClassVar[str] = "duke_utility"
    requires: ClassVar[str] = "its private attributes and binary target as columns"
    headline: ClassVar[str] = "logreg_coef_corr"
    other_direction: ClassVar[tuple[str, ...]] = ("*_rmse",)  # distances: lower is better
    public_outputs: ClassVar[frozenset[str]] = frozenset()  # every table compares with real

    def applies_to(self, data: Dataset) -> bool:
        attrs = data.schema.attributes
        return all(a in attrs for a in [*self._private(), self.binary_target])

    def _private(self) -> list[str]:
        p = self.private_attributes
        return [p] if isinstance(p, str) else list(p)

    def check(self, schema: Schema) -> tuple[list[str], list[str], list[str], int]:
        """(private, predictors, logreg predictors, positive code) with clear errors."""
        attrs = schema.attributes
        private = self._private()
        missing = [a for a in [*private, self.binary_target] if a not in attrs]
        if not private or missing:
            raise ConfigError(f"metrics.duke_utility: columns {missing or private} are not "
                              f"attributes of the schema (columns: {attrs})",
                              "set metrics.duke_utility.private_attributes / binary_target")
        predictors = [a for a in attrs if a not in private] if self.predictors is None \
            else list(self.predictors)
        bad = [a for a in predictors if a not in attrs or a in private]
        if bad or not predictors:
            raise ConfigError(f"metrics.duke_utility.predictors: {bad or 'none'} (must be "
                              f"non-private attributes of {attrs})",
                              "leave predictors=null for all non-private attributes")
        lr = [a for a in [*predictors, *private] if a != self.binary_target] \
            if self.logreg_predictors is None else list(self.logreg_predictors)
        bad = [a for a in lr if a not in attrs or a == self.binary_target]
        if bad:
            raise ConfigError(f"metrics.duke_utility.logreg_predictors: {bad} (must be "
                              f"attributes other than {self.binary_target!r})",
                              "leave logreg_predictors=null")
        self.models(schema, predictors)
        col = schema[self.binary_target]
        if col.kind != "categorical":
            raise ConfigError(f"metrics.duke_utility.binary_target {self.binary_target!r} must "
                              "be a categorical column", "choose e.g. binary_target=sex")
        values = list(col.values)  # type: ignore[arg-type]
        if self.positive_value is None:
            if len(values) != 2:
                raise ConfigError(f"binary_target {self.binary_target!r} has {len(values)} "
                                  "values; say which one is positive",
                                  f"set metrics.duke_utility.positive_value to one of {values}")
            return private, predictors, lr, 1
        if self.positive_value not in values:
            raise ConfigError(f"metrics.duke_utility.positive_value {self.positive_value!r} is "
                              f"not a value of {self.binary_target!r} ({values})",
                              f"use one of {values}")
        return private, predictors, lr, values.index(self.positive_value)

    def models(self, schema: Schema, predictors: list[str]) -> dict[str, list[str]]:
        """The Figures 10-14 models: ``logreg_models``, or one per predictor alone."""
        if self.logreg_models is None:
            return {a: [a] for a in predictors}
        models = {str(k): [v] if isinstance(v, str) else list(v)
                  for k, v in dict(self.logreg_models).items()}
        attrs = schema.attributes
        bad = {k: v for k, v in models.items()
               if not v or any(a not in attrs or a == self.binary_target for a in v)}
        if bad:
            raise ConfigError(f"metrics.duke_utility.logreg_models: {bad} (each model needs one "
                              f"or more attributes other than {self.binary_target!r} of {attrs})",
                              "write e.g. logreg_models={agency: [agency], agency_occupation: "
                              "[agency, occupation]}, or null for one model per predictor")
        return models

    def score(self, data: Dataset, synthetic: pd.DataFrame) -> MetricResult:
        schema = data.schema
        private, predictors, lr_cols, positive = self.check(schema)
        domain = schema.domain()
        real, synth = schema.encode(data.private), schema.encode(synthetic)

        pairs = [(p, a) for i, p in enumerate(private) for a in [*predictors, *private[i + 1:]]]
        cells = pair_table(real, synth, pairs, domain)
        scores = {"joint_prop_corr": pearson(cells["real"], cells["synthetic"])}
        for p in private:
            part = cells[cells["private"] == p]
            scores[f"joint_prop_corr_{safe_key(p)}"] = pearson(part["real"], part["synthetic"])
        scores.update(slope_scores(cells))
        breakdown = slope_breakdown(cells).assign(cells_of="pairs")
        scores.update(breakdown_scores(breakdown))
        scores.update(level_correlation_scores(cells))
        combos = private_combination_table(real, synth, private, predictors, domain) \
            if len(private) > 1 else None
        if combos is not None:
            scores["joint3_prop_corr"] = pearson(combos["real"], combos["synthetic"])
            scores.update({k.replace("assoc_", "assoc3_"): v
                           for k, v in slope_scores(combos).items()})
            scores.update(level_correlation_scores(combos, "level3"))
            breakdown3 = slope_breakdown(combos).assign(cells_of="*".join(private))
            scores.update(breakdown_scores(breakdown3, "assoc3"))
            breakdown = pd.concat([breakdown, breakdown3], ignore_index=True)

        categories = design_categories(real, lr_cols, domain, self.min_category_count)
        y_real = (real[self.binary_target].to_numpy() == positive)
        y_synth = (synth[self.binary_target].to_numpy() == positive)
        b0_r, b_r = logreg_coefficients(one_hot(real, categories), y_real, self.C, self.max_iter)
        b0_s, b_s = logreg_coefficients(one_hot(synth, categories), y_synth, self.C,
                                        self.max_iter)
        coefs = pd.DataFrame({"term": [f"{c}={v}" for c, v in categories], "real": b_r,
                              "synthetic": b_s})
        coefs = pd.concat([pd.DataFrame({"term": ["(intercept)"], "real": [b0_r],
                                         "synthetic": [b0_s]}), coefs], ignore_index=True)
        scores["logreg_coef_corr"] = pearson(b_r, b_s)
        scores["logreg_coef_rmse"] = rmse(b_r, b_s) if len(b_r) else 0.0

        models = logreg_model_table(real, synth, self.models(schema, predictors),
                                    self.binary_target, positive, domain,
                                    self.min_category_count, self.C, self.max_iter)
        scores.update(logreg_model_scores(models))

        tables = {"duke_joint_proportions": cells, "duke_logreg_coefficients": coefs,
                  "duke_logreg_models": models, "duke_assoc_slopes_by_attribute": breakdown}
        if combos is not None:
            tables["duke_private_combinations"] = combos
        if same_predictor_rows(data.private.reset_index(drop=True),
                               synthetic.reset_index(drop=True), predictors):
            for p in private:
                values = list(range(domain[p]))
                agreement = indicator_agreement(real[p].to_numpy(), synth[p].to_numpy(), values)
                scores[f"label_accuracy_{safe_key(p)}"] = label_accuracy(real[p], synth[p])
                present = agreement[agreement["real_share"] > 0]
                scores[f"indicator_slope_{safe_key(p)}"] = float(present["slope"].mean())
                tables[f"duke_label_agreement_{safe_key(p)}"] = agreement
        figures = {}
        if self.figures:
            figures = {
                "duke_joint_proportions": joint_proportion_figure(cells, scores["joint_prop_corr"]),
                "duke_logreg_coefficients": coefficient_figure(
                    coefs.iloc[1:], self.binary_target, scores["logreg_coef_corr"]),
                "duke_level_correlations": level_correlation_figure(
                    cells, scores["level_corr_corr"]),
                "duke_assoc_slopes": slope_figure(
                    cells, breakdown[breakdown["cells_of"] == "pairs"],
                    scores["assoc_slope_corr"]),
                "duke_logreg_models": logreg_models_figure(models, self.binary_target),
            }
            if combos is not None:
                figures["duke_joint_histograms"] = joint_histogram_figure(combos, self.hist_cells)
        return MetricResult(scores=scores, tables=tables, figures=figures)
