"""Statistics and models the Duke utility panels compare (:mod:`dp_arena.metrics.duke_utility`).

- weighted Pearson correlation, least-squares slope, RMSE (:func:`pearson`, :func:`ls_slope`,
  :func:`rmse`);
- L2-regularised logistic regression: scikit-learn's lbfgs on large designs
  (:func:`logreg_coefficients`), and for small designs (at most 64 indicator columns) Newton's
  method on the distinct rows weighted by their counts (:func:`newton_logreg`,
  :func:`aggregated_rows`), which minimises the same objective; the report's Figures 10-14
  models, authentic against synthetic (:func:`logreg_model_table`,
  :func:`logreg_model_scores`).

Everything here is computed on whatever tables it is given; the metric declares every output
on private data private.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
from scipy import sparse


# ----- small statistics -------------------------------------------------------------------
def pearson(x: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None) -> float:
    """(Weighted) Pearson correlation; 0 when either vector is constant (no linear
    association)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 2:
        return 0.0
    w = np.ones(len(x)) if weights is None else np.asarray(weights, float)
    w = w / w.sum()
    dx, dy = x - w @ x, y - w @ y
    den = math.sqrt(float(w @ (dx * dx)) * float(w @ (dy * dy)))
    return float(w @ (dx * dy)) / den if den > 1e-300 else 0.0


def ls_slope(x: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None) -> float:
    """(Weighted) least-squares slope of ``y`` on ``x`` with intercept; 0 when ``x`` is
    constant."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) == 0:
        return 0.0
    w = np.ones(len(x)) if weights is None else np.asarray(weights, float)
    w = w / w.sum()
    dx = x - w @ x
    den = float(w @ (dx * dx))
    return float(w @ (dx * (y - w @ y))) / den if den > 1e-300 else 0.0


def rmse(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.sqrt(np.mean((np.asarray(x, float) - np.asarray(y, float)) ** 2)))


def safe_key(name: str) -> str:
    """A metric-key-safe version of a column name (MLflow allows ``[A-Za-z0-9_\\-. /]``)."""
    return re.sub(r"[^A-Za-z0-9_\-. ]", "_", str(name))


# ----- logistic regression ----------------------------------------------------------------
def design_categories(real: pd.DataFrame, columns: list[str], domain: dict[str, int],
                      min_count: int) -> list[tuple[str, int]]:
    """The (column, code) indicators of the design: per column every category with at least
    ``min_count`` real rows except the most frequent one (the reference)."""
    out = []
    for c in columns:
        counts = np.bincount(real[c].to_numpy(), minlength=domain[c])
        reference = int(np.argmax(counts))
        out += [(c, v) for v in range(domain[c]) if v != reference and counts[v] >= min_count]
    return out


def one_hot(codes: pd.DataFrame, categories: list[tuple[str, int]]) -> sparse.csr_matrix:
    """Sparse 0/1 design matrix with one column per (column, code) indicator."""
    if not categories:
        return sparse.csr_matrix((len(codes), 0))
    rows, cols = [], []
    for j, (c, v) in enumerate(categories):
        hit = np.flatnonzero(codes[c].to_numpy() == v)
        rows.append(hit)
        cols.append(np.full(len(hit), j))
    r, k = np.concatenate(rows), np.concatenate(cols)
    return sparse.csr_matrix((np.ones(len(r)), (r, k)), shape=(len(codes), len(categories)))


def logreg_coefficients(design: sparse.spmatrix, y: np.ndarray, C: float = 1.0,
                        max_iter: int = 1000) -> tuple[float, np.ndarray]:
    """(intercept, coefficients) of an L2 logistic regression of the 0/1 vector ``y``;
    all zeros (intercept +-inf clipped to +-20) when ``y`` is constant."""
    from sklearn.linear_model import LogisticRegression

    y = np.asarray(y, dtype=int)
    if y.min() == y.max() or design.shape[1] == 0:
        mean = float(y.mean()) if len(y) else 0.5
        mean = min(max(mean, 1e-9), 1 - 1e-9)
        return float(np.clip(math.log(mean / (1 - mean)), -20, 20)), np.zeros(design.shape[1])
    if design.shape[1] <= AGGREGATE_MAX_COLUMNS:
        rows, y_rows, counts = aggregated_rows(design, y)
        return newton_logreg(rows, y_rows, counts, C, max_iter)
    model = LogisticRegression(C=C, max_iter=max_iter)
    model.fit(design, y)
    return float(model.intercept_[0]), model.coef_[0].copy()


#: Designs with at most this many indicator columns are fitted on their distinct rows by
#: :func:`newton_logreg` (scikit-learn's fixed cost, ~0.15 s a fit, dominates small models).
AGGREGATE_MAX_COLUMNS = 64  # one bit each in a uint64 row key


def newton_logreg(rows: np.ndarray, y: np.ndarray, counts: np.ndarray, C: float = 1.0,
                  max_iter: int = 100, tol: float = 1e-10) -> tuple[float, np.ndarray]:
    """(intercept, coefficients) minimising scikit-learn's L2 logistic objective
    ``C * sum_i counts_i * logloss_i + |b|^2 / 2`` (intercept not penalised) by Newton's
    method with step halving; the objective is strictly convex in ``b``, so this is the
    same optimum ``LogisticRegression(C=C)`` reaches on the expanded rows."""
    X = np.column_stack([np.ones(len(rows)), np.asarray(rows, float)])
    w = np.asarray(counts, float) * C
    yv = np.asarray(y, float)
    ridge = np.ones(X.shape[1])
    ridge[0] = 0.0

    def objective(beta: np.ndarray) -> float:
        z = X @ beta
        return float(w @ (np.logaddexp(0.0, z) - yv * z) + 0.5 * ridge @ (beta * beta))

    beta = np.zeros(X.shape[1])
    value = objective(beta)
    for _ in range(max(max_iter, 1)):
        prob = 1.0 / (1.0 + np.exp(-(X @ beta)))
        grad = X.T @ (w * (prob - yv)) + ridge * beta
        hess = (X.T * (w * prob * (1 - prob))) @ X + np.diag(ridge) + 1e-12 * np.eye(len(beta))
        step = np.linalg.solve(hess, grad)
        t = 1.0
        while t > 1e-8:
            trial = beta - t * step
            new_value = objective(trial)
            if new_value <= value:
                break
            t /= 2
        else:
            break
        beta, done = trial, value - new_value <= tol * max(1.0, abs(value))
        value = new_value
        if done and float(np.abs(t * step).max()) < 1e-8 + 1e-6:
            break
    return float(beta[0]), beta[1:].copy()


def aggregated_rows(design: sparse.spmatrix, y: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (design row, label) pairs and how many rows each stands for. A logistic
    regression's penalised log-likelihood is a sum over rows, so fitting these with the
    counts as sample weights minimises the same objective as fitting every row (and costs
    a handful of rows for a model with one or two categorical predictors)."""
    csr = sparse.csr_matrix(design)
    k = csr.shape[1]
    if k > AGGREGATE_MAX_COLUMNS:
        raise ValueError(f"aggregated_rows packs at most {AGGREGATE_MAX_COLUMNS} columns")
    csr.sum_duplicates()
    row_of = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))
    bits = np.left_shift(np.uint64(1), csr.indices.astype(np.uint64))
    keys = np.zeros(csr.shape[0], dtype=np.uint64)
    np.add.at(keys, row_of[csr.data != 0], bits[csr.data != 0])  # distinct columns: sum = or
    labels = np.asarray(y, dtype=np.uint64) & np.uint64(1)
    pairs, counts = np.unique(np.column_stack([keys, labels]), axis=0, return_counts=True)
    rows = ((pairs[:, :1] >> np.arange(k, dtype=np.uint64)) & np.uint64(1)).astype(float)
    return rows, pairs[:, 1].astype(int), counts.astype(float)


def logreg_model_table(real: pd.DataFrame, synth: pd.DataFrame, models: dict[str, list[str]],
                       target: str, positive: int, domain: dict[str, int], min_count: int,
                       C: float = 1.0, max_iter: int = 1000) -> pd.DataFrame:
    """The report's Figures 10-14: for every named model, the logistic regression of
    ``1[target = positive]`` on its predictors' indicators (:func:`design_categories`, built on
    the real table) fitted on the real and on the synthetic table (encoded codes); one row per
    term (``(intercept)`` first) with columns ``model``, ``term``, ``real``, ``synthetic``."""
    y_real = real[target].to_numpy() == positive
    y_synth = synth[target].to_numpy() == positive
    parts = []
    for name, columns in models.items():
        categories = design_categories(real, list(columns), domain, min_count)
        b0_r, b_r = logreg_coefficients(one_hot(real, categories), y_real, C, max_iter)
        b0_s, b_s = logreg_coefficients(one_hot(synth, categories), y_synth, C, max_iter)
        parts.append(pd.DataFrame({
            "model": name, "term": ["(intercept)", *[f"{c}={v}" for c, v in categories]],
            "real": [b0_r, *b_r], "synthetic": [b0_s, *b_s]}))
    if not parts:
        return pd.DataFrame(columns=["model", "term", "real", "synthetic"])
    return pd.concat(parts, ignore_index=True)


def logreg_model_scores(table: pd.DataFrame) -> dict[str, float]:
    """``logreg_<model>_coef_rmse`` and ``logreg_<model>_coef_corr`` over each model's terms
    (intercept included) of a :func:`logreg_model_table`."""
    out = {}
    for name, part in table.groupby("model", sort=False):
        key = safe_key(name)
        out[f"logreg_{key}_coef_rmse"] = rmse(part["real"], part["synthetic"])
        out[f"logreg_{key}_coef_corr"] = pearson(part["real"], part["synthetic"])
    return out
