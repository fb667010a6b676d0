"""A run's cost (CPU seconds, peak memory) as a power law of public sizes, fitted on finished
runs: the model behind ``dp-arena --dry-run`` and the sweep's ETA.

For each cost key (a mechanism with its setting) the model is

    log(cost) = a + b*log(rows) + c*log(columns) + d*log(cells) + e*log(epsilon) + noise

fitted by least squares on that key's finished runs (:func:`fit_cost_model`). ``rows``,
``columns`` and ``cells`` are the public sizes of :mod:`dp_arena.run.cost_inputs`. A term
enters a key's own fit only when that key's runs vary in it and leave at least one degree of
freedom (terms in the order rows, cells, columns, epsilon: the first ones first). A term a key
cannot fit because its runs never vary in it (all on one dataset, say) takes the slope
pooled over every key (the within-key least squares: each key its own intercept, shared
slopes), so a mechanism seen on one dataset is still scaled to another; a slope that no
key's runs can fit is 0 and the prediction says it extrapolated
(:attr:`Prediction.unmodelled`). For a dataset the key has not run on, the dataset's terms
(rows, cells, columns) also keep one degree of freedom among the datasets seen (the fit
must not pass through every dataset's mean, or its residuals would show only the trials'
spread, not how far a new dataset falls from the law); a dataset the key has run on is priced
by the fit without that rule (its own runs' level): :class:`KeyModel`.

Uncertainty: the residual standard deviation of the key's fit (the pooled one when the key's
own has no degree of freedom left), with the parameters' uncertainty (the prediction's
leverage), as a Student-t interval on the log scale. A key with one run and no pooled fit
has no spread: its interval is unknown (``None``), never invented. Totals over many runs
(:func:`total_interval`) are drawn by Monte Carlo with one error per cost key (runs of one
key share their model's error) and independent keys, each a normal error on the log scale
with the run's predictive standard deviation.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

#: The model's terms, in the order a key's own fit takes them.
TERMS = ("rows", "cells", "columns", "epsilon")
#: The terms a dataset fixes (epsilon is the run's).
DATASET_TERMS = ("rows", "cells", "columns")
#: Central share of the prediction intervals.
LEVEL = 0.90
#: A term whose log varies less than this across a key's runs is constant for that key.
MIN_SPREAD = 1e-9


@dataclass(frozen=True)
class Sizes:
    """The public sizes a run's cost is modelled on (all > 0)."""

    rows: float
    columns: float
    cells: float
    epsilon: float

    def logs(self) -> dict[str, float]:
        return {t: math.log(getattr(self, t)) for t in TERMS}


@dataclass(frozen=True)
class Observation:
    """A finished run: its cost key, its sizes and what it cost (``value``: CPU seconds or
    peak MB, > 0)."""

    key: str
    sizes: Sizes
    value: float


@dataclass(frozen=True)
class Prediction:
    """A run's predicted cost: ``median`` (the power law's), ``mean`` (of the log-normal:
    what sums), the :data:`LEVEL` interval ``low``..``high`` (``None``: unknown spread),
    ``log_sd`` (the predictive standard deviation on the log scale, ``None`` when unknown),
    ``runs`` the key's finished runs it stands on, ``unmodelled`` the terms that differ from
    every run seen but that no run could fit (their slope taken as 0)."""

    median: float
    mean: float
    low: float | None
    high: float | None
    log_sd: float | None
    runs: int
    unmodelled: tuple[str, ...] = ()


@dataclass(frozen=True)
class KeyFit:
    """One cost key's fit: its own terms and coefficients (intercept first), their
    ``(X'X)^-1``, the residual sd with its degrees of freedom (``dof`` 0: none of its own),
    the key's mean logs (for the pooled terms) and its number of runs."""

    terms: tuple[str, ...]
    coef: tuple[float, ...]
    xtx_inv: tuple[tuple[float, ...], ...]
    sd: float
    dof: int
    centre: Mapping[str, float]
    runs: int
    #: the terms the key's runs vary in (a term left out of ``terms`` for lack of degrees of
    #: freedom is in the residuals, not priced by a pooled slope)
    varied: tuple[str, ...] = ()


@dataclass(frozen=True)
class KeyModel:
    """A cost key's two fits: ``general`` for a dataset it has not run on (one degree of
    freedom kept among its datasets: :func:`chosen_terms`), ``local`` for one it has
    (``seen``: those datasets' :func:`dataset_point`)."""

    general: KeyFit
    local: KeyFit
    seen: frozenset[tuple[float, ...]]

    @property
    def runs(self) -> int:
        return self.general.runs

    def for_sizes(self, sizes: Sizes) -> KeyFit:
        return self.local if dataset_point(sizes) in self.seen else self.general


@dataclass(frozen=True)
class PooledFit:
    """Slopes shared by every key (within-key least squares), their standard errors, the
    residual sd and its degrees of freedom; terms no key varies in are left out."""

    slopes: Mapping[str, float] = field(default_factory=dict)
    errors: Mapping[str, float] = field(default_factory=dict)
    sd: float = 0.0
    dof: int = 0


@dataclass(frozen=True)
class CostModel:
    """Per-key fits and the pooled slopes (:func:`fit_cost_model`)."""

    keys: Mapping[str, KeyModel]
    pooled: PooledFit

    def knows(self, key: str) -> bool:
        return key in self.keys

    def predict(self, key: str, sizes: Sizes) -> Prediction | None:
        """The cost of a run of ``key`` at ``sizes``; ``None`` when no run of ``key`` is known."""
        found = self.keys.get(key)
        return None if found is None else predict_key(found.for_sizes(sizes), self.pooled, sizes)


def fit_cost_model(observations: Iterable[Observation]) -> CostModel:
    """The model of the module docstring, fitted on ``observations`` (values > 0)."""
    by_key: dict[str, list[Observation]] = {}
    for o in observations:
        if o.value > 0 and math.isfinite(o.value):
            by_key.setdefault(o.key, []).append(o)
    pooled = fit_pooled(by_key)
    return CostModel({k: fit_key_model(v) for k, v in by_key.items()}, pooled)


def log_rows(obs: Sequence[Observation]) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)``: each run's logs of :data:`TERMS` (columns in that order) and log cost."""
    x = np.array([[o.sizes.logs()[t] for t in TERMS] for o in obs], dtype=float)
    return x.reshape(len(obs), len(TERMS)), np.log([o.value for o in obs])


def varying(x: np.ndarray) -> list[int]:
    """The columns of ``x`` that vary (more than :data:`MIN_SPREAD`)."""
    return [j for j in range(x.shape[1]) if np.ptp(x[:, j]) > MIN_SPREAD] if len(x) else []


def chosen_terms(x: np.ndarray, new_dataset: bool = True) -> list[int]:
    """The terms a key's own fit takes: those its runs vary in, first ones first, while one
    degree of freedom is left (n - 1 - terms >= 1), and only if the design has full rank.
    A dataset's terms (:data:`DATASET_TERMS`) also leave one degree of freedom among the
    key's distinct datasets (datasets - 1 - dataset terms >= 1): with as many terms as
    datasets allow, the fit would pass through every dataset's mean and its residuals (the
    trials' spread only) would not show how far a new dataset can fall from the law. That
    rule is for a ``new_dataset``; a dataset the key has run on is priced by the fit
    without it (its own runs' level)."""
    datasets = len({tuple(row) for row in x[:, [TERMS.index(t) for t in DATASET_TERMS]]})
    picked: list[int] = []
    for j in varying(x):
        trial = [*picked, j]
        design = np.column_stack([np.ones(len(x)), x[:, trial]])
        per_dataset = sum(TERMS[k] in DATASET_TERMS for k in trial)
        if (len(x) - 1 - len(trial) >= 1 and (datasets - 1 - per_dataset >= 1 or not new_dataset)
                and np.linalg.matrix_rank(design) == len(trial) + 1):
            picked = trial
    return picked


def dataset_point(sizes: Sizes) -> tuple[float, ...]:
    """What identifies a dataset to the model: its sizes' logs, rounded (a tag's integer)."""
    logs = sizes.logs()
    return tuple(round(logs[t], 9) for t in DATASET_TERMS)


def fit_key_model(obs: Sequence[Observation]) -> KeyModel:
    return KeyModel(fit_key(obs, True), fit_key(obs, False),
                    frozenset(dataset_point(o.sizes) for o in obs))


def fit_key(obs: Sequence[Observation], new_dataset: bool = True) -> KeyFit:
    x, y = log_rows(obs)
    cols = chosen_terms(x, new_dataset)
    design = np.column_stack([np.ones(len(x)), x[:, cols]])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - design @ coef
    dof = len(y) - design.shape[1]
    sd = float(math.sqrt(resid @ resid / dof)) if dof > 0 else 0.0
    xtx_inv = np.linalg.pinv(design.T @ design)
    centre = {t: float(x[:, j].mean()) for j, t in enumerate(TERMS)}
    return KeyFit(tuple(TERMS[j] for j in cols), tuple(float(c) for c in coef),
                  tuple(tuple(float(v) for v in row) for row in xtx_inv), sd, dof, centre,
                  len(obs), tuple(TERMS[j] for j in varying(x)))


def fit_pooled(by_key: Mapping[str, Sequence[Observation]]) -> PooledFit:
    """Within-key least squares: every key's logs centred on its means, shared slopes for the
    terms some key varies in (and that the centred design can separate), a dataset's terms
    while one degree of freedom is left among all the datasets (as :func:`chosen_terms`)."""
    xs, ys = [], []
    for obs in by_key.values():
        x, y = log_rows(obs)
        xs.append(x - x.mean(axis=0))
        ys.append(y - y.mean())
    if not xs:
        return PooledFit()
    x, y = np.vstack(xs), np.concatenate(ys)
    points = {dataset_point(o.sizes) for obs in by_key.values() for o in obs}
    cols: list[int] = []
    for j in varying(x):
        per_dataset = sum(TERMS[k] in DATASET_TERMS for k in [*cols, j])
        if (len(points) - 1 - per_dataset >= 1  # as chosen_terms: room among the datasets
                and np.linalg.matrix_rank(x[:, [*cols, j]]) == len(cols) + 1):
            cols.append(j)
    dof = len(y) - len(by_key) - len(cols)
    if not cols or dof < 1:
        rss = float(y @ y)
        return PooledFit({}, {}, math.sqrt(rss / dof) if dof > 0 else 0.0, max(dof, 0))
    coef, *_ = np.linalg.lstsq(x[:, cols], y, rcond=None)
    resid = y - x[:, cols] @ coef
    sd = math.sqrt(float(resid @ resid) / dof)
    errors = sd * np.sqrt(np.diag(np.linalg.pinv(x[:, cols].T @ x[:, cols])))
    return PooledFit({TERMS[j]: float(c) for j, c in zip(cols, coef)},
                     {TERMS[j]: float(e) for j, e in zip(cols, errors)}, sd, dof)


def predict_key(fit: KeyFit, pooled: PooledFit, sizes: Sizes) -> Prediction:
    """The key's fit at ``sizes``, plus the pooled slope times the distance from the key's
    runs for each term its runs never varied in (module docstring); a term they varied in
    but the fit left out is in the residual spread."""
    logs = sizes.logs()
    row = np.array([1.0, *[logs[t] for t in fit.terms]])
    mu = float(row @ np.array(fit.coef))
    leverage = float(row @ np.array(fit.xtx_inv) @ row)
    own = fit.dof > 0
    sd, dof = (fit.sd, fit.dof) if own else (pooled.sd, pooled.dof)
    extra_var, unmodelled = 0.0, []
    for t in TERMS:
        if t in fit.terms or t in fit.varied:  # a varied term left out: in the residuals
            continue
        gap = logs[t] - fit.centre[t]
        if abs(gap) <= MIN_SPREAD:
            continue
        if t in pooled.slopes:
            mu += pooled.slopes[t] * gap
            extra_var += (pooled.errors[t] * gap) ** 2
        else:
            unmodelled.append(t)
    median = math.exp(mu)
    if dof < 1:
        return Prediction(median, median, None, None, None, fit.runs, tuple(unmodelled))
    log_sd = math.sqrt(sd ** 2 * (1 + leverage) + extra_var)
    q = float(stats.t.ppf(0.5 + LEVEL / 2, dof))
    return Prediction(median, math.exp(mu + log_sd ** 2 / 2), math.exp(mu - q * log_sd),
                      math.exp(mu + q * log_sd), log_sd, fit.runs, tuple(unmodelled))


@dataclass(frozen=True)
class Total:
    """A sum of predicted costs: ``mean`` (sum of the runs' means) and the :data:`LEVEL`
    interval (``None`` when some part's spread is unknown)."""

    mean: float
    low: float | None
    high: float | None


def total_interval(parts: Sequence[tuple[str, Prediction, int]], draws: int = 4000,
                   seed: int = 0) -> Total:
    """The total of ``parts`` (cost key, one run's prediction, number of such runs): the
    runs of one key share one log-scale error (their model's), keys are independent; the
    interval is drawn by Monte Carlo (``draws``, a fixed ``seed``: the same screen twice)."""
    mean = sum(p.mean * n for _, p, n in parts)
    if not parts:
        return Total(0.0, 0.0, 0.0)
    if any(p.log_sd is None for _, p, _n in parts):
        return Total(mean, None, None)
    rng = np.random.default_rng(seed)
    keys = sorted({k for k, _, _ in parts})
    z = dict(zip(keys, rng.standard_normal((len(keys), draws))))
    totals = np.zeros(draws)
    for key, p, n in parts:
        totals += n * p.median * np.exp(p.log_sd * z[key])  # type: ignore[operator]
    low, high = np.quantile(totals, [0.5 - LEVEL / 2, 0.5 + LEVEL / 2])
    return Total(mean, float(low), float(high))
