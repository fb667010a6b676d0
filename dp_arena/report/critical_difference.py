"""Ranks over datasets, the Friedman test and the Nemenyi critical difference (Demsar 2006,
"Statistical Comparisons of Classifiers over Multiple Data Sets", JMLR 7), and the
critical-difference diagram that shows them.

- :func:`rank_table`: per dataset (a row of scores), each method's rank, 1 the best; equal
  scores share the average of their places (2.5, 2.5);
- :func:`friedman`: the Friedman statistic from the average ranks R_j of k methods on N
  datasets, chi2_F = 12N / (k(k+1)) * (sum R_j^2 - k(k+1)^2 / 4) (Demsar's equation, without a
  correction for ties; df k - 1), and Iman and Davenport's F_F = (N-1) chi2_F / (N(k-1) -
  chi2_F) (df k - 1 and (k-1)(N-1)), which Demsar recommends, each with its p-value;
- :func:`nemenyi_cd`: the critical difference q_alpha * sqrt(k(k+1) / (6N)), q_alpha the
  studentized range's upper alpha point for k groups and infinite degrees of freedom over
  sqrt(2) (2.569 for k = 4 at alpha 0.05); two methods whose average ranks differ by at least
  the CD differ significantly (Nemenyi's all-pairs post-hoc test);
- :func:`cliques`: the maximal groups of methods, adjacent in rank order, whose ranks span
  less than the CD (not told apart): the bars of the diagram;
- :func:`draw_cd_diagram`: the diagram as Demsar drew it (the rank axis with the best rank on
  the right, each method's name on a leader to its rank, the CD above, the groups not told
  apart joined by thick bars), saved as a PNG.

Pure arithmetic on scores the board already shows: no private data, no budget.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np


def rank_table(scores: np.ndarray, higher_better: bool = True) -> np.ndarray:
    """Per row (a dataset) of ``scores`` (datasets x methods), each method's rank (1 the
    best; ties share the average of their places). NaN scores are refused: rank only the
    datasets where every method has a score."""
    from scipy.stats import rankdata

    table = np.asarray(scores, dtype=float)
    if table.ndim != 2:
        raise ValueError("scores must be a datasets x methods table")
    if np.isnan(table).any():
        raise ValueError("a score is missing: rank only datasets where every method has one")
    return rankdata(-table if higher_better else table, method="average", axis=1)


@dataclass(frozen=True)
class FriedmanResult:
    """The Friedman test over N datasets and k methods (see the module docstring)."""

    n_datasets: int
    n_methods: int
    chi2: float
    p_value: float
    iman_davenport: float
    iman_davenport_p: float

    @property
    def df(self) -> int:
        return self.n_methods - 1

    @property
    def df_denominator(self) -> int:
        """The second degrees of freedom of F_F: (k - 1)(N - 1)."""
        return (self.n_methods - 1) * (self.n_datasets - 1)


def friedman(average_ranks: Sequence[float], n_datasets: int) -> FriedmanResult:
    """The Friedman statistic and Iman-Davenport's F from the average ranks of k methods on
    ``n_datasets`` datasets (see the module docstring)."""
    from scipy import stats

    ranks = np.asarray(average_ranks, dtype=float)
    k, n = len(ranks), int(n_datasets)
    if k < 2 or n < 2:
        raise ValueError("the Friedman test needs at least 2 methods and 2 datasets")
    chi2 = 12.0 * n / (k * (k + 1)) * (float(np.sum(ranks ** 2)) - k * (k + 1) ** 2 / 4.0)
    chi2 = max(chi2, 0.0)  # rounding of ranks that are all equal
    p = float(stats.chi2.sf(chi2, k - 1))
    denominator = n * (k - 1) - chi2
    if denominator <= 1e-12:  # every dataset ranks the methods alike: F_F is unbounded
        f_f, p_f = math.inf, 0.0
    else:
        f_f = (n - 1) * chi2 / denominator
        p_f = float(stats.f.sf(f_f, k - 1, (k - 1) * (n - 1)))
    return FriedmanResult(n, k, chi2, p, f_f, p_f)


def nemenyi_q(n_methods: int, alpha: float = 0.05) -> float:
    """Nemenyi's critical value q_alpha for k methods: the studentized range's upper alpha
    point (k groups, infinite degrees of freedom) over sqrt(2)."""
    from scipy.stats import studentized_range

    if n_methods < 2:
        raise ValueError("a critical difference needs at least 2 methods")
    return float(studentized_range.ppf(1.0 - alpha, n_methods, np.inf)) / math.sqrt(2.0)


def nemenyi_cd(n_methods: int, n_datasets: int, alpha: float = 0.05) -> float:
    """The Nemenyi critical difference of average ranks: q_alpha * sqrt(k(k+1) / (6N))."""
    k = n_methods
    return nemenyi_q(k, alpha) * math.sqrt(k * (k + 1) / (6.0 * n_datasets))


def cliques(average_ranks: Sequence[float], cd: float) -> list[tuple[int, ...]]:
    """The maximal groups (positions into ``average_ranks``, best rank first) of methods
    adjacent in rank order whose ranks span less than ``cd``; single methods are no group."""
    order = sorted(range(len(average_ranks)), key=lambda i: average_ranks[i])
    spans = []
    for a in range(len(order)):
        b = a
        while b + 1 < len(order) and \
                average_ranks[order[b + 1]] - average_ranks[order[a]] < cd:
            b += 1
        if b > a:
            spans.append((a, b))
    maximal = [s for s in spans if not any(o != s and o[0] <= s[0] and s[1] <= o[1]
                                           for o in spans)]
    return [tuple(order[a:b + 1]) for a, b in maximal]


def draw_cd_diagram(names: Sequence[str], average_ranks: Sequence[float], cd: float | None,
                    path: str | Path, title: str = "",
                    groups: Sequence[Sequence[int]] | None = None) -> Path:
    """The critical-difference diagram (see the module docstring) as a PNG at ``path``.
    ``cd`` None: the ranks alone (no test was possible), said under the axis. ``groups``:
    the bars (positions into ``names``), default :func:`cliques` of the ranks and ``cd``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    k = len(names)
    ranks = [float(r) for r in average_ranks]
    order = sorted(range(k), key=lambda i: ranks[i])
    if groups is None:
        groups = cliques(ranks, cd) if cd is not None else []
    groups = [tuple(g) for g in groups if len(g) > 1]
    left_side = order[::-1][: (k + 1) // 2]   # the worst half on the left (best is right)
    right_side = order[: k // 2]
    rows = max(len(left_side), len(right_side))
    height = 1.4 + 0.28 * rows + 0.14 * len(groups)
    fig, ax = plt.subplots(figsize=(7.0, height))
    lo, hi = 1.0, float(max(k, 2))
    ax.set_xlim(hi + 0.05 * (hi - lo) + 1.6, lo - 0.05 * (hi - lo) - 1.6)  # best on the right
    ax.set_ylim(-(0.55 * rows + 0.9 + 0.45 * len(groups)), 1.6)
    ax.axis("off")
    ax.plot([lo, hi], [0, 0], color="black", lw=1)
    for tick in range(1, int(hi) + 1):
        ax.plot([tick, tick], [0, 0.15], color="black", lw=1)
        ax.text(tick, 0.25, str(tick), ha="center", va="bottom", fontsize=9)
    bar_y = -0.35
    for g, members in enumerate(groups):
        ends = [ranks[i] for i in members]
        y = bar_y - 0.45 * g
        ax.plot([min(ends) - 0.03, max(ends) + 0.03], [y, y], color="black", lw=3.5,
                solid_capstyle="butt")
    label_top = bar_y - 0.45 * len(groups) - 0.3
    for side, anchor, align in ((left_side, hi + 0.1, "right"), (right_side, lo - 0.1, "left")):
        for row, i in enumerate(side):
            y = label_top - 0.55 * row
            ax.plot([ranks[i], ranks[i], anchor], [0, y, y], color="0.3", lw=0.8)
            ax.text(anchor + (0.05 if align == "right" else -0.05), y,
                    f"{names[i]} ({ranks[i]:.2f})", ha=align, va="center", fontsize=9)
    if cd is not None:
        ax.plot([hi - cd, hi], [1.05, 1.05], color="black", lw=1.5)
        for x in (hi - cd, hi):
            ax.plot([x, x], [0.95, 1.15], color="black", lw=1.5)
        ax.text(hi - cd / 2, 1.2, f"CD = {cd:.2f}", ha="center", va="bottom", fontsize=9)
    else:
        ax.text((lo + hi) / 2, label_top - 0.55 * rows, "no critical difference (too few "
                "methods or datasets)", ha="center", fontsize=8)
    if title:
        ax.set_title(title, fontsize=10)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return out
