"""The distinguishing test: which world (D or D') produced a run's output?

Runs are split in two parts by run index (the runs are independent and identically
distributed, so the split is data-independent): a selection part (half by default) and an
evaluation part (the rest).

1. **selection part**: a scorer fitted on these runs turns each run's feature vector into one
   score: ``naive_bayes`` (per feature, a log-likelihood ratio over up to 16 bins of pooled
   quantiles with add-1/2 smoothing, summed) or ``lda`` (scikit-learn
   ``LinearDiscriminantAnalysis``, ``lsqr`` solver with Ledoit-Wolf shrinkage); ``auto``
   (default) builds one test with each (see 2); ``identity`` takes the first feature as the
   score (the release view's statistic is already the exact log-likelihood ratio, whose
   threshold tests are the most powerful ones, so nothing is fitted). Then the threshold and
   direction ("score >= t means D'" or "score <= t means D'") are chosen among up to 257
   quantiles of the pooled scores and their 32 largest and smallest distinct values (a
   pure-DP bound lives in a tail), maximizing the epsilon lower bound these runs give
   (:func:`dp_arena.audit.bounds.lower_bound`; ties: the larger mu bound); when the
   evaluation part is the larger, the bound that these runs' error rates, taken two standard
   deviations pessimistic, would give on as many runs as it holds. Naive Bayes catches
   tail events a linear score misses (e.g. "every canary cell empty"); a linear score pools
   many small shifts (independent's nine marginals on titanic) with less noise;
2. **evaluation part**: the chosen test is applied once; its false positives (D said D') and
   false negatives (D' said D) are what the reported bounds use. Choosing on other runs keeps
   the Clopper-Pearson bounds valid (no selection on the counts they bound). With ``auto``
   both tests are counted and the larger bound kept, each computed at the Bonferroni share of
   the confidence (``1 - (1 - confidence) / 2``), so the kept one still holds at
   ``confidence``. A smaller selection part leaves more runs to count: the release view
   selects on a quarter (only a threshold is chosen there).

**Symmetrized runs** (the release view): the pair (D', D) is as neighbouring as (D, D'), and
negating a statistic is post-processing, so the runs of D with the statistic negated can join
those of D' and vice versa: world 1 = ``{T on D'} + {-T on D}``, world 0 = ``{T on D} + {-T on
D'}``, twice the runs each. These are draws (n of each kind) from the equal mixtures ``Q1 =
(P_{D'} + P_D o neg) / 2`` and ``Q0 = (P_D + P_{D'} o neg) / 2``; each component pair obeys
the mechanism's (epsilon, delta) inequalities (and its privacy profile, hence a mu-GDP claim),
and so do equal mixtures of such pairs (the hockey-stick divergence is jointly convex), so
every bound of :mod:`~dp_arena.audit.bounds` holds for ``(Q0, Q1)`` as for ``(P_D, P_{D'})``.
A threshold test on them pools the two tails (``T >= t`` on D' with ``T <= -t`` on D), which
for a symmetric mechanism doubles the events a bound rests on. Each error count is then a sum
of two binomials: :func:`~dp_arena.audit.bounds.lower_bound` bounds it accordingly
(``ErrorCounts.pooled``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from .bounds import ErrorCounts, cp_upper, lower_bound

N_CANDIDATES = 257
#: Distinct extreme scores also tried as thresholds, at each end.
N_TAIL = 32
#: One-sided level of the pessimistic rates a threshold is chosen by when the selection runs
#: are fewer than the evaluation runs (two standard deviations).
SELECTION_LEVEL = 0.9772


@dataclass(frozen=True)
class Scorer:
    """Score = sum over features of log(P(bin | D') / P(bin | D)) (naive Bayes) plus a linear
    term ``features[:, columns] @ weights`` (linear discriminant); either part may be empty."""

    columns: tuple[int, ...] = ()
    weights: tuple[float, ...] = ()
    #: per feature: (interior bin edges, log-likelihood ratio per bin)
    bins: tuple[tuple[int, tuple[float, ...], tuple[float, ...]], ...] = ()

    def score(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        out = np.zeros(len(x))
        if self.columns:
            out += x[:, list(self.columns)] @ np.asarray(self.weights)
        for j, edges, llr in self.bins:
            out += np.asarray(llr)[np.searchsorted(np.asarray(edges), x[:, j], side="right")]
        return out


@dataclass(frozen=True)
class Test:
    """Say D' when ``direction * score >= direction * threshold``."""

    scorer: Scorer
    direction: int
    threshold: float

    def says_canary(self, x: np.ndarray) -> np.ndarray:
        s = self.scorer.score(x)
        return self.direction * s >= self.direction * self.threshold


def split_halves(n: int, selection: float = 0.5) -> tuple[slice, slice]:
    """(selection, evaluation) parts of ``n`` runs by index: the first ``selection`` share
    (half by default) and the rest."""
    cut = int(n * selection)
    return slice(0, cut), slice(cut, n)


def fit_lda(x0: np.ndarray, x1: np.ndarray) -> Scorer:
    """Linear discriminant between features on D (``x0``) and on D' (``x1``)."""
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    x = np.vstack([x0, x1]).astype(float)
    keep = tuple(int(j) for j in np.flatnonzero(x.std(axis=0) > 0))
    if not keep or len(x0) < 2 or len(x1) < 2:
        return Scorer()
    y = np.r_[np.zeros(len(x0)), np.ones(len(x1))]
    lda = LinearDiscriminantAnalysis(solver="lsqr", shrinkage="auto")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lda.fit(x[:, list(keep)], y)
    weights = np.nan_to_num(lda.coef_[0])
    if not np.any(weights):
        return Scorer()
    return Scorer(keep, tuple(float(w) for w in weights))


def feature_bins(v0: np.ndarray, v1: np.ndarray, max_bins: int) -> tuple[tuple[float, ...],
                                                                         tuple[float, ...]]:
    """Interior edges (pooled quantiles; a frequent value such as 0 is its own bin) and the
    smoothed log-likelihood ratio log(P(bin | D') / P(bin | D)) per bin (add-1/2 smoothing)."""
    pooled = np.concatenate([v0, v1])
    edges = np.unique(np.quantile(pooled, np.linspace(0, 1, max_bins + 1)[1:-1]))
    edges = np.unique(np.concatenate([edges, edges + 1e-9]))  # isolate repeated values
    n_bins = len(edges) + 1
    h0 = np.bincount(np.searchsorted(edges, v0, side="right"), minlength=n_bins) + 0.5
    h1 = np.bincount(np.searchsorted(edges, v1, side="right"), minlength=n_bins) + 0.5
    llr = np.log(h1 / h1.sum()) - np.log(h0 / h0.sum())
    return tuple(float(e) for e in edges), tuple(float(v) for v in llr)


def fit_naive_bayes(x0: np.ndarray, x1: np.ndarray, max_bins: int = 16) -> Scorer:
    """Per feature, a binned log-likelihood ratio estimated on these runs, summed over
    features (naive Bayes: exact when the features are independent given the world, as the
    canary's cells are for a mechanism releasing independent marginals; a useful score
    otherwise). Catches tail events a linear score misses, e.g. "every canary cell empty"."""
    bins = []
    for j in range(x0.shape[1]):
        v0, v1 = x0[:, j].astype(float), x1[:, j].astype(float)
        if np.concatenate([v0, v1]).std() == 0:
            continue
        edges, llr = feature_bins(v0, v1, max_bins)
        bins.append((j, edges, llr))
    return Scorer(bins=tuple(bins))


def fit_identity(x0: np.ndarray, x1: np.ndarray) -> Scorer:
    """The first feature as it is: for a statistic that is already the log-likelihood ratio
    (the release view's ``T``), whose threshold tests are the most powerful ones."""
    return Scorer((0,), (1.0,))


SCORERS = {"naive_bayes": fit_naive_bayes, "lda": fit_lda, "identity": fit_identity}
#: What ``auto`` combines (``identity`` is asked for by name).
AUTO_SCORERS = ("naive_bayes", "lda")


def fit_scorer(x0: np.ndarray, x1: np.ndarray, kind: str = "naive_bayes") -> Scorer:
    """The scorer ``kind`` (``naive_bayes`` or ``lda``) fitted on these runs."""
    if len(x0) < 2 or len(x1) < 2:
        return Scorer()
    return SCORERS[kind](np.asarray(x0, dtype=float), np.asarray(x1, dtype=float))


def counts_for(test: Test, x0: np.ndarray, x1: np.ndarray, pooled: bool = False
               ) -> ErrorCounts:
    """The test's errors on runs ``x0`` (from D) and ``x1`` (from D')."""
    return ErrorCounts(fp=int(test.says_canary(x0).sum()), n0=len(x0),
                       fn=int((~test.says_canary(x1)).sum()), n1=len(x1), pooled=pooled)


def symmetrized(x0: np.ndarray, x1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Runs of the symmetrized pair (module docstring): ``(x0 and -x1, x1 and -x0)``."""
    return np.concatenate([x0, -x1]), np.concatenate([x1, -x0])


def choose_test(x0: np.ndarray, x1: np.ndarray, delta: float, confidence: float,
                scorer_kind: str = "naive_bayes",
                evaluation: tuple[int, int] | None = None) -> Test:
    """Scorer, direction and threshold chosen on these (selection) runs."""
    return best_threshold(fit_scorer(x0, x1, scorer_kind), x0, x1, delta, confidence,
                          evaluation)


def best_threshold(scorer: Scorer, x0: np.ndarray, x1: np.ndarray, delta: float,
                   confidence: float, evaluation: tuple[int, int] | None = None) -> Test:
    """Direction and threshold for ``scorer`` maximizing the bound on these runs; with
    ``evaluation = (n0, n1)``, the bound that these runs' error rates, taken two standard
    deviations pessimistic (Clopper-Pearson at :data:`SELECTION_LEVEL`), would give on that
    many evaluation runs (the best threshold for more evaluation runs lies further in the
    tail than the selection runs' own bound shows; the pessimism keeps a tail where a few
    selection runs looked lucky from winning)."""
    s0, s1 = scorer.score(x0), scorer.score(x1)
    n0, n1 = evaluation or (len(s0), len(s1))

    def projected(fp: int, fn: int) -> ErrorCounts:
        """The errors to judge a threshold by: these runs' own, or (``evaluation``) the
        pessimistic (two-sigma) rates on these runs scaled to the evaluation runs, so that a
        tail where these few runs happened to look lucky does not win."""
        if evaluation is None:
            return ErrorCounts(int(fp), len(s0), int(fn), len(s1))
        return ErrorCounts(int(round(cp_upper(int(fp), len(s0), SELECTION_LEVEL) * n0)), n0,
                           int(round(cp_upper(int(fn), len(s1), SELECTION_LEVEL) * n1)), n1)

    pooled = np.concatenate([s0, s1])
    distinct = np.unique(pooled)
    candidates = np.unique(np.concatenate([
        np.quantile(pooled, np.linspace(0, 1, N_CANDIDATES)), distinct[:N_TAIL],
        distinct[-N_TAIL:]])) if len(pooled) else np.array([0.0])
    s0_sorted, s1_sorted = np.sort(s0), np.sort(s1)
    best, best_key = Test(scorer, 1, float(candidates[0])), (-1.0, -1.0, -1.0, -1.0)
    for direction in (1, -1):
        for t in candidates:
            if direction == 1:  # say D' when s >= t
                fp = len(s0) - np.searchsorted(s0_sorted, t, side="left")
                fn = np.searchsorted(s1_sorted, t, side="left")
            else:  # say D' when s <= t
                fp = np.searchsorted(s0_sorted, t, side="right")
                fn = len(s1) - np.searchsorted(s1_sorted, t, side="right")
            bound = lower_bound(projected(fp, fn), delta, confidence)
            # ties (above all: every threshold's pessimistic bound is 0, when the selection
            # runs are few or unlucky) go to the threshold these runs' own rates favour, not
            # to the first candidate (which says D' for every run)
            own = lower_bound(ErrorCounts(int(fp), len(s0), int(fn), len(s1)), delta,
                              confidence) \
                if evaluation is not None and bound.eps_lb == bound.mu_lb == 0 else bound
            key = (bound.eps_lb, bound.mu_lb, own.eps_lb, own.mu_lb)
            if key > best_key:
                best, best_key = Test(scorer, direction, float(t)), key
    return best


def audit_test(x0: np.ndarray, x1: np.ndarray, delta: float, confidence: float,
               scorer_kind: str = "auto", selection: float = 0.5, symmetric: bool = False
               ) -> tuple[Test, ErrorCounts, float]:
    """Choose the test on the first ``selection`` share of the runs of each world (half by
    default), count its errors on the rest. ``auto``: one test per scorer kind of
    :data:`AUTO_SCORERS`, each counted on the evaluation runs at the per-test confidence
    ``1 - (1 - confidence) / kinds`` (Bonferroni: all hold together at ``confidence``), and
    the one with the larger bound kept. ``symmetric``: on the symmetrized runs (module
    docstring; for a statistic whose sign says which world, such as a log-likelihood ratio).
    Returns the test, its counts and the per-test confidence its bound must be computed at."""
    sel0, ev0 = split_halves(len(x0), selection)
    sel1, ev1 = split_halves(len(x1), selection)
    if symmetric:
        (s0, s1), (e0, e1) = symmetrized(x0[sel0], x1[sel1]), symmetrized(x0[ev0], x1[ev1])
        x0, x1 = np.concatenate([s0, e0]), np.concatenate([s1, e1])
        sel0, ev0 = slice(0, len(s0)), slice(len(s0), len(x0))
        sel1, ev1 = slice(0, len(s1)), slice(len(s1), len(x1))
    evaluation = (len(x0[ev0]), len(x1[ev1])) if len(x0[ev0]) > len(x0[sel0]) else None
    kinds = AUTO_SCORERS if scorer_kind == "auto" else (scorer_kind,)
    level = 1.0 - (1.0 - confidence) / len(kinds)
    results = []
    for kind in kinds:
        test = choose_test(x0[sel0], x1[sel1], delta, level, kind, evaluation)
        counts = counts_for(test, x0[ev0], x1[ev1], pooled=symmetric)
        bound = lower_bound(counts, delta, level)
        results.append(((bound.eps_lb, bound.mu_lb), test, counts))
    _key, test, counts = max(results, key=lambda r: r[0])
    return test, counts, level
