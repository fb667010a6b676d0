"""The Sprint 3 challenge score (dp_arena.metrics.challenge) and its CLI (dp_arena.cli.score).

Hand-computed cases pin every rule; a slow reference written here from the definitions (plain
loops, dicts and Counters) checks the vectorised code on random schema-valid frames.

Tolerances: (a) the hand-computed scores (0.3875, 27/28, 0.5, ...) are ratios and sums of a few
dozen terms of magnitude <= 2: abs=1e-12 is ~4,500 ulps of 1, above their rounding; against the
slow reference written here (plain loops over the same definitions, summing in another order
over every group of the random frames) abs=1e-9, far above the rounding of such sums.
"""

from __future__ import annotations

import json
import warnings
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from dp_arena.cli.score import main
from dp_arena.data.datasets import Dataset
from dp_arena.data.taxi.sprint3 import AREA_VALUES, PAYMENT_VALUES, taxi_schema
from dp_arena.metrics.base import drawn
from dp_arena.metrics.challenge import (
    ChallengeMetric,
    graph_edge_score,
    hoc_count_matrices,
    hoc_score,
    k_marginal_score,
    score_challenge,
)

# ----- building frames --------------------------------------------------------------------
TYPICAL_TRIP = {
    "taxi_id": 1_000_001, "shift": 0, "company_id": 1, "pickup_community_area": 8,
    "dropoff_community_area": 32, "payment_type": 1, "trip_day_of_week": 0,
    "trip_hour_of_day": 0, "fare": 12, "tips": 0, "trip_total": 12, "trip_seconds": 600,
    "trip_miles": 3,
}


def trips(*groups: list[dict]) -> pd.DataFrame:
    """A frame of the given rows (each a dict overriding TYPICAL_TRIP), columns in schema order."""
    rows = [{**TYPICAL_TRIP, **r} for group in groups for r in group]
    return pd.DataFrame(rows, columns=list(TYPICAL_TRIP))


def rows(n: int, **values) -> list[dict]:
    """``n`` identical rows."""
    return [dict(values) for _ in range(n)]


def column_rows(**columns: list) -> list[dict]:
    """Rows from equal-length lists per column."""
    names = list(columns)
    return [dict(zip(names, vals)) for vals in zip(*columns.values())]


def random_trips(seed: int, n: int, taxis: range | list, areas: list[int], shifts: list[int],
                 dropoffs: list[int] | None = None) -> pd.DataFrame:
    """A schema-valid random frame drawing from small value pools (so groups repeat)."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "taxi_id": rng.choice(np.asarray(taxis), n),
        "shift": rng.choice(shifts, n),
        "company_id": rng.choice([0, 3, 17, 100], n),
        "pickup_community_area": rng.choice(areas, n),
        "dropoff_community_area": rng.choice(dropoffs or areas, n),
        "payment_type": rng.choice(PAYMENT_VALUES[:4], n),
        "trip_day_of_week": rng.integers(0, 7, n),
        "trip_hour_of_day": rng.integers(0, 24, n),
        "fare": rng.integers(-1, 130, n),
        "tips": rng.choice([-1, 0, 0, 5, 12, 95], n),
        "trip_total": rng.integers(-1, 130, n),
        "trip_seconds": rng.integers(-1, 2600, n),
        "trip_miles": rng.choice([0, 1, 9, 10, 35, 99, 100], n),
    })


# ----- the slow reference: the definitions, transcribed -------------------------------------
REF_MARGINAL_COLUMNS = ["company_id", "dropoff_community_area", "payment_type", "fare", "tips",
                        "trip_total", "trip_seconds", "trip_miles"]
REF_EDGES = {c: [float("-inf"), *range(0, 100, 10), float("inf")]
             for c in ["fare", "tips", "trip_total", "trip_miles"]}
REF_EDGES["trip_seconds"] = [float("-inf"), *range(0, 2000, 200), float("inf")]


def ref_bin(x: float, edges: list[float]) -> int:
    """Index i of the left-closed bin [edges[i], edges[i + 1]) holding x."""
    for i in range(len(edges) - 1):
        if edges[i] <= x < edges[i + 1]:
            return i
    raise AssertionError(x)


def ref_records(df: pd.DataFrame) -> list[dict]:
    out = []
    for rec in df.to_dict(orient="records"):
        out.append({k: (ref_bin(v, REF_EDGES[k]) if k in REF_EDGES else v) for k, v in rec.items()})
    return out


def ref_l1(a: Counter, b: Counter) -> float:
    """L1 distance of the normalised counts; 2.0 if either side is empty."""
    na, nb = sum(a.values()), sum(b.values())
    if na == 0 or nb == 0:
        return 2.0
    return sum(abs(a[k] / na - b[k] / nb) for k in set(a) | set(b))


def reference_k_marginal(gt: pd.DataFrame, sub: pd.DataFrame) -> tuple[float, list[tuple]]:
    by_group: dict[str, dict] = {"gt": defaultdict(list), "sub": defaultdict(list)}
    for side, df in (("gt", gt), ("sub", sub)):
        for r in ref_records(df):
            by_group[side][(r["pickup_community_area"], r["shift"])].append(r)
    table = []
    for g in sorted(set(by_group["gt"]) | set(by_group["sub"])):
        a, b = by_group["gt"].get(g, []), by_group["sub"].get(g, [])
        pair_scores = []
        for c1 in REF_MARGINAL_COLUMNS:
            for c2 in REF_MARGINAL_COLUMNS:
                if c1 != c2:
                    pair_scores.append(ref_l1(Counter((r[c1], r[c2]) for r in a),
                                              Counter((r[c1], r[c2]) for r in b)))
        assert len(pair_scores) == 56
        penalty = abs(len(a) - len(b)) >= 250
        score = 2.0 if penalty else sum(pair_scores) / len(pair_scores)
        table.append((g[0], g[1], len(a), len(b), penalty, score))
    raw = sum(t[-1] for t in table) / len(table)
    return (2 - raw) / 2, table


def reference_graph_edge(gt: pd.DataFrame, sub: pd.DataFrame) -> float:
    def cells(df):
        return Counter(zip(df["pickup_community_area"], df["dropoff_community_area"]))
    return (2 - ref_l1(cells(gt), cells(sub))) / 2


def reference_hoc(gt: pd.DataFrame, sub: pd.DataFrame, official_names: bool = True) -> float:
    def per_taxi(df):
        shifts = sorted({int(v) for v in df["shift"]})
        pickups = sorted({int(v) for v in df["pickup_community_area"]})
        both = set(shifts) & set(pickups)

        def shift_name(v):
            if not official_names:
                return ("shift", v)
            return str(v) if v in both else v

        def pickup_name(v):
            if not official_names:
                return ("pickup", v)
            return f"{v}p" if v in both else v

        counts: dict[int, Counter] = defaultdict(Counter)
        for taxi, s, p in zip(df["taxi_id"], df["shift"], df["pickup_community_area"]):
            counts[int(taxi)][shift_name(int(s))] += 1
            counts[int(taxi)][pickup_name(int(p))] += 1
        return [shift_name(v) for v in shifts] + [pickup_name(v) for v in pickups], counts

    names, gt_counts = per_taxi(gt)
    _, sub_counts = per_taxi(sub)
    gt_vectors = [[gt_counts[t][n] for n in names] for t in sorted(gt_counts)]
    sub_vectors = [[sub_counts[t][n] for n in names] for t in sub_counts]
    rng = np.random.RandomState(123456)
    errors = []
    for _ in range(50):
        centre = gt_vectors[rng.randint(low=0, high=len(gt_vectors))]
        tolerance = rng.randint(5, 51, size=len(names))

        def similar(vectors):
            return sum(all(abs(x - c) <= t for x, c, t in zip(v, centre, tolerance))
                       for v in vectors)
        errors.append(abs(similar(gt_vectors) / len(gt_vectors)
                          - similar(sub_vectors) / len(sub_vectors)))
    return 1 - sum(errors) / len(errors)


# ----- k-marginal, by hand ------------------------------------------------------------------
def test_k_marginal_hand_computed_groups_one_sided_and_bias_penalty() -> None:
    # Group (8, 3): companies gt (1,1,2,2) -> (.5,.5), sub (1,1,1,2) -> (.75,.25): L1 = 0.5 for
    #   the 14 pairs with company_id, 0 for the other 42 (fares all in [10,20), seconds all in
    #   [0,200): left-closed bins) -> group score 14 * 0.5 / 56 = 0.125.
    # Group (32, 0): ground truth only -> 2.0.  Group (76, 5): submission only -> 2.0.
    # Group (56, 7): 260 vs 10 rows, same cells: |diff| = 250 >= 250 -> bias penalty -> 2.0.
    # Group (28, 9): 260 vs 11 rows, same cells: |diff| = 249 -> no penalty -> 0.0.
    # raw = (0.125 + 2 + 2 + 2 + 0) / 5 = 1.225; score = (2 - 1.225) / 2 = 0.3875.
    a = dict(pickup_community_area=8, shift=3)
    gt = trips(column_rows(company_id=[1, 1, 2, 2], fare=[10, 19, 15, 11],
                           trip_seconds=[0, 199, 100, 150], **{k: [v] * 4 for k, v in a.items()}),
               rows(2, pickup_community_area=32, shift=0),
               rows(260, pickup_community_area=56, shift=7),
               rows(260, pickup_community_area=28, shift=9))
    sub = trips(column_rows(company_id=[1, 1, 1, 2], fare=[12, 13, 14, 18],
                            trip_seconds=[50, 60, 199, 0], **{k: [v] * 4 for k, v in a.items()}),
                rows(1, pickup_community_area=76, shift=5),
                rows(10, pickup_community_area=56, shift=7),
                rows(11, pickup_community_area=28, shift=9))
    score, table = k_marginal_score(gt, sub)
    assert score == pytest.approx(0.3875, abs=1e-12)
    assert list(table.columns) == ["pickup_community_area", "shift", "gt_rows", "sub_rows",
                                   "bias_penalty", "group_score"]
    assert table[["pickup_community_area", "shift"]].values.tolist() == [
        [8, 3], [28, 9], [32, 0], [56, 7], [76, 5]]
    assert table["gt_rows"].tolist() == [4, 260, 2, 260, 0]
    assert table["sub_rows"].tolist() == [4, 11, 0, 10, 1]
    assert table["bias_penalty"].tolist() == [False, False, False, True, False]
    assert table["group_score"].tolist() == pytest.approx([0.125, 0.0, 2.0, 2.0, 2.0], abs=1e-12)


def test_k_marginal_counts_joint_cells_in_both_orders() -> None:
    # gt: (company 1, payment 1), (company 2, payment 2); sub: (1, 2), (2, 1).
    # Each column alone is (.5, .5) on both sides; the joint cells are disjoint: L1 = 2 for
    # (company, payment) and (payment, company), 0 for the other 54 pairs.
    # group score = 4 / 56; score = (2 - 1/14) / 2 = 27/28.
    gt = trips(column_rows(company_id=[1, 2], payment_type=[1, 2]))
    sub = trips(column_rows(company_id=[1, 2], payment_type=[2, 1]))
    score, table = k_marginal_score(gt, sub)
    assert score == pytest.approx(27 / 28, abs=1e-12)
    assert table["group_score"].tolist() == pytest.approx([1 / 14], abs=1e-12)


def test_k_marginal_of_identical_tables_is_one() -> None:
    gt = random_trips(1, 500, range(1_000_001, 1_000_030), [8, 32, 76], [0, 5, 20])
    assert k_marginal_score(gt, gt.sample(frac=1.0, random_state=0))[0] == pytest.approx(1.0)


# ----- graph edge, by hand ------------------------------------------------------------------
def test_graph_edge_hand_computed() -> None:
    # gt (pickup, dropoff): (8,32) x2, (32,8), (76,8) -> .5, .25, .25
    # sub: (8,32), (32,8), (8,8) x2                 -> .25, .25, 0, .5 on (8,8)
    # L1 = .25 + 0 + .25 + .5 = 1.0; score = (2 - 1) / 2 = 0.5
    gt = trips(column_rows(pickup_community_area=[8, 8, 32, 76],
                           dropoff_community_area=[32, 32, 8, 8]))
    sub = trips(column_rows(pickup_community_area=[8, 32, 8, 8],
                            dropoff_community_area=[32, 8, 8, 8]))
    assert graph_edge_score(gt, sub) == pytest.approx(0.5, abs=1e-12)
    assert graph_edge_score(gt, gt) == 1.0


# ----- HOC, by hand -------------------------------------------------------------------------
def test_hoc_missing_taxi_and_columns_absent_from_ground_truth() -> None:
    # gt: taxi A 1 trip (shift 0, area 8) -> (1, 1); taxi B 100 trips -> (100, 100).
    # sub: X = A's twin (1, 1); Z 2 trips at (shift 3, area 50), columns the ground truth lacks
    #   -> dropped -> (0, 0). B has no counterpart in the submission.
    # A drawn: gt {A} = 1/2, sub {X, Z} (diffs <= 1 <= 5) = 2/2 -> 0.5
    # B drawn: gt {B} = 1/2, sub {} (diffs 99, 100 > 50) = 0    -> 0.5
    # HOC = 1 - 0.5 = 0.5 whatever the draws.
    gt = trips(rows(1, taxi_id=1_000_001), rows(100, taxi_id=1_000_002))
    sub = trips(rows(1, taxi_id=1_000_001), rows(2, taxi_id=1_000_009, shift=3,
                                                 pickup_community_area=50))
    assert hoc_score(gt, sub) == pytest.approx(0.5, abs=1e-12)


def test_hoc_tolerance_is_inclusive() -> None:
    # Ten (shift s, area 60 + s) cells, s = 0..9 -> 20 columns. gt: A 1 trip per cell (all
    # ones), C 6 trips per cell (all sixes); sub: X = A's twin. The difference 5 is within
    # every tolerance (5..50) with "<=", so each gt taxi is similar to both (1.0) and X to
    # either (1.0): HOC = 1.0. With a strict "<", a draw with a tolerance of exactly 5 splits
    # them, and the official draws contain such tolerances.
    cells = [dict(shift=s, pickup_community_area=60 + s) for s in range(10)]
    gt = trips([dict(c, taxi_id=1_000_001) for c in cells],
               [dict(c, taxi_id=1_000_002) for c in cells for _ in range(6)])
    sub = trips([dict(c, taxi_id=1_000_003) for c in cells])
    assert hoc_score(gt, sub) == 1.0
    rng = np.random.RandomState(123456)
    fives = 0
    for _ in range(50):
        rng.randint(low=0, high=2)
        fives += int((rng.randint(5, 51, size=20) == 5).any())
    assert fives > 0  # so a "<" implementation fails this test


def test_hoc_random_draws_follow_the_official_order() -> None:
    # gt: A (1, 1), D (21, 21); sub: X (1, 1). Two columns (shift 0, area 8), so the draws are
    # taxi = randint(0, 2) then tolerances = randint(5, 51, size=2), per iteration.
    # D and A are similar iff both tolerances >= 20. gt proportion = (1 + close) / 2;
    # sub proportion = 1 if (A drawn or close) else 0.
    gt = trips(rows(1, taxi_id=1_000_001), rows(21, taxi_id=1_000_002))
    sub = trips(rows(1, taxi_id=1_000_003))
    rng = np.random.RandomState(123456)
    errors = []
    for _ in range(50):
        drawn_a = rng.randint(low=0, high=2) == 0
        close = bool((rng.randint(5, 51, size=2) >= 20).all())
        errors.append(abs((1 + close) / 2 - (1.0 if drawn_a or close else 0.0)))
    expected = 1 - np.mean(errors)
    assert 0.5 < expected < 1.0  # the draws matter in this case
    assert hoc_score(gt, sub) == pytest.approx(expected, abs=1e-12)


def test_hoc_aligns_by_official_column_names() -> None:
    # gt: A 1 trip and B 100 trips at (shift 7, area 9) -> columns named 7 and 9.
    # sub: X 100 trips at (shift 3, area 7) + 100 at (shift 3, area 9); W 1 trip (shift 3, area 9).
    # The submission's own names are 3, 7 (its area 7) and 9; aligned by name to [7, 9]:
    #   X -> (100, 100) (its area-7 counts land on the shift-7 column), W -> (0, 1).
    # A drawn: gt 1/2; sub {W} 1/2 -> 0.  B drawn: gt 1/2; sub {X} 1/2 -> 0.  HOC = 1.0.
    # Aligned by value instead: X -> (0, 100), similar to neither; W -> (0, 1) ~ A.
    #   A drawn -> 0; B drawn -> |1/2 - 0| = 0.5.  HOC = 1 - 0.5 * (#B draws) / 50.
    gt = trips(rows(1, taxi_id=1_000_001, shift=7, pickup_community_area=9),
               rows(100, taxi_id=1_000_002, shift=7, pickup_community_area=9))
    sub = trips(rows(100, taxi_id=1_000_005, shift=3, pickup_community_area=7),
                rows(100, taxi_id=1_000_005, shift=3, pickup_community_area=9),
                rows(1, taxi_id=1_000_006, shift=3, pickup_community_area=9))
    assert hoc_score(gt, sub) == 1.0
    rng = np.random.RandomState(123456)
    b_draws = 0
    for _ in range(50):
        b_draws += rng.randint(low=0, high=2) == 1
        rng.randint(5, 51, size=2)
    assert hoc_score(gt, sub, official_column_names=False) == pytest.approx(
        1 - 0.5 * b_draws / 50, abs=1e-12)


def _official_style_pivot(df: pd.DataFrame) -> pd.DataFrame:
    """Per-taxi counts the way the challenge's pandas code builds them (pivot, then join)."""
    counted = df.assign(n=1)
    by_shift = pd.pivot_table(counted, values="n", index="taxi_id", columns="shift",
                              aggfunc="count", fill_value=0)
    by_pickup = pd.pivot_table(counted, values="n", index="taxi_id",
                               columns="pickup_community_area", aggfunc="count", fill_value=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return by_shift.join(by_pickup, rsuffix="p")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hoc_matrices_match_the_pandas_pivot_and_join(seed: int) -> None:
    rng = np.random.default_rng(seed)
    gt = random_trips(seed, 300, range(1_000_001, 1_000_040),
                      list(rng.choice(AREA_VALUES[:25], 6, replace=False)),
                      list(rng.choice(21, 5, replace=False)))
    sub = random_trips(seed + 10, 200, range(1_000_020, 1_000_070),
                       list(rng.choice(AREA_VALUES[:25], 6, replace=False)),
                       list(rng.choice(21, 5, replace=False)))
    official_gt = _official_style_pivot(gt)
    official_sub = _official_style_pivot(sub).reindex(columns=official_gt.columns).fillna(0)
    gt_matrix, sub_matrix, names = hoc_count_matrices(gt, sub)
    assert names == list(official_gt.columns)
    np.testing.assert_array_equal(gt_matrix, official_gt.to_numpy())
    np.testing.assert_array_equal(sub_matrix, official_sub.to_numpy().astype(np.int64))


# ----- vectorised == reference on random frames ---------------------------------------------
TAXIS = range(1_000_001, 1_000_061)
SCENARIOS = {
    "different sizes": (
        dict(seed=1, n=1500, taxis=TAXIS, areas=[-1, 8, 32, 76], shifts=[0, 7, 14, 20]),
        dict(seed=2, n=900, taxis=TAXIS, areas=[-1, 8, 32, 76], shifts=[0, 7, 14, 20])),
    "groups and taxis on one side only": (
        dict(seed=3, n=1200, taxis=range(1_000_001, 1_000_050), areas=[8, 28, 32, 76],
             shifts=[1, 2, 3]),
        dict(seed=4, n=800, taxis=range(1_000_030, 1_000_090), areas=[3, 8, 32, 56],
             shifts=[2, 3, 4])),
    "sparse values 1..20 (official HOC names)": (
        dict(seed=5, n=700, taxis=range(1_000_001, 1_000_030), areas=[5, 9, 12, 32],
             shifts=[0, 5, 7, 12]),
        dict(seed=6, n=600, taxis=range(1_000_010, 1_000_040), areas=[5, 7, 12, 32],
             shifts=[3, 5, 9])),
    "bias penalties": (
        dict(seed=7, n=3000, taxis=range(1_000_001, 1_000_016), areas=[8, 32], shifts=[0, 1]),
        dict(seed=8, n=1400, taxis=range(1_000_001, 1_000_016), areas=[8, 32, 76],
             shifts=[0, 1])),
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_vectorised_equals_reference(name: str) -> None:
    gt_args, sub_args = SCENARIOS[name]
    gt, sub = random_trips(**gt_args), random_trips(**sub_args)
    ref_score, ref_table = reference_k_marginal(gt, sub)
    score, table = k_marginal_score(gt, sub)
    assert score == pytest.approx(ref_score, abs=1e-9)
    assert [tuple(r) for r in table[["pickup_community_area", "shift", "gt_rows", "sub_rows",
                                     "bias_penalty"]].itertuples(index=False)] == \
        [t[:5] for t in ref_table]
    np.testing.assert_allclose(table["group_score"], [t[5] for t in ref_table], atol=1e-9)
    if name == "bias penalties":
        assert table["bias_penalty"].any()
    assert graph_edge_score(gt, sub) == pytest.approx(reference_graph_edge(gt, sub), abs=1e-9)
    assert hoc_score(gt, sub) == pytest.approx(reference_hoc(gt, sub), abs=1e-9)
    assert hoc_score(gt, sub, official_column_names=False) == pytest.approx(
        reference_hoc(gt, sub, official_names=False), abs=1e-9)


def test_score_challenge_overall_is_1000_times_the_mean() -> None:
    gt_args, sub_args = SCENARIOS["different sizes"]
    gt, sub = random_trips(**gt_args), random_trips(**sub_args)
    s = score_challenge(gt, sub)
    assert set(s) == {"k_marginal", "graph_edge", "hoc", "overall"}
    assert s["overall"] == pytest.approx(1000 * (s["k_marginal"] + s["graph_edge"] + s["hoc"]) / 3)
    assert score_challenge(gt, gt)["overall"] == pytest.approx(1000.0)


# ----- the Metric -----------------------------------------------------------------------------
def test_challenge_metric_scores_tables_and_figure(small_dataset: Dataset) -> None:
    gt_args, sub_args = SCENARIOS["groups and taxis on one side only"]
    gt, sub = random_trips(**gt_args), random_trips(**sub_args)
    data = Dataset("taxi", taxi_schema(), gt, None, unit="user", id_column="taxi_id")
    metric = ChallengeMetric()
    assert metric.name == "challenge" and metric.headline == "overall"
    assert metric.applies_to(data)
    assert not metric.applies_to(small_dataset)
    result = metric.score(data, sub)
    assert result.scores == pytest.approx(score_challenge(gt, sub))
    table = result.tables["challenge_groups"]
    assert table["group_score"].mean() == pytest.approx(2 - 2 * result.scores["k_marginal"])
    assert callable(result.figures["challenge_heatmap"])  # deferred: drawn only when logged
    assert isinstance(drawn(result.figures["challenge_heatmap"]), Figure)


# ----- the CLI --------------------------------------------------------------------------------
def _write(df: pd.DataFrame, path: Path) -> Path:
    df.to_csv(path, index=False)
    return path


@pytest.fixture
def challenge_files(tmp_path: Path) -> tuple[Path, Path, pd.DataFrame, pd.DataFrame]:
    gt = random_trips(11, 600, TAXIS, [-1, 8, 32, 76], [0, 5, 20])
    sub = pd.concat([random_trips(12, 500, TAXIS, [-1, 8, 32, 76], [0, 5, 20]).assign(epsilon=1.0),
                     random_trips(13, 550, TAXIS, [-1, 8, 32, 76], [0, 5, 20]).assign(epsilon=10.0)],
                    ignore_index=True)
    return _write(gt, tmp_path / "gt.csv"), _write(sub, tmp_path / "sub.csv"), gt, sub


def test_cli_scores_a_valid_submission(challenge_files, tmp_path: Path, capsys) -> None:
    gt_path, sub_path, gt, sub = challenge_files
    report = tmp_path / "report.json"
    assert main([str(gt_path), str(sub_path), "--report", str(report)]) == 0
    out = capsys.readouterr().out
    per_eps = [score_challenge(gt, sub[sub.epsilon == e].drop(columns="epsilon"))
               for e in (1.0, 10.0)]
    overall = np.mean([s["overall"] for s in per_eps])
    assert f"overall score: {overall:.4f}" in out
    assert "k_marginal" in out and "graph_edge" in out and "hoc" in out
    written = json.loads(report.read_text())
    assert written["overall"] == pytest.approx(overall)
    assert [r["epsilon"] for r in written["per_epsilon"]] == [1.0, 10.0]
    assert written["per_epsilon"][1]["hoc"] == pytest.approx(per_eps[1]["hoc"])
    assert {"epsilon", "pickup_community_area", "shift", "bias_penalty",
            "group_score"} <= set(written["details"][0])


def test_cli_ground_truth_with_epsilon_and_submission_without(tmp_path: Path, capsys) -> None:
    gt1 = random_trips(21, 400, TAXIS, [8, 32], [0, 5])
    gt10 = random_trips(22, 400, TAXIS, [8, 32], [0, 5])
    gt_path = _write(pd.concat([gt1.assign(epsilon=1.0), gt10.assign(epsilon=10.0)]),
                     tmp_path / "gt.csv")
    sub = random_trips(23, 300, TAXIS, [8, 32], [0, 5])
    sub_path = _write(sub, tmp_path / "synthetic.csv")
    assert main([str(gt_path), str(sub_path), "--epsilon", "10"]) == 0
    expected = score_challenge(gt10, sub)["overall"]
    assert f"overall score: {expected:.4f}" in capsys.readouterr().out
    assert main([str(gt_path), str(sub_path)]) == 2
    assert "--epsilon" in capsys.readouterr().err


def test_cli_reports_every_problem_at_once(tmp_path: Path, capsys) -> None:
    gt_path = _write(random_trips(31, 300, TAXIS, [8, 32], [0, 5]), tmp_path / "gt.csv")
    sub = pd.concat([random_trips(32, 80, TAXIS, [8, 32], [0, 5]).assign(epsilon=1.0),
                     random_trips(33, 20, TAXIS, [8, 32], [0, 5]).assign(epsilon=3.0)],
                    ignore_index=True)
    sub.loc[3, "company_id"] = 200                # out of the domain
    sub = sub.drop(columns="tips")                # missing column
    params = tmp_path / "parameters.json"
    taxi_schema(max_records=50).save(params)      # 80 rows at epsilon 1 > 50
    code = main([str(gt_path), str(_write(sub, tmp_path / "bad.csv")),
                 "--parameters", str(params)])
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" not in err
    assert "missing columns: ['tips']" in err
    assert "company_id: 1 value(s) not in the domain; allowed: 0..100" in err
    assert "[200]" not in err and "e.g." not in err   # the bad value itself is not echoed
    assert "value(s) [3] are not epsilons of the runs [1, 10]" in err
    assert "no rows for epsilon [10]" in err
    assert "epsilon 1: 80 rows, more than max_records 50" in err
    assert "5 problems" in err


def test_cli_missing_file_is_a_clean_error(tmp_path: Path, capsys) -> None:
    assert main([str(tmp_path / "nope.csv"), str(tmp_path / "nope2.csv")]) == 2
    err = capsys.readouterr().err
    assert "not found" in err and "Traceback" not in err
