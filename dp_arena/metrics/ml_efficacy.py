"""``ml_efficacy``: train on synthetic, test on real held-out rows (TSTR), with the
train-on-real reference.

Algorithms
----------
- **Task** (:func:`task_of`) from the schema's target column (``data.target``): categorical
  with 2 codes -> ``binary``, more -> ``multiclass`` (a missing target, ``allow_missing``, is
  its own code and so its own class), numeric -> ``regression`` on the value, datetime ->
  ``regression`` on its bin code; rows whose regression target is missing are left out.
- **Features** (:func:`linear_features`, :func:`tree_features`): every other attribute (the id
  column never) on the schema's codes (:meth:`dp_arena.data.schema.Schema.encode`; numeric and
  datetime columns through their scoring bins). The linear models get the one-hot encoding of
  every attribute's codes (bins included, so a linear model can fit a non-monotone effect of a
  binned number); the gradient boosting models get the codes as numbers (ordered bins and
  integer categories), with text categoricals of at most 255 codes as native categorical
  features. The design is fixed by the schema, so every table shares it.
- **Models** (fixed hyperparameters, :func:`make_model`): ``linear`` = ``LogisticRegression``
  (L2, ``C``, Newton-CG on the sparse one-hot design, at most :data:`LINEAR_MAX_ITER`
  iterations; it converges in 8-10 where lbfgs took 40-150, 1.4-1.6x faster on taxi's
  multiclass target, same held-out scores to 3 decimals) or ``Ridge`` (alpha 1) for
  regression; ``hgb`` = ``HistGradientBoostingClassifier/Regressor``
  (``max_iter`` boosting iterations, default leaves and learning rate,
  ``early_stopping=False``, ``random_state=seed``).
- **Protocol** (:func:`model_scores`): each model is trained on the synthetic table (at most
  ``max_train_rows`` rows, a seeded sample without replacement) and tested on every held-out
  row (``data.heldout``); the same model trained on the real training part (``data.private``,
  same subsample rule, so both sides train on equally many rows) is the train-on-real
  reference.
- **Cost** (the goal: the held-out scores may add at most 15% to a run's wall time with one
  thread; ``benchmarks/bench_heldout_scores.py`` prints it): the defaults train on at most
  5,000 rows with 30 boosting iterations. Measured on one thread (models fitted and the
  held-out rows predicted): adult's train-on-real AUROC at 5,000 rows and 30 iterations
  0.912 (hgb) against 0.913 at 100 iterations, and 0.905 at 3,000 rows. The whole score took
  0.3-0.4 s on adult and about 1.25 s on taxi (2 cores shared with other jobs), against
  11-42 s and 30-41 s with the old defaults (20,000 rows, 100 iterations, lbfgs). The boosting dominates on
  multiclass targets (one tree per class and iteration: taxi's ``payment_type``). Importing
  scikit-learn takes about 1.3 s: the metric imports it when it is built
  (:func:`import_models`), in the sweep's worker before a run forks its child, so the import
  is paid once per worker process instead of once per run.
- **The reference is computed once per worker**: it does not depend on the synthetic table,
  so :meth:`MLEfficacy.reference` holds it (with the prepared held-out rows) and the sweep's
  worker keeps it in memory for every run on the same data and settings
  (:mod:`dp_arena.run.references`; no file, no second store of private scores). At the
  defaults it costs as much as the synthetic side (0.1-0.3 s on adult, 0.4-0.8 s on taxi,
  one thread), paid once per worker instead of once per run.
- **Scores** per model and as the mean over models: binary: ``auroc`` (from the predicted
  probability of the second code) and ``accuracy``; multiclass: ``macro_f1`` (over the classes
  present in the held-out labels or the predictions) and ``accuracy``; regression: ``r2``.
  Each as ``<model>_<score>`` and ``<score>`` (mean), with ``real_...`` for the reference and
  ``gap_... = score - real_score``. Headline ``score`` = the mean over models of the primary
  score (AUROC, macro-F1 or R^2; higher is better), ``real_score`` and ``gap`` likewise.
- **Edge cases**: a training table with one class only (or no rows) gives a constant
  prediction (its one class, or code 0 when empty; the training mean, or 0, for
  regression), hence AUROC 0.5; a held-out set with one class only has no AUROC (NaN).

Privacy: the scores are computed on the private training part and the private held-out rows
without noise, like every score of the harness. Because they read held-out persons
(``reads_heldout``), they stay on the data owner's side (:mod:`dp_arena.run.heldout`: an
owner-only file, not the tracking store, unless ``tracking.log_heldout_scores=true``). The train-on-real reference sees the private table and is **not** a private
result. No table or figure is returned, so nothing is declared public; messages name
settings and columns, never a value or a count.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from scipy import sparse

from dp_arena.data.datasets import Dataset
from dp_arena.data.schema import Schema, encode_column
from dp_arena.errors import ConfigError
from dp_arena.params import Constraint, Interval, Satisfies

from .base import MetricResult, SharedReference
from .propensity import one_hot_codes, subsample_rows
from .range_query import is_ordinal

MODELS = ("linear", "hgb")
#: Newton-CG iterations of the logistic regression (adult and taxi converge in 8-10).
LINEAR_MAX_ITER = 100
PRIMARY = {"binary": "auroc", "multiclass": "macro_f1", "regression": "r2"}
#: Native categorical features of HistGradientBoosting need fewer codes than its max_bins.
MAX_NATIVE_CATEGORIES = 255


@dataclass(frozen=True)
class Task:
    """What to predict: the target column, the task kind and the feature attributes."""

    target: str
    kind: str  # binary | multiclass | regression
    features: tuple[str, ...]


def task_of(schema: Schema, target: str) -> Task:
    """The prediction task for ``target`` (module docstring); raises :class:`ConfigError`
    when the target is not an attribute or has a single code."""
    if target not in schema.attributes:
        raise ConfigError(f"dataset.target {target!r} is not an attribute of the schema",
                          f"set dataset.target to one of {schema.attributes}")
    column = schema[target]
    features = tuple(a for a in schema.attributes if a != target)
    if column.kind in ("numeric", "datetime"):
        return Task(target, "regression", features)
    if column.size < 2:
        raise ConfigError(f"dataset.target {target!r} has a single code: nothing to predict",
                          "choose a target column with at least two values")
    return Task(target, "binary" if column.size == 2 else "multiclass", features)


def target_values(schema: Schema, task: Task, frame: pd.DataFrame) -> np.ndarray:
    """Class codes (classification), values (numeric regression; NaN when missing) or bin
    codes (datetime regression; NaN for the missing code)."""
    column = schema[task.target]
    if task.kind != "regression":
        return encode_column(column, frame[task.target])
    if column.kind == "numeric":
        return frame[task.target].to_numpy(dtype=float)
    codes = encode_column(column, frame[task.target]).astype(float)
    codes[codes >= column.present_size] = np.nan
    return codes


def linear_features(schema: Schema, task: Task, codes: pd.DataFrame) -> sparse.csr_matrix:
    """One-hot of every feature's codes."""
    return one_hot_codes(codes[list(task.features)],
                         [schema[a].size for a in task.features])


def tree_features(task: Task, codes: pd.DataFrame) -> np.ndarray:
    """Every feature's code as a number."""
    return codes[list(task.features)].to_numpy(dtype=float)


def native_categorical(schema: Schema, task: Task) -> np.ndarray:
    """Which tree features are native categoricals: unordered (text) categoricals with at most
    :data:`MAX_NATIVE_CATEGORIES` codes."""
    return np.array([schema[a].kind == "categorical" and not is_ordinal(schema[a])
                     and schema[a].size <= MAX_NATIVE_CATEGORIES for a in task.features],
                    dtype=bool)


def import_models() -> None:
    """Import the scikit-learn modules the metric uses (see the module docstring's cost)."""
    import sklearn.ensemble
    import sklearn.linear_model
    import sklearn.metrics  # noqa: F401


def make_model(name: str, kind: str, C: float, max_iter: int, seed: int,
               categorical: np.ndarray) -> Any:
    """A fresh scikit-learn estimator with the metric's fixed hyperparameters."""
    from sklearn.ensemble import (
        HistGradientBoostingClassifier,
        HistGradientBoostingRegressor,
    )
    from sklearn.linear_model import LogisticRegression, Ridge

    if name == "linear":
        return Ridge(alpha=1.0) if kind == "regression" else \
            LogisticRegression(C=C, solver="newton-cg", max_iter=LINEAR_MAX_ITER)
    cat = categorical if categorical.any() else None
    params = {"max_iter": max_iter, "early_stopping": False, "random_state": seed,
              "categorical_features": cat}
    return HistGradientBoostingRegressor(**params) if kind == "regression" else \
        HistGradientBoostingClassifier(**params)


@dataclass(frozen=True)
class Predictions:
    """A model's held-out predictions: labels or values, and for binary tasks the probability
    of the second code."""

    predicted: np.ndarray
    positive: np.ndarray | None


def fit_predict(model: Any, kind: str, x_train: Any, y_train: np.ndarray,
                x_test: Any) -> Predictions:
    """Fit ``model`` and predict ``x_test``; a constant prediction when the training labels
    hold fewer than two classes (or values)."""
    from sklearn.exceptions import ConvergenceWarning

    n_test = x_test.shape[0]
    if len(np.unique(y_train)) < 2:
        constant = y_train[0] if len(y_train) else 0
        positive = np.full(n_test, float(constant == 1)) if kind == "binary" else None
        return Predictions(np.full(n_test, constant), positive)
    with warnings.catch_warnings():  # a fit stopped at its fixed iteration cap is still the model
        warnings.simplefilter("ignore", category=ConvergenceWarning)
        model.fit(x_train, y_train)
    if kind == "regression":
        return Predictions(model.predict(x_test), None)
    if kind == "binary":
        proba = model.predict_proba(x_test)
        positive = proba[:, list(model.classes_).index(1)] if 1 in model.classes_ else \
            np.zeros(n_test)
        return Predictions(model.classes_[np.argmax(proba, axis=1)], positive)
    return Predictions(model.predict(x_test), None)


def prediction_scores(kind: str, truth: np.ndarray, predictions: Predictions) -> dict[str, float]:
    """``auroc``/``accuracy`` (binary), ``macro_f1``/``accuracy`` (multiclass), ``r2``."""
    from sklearn.metrics import accuracy_score, f1_score, r2_score, roc_auc_score

    if kind == "regression":
        return {"r2": float(r2_score(truth, predictions.predicted))}
    accuracy = float(accuracy_score(truth, predictions.predicted))
    if kind == "multiclass":
        return {"macro_f1": float(f1_score(truth, predictions.predicted, average="macro",
                                           zero_division=0)), "accuracy": accuracy}
    auroc = float(roc_auc_score(truth, predictions.positive)) \
        if len(np.unique(truth)) == 2 else float("nan")
    return {"auroc": auroc, "accuracy": accuracy}


@dataclass(frozen=True)
class Prepared:
    """One table ready for the models: features for each model family and the target."""

    linear: Any
    tree: np.ndarray
    target: np.ndarray


def prepare(schema: Schema, task: Task, frame: pd.DataFrame) -> Prepared:
    """Encode ``frame`` and drop rows whose regression target is missing."""
    y = target_values(schema, task, frame)
    if task.kind == "regression":
        keep = ~np.isnan(y)
        frame, y = frame[keep], y[keep]
    codes = schema.encode(frame) if len(frame) else \
        pd.DataFrame({a: np.zeros(0, dtype=np.int64) for a in schema.attributes})
    return Prepared(linear_features(schema, task, codes), tree_features(task, codes), y)


def model_scores(train: Prepared, test: Prepared, task: Task, models: tuple[str, ...],
                 settings: MLEfficacy, categorical: np.ndarray) -> dict[str, dict[str, float]]:
    """Per model, its held-out scores after training on ``train``."""
    out = {}
    for name in models:
        model = make_model(name, task.kind, settings.C, settings.max_iter, settings.seed,
                           categorical)
        x_train, x_test = (train.linear, test.linear) if name == "linear" else \
            (train.tree, test.tree)
        predictions = fit_predict(model, task.kind, x_train, train.target, x_test)
        out[name] = prediction_scores(task.kind, test.target, predictions)
    return out


def summarise(synthetic: dict[str, dict[str, float]], real: dict[str, dict[str, float]],
              kind: str) -> dict[str, float]:
    """Flat scores: per model, mean over models, ``real_`` reference, ``gap_`` differences,
    and ``score``/``real_score``/``gap`` for the primary score."""
    scores: dict[str, float] = {}
    names = list(synthetic)
    for key in synthetic[names[0]]:
        for prefix, table in (("", synthetic), ("real_", real)):
            for model in names:
                scores[f"{prefix}{model}_{key}"] = table[model][key]
            scores[f"{prefix}{key}"] = float(np.mean([table[m][key] for m in names]))
        for model in names:
            scores[f"gap_{model}_{key}"] = scores[f"{model}_{key}"] - \
                scores[f"real_{model}_{key}"]
        scores[f"gap_{key}"] = scores[key] - scores[f"real_{key}"]
    primary = PRIMARY[kind]
    scores["score"], scores["real_score"] = scores[primary], scores[f"real_{primary}"]
    scores["gap"] = scores["score"] - scores["real_score"]
    return scores


def _known_models(value: Any) -> bool:
    return len(value) > 0 and all(v in MODELS for v in value) and len(set(value)) == len(value)


@dataclass(frozen=True)
class RealSide:
    """What the score reads of the real tables: the task, which features are native
    categoricals, the prepared held-out test rows and the train-on-real scores per model."""

    task: Task
    categorical: np.ndarray
    test: Prepared
    real_scores: dict[str, dict[str, float]]


@dataclass
class MLEfficacy(SharedReference):
    """Train on synthetic, test on held-out real rows (module docstring). Settings:
    ``models`` (``[linear, hgb]``), ``max_train_rows`` (5000, each of the synthetic and the
    real training table), ``max_iter`` (30 boosting iterations), ``C`` (1.0, logistic
    regression), ``seed`` (0: subsamples and the boosting's random state)."""

    models: list[str] = field(default_factory=lambda: list(MODELS))
    max_train_rows: int = 5_000
    max_iter: int = 30
    C: float = 1.0
    seed: int = 0
    name: ClassVar[str] = "ml_efficacy"
    headline: ClassVar[str] = "score"
    lower_is_better: ClassVar[bool] = False
    requires: ClassVar[str] = "held-out rows and a target column"
    public_outputs: ClassVar[frozenset[str]] = frozenset()
    reads_heldout: ClassVar[bool] = True  # scores kept on the owner's side (dp_arena.run.heldout)
    parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "models": [Satisfies(_known_models, f"a non-empty list of distinct models from "
                                            f"{list(MODELS)}")],
        "max_train_rows": [Interval(int, 2)], "max_iter": [Interval(int, 1)],
        "C": [Interval(float, 0, closed="neither")], "seed": [Interval(int, 0)]}

    def __post_init__(self) -> None:
        super().__post_init__()
        import_models()

    def applies_to(self, data: Dataset) -> bool:
        return data.heldout is not None and data.target is not None

    def not_applicable_reason(self, data: Dataset) -> str | None:
        if data.heldout is None:
            return ("ml_efficacy needs held-out rows: dataset.holdout_fraction > 0 "
                    "(run_competition: holdout_fraction=)")
        if data.target is None:
            return ("ml_efficacy needs dataset.target (the column to predict; "
                    "run_competition: target=)")
        task_of(data.schema, data.target)  # a bad target is a configuration error
        return None

    def reference(self, data: Dataset) -> RealSide:
        """The test rows and the train-on-real scores (the same for every synthetic table)."""
        reason = self.not_applicable_reason(data)
        if reason is not None:
            raise ConfigError(reason, "set dataset.holdout_fraction and dataset.target, or "
                                      "drop the metric with ~metrics.ml_efficacy")
        schema = data.schema
        task = task_of(schema, data.target)  # type: ignore[arg-type]
        categorical = native_categorical(schema, task)
        test = prepare(schema, task, data.heldout)  # type: ignore[arg-type]
        real = prepare(schema, task, subsample_rows(data.private, self.max_train_rows,
                                                    self.seed))
        return RealSide(task, categorical, test,
                        model_scores(real, test, task, tuple(self.models), self, categorical))

    def score_with(self, reference: RealSide, data: Dataset,
                   synthetic: pd.DataFrame) -> MetricResult:
        task = reference.task
        fake = prepare(data.schema, task, subsample_rows(synthetic, self.max_train_rows,
                                                         self.seed))
        return MetricResult(scores=summarise(
            model_scores(fake, reference.test, task, tuple(self.models), self,
                         reference.categorical), reference.real_scores, task.kind))
