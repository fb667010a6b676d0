"""Ranks that read right: a pool's rows in order of their mean, best first, and a rank shared
(``2=``) only by rows that no test tells apart.

- :func:`compare`: whether one row's trials are significantly better than another's (a
  two-sided paired t-test over the trials both share, Welch's t-test when they share fewer
  than two, at level ``alpha``);
- :func:`mean_order_ranks`: walking the rows in order of their mean, a row shares the rank of
  the rows above it when :func:`compare` separates it from none of them, else it starts a new
  rank, its place in that order (1, 1, 3, ...). So a worse mean never ranks above a better
  one, and rows that share a rank are pairwise not separated. A row with fewer than two
  trials has no confidence interval: no rank (it is never called tied with another);
- :data:`RANK_MEANING`: the sentence every board opens with.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

#: Significance level of the tests that decide whether rows share a rank.
ALPHA = 0.05
#: What a rank means, said in the first lines of the terminal, Markdown and HTML boards.
RANK_MEANING = ("best mean first; rows no paired t-test across trials tells apart (level "
                "{alpha:g}) share a rank (2=); n = 1: no interval, not ranked")


def rank_meaning(alpha: float = ALPHA) -> str:
    """:data:`RANK_MEANING` at significance level ``alpha``."""
    return RANK_MEANING.format(alpha=alpha)


def compare(a: dict[int, float], b: dict[int, float], higher_better: bool,
            alpha: float = ALPHA) -> int:
    """+1 if ``a`` is significantly better than ``b``, -1 if worse, 0 if no test separates
    them (see the module docstring for the tests)."""
    from scipy import stats  # on first use: scipy.stats is slow to import for every command

    sign = 1.0 if higher_better else -1.0
    common = sorted(set(a) & set(b))
    if len(common) >= 2:
        d = sign * np.array([a[t] - b[t] for t in common])
        if np.allclose(d, d[0], rtol=0, atol=1e-12):
            return int(np.sign(d[0])) if abs(d[0]) > 1e-12 else 0
        p = float(stats.ttest_rel(sign * np.array([a[t] for t in common]),
                                  sign * np.array([b[t] for t in common])).pvalue)
        return int(np.sign(d.mean())) if p < alpha else 0
    va, vb = np.array(list(a.values())), np.array(list(b.values()))
    diff = sign * (va.mean() - vb.mean())
    if len(va) >= 2 and len(vb) >= 2:
        if va.std() == 0 and vb.std() == 0:
            return int(np.sign(diff)) if abs(diff) > 1e-12 else 0
        p = float(stats.ttest_ind(va, vb, equal_var=False).pvalue)
        return int(np.sign(diff)) if p < alpha else 0
    return 0  # a single trial has no confidence interval: no test separates it


def mean_order(means: Sequence[float], higher_better: bool) -> list[int]:
    """Positions of ``means`` best first (ties in mean keep their order; NaN last)."""
    def key(i: int) -> tuple[int, float]:
        m = means[i]
        return (1, 0.0) if math.isnan(m) else (0, -m if higher_better else m)
    return sorted(range(len(means)), key=key)


def mean_order_ranks(values: Sequence[dict[int, float] | None], higher_better: bool,
                     alpha: float = ALPHA, means: Sequence[float] | None = None
                     ) -> tuple[list[float], list[bool]]:
    """Each row's rank (NaN for rows with fewer than two trials) and whether it shares it
    (see the module docstring). ``values``: per row, trial -> score; ``means``: the order's
    means (default: the mean of each row's values)."""
    if means is None:
        means = [float(np.mean(list(v.values()))) if v else math.nan for v in values]
    ranks, tied = [math.nan] * len(values), [False] * len(values)
    group: list[int] = []
    place = 0
    for i in mean_order(means, higher_better):
        value = values[i]
        if not value or len(value) < 2 or math.isnan(means[i]):
            continue
        place += 1
        others = [values[j] for j in group]
        if others and all(compare(v, value, higher_better, alpha) == 0  # type: ignore[arg-type]
                          for v in others):
            group.append(i)
        else:
            group = [i]
        ranks[i] = ranks[group[0]] if len(group) > 1 else float(place)
        for j in group:
            tied[j] = len(group) > 1
    return ranks, tied
