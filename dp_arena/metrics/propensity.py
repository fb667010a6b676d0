"""``propensity``: how well a classifier tells synthetic rows from real ones (pMSE, Snoke,
Raab, Nowok, Dibben & Slavkovic 2018).

Algorithms
----------
- **Stacking** (:func:`stacked_sample`): ``n = min(|real|, |synthetic|, max_rows)`` rows drawn
  without replacement (seeded) from the real training part (``data.private``) and ``n`` from
  the synthetic table, labelled 0 (real) and 1 (synthetic), so the synthetic share is
  ``c = 1/2`` and ``N = 2n``.
- **Features** (:func:`propensity_design`): every attribute one-hot encoded on the schema's
  codes (numeric and datetime columns through their scoring bins, a missing value its own
  code), the id column never; plus, for every pair of attributes, the one-hot cell of their
  codes coarsened to at most ``interaction_groups`` groups each (code ``v`` of a column with
  ``s`` codes -> group ``v * g // s``: adjacent codes merged, schema only). Main effects alone
  only see one-way marginals, which every mechanism keeps (an ``independent`` synthesizer
  scores ratio ~1 on adult with them); the pair cells let the model see two-way structure.
  The design's columns are fixed by the schema, so real and synthetic rows share them.
- **Cross-fitted propensities** (:func:`cross_fitted_propensities`): ``folds`` stratified,
  seeded folds; each row's propensity ``p_i`` comes from a logistic regression (L2, fixed
  ``C``, Newton-CG on the sparse design, at most :data:`NEWTON_MAX_ITER` iterations) fitted
  on the other folds, so no row is scored by a model that saw it. Newton-CG, not lbfgs: with
  the weak penalty and the rare one-hot cells lbfgs needed 500-800 iterations (0.9-1.8 s per
  score on adult, one thread, 2 x 2,000 rows) and stopped far from the optimum at any
  cheaper cap (capped at 200 iterations or at ``tol`` 1e-3, the null ratio of a bootstrap of
  adult fell to 0.93-0.95), while Newton-CG converges in 6-10 iterations (0.15-0.4 s) to
  pMSE ratios within 0.01 of a fit run to ``tol`` 1e-8 (adult and taxi: mst, bootstrap,
  shuffled columns).
- **pMSE** ``= mean_i (p_i - c)^2``: 0 when no row can be told apart, at most ``c(1 - c)``
  (every propensity 0 for real rows and 1 for synthetic ones; 1/4 here).
- **Null expectation** (:func:`null_pmse`): when both tables come from one distribution the
  labels are independent of the features and, to first order, the fitted logistic model is
  the linear probability model, whose ``k - 1`` non-intercept coefficients fit pure noise of
  variance ``c(1 - c)``: in-sample ``E[pMSE] = (k - 1) c (1 - c) / N`` with ``k`` = 1 + the
  number of free parameters (:func:`propensity_design`: per attribute, codes seen in the
  stacked rows - 1; per pair, cells seen - groups seen of each + 1, exact for a full grid,
  an approximation when some cells are empty). Cross-fitted, a row's propensity comes from a model fitted on a share
  ``(K - 1)/K`` of the rows, which multiplies the expectation by ``K / (K - 1)``. This is the
  linear-model null of Snoke et al. (2018); their printed logit-model formula
  ``(k - 1)(1 - c)^2 c / N`` is a factor ``1 - c`` smaller, and a simulation of in-sample
  logistic fits on identical distributions (c = 1/2 and 1/4, N = 4,000, k = 17) matched
  ``(k - 1) c (1 - c) / N`` (ratio 0.98-1.01) and not the printed formula (ratio ~2), so the
  former is used. Assumptions: rows independent, a large enough ``N`` per parameter for the
  first-order approximation, and an unregularised fit: the default ``C`` = 100 is a weak penalty (on
  adult, main effects only, C = 1 gave a null ratio of 0.64, C = 100 gave 0.98-1.01); a
  smaller ``C`` shrinks the coefficients of rare codes and pulls the ratio below 1.
- ``pmse_ratio = pMSE / null`` (headline, lower is better; about 1 = indistinguishable from
  the same distribution, larger = the classifier tells them apart), and ``auc`` the AUROC of
  the cross-fitted propensities for the labels (0.5 = indistinguishable, 1 = separable). The
  ratio of two distinct distributions grows with ``N`` (the classifier's power), so ratios
  are comparable only at the same ``max_rows`` and ``folds``.
- **Cost** (the held-out scores' goal: at most 15% of a run's wall time with one thread;
  ``benchmarks/bench_heldout_scores.py``): the defaults are 2,000 rows of each table and 2
  folds (was 3,000 and 3 with lbfgs: 2-6 s on adult). Measured on adult, ratios at
  2,000/2 folds against 3,000/3: a bootstrap of the training rows 0.99 (1.03), ``mst_quick``
  at epsilon 1 1.09 (1.35), each column shuffled 1.78 (2.96): the order is kept, the
  spread is smaller.

Privacy: the scores are computed on the private training part without noise, like every
score of the harness; they are logged as scores, not released by a mechanism. The null's
``k`` and ``N`` depend on the private table and are not logged on their own. No table or
figure is returned, so nothing is declared public.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd
from scipy import sparse

from dp_arena.data.datasets import Dataset
from dp_arena.data.schema import Schema
from dp_arena.params import Constraint, Interval

from .base import Metric, MetricResult

#: Newton-CG iterations of a propensity fit (adult and taxi converge in 6-10).
NEWTON_MAX_ITER = 100


def subsample_rows(frame: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    """``n`` rows of ``frame`` drawn without replacement (all of them, in order, when it has at
    most ``n``), in their original order."""
    if len(frame) <= n:
        return frame
    keep = np.sort(np.random.default_rng(seed).choice(len(frame), n, replace=False))
    return frame.iloc[keep]


def stacked_sample(schema: Schema, real: pd.DataFrame, synthetic: pd.DataFrame, max_rows: int,
                   seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    """Codes of ``n`` real and ``n`` synthetic rows (``n = min(|real|, |synthetic|,
    max_rows)``) and their labels (0 real, 1 synthetic)."""
    n = min(len(real), len(synthetic), max_rows)
    codes = pd.concat([schema.encode(subsample_rows(real, n, seed)),
                       schema.encode(subsample_rows(synthetic, n, seed + 1))],
                      ignore_index=True)
    return codes, np.repeat([0, 1], n)


def one_hot_codes(codes: pd.DataFrame, sizes: list[int]) -> sparse.csr_matrix:
    """The ``n x sum(sizes)`` one-hot matrix of an ``n x len(sizes)`` code frame (column block
    ``a`` has ``sizes[a]`` columns, one per code of attribute ``a``)."""
    values = codes.to_numpy(dtype=np.int64)
    n, width = values.shape
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    columns = (values + offsets[None, :]).ravel()
    rows = np.repeat(np.arange(n), width)
    return sparse.csr_matrix((np.ones(n * width), (rows, columns)),
                             shape=(n, int(np.sum(sizes))))


def coarse_codes(codes: pd.DataFrame, sizes: list[int], groups: int) -> np.ndarray:
    """Codes merged into at most ``groups`` adjacent groups per column: ``v * g // s``."""
    values = codes.to_numpy(dtype=np.int64)
    size = np.asarray(sizes, dtype=np.int64)[None, :]
    return np.where(size <= groups, values, values * groups // size)


def propensity_design(codes: pd.DataFrame, sizes: list[int],
                      groups: int) -> tuple[sparse.csr_matrix, int]:
    """The one-hot design (main effects, and pair cells when ``groups`` > 0 and there are
    two attributes or more) and its number of free parameters ``k``."""
    mains = one_hot_codes(codes, sizes)
    k = free_parameters(codes.to_numpy(dtype=np.int64))
    if groups == 0 or len(sizes) < 2:
        return mains, k
    coarse = coarse_codes(codes, sizes, groups)
    first, second = np.triu_indices(coarse.shape[1], k=1)
    cells = coarse[:, first] * groups + coarse[:, second]
    seen = [len(np.unique(cells[:, p])) - len(np.unique(coarse[:, first[p]]))
            - len(np.unique(coarse[:, second[p]])) + 1 for p in range(cells.shape[1])]
    pairs = one_hot_codes(pd.DataFrame(cells), [groups * groups] * cells.shape[1])
    return sparse.hstack([mains, pairs], format="csr"), k + int(sum(max(n, 0) for n in seen))


def free_parameters(codes: np.ndarray) -> int:
    """``k`` of a main-effects design: the intercept plus, per column, codes seen minus one."""
    return 1 + int(sum(max(len(np.unique(codes[:, c])) - 1, 0) for c in range(codes.shape[1])))


def cross_fitted_propensities(features: sparse.csr_matrix, labels: np.ndarray, folds: int,
                              C: float, seed: int) -> np.ndarray:
    """Each row's predicted probability of label 1 from a logistic regression fitted on the
    other ``folds - 1`` stratified folds."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold

    out = np.empty(len(labels), dtype=float)
    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    for train, test in splitter.split(np.zeros(len(labels)), labels):
        model = LogisticRegression(C=C, solver="newton-cg", max_iter=NEWTON_MAX_ITER)
        model.fit(features[train], labels[train])
        out[test] = model.predict_proba(features[test])[:, 1]
    return out


def import_models() -> None:
    """Import the scikit-learn modules the metric uses when it is built, so a run's forked
    child inherits them (``dp_arena.metrics.ml_efficacy``'s cost note: about 1.3 s per import)."""
    import sklearn.linear_model
    import sklearn.metrics
    import sklearn.model_selection  # noqa: F401


def pmse(propensities: np.ndarray, share: float) -> float:
    """``mean (p_i - c)^2``."""
    return float(np.mean((np.asarray(propensities, dtype=float) - share) ** 2))


def null_pmse(k: int, share: float, n_rows: int, folds: int) -> float:
    """The expected cross-fitted pMSE when both tables come from one distribution:
    ``(k - 1) c (1 - c) / N * K / (K - 1)`` (module docstring)."""
    return (k - 1) * share * (1 - share) / n_rows * folds / (folds - 1)


def propensity_auc(labels: np.ndarray, propensities: np.ndarray) -> float:
    """AUROC of the propensities for the labels (ties count one half)."""
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(labels, propensities))


@dataclass
class Propensity(Metric):
    """pMSE of a cross-fitted logistic propensity model and its ratio to the null (module
    docstring). Settings: ``max_rows`` (2000 rows of each table), ``folds`` (2), ``C``
    (100: a weak L2 penalty, see the null), ``interaction_groups`` (4; 0: main effects only),
    ``seed`` (0)."""

    max_rows: int = 2000
    folds: int = 2
    C: float = 100.0
    interaction_groups: int = 4
    seed: int = 0
    name: ClassVar[str] = "propensity"
    headline: ClassVar[str] = "pmse_ratio"
    lower_is_better: ClassVar[bool] = True
    requires: ClassVar[str] = "at least one attribute besides the id column"
    public_outputs: ClassVar[frozenset[str]] = frozenset()
    parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "max_rows": [Interval(int, 10)], "folds": [Interval(int, 2)],
        "C": [Interval(float, 0, closed="neither")], "interaction_groups": [Interval(int, 0)],
        "seed": [Interval(int, 0)]}

    def __post_init__(self) -> None:
        super().__post_init__()
        import_models()

    def applies_to(self, data: Dataset) -> bool:
        return bool(data.schema.attributes)

    def score(self, data: Dataset, synthetic: pd.DataFrame) -> MetricResult:
        schema = data.schema
        codes, labels = stacked_sample(schema, data.private, synthetic, self.max_rows,
                                       self.seed)
        n_each = len(labels) // 2
        if n_each < self.folds:
            nan = float("nan")
            return MetricResult(scores={"pmse": nan, "pmse_ratio": nan, "auc": nan})
        sizes = [schema[a].size for a in schema.attributes]
        design, k = propensity_design(codes, sizes, self.interaction_groups)
        p = cross_fitted_propensities(design, labels, self.folds, self.C, self.seed)
        value = pmse(p, 0.5)
        null = null_pmse(k, 0.5, len(labels), self.folds)
        ratio = value / null if null > 0 else float("nan")
        return MetricResult(scores={"pmse": value, "pmse_ratio": ratio,
                                    "auc": propensity_auc(labels, p)})
