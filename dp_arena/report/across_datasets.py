"""The board across datasets: how the mechanisms of a suite compare over its tables, per
epsilon and per headline score (rendered by :mod:`dp_arena.report.across_render`).

**From the per-dataset boards.** For each headline score the runs logged
(``HEADLINE_SCORES``: the challenge score, the k-marginal score, and the held-out utility and
risk scores when they reached the store) the per-dataset board is built
(:func:`dp_arena.report.leaderboard.build_leaderboard`, so runs count exactly as there:
one per (setting, trial), the latest finished). A *dataset* is one pool of that board at an
epsilon (the same data id, privacy unit, delta and score settings), named by the dataset.
A *contestant* is a ranked DP setting (mechanism, its settings, tuning); reference rows
(``resample``, ``public_only``, ``uniform``, ``subsample_*``) and rows the board sets apart
are named, never ranked.

**Coverage.** Each contestant on each dataset is a :class:`Cell`: ``ok`` (a mean over its
trials), ``failed`` (every run failed; the reason), ``n/a`` (the mechanism does not apply;
the reason), ``score n/a`` (it ran, the score does not apply to the table; the reason),
``unfinished`` or ``no run``. Nothing missing is averaged away: the coverage table shows every
cell, and the rank test says which datasets and contestants it used.

**Ranks and tests.** The contestants compared are those with a score on at least half of the
datasets (a contestant with fewer is left out of the test, and said); the datasets used are
those where every compared contestant has a score (the others are left out, and said). On
them: each contestant's rank per dataset (1 the best, ties the average place;
:func:`dp_arena.report.critical_difference.rank_table`) from its mean over trials, the
average rank, a 95% bootstrap interval of the average rank (``n_boot`` resamples of the
datasets, and within each dataset of each contestant's trials, with replacement; percentile
interval; seeded, so the board reads the same each time), the Friedman test and the Nemenyi
critical difference at ``alpha`` (:mod:`dp_arena.report.critical_difference`). As Demsar
advises, the post-hoc groups are read only when the Friedman test rejects: otherwise one group
holds every contestant.

**Wins, ties and losses.** For every pair of contestants, over the datasets where both have a
score: a win when the row's trials are significantly better than the column's, a loss when
worse, a tie when no test tells them apart -- the per-dataset board's own test
(:func:`dp_arena.report.ranks.compare`: paired t-test over the trials, level ``alpha``).

Everything here is read from scores the per-dataset boards already show: no private data, no
budget.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dp_arena.report.critical_difference import (
    FriedmanResult,
    cliques,
    friedman,
    nemenyi_cd,
    rank_table,
)
from dp_arena.report.leaderboard import (
    GROUP,
    METRIC_NA_PREFIX,
    REFERENCE_NOTES,
    MECHANISM_NOTES,
    NotApplicableRow,
    build_leaderboard,
    score_columns,
    with_defaults,
    with_not_applicable,
)
from dp_arena.report.ranks import ALPHA, compare

#: The scores a board across datasets is drawn for, when the runs logged them.
HEADLINE_SCORES = ("challenge/overall", "kmarginal/score", "ml_efficacy/score",
                   "propensity/pmse_ratio", "range_query/mean_rel_error", "membership/auc",
                   "attribute_inference/risk")
#: Bootstrap resamples of the average-rank interval.
N_BOOT = 1000
#: Cell statuses, as the coverage table shows them.
OK, FAILED, NOT_APPLICABLE, SCORE_NA, UNFINISHED, NO_RUN = (
    "ok", "failed", "n/a", "score n/a", "unfinished", "no run")


@dataclass(frozen=True)
class Cell:
    """One contestant on one dataset: its status, why when it has no score, its mean over
    trials and its trial -> score."""

    status: str
    reason: str = ""
    mean: float = math.nan
    values: Mapping[int, float] = field(default_factory=dict)


@dataclass(frozen=True)
class AcrossBoard:
    """The board across datasets for one score at one epsilon (see the module docstring).
    ``compared``, ``average_ranks`` and ``rank_ci`` are aligned, best average rank first."""

    score: str
    epsilon: float
    lower_is_better: bool
    alpha: float
    datasets: tuple[str, ...]
    contestants: tuple[str, ...]
    cells: Mapping[tuple[str, str], Cell]
    references: tuple[str, ...]
    compared: tuple[str, ...]
    left_out: tuple[tuple[str, str], ...]
    used: tuple[str, ...]
    unused: tuple[tuple[str, str], ...]
    average_ranks: tuple[float, ...]
    rank_ci: tuple[tuple[float, float], ...]
    friedman: FriedmanResult | None
    cd: float | None
    groups: tuple[tuple[str, ...], ...]
    wins_ties_losses: Mapping[tuple[str, str], tuple[int, int, int]]
    trials: tuple[int, ...]

    @property
    def rejects(self) -> bool:
        """Whether the Friedman test rejects "all contestants rank alike" at ``alpha``."""
        return self.friedman is not None and self.friedman.p_value < self.alpha

    def cell(self, contestant: str, dataset: str) -> Cell:
        return self.cells.get((contestant, dataset), Cell(NO_RUN))


# ----- labels -------------------------------------------------------------------------------
def contestant_label(row: Mapping[str, Any]) -> str:
    """A setting's name across datasets: the mechanism, its settings when not the defaults
    (``mst [quick]``), its tuning mode."""
    hyper = str(row.get("hyperparameters", "") or "")
    tuning = str(row.get("tuning", "") or "")
    return (str(row["mechanism"]) + ("" if hyper in ("", "-") else f" {hyper}")
            + (f" (tuning {tuning})" if tuning else ""))


def reference_label(row: Mapping[str, Any]) -> str:
    """A reference row's name with what it is (``resample (non-private ceiling)``)."""
    note = REFERENCE_NOTES.get(str(row.get("reference", "")), "")
    mech = str(row["mechanism"])
    return mech + (MECHANISM_NOTES.get(mech, note) if note else " (not ranked)")


def dataset_labels(board: pd.DataFrame) -> dict[tuple, str]:
    """Pool (dataset_id, privacy_unit, delta, metric_setting) -> a name: the dataset's, with
    the data id's start when two pools share a name."""
    ran = board["dataset_id"].notna() & (board["dataset_id"].astype(str) != "")
    if "status" in board:  # not-applicable rows (never ran) have no pool
        ran &= board["status"].ne("n/a").fillna(True).astype(bool)
    pools = board[ran][["dataset", "dataset_id", "privacy_unit", "delta",
                        "metric_setting"]].drop_duplicates()
    names: dict[tuple, str] = {}
    counts = pools["dataset"].value_counts()
    for r in pools.itertuples(index=False):
        key = (r.dataset_id, r.privacy_unit, r.delta, r.metric_setting)
        name = str(r.dataset)
        names[key] = name if counts[r.dataset] == 1 else f"{name}@{str(r.dataset_id)[:6]}"
    return names


def is_reference_mechanism(name: str) -> bool:
    """Whether the mechanism option ``name`` is a reference point (never ranked)."""
    from dp_arena.errors import ConfigError
    from dp_arena.mechanisms import mechanism_class

    for candidate in (name, name.rsplit("_", 1)[0]):  # an option such as subsample_5
        try:
            return getattr(mechanism_class(candidate), "reference", None) is not None
        except ConfigError:
            continue
    return False


# ----- cells --------------------------------------------------------------------------------
def score_na_reasons(runs: pd.DataFrame, score: str) -> dict[str, str]:
    """dataset_id -> why the score's metric did not apply there (the runs' ``metric_na`` tags)."""
    col = METRIC_NA_PREFIX + score.split("/", 1)[0]
    if col not in runs:
        return {}
    frame = with_defaults(runs)
    out = {}
    for data_id, part in frame.groupby("dataset_id"):
        reasons = sorted(set(part[col].dropna().astype(str)) - {"", "nan"})
        if reasons:
            out[str(data_id)] = "; ".join(reasons)
    return out


def row_cell(row: Mapping[str, Any], values: Mapping[int, float] | None,
             na_reason: str) -> Cell:
    """A board row as a :class:`Cell` (see the module docstring)."""
    if str(row.get("status", "")) == "n/a":
        return Cell(NOT_APPLICABLE, str(row.get("reason", "")))
    mean = float(row.get("mean", math.nan))
    if values and not math.isnan(mean):
        return Cell(OK, "", mean, dict(values))
    if int(row.get("n", 0) or 0) > 0:
        return Cell(SCORE_NA, na_reason or "the score was not logged")
    if int(row.get("failed", 0) or 0) > 0:
        reason = str(row.get("failure_reason", "") or "")
        return Cell(FAILED, (reason.strip().splitlines() or [""])[0])
    return Cell(UNFINISHED, "no run of this setting has finished")


# ----- ranks, bootstrap, wins ---------------------------------------------------------------
def choose_compared(contestants: Sequence[str], datasets: Sequence[str],
                    cells: Mapping[tuple[str, str], Cell]
                    ) -> tuple[list[str], list[tuple[str, str]], list[str],
                               list[tuple[str, str]]]:
    """(compared contestants, left-out contestants with why, datasets used, datasets left out
    with why): see the module docstring. A dataset where no contestant has a score (the score
    does not apply there) counts for no one."""
    scored = [d for d in datasets
              if any(cells.get((c, d), Cell(NO_RUN)).status == OK for c in contestants)]
    need = max(math.ceil(len(scored) / 2), 1)
    compared, left_out = [], []
    for c in contestants:
        have = sum(cells.get((c, d), Cell(NO_RUN)).status == OK for d in scored)
        if have >= need:
            compared.append(c)
        else:
            left_out.append((c, f"a score on {have} of the {len(scored)} datasets where "
                                f"the score was logged (at least {need} needed)"))
    used, unused = [], []
    for d in datasets:
        if d not in scored:
            unused.append((d, "no mechanism has this score there"))
            continue
        missing = [(c, cells.get((c, d), Cell(NO_RUN))) for c in compared]
        missing = [(c, cell) for c, cell in missing if cell.status != OK]
        if missing:
            unused.append((d, "; ".join(f"{c} {cell.status}" for c, cell in missing)))
        else:
            used.append(d)
    return compared, left_out, used, unused


def bootstrap_rank_ci(values: Sequence[Sequence[Sequence[float]]], higher_better: bool,
                      n_boot: int = N_BOOT, seed: int = 0,
                      level: float = 0.95) -> list[tuple[float, float]]:
    """Per contestant, the percentile interval of its average rank over ``n_boot`` resamples
    of the datasets and, within each, of each contestant's trials (``values[dataset]
    [contestant]``: its trial scores), all with replacement."""
    rng = np.random.default_rng(seed)
    n_data, k = len(values), len(values[0])
    means = np.empty((n_boot, n_data, k))
    for d in range(n_data):
        for c in range(k):
            trials = np.asarray(values[d][c], dtype=float)
            picks = rng.integers(0, len(trials), size=(n_boot, len(trials)))
            means[:, d, c] = trials[picks].mean(axis=1)
    rows = rng.integers(0, n_data, size=(n_boot, n_data))
    resampled = np.take_along_axis(means, rows[:, :, None], axis=1)
    from scipy.stats import rankdata

    ranks = rankdata(-resampled if higher_better else resampled, method="average", axis=2)
    average = ranks.mean(axis=1)  # n_boot x k
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(average, [tail, 100.0 - tail], axis=0)
    return [(float(a), float(b)) for a, b in zip(lo, hi)]


def wins_ties_losses(contestants: Sequence[str], datasets: Sequence[str],
                     cells: Mapping[tuple[str, str], Cell], higher_better: bool,
                     alpha: float) -> dict[tuple[str, str], tuple[int, int, int]]:
    """(row, column) -> (wins, ties, losses) of the row against the column over the datasets
    where both have a score (see the module docstring)."""
    out = {}
    for a in contestants:
        for b in contestants:
            if a == b:
                continue
            tally = [0, 0, 0]
            for d in datasets:
                ca, cb = cells.get((a, d), Cell(NO_RUN)), cells.get((b, d), Cell(NO_RUN))
                if ca.status == OK and cb.status == OK:
                    outcome = compare(dict(ca.values), dict(cb.values), higher_better, alpha)
                    tally[{1: 0, 0: 1, -1: 2}[outcome]] += 1
            out[(a, b)] = (tally[0], tally[1], tally[2])
    return out


# ----- the boards ---------------------------------------------------------------------------
def headline_scores(runs: pd.DataFrame, scores: Sequence[str] | None = None) -> list[str]:
    """``scores`` if given, else the ``HEADLINE_SCORES`` some finished run logged."""
    if scores:
        return list(scores)
    logged = set(score_columns(runs))
    done = runs[runs["status"] == "FINISHED"] if "status" in runs else runs
    return [s for s in HEADLINE_SCORES if s in logged and done[s].notna().any()]


def across_datasets(runs: pd.DataFrame, scores: Sequence[str] | None = None,
                    alpha: float = ALPHA,
                    not_applicable: Iterable[NotApplicableRow | Mapping[str, Any]] = (),
                    n_boot: int = N_BOOT, seed: int = 0) -> list[AcrossBoard]:
    """The boards across datasets of ``runs`` (one per headline score and epsilon; see the
    module docstring). ``not_applicable``: a sweep's n/a jobs, shown in the coverage."""
    records = list(not_applicable)
    boards = []
    for score in headline_scores(runs, scores):
        board = with_not_applicable(build_leaderboard(runs, score, alpha=alpha), records)
        boards += score_boards(board, score, score_na_reasons(runs, score), alpha, n_boot,
                               seed)
    return boards


def spans_datasets(runs: pd.DataFrame) -> bool:
    """Whether the runs cover two datasets or more (then a board across datasets is drawn)."""
    if runs.empty or "dataset_id" not in runs:
        return False
    return runs["dataset_id"].fillna("").astype(str).replace("", np.nan).nunique() >= 2


def score_boards(board: pd.DataFrame, score: str, na_reasons: Mapping[str, str], alpha: float,
                 n_boot: int, seed: int) -> list[AcrossBoard]:
    """One :class:`AcrossBoard` per epsilon of a per-dataset ``board`` ranked by ``score``."""
    lower = bool(board.attrs.get("lower_is_better", False))
    values: Mapping[tuple, Mapping[int, float]] = board.attrs.get("values", {})
    names = dataset_labels(board)
    out = []
    for eps, part in board.groupby("epsilon", sort=True):
        cells: dict[tuple[str, str], Cell] = {}
        contestants: list[str] = []
        references: list[str] = []
        datasets: list[str] = []
        trials: set[int] = set()
        for row in part.to_dict("records"):
            dataset = (names.get((row.get("dataset_id"), row.get("privacy_unit"),
                                  row.get("delta"), row.get("metric_setting")))
                       or str(row.get("dataset", "")))
            if row.get("status") == "n/a":  # never ran: named by its dataset's name
                dataset = str(row.get("dataset", ""))
                if is_reference_mechanism(str(row["mechanism"])):
                    references.append(f"{row['mechanism']} (n/a on {dataset})")
                    continue
            elif not bool(row.get("ranked", False)):
                label = reference_label(row) if row.get("kind") == "reference" \
                    else f"{contestant_label(row)} ({row.get('kind')}, not ranked)"
                references.append(label)
                datasets.append(dataset)
                continue
            label = contestant_label(row)
            key = tuple(row.get(c) for c in GROUP)
            row_values = values.get(key) if row.get("status") != "n/a" else None
            cells[(label, dataset)] = row_cell(row, row_values,
                                               na_reasons.get(str(row.get("dataset_id")), ""))
            trials |= set(row_values or {})
            contestants.append(label)
            datasets.append(dataset)
        out.append(across_board(score, float(eps), lower, alpha, list(dict.fromkeys(datasets)),
                                list(dict.fromkeys(contestants)), cells,
                                list(dict.fromkeys(references)), sorted(trials), n_boot, seed))
    return out


def across_board(score: str, epsilon: float, lower: bool, alpha: float, datasets: list[str],
                 contestants: list[str], cells: dict[tuple[str, str], Cell],
                 references: list[str], trials: list[int], n_boot: int,
                 seed: int) -> AcrossBoard:
    """The ranks, interval, tests and tallies of one score at one epsilon."""
    higher = not lower
    compared, left_out, used, unused = choose_compared(contestants, datasets, cells)
    ranks: list[float] = []
    ci: list[tuple[float, float]] = []
    test, cd, groups = None, None, []
    if compared and used:
        table = np.array([[cells[(c, d)].mean for c in compared] for d in used])
        ranks = list(rank_table(table, higher).mean(axis=0))
        ci = bootstrap_rank_ci([[list(cells[(c, d)].values.values()) for c in compared]
                                for d in used], higher, n_boot, seed)
        if len(compared) >= 2 and len(used) >= 2:
            test = friedman(ranks, len(used))
            cd = nemenyi_cd(len(compared), len(used), alpha)
            groups = (cliques(ranks, cd) if test.p_value < alpha
                      else [tuple(range(len(compared)))])
    order = sorted(range(len(compared)), key=lambda i: ranks[i]) if ranks else []
    return AcrossBoard(
        score=score, epsilon=epsilon, lower_is_better=lower, alpha=alpha,
        datasets=tuple(datasets), contestants=tuple(contestants), cells=cells,
        references=tuple(references), compared=tuple(compared[i] for i in order),
        left_out=tuple(left_out), used=tuple(used), unused=tuple(unused),
        average_ranks=tuple(ranks[i] for i in order), rank_ci=tuple(ci[i] for i in order),
        friedman=test, cd=cd,
        groups=tuple(tuple(compared[i] for i in sorted(g, key=lambda i: ranks[i]))
                     for g in groups),
        wins_ties_losses=wins_ties_losses(contestants, datasets, cells, higher, alpha),
        trials=tuple(trials))


def ranks_frame(boards: Sequence[AcrossBoard]) -> pd.DataFrame:
    """Every board's average ranks as one table (the CSV): score, epsilon, contestant,
    average rank, its interval, the datasets it was ranked on."""
    rows = [{"score": b.score, "epsilon": b.epsilon, "place": i + 1, "mechanism": c,
             "average_rank": r, "ci95_low": lo, "ci95_high": hi,
             "datasets": ",".join(b.used), "friedman_chi2": b.friedman.chi2 if b.friedman
             else math.nan, "friedman_p": b.friedman.p_value if b.friedman else math.nan,
             "critical_difference": b.cd if b.cd is not None else math.nan}
            for b in boards for i, (c, r, (lo, hi)) in enumerate(
                zip(b.compared, b.average_ranks, b.rank_ci))]
    return pd.DataFrame(rows)
