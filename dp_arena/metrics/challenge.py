"""``challenge``: the NIST 2020 Differential Privacy Temporal Map Challenge, Sprint 3 (Chicago
taxi) score, vectorised: same numbers as the official scorer, in about a second per million trips.

Components (each in [0, 1], higher is better)
---------------------------------------------
- **k-marginal**: groups are (pickup_community_area, shift). For each of the 56 ordered pairs of
  the 8 marginal columns (numeric ones in their challenge bins) and each group present in either
  table, the L1 distance between the normalised (c1, c2) cell counts of ground truth and
  submission (0..2; 2.0 when either side has no rows in the group). A group's score is the mean
  over the pairs; a group whose row counts differ by ``BIAS_PENALTY_CUTOFF`` (250) or more scores
  2.0. ``score = (2 - mean group score) / 2``.
- **graph edge**: L1 distance between the normalised (pickup, dropoff) counts;
  ``score = (2 - L1) / 2``.
- **higher-order conjunction (HOC)**: per taxi, its trip counts per shift value then per pickup
  area (the ground truth's values, sorted); ``RandomState(123456)``; 50 times draw one
  ground-truth taxi (``randint(low=0, high=n_gt)``) then per-column tolerances
  (``randint(5, 51, size=n_cols)``), count the taxis of each table whose every column is within
  tolerance (``|x - y| <= t``), compare the two proportions; ``score = 1 - mean |difference|``.
- **overall** = ``1000 * mean(k_marginal, graph_edge, hoc)``. Record-level trips (no
  ``taxi_id``, e.g. ``dataset=chicago_sample``) have no taxis, so no HOC: overall = ``1000 *
  mean(k_marginal, graph_edge)``, not comparable with a taxi-level overall.

Outputs and their privacy: the scores are computed on the private data; the per-group table
``challenge_groups`` (with ``gt_rows``, the exact private histogram) and the heat map are
private (nothing is declared public: the synthetic table itself is logged).

How it is computed and what the official scorer does: :class:`ChallengeMetric`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar, Hashable, Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from dp_arena.data.datasets import Dataset
from dp_arena.data.taxi.sprint3 import (
    MONEY_MILES_CUTS,
    SECONDS_CUTS,
    challenge_bin,
    taxi_schema,
)

from .base import Metric, MetricResult

GROUP_COLUMNS: tuple[str, str] = ("pickup_community_area", "shift")
MARGINAL_COLUMNS: tuple[str, ...] = (
    "company_id", "dropoff_community_area", "payment_type",
    "fare", "tips", "trip_total", "trip_seconds", "trip_miles",
)
NUMERIC_COLUMNS: frozenset[str] = frozenset({"fare", "tips", "trip_total", "trip_seconds",
                                             "trip_miles"})
#: The 56 ordered pairs (c1, c2), c1 != c2, in the official order.
MARGINAL_PAIRS: tuple[tuple[str, str], ...] = tuple(
    (a, b) for a in MARGINAL_COLUMNS for b in MARGINAL_COLUMNS if a != b
)
GRAPH_EDGE_COLUMNS: tuple[str, str] = ("pickup_community_area", "dropoff_community_area")
HOC_COLUMNS: tuple[str, str, str] = ("taxi_id", "shift", "pickup_community_area")
#: Every column the challenge score reads.
SCORED_COLUMNS: tuple[str, ...] = ("taxi_id", *GROUP_COLUMNS, *MARGINAL_COLUMNS)

MAX_DISTANCE = 2.0
BIAS_PENALTY_CUTOFF = 250
HOC_SEED = 123456
HOC_ITERATIONS = 50
HOC_MIN_TOLERANCE = 5
HOC_MAX_TOLERANCE = 50
#: Integer ranges up to this size are coded by offset (no sort); wider ones via np.unique.
_MAX_OFFSET_RANGE = 1 << 16
#: Cells per chunk when computing per-group distances (bounds temporary memory).
_CHUNK_CELLS = 1 << 22


# ----- encoding ---------------------------------------------------------------------------
def shared_codes(gt_values: Any, sub_values: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Codes ``0..k-1`` of two arrays over one shared, sorted value axis.

    Returns ``(gt_codes, sub_codes, values)`` with ``values[code]`` the value of a code; codes
    are increasing in value. Small integer ranges are coded by offset (``values`` may then
    include values that occur in neither array, which count zero everywhere).
    """
    a, b = np.asarray(gt_values), np.asarray(sub_values)
    non_empty = [x for x in (a, b) if x.size]
    if a.dtype.kind in "iub" and b.dtype.kind in "iub" and non_empty:
        lo = min(int(x.min()) for x in non_empty)
        hi = max(int(x.max()) for x in non_empty)
        if hi - lo < _MAX_OFFSET_RANGE:
            return (a.astype(np.int64) - lo, b.astype(np.int64) - lo,
                    np.arange(lo, hi + 1, dtype=np.int64))
    values, inverse = np.unique(np.concatenate([a, b]), return_inverse=True)
    inverse = inverse.astype(np.int64).ravel()
    return inverse[: a.size], inverse[a.size:], values


def scoring_codes(gt: pd.DataFrame, sub: pd.DataFrame,
                  column: str) -> tuple[np.ndarray, np.ndarray, int]:
    """Codes of one marginal column in both tables and the number of codes: challenge bins
    (0..10) for the numeric columns, shared value codes for the others."""
    if column in NUMERIC_COLUMNS:
        cuts = SECONDS_CUTS if column == "trip_seconds" else MONEY_MILES_CUTS
        return (challenge_bin(gt[column].to_numpy(), column).astype(np.int64),
                challenge_bin(sub[column].to_numpy(), column).astype(np.int64), len(cuts) + 1)
    gt_codes, sub_codes, values = shared_codes(gt[column].to_numpy(), sub[column].to_numpy())
    return gt_codes, sub_codes, len(values)


@dataclass(frozen=True)
class Groups:
    """The (pickup_community_area, shift) groups present in either table.

    ``gt`` / ``sub``: each row's group id (0..n-1); ``table``: one row per group, sorted by
    (pickup_community_area, shift), with the group's values and row counts on each side.
    """

    gt: np.ndarray
    sub: np.ndarray
    table: pd.DataFrame

    @property
    def count(self) -> int:
        return len(self.table)


def challenge_groups(gt: pd.DataFrame, sub: pd.DataFrame) -> Groups:
    """Group ids of every row and the per-group row counts (groups of either table)."""
    pickup_gt, pickup_sub, pickups = shared_codes(gt[GROUP_COLUMNS[0]].to_numpy(),
                                                  sub[GROUP_COLUMNS[0]].to_numpy())
    shift_gt, shift_sub, shifts = shared_codes(gt[GROUP_COLUMNS[1]].to_numpy(),
                                               sub[GROUP_COLUMNS[1]].to_numpy())
    n_keys = len(pickups) * len(shifts)
    key_gt = pickup_gt * len(shifts) + shift_gt
    key_sub = pickup_sub * len(shifts) + shift_sub
    rows_gt = np.bincount(key_gt, minlength=n_keys)
    rows_sub = np.bincount(key_sub, minlength=n_keys)
    present = np.flatnonzero((rows_gt > 0) | (rows_sub > 0))
    compact = np.full(n_keys, -1, dtype=np.int64)
    compact[present] = np.arange(len(present))
    table = pd.DataFrame({
        GROUP_COLUMNS[0]: pickups[present // len(shifts)],
        GROUP_COLUMNS[1]: shifts[present % len(shifts)],
        "gt_rows": rows_gt[present].astype(np.int64),
        "sub_rows": rows_sub[present].astype(np.int64),
    })
    return Groups(compact[key_gt], compact[key_sub], table)


# ----- distances --------------------------------------------------------------------------
def normalised_l1_by_row(gt_counts: np.ndarray, gt_totals: np.ndarray,
                         sub_counts: np.ndarray, sub_totals: np.ndarray) -> np.ndarray:
    """Per row ``i``: ``sum_j |gt[i, j] / gt_totals[i] - sub[i, j] / sub_totals[i]|``, or
    ``MAX_DISTANCE`` (2.0) where either total is 0. Rows are processed in chunks so temporary
    memory stays bounded for wide tables."""
    n_rows, n_cells = gt_counts.shape
    out = np.full(n_rows, MAX_DISTANCE)
    rows = np.flatnonzero((gt_totals > 0) & (sub_totals > 0))
    step = max(1, _CHUNK_CELLS // max(n_cells, 1))
    for start in range(0, len(rows), step):
        chunk = rows[start:start + step]
        diff = gt_counts[chunk] / gt_totals[chunk, None]
        diff -= sub_counts[chunk] / sub_totals[chunk, None]
        np.abs(diff, out=diff)
        out[chunk] = diff.sum(axis=1)
    return out


def pair_distances_by_group(groups: Groups, first: tuple[np.ndarray, np.ndarray, int],
                            second: tuple[np.ndarray, np.ndarray, int]) -> np.ndarray:
    """Per group: L1 distance between the normalised (first, second) cell counts of the two
    tables (2.0 for a group with no rows on one side). ``first``/``second`` are
    :func:`scoring_codes` results."""
    (a_gt, a_sub, size_a), (b_gt, b_sub, size_b) = first, second
    n_cells = size_a * size_b
    length = groups.count * n_cells
    gt_counts = np.bincount((groups.gt * size_a + a_gt) * size_b + b_gt, minlength=length)
    sub_counts = np.bincount((groups.sub * size_a + a_sub) * size_b + b_sub, minlength=length)
    return normalised_l1_by_row(gt_counts.reshape(groups.count, n_cells),
                                groups.table["gt_rows"].to_numpy(),
                                sub_counts.reshape(groups.count, n_cells),
                                groups.table["sub_rows"].to_numpy())


def unordered_pairs(columns: Sequence[str]) -> list[tuple[str, str]]:
    """Each pair of distinct columns once (c1 before c2 in ``columns`` order)."""
    return [(a, b) for i, a in enumerate(columns) for b in columns[i + 1:]]


# ----- the three components ---------------------------------------------------------------
def k_marginal_score(gt: pd.DataFrame, sub: pd.DataFrame) -> tuple[float, pd.DataFrame]:
    """The challenge k-marginal score and its per-group table.

    The table has one row per (pickup_community_area, shift) group present in either table:
    ``gt_rows``, ``sub_rows``, ``bias_penalty`` (row counts differ by >= 250) and
    ``group_score``, the group's mean L1 distance over the 56 pairs after the penalty
    (0 = identical, 2 = worst).
    """
    groups = challenge_groups(gt, sub)
    codes = {c: scoring_codes(gt, sub, c) for c in MARGINAL_COLUMNS}
    total = np.zeros(groups.count)
    for first, second in unordered_pairs(MARGINAL_COLUMNS):
        # (c1, c2) and (c2, c1) are the same cells transposed: one count stands for both.
        total += 2.0 * pair_distances_by_group(groups, codes[first], codes[second])
    mean_distance = total / len(MARGINAL_PAIRS)
    table = groups.table
    penalised = (table["gt_rows"] - table["sub_rows"]).abs().to_numpy() >= BIAS_PENALTY_CUTOFF
    table = table.assign(bias_penalty=penalised,
                         group_score=np.where(penalised, MAX_DISTANCE, mean_distance))
    raw = float(table["group_score"].mean()) if len(table) else MAX_DISTANCE
    return (MAX_DISTANCE - raw) / MAX_DISTANCE, table


def graph_edge_score(gt: pd.DataFrame, sub: pd.DataFrame) -> float:
    """``(2 - L1) / 2`` between the normalised (pickup, dropoff) count vectors."""
    pick_gt, pick_sub, pickups = shared_codes(gt[GRAPH_EDGE_COLUMNS[0]].to_numpy(),
                                              sub[GRAPH_EDGE_COLUMNS[0]].to_numpy())
    drop_gt, drop_sub, drops = shared_codes(gt[GRAPH_EDGE_COLUMNS[1]].to_numpy(),
                                            sub[GRAPH_EDGE_COLUMNS[1]].to_numpy())
    n_cells = len(pickups) * len(drops)
    gt_counts = np.bincount(pick_gt * len(drops) + drop_gt, minlength=n_cells)
    sub_counts = np.bincount(pick_sub * len(drops) + drop_sub, minlength=n_cells)
    raw = normalised_l1_by_row(gt_counts[None, :], np.array([len(gt)]),
                               sub_counts[None, :], np.array([len(sub)]))[0]
    return float((MAX_DISTANCE - raw) / MAX_DISTANCE)


def hoc_column_names(shift_values: Sequence[int], pickup_values: Sequence[int],
                     official_column_names: bool = True) -> list[Hashable]:
    """Names of a table's HOC columns (its shift values, then its pickup areas, both sorted).

    Official naming (see :class:`ChallengeMetric`): a value present both as a shift and as a
    pickup area becomes ``"v"`` (shift) and ``"vp"`` (area); other values keep the integer
    ``v``. Otherwise the names are ``("shift", v)`` and ``("pickup_community_area", v)``.
    """
    shifts, pickups = [_plain(v) for v in shift_values], [_plain(v) for v in pickup_values]
    if not official_column_names:
        return [("shift", v) for v in shifts] + [("pickup_community_area", v) for v in pickups]
    both = set(shifts) & set(pickups)
    return ([str(v) if v in both else v for v in shifts]
            + [f"{v}p" if v in both else v for v in pickups])


def hoc_count_matrices(gt: pd.DataFrame, sub: pd.DataFrame, official_column_names: bool = True
                       ) -> tuple[np.ndarray, np.ndarray, list[Hashable]]:
    """Per-taxi trip counts by shift then pickup area: the ground truth's (taxis sorted by id),
    the submission's aligned to the ground truth's columns (missing = 0), and the column names.
    """
    gt_shifts, gt_pickups = _sorted_values(gt, "shift"), _sorted_values(gt, "pickup_community_area")
    names = hoc_column_names(gt_shifts, gt_pickups, official_column_names)
    n_cols = len(names)
    gt_matrix = _taxi_count_matrix(
        gt["taxi_id"].to_numpy(),
        np.searchsorted(gt_shifts, gt["shift"].to_numpy()),
        len(gt_shifts) + np.searchsorted(gt_pickups, gt["pickup_community_area"].to_numpy()),
        n_cols)

    sub_shifts = _sorted_values(sub, "shift")
    sub_pickups = _sorted_values(sub, "pickup_community_area")
    position = {name: j for j, name in enumerate(names)}
    target = np.array([position.get(name, -1) for name in
                       hoc_column_names(sub_shifts, sub_pickups, official_column_names)],
                      dtype=np.int64)
    sub_matrix = _taxi_count_matrix(
        sub["taxi_id"].to_numpy(),
        target[: len(sub_shifts)][np.searchsorted(sub_shifts, sub["shift"].to_numpy())],
        target[len(sub_shifts):][np.searchsorted(sub_pickups,
                                                 sub["pickup_community_area"].to_numpy())],
        n_cols)
    return gt_matrix, sub_matrix, names


def hoc_draws(n_gt: int, n_cols: int, seed: int = HOC_SEED,
              iterations: int = HOC_ITERATIONS) -> tuple[np.ndarray, np.ndarray]:
    """The official random draws: per iteration a ground-truth taxi index, then one tolerance
    per column, from one ``RandomState(seed)`` in that order."""
    rng = np.random.RandomState(seed=seed)
    taxis = np.empty(iterations, dtype=np.int64)
    tolerances = np.empty((iterations, n_cols), dtype=np.int64)
    for i in range(iterations):
        taxis[i] = rng.randint(low=0, high=n_gt)
        tolerances[i] = rng.randint(HOC_MIN_TOLERANCE, HOC_MAX_TOLERANCE + 1, size=n_cols)
    return taxis, tolerances


def count_within_tolerance(matrix: np.ndarray, centre: np.ndarray,
                           tolerance: np.ndarray) -> int:
    """Rows of ``matrix`` whose every column is within ``tolerance`` of ``centre``."""
    diff = matrix - centre
    np.abs(diff, out=diff)
    return int(np.count_nonzero((diff <= tolerance).all(axis=1)))


def hoc_score(gt: pd.DataFrame, sub: pd.DataFrame, official_column_names: bool = True) -> float:
    """The higher-order conjunction score, ``1 - mean |p_gt - p_sub|`` over the 50 draws."""
    gt_matrix, sub_matrix, _ = hoc_count_matrices(gt, sub, official_column_names)
    n_gt, n_cols = gt_matrix.shape
    n_sub = sub_matrix.shape[0]
    if n_gt == 0 or n_sub == 0:
        raise ValueError("the HOC score needs at least one taxi in each table")
    dtype = _small_count_dtype(max(int(gt_matrix.max()), int(sub_matrix.max(initial=0))))
    gt_small, sub_small = gt_matrix.astype(dtype), sub_matrix.astype(dtype)
    taxis, tolerances = hoc_draws(n_gt, n_cols)
    errors = np.empty(len(taxis))
    for i, (taxi, tolerance) in enumerate(zip(taxis, tolerances.astype(dtype))):
        centre = gt_small[taxi]
        similar_gt = count_within_tolerance(gt_small, centre, tolerance)
        similar_sub = count_within_tolerance(sub_small, centre, tolerance)
        errors[i] = abs(similar_gt / n_gt - similar_sub / n_sub)
    return float(1.0 - errors.mean())


# ----- together ---------------------------------------------------------------------------
def score_challenge_detailed(gt: pd.DataFrame,
                             sub: pd.DataFrame) -> tuple[dict[str, float], pd.DataFrame]:
    """All three components, ``overall`` (= 1000 x their mean) and the per-group table."""
    k_marginal, groups = k_marginal_score(gt, sub)
    scores = {"k_marginal": float(k_marginal), "graph_edge": graph_edge_score(gt, sub),
              "hoc": hoc_score(gt, sub)}
    scores["overall"] = float(1000.0 * np.mean([scores["k_marginal"], scores["graph_edge"],
                                                scores["hoc"]]))
    return scores, groups


def score_challenge(gt: pd.DataFrame, sub: pd.DataFrame) -> dict[str, float]:
    """``{k_marginal, graph_edge, hoc, overall}`` for one epsilon's submission."""
    return score_challenge_detailed(gt, sub)[0]


def group_score_heatmap(groups: pd.DataFrame, title: str = "Challenge k-marginal by group"
                        ) -> Figure:
    """Heat map (pickup area x shift) of the per-group scores of :func:`k_marginal_score`
    (0 = identical, 2 = worst; blank = group in neither table). Built on a bare
    :class:`matplotlib.figure.Figure`, so no pyplot state is touched."""
    schema = taxi_schema()
    areas, shifts = (np.unique(np.concatenate([np.asarray(schema[c].values),
                                               groups[c].to_numpy()])) for c in GROUP_COLUMNS)
    grid = np.full((len(areas), len(shifts)), np.nan)
    grid[np.searchsorted(areas, groups[GROUP_COLUMNS[0]].to_numpy()),
         np.searchsorted(shifts, groups[GROUP_COLUMNS[1]].to_numpy())] = groups["group_score"]
    fig = Figure(figsize=(7.5, 13))
    ax = fig.add_subplot()
    image = ax.imshow(np.ma.masked_invalid(grid), aspect="auto", cmap="viridis_r",
                      vmin=0.0, vmax=MAX_DISTANCE, interpolation="nearest")
    ax.set_xticks(range(len(shifts)), [str(s) for s in shifts], fontsize=7)
    ax.set_yticks(range(len(areas)), [str(a) for a in areas], fontsize=5)
    ax.set_xlabel("shift")
    ax.set_ylabel("pickup_community_area")
    ax.set_title(title)
    fig.colorbar(image, ax=ax, label="group score (mean L1 distance; 0 best, 2 worst)")
    fig.tight_layout()
    return fig


@dataclass
class ChallengeMetric(Metric):
    """The NIST Sprint 3 challenge score of a synthetic taxi table against ``data.private``.

    Outputs: scores (computed on the private data); table ``challenge_groups`` and figure
    ``challenge_heatmap`` are **private** (``gt_rows`` is the exact private pickup x shift
    histogram, and every group score compares against the private cells). The heatmap is
    deferred (drawn only when logged, i.e. with ``tracking.log_private_tables=true``): drawing
    it took two thirds of a default run's scoring.

    How it is computed
    ------------------
    Every column becomes small integer codes shared by both tables (numeric columns through
    :func:`dp_arena.data.taxi.sprint3.challenge_bin`), (group, c1, c2) cells are packed into one integer and
    counted with ``np.bincount`` into a dense (group x cell) table, and the per-group L1 distance is
    one array expression. The two orders of a pair, (c1, c2) and (c2, c1), have the same cells
    transposed, hence the same distance: 28 unordered pairs are counted and each stands for two.
    HOC builds the (taxi x column) count matrices with one ``bincount`` each and compares
    small-integer matrices. No per-group Python loop, no temporary files.

    What the official scorer does (read for this module)
    ----------------------------------------------------
    Source: the Sprint 3 scorer of the challenge runtime, ``runtime/scripts/metric.py`` of
    DrivenData's ``drivendataorg/deid2-runtime`` (``TidyFormatKMarginalMetric``: k-marginal,
    ``pickup_dropoff_score``, ``higher_order_conjunction``). Two stored revisions of that file
    (commits 12ef5733, 6f98358a) have no bias penalty; a later revision of the same script (same
    code plus ``K_MARGINAL_BIAS_PENALTY_CUTOFF = 250``, ``get_bias_mask`` and the per-place/time
    report; the code index did not name its repository) is the one followed here. NIST's later
    copies in ``usnistgov/SDNist`` (``sdnist/metrics/hoc.py``,
    ``sdnist/metrics/kmarg_old.py``) were read for comparison only.

    - Cells are counted per permutation after binning (``value_counts`` of
      [pickup, shift, c1, c2]), the two tables outer-joined with missing cells = 0, then grouped by
      (pickup, shift): groups present in either table are scored, and a group with no rows on one
      side scores 2.0 (the ``min(sums) < 1`` rule); normalisation is per group and per table.
    - Bias penalty: ``abs(gt_rows - sub_rows) >= 250`` (``>=``, as the issue says; SDNist's later
      ``kmarg_old.py`` uses ``>``). It replaces the group's mean, after the mean over pairs.
    - Graph edge: the same rule on the whole (pickup, dropoff) table (2.0 if a table is empty).
    - HOC: ``pd.pivot_table`` counts per taxi (taxis sorted by id, columns = the values *present*
      in each table, sorted), shift block joined with the pickup block, the submission reindexed
      to the ground truth's columns with missing = 0; submission taxis absent from the ground truth
      still count in the submission's denominator; ground-truth taxis absent from the submission
      simply are not there. Similarity uses ``<=`` (SDNist's later copy uses ``<``). RNG call order
      per iteration: first the taxi index, then the tolerance vector.
    - Per epsilon: the submission is split by its ``epsilon`` column (order of appearance), the same
      ground truth is used for each, overall = mean of the per-epsilon overall scores.
    - Validation (before scoring): schema columns present, categorical values in ``values``,
      numeric/id values within ``min``/``max``, epsilons exactly those of ``runs``, rows per epsilon
      <= ``max_records``. The official code stops at the first failing check; we report all.

    Where the official code differs from the issue text (we follow the official code)
    -------------------------------------------------------------------------------
    1. **HOC column names.** The official joins the shift and pickup blocks with
       ``DataFrame.join(rsuffix="p")``, so a value ``v`` present in a table both as a shift and as a
       pickup area (only 1..20 can be) gets columns named ``"v"`` (str, the shift) and ``"vp"`` (the
       area); any other value keeps the integer name ``v``. The submission is aligned to the ground
       truth *by those names*, computed on each table separately. When every shift and every area
       1..20 appear in both tables (always the case on real data) this is exactly the alignment by
       value the issue describes. Otherwise counts can be lost (ground truth ``"5"`` vs submission
       ``5``) or land in the other block (a submission's pickup-area-7 counts under the ground
       truth's shift-7 column when the submission has no shift 7 and the ground truth no area 7).
       :func:`hoc_score` reproduces this by default; ``official_column_names=False`` aligns by value.
    2. **Number of HOC columns.** The official asserts 99 columns (all 21 shifts and 78 areas present
       in the ground truth); we accept fewer (small test data) and use the present values, which is
       what the official computes whenever its assertion holds. The number of columns changes the
       random stream (``size=n_cols``), so it must be the present values, not the schema's.
    3. An empty table is rejected with ``ValueError`` by :func:`hoc_score` (the official divides by
       zero); validation already refuses a submission without rows.
    """

    name: ClassVar[str] = "challenge"
    requires: ClassVar[str] = "the Sprint 3 taxi columns"
    headline: ClassVar[str] = "overall"

    def applies_to(self, data: Dataset) -> bool:
        # Record-level trips (no taxi_id, e.g. dataset=chicago_sample) get k-marginal and graph
        # edge; HOC needs taxis (see score).
        return set(taxi_schema().attributes) <= set(data.schema.names)

    def score(self, data: Dataset, synthetic: pd.DataFrame) -> MetricResult:
        if "taxi_id" in data.schema.names:
            scores, groups = score_challenge_detailed(data.private, synthetic)
        else:  # record level: no HOC; overall = 1000 x mean(k_marginal, graph_edge)
            k_marginal, groups = k_marginal_score(data.private, synthetic)
            scores = {"k_marginal": float(k_marginal),
                      "graph_edge": graph_edge_score(data.private, synthetic)}
            scores["overall"] = 500.0 * (scores["k_marginal"] + scores["graph_edge"])
        return MetricResult(scores=scores,
                            tables={"challenge_groups": groups},
                            figures={"challenge_heatmap": partial(group_score_heatmap, groups)})


# ----- helpers ----------------------------------------------------------------------------
def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value pandas would print (integral floats as int)."""
    value = value.item() if isinstance(value, np.generic) else value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _sorted_values(df: pd.DataFrame, column: str) -> np.ndarray:
    return np.unique(df[column].to_numpy())


def _taxi_count_matrix(taxi_ids: np.ndarray, first_columns: np.ndarray,
                       second_columns: np.ndarray, n_cols: int) -> np.ndarray:
    """(taxi x column) counts, taxis in sorted id order; column -1 means "not counted"."""
    taxis, taxi_codes = np.unique(taxi_ids, return_inverse=True)
    taxi_codes = taxi_codes.astype(np.int64).ravel()
    keys = np.concatenate([taxi_codes * n_cols + first_columns,
                           taxi_codes * n_cols + second_columns])
    keep = np.concatenate([first_columns >= 0, second_columns >= 0])
    counts = np.bincount(keys[keep], minlength=len(taxis) * n_cols)
    return counts.reshape(len(taxis), n_cols)


def _small_count_dtype(max_count: int) -> type[np.signedinteger]:
    """Smallest signed dtype in which counts and their differences cannot overflow."""
    if max_count < (1 << 14) - HOC_MAX_TOLERANCE:
        return np.int16
    if max_count < (1 << 30):
        return np.int32
    return np.int64
