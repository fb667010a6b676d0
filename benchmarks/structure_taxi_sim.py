"""Structure report: how concentrated trips are *within* the challenge's groups, for the
simulated base year (``taxi_sim``, the sample's era before any drift) and the real Chicago
sample.

    .venv/bin/python benchmarks/structure_taxi_sim.py [--trips 15002] [--draws 20] [--seed 0]
        [--preset base] [--curve-trips 1000000] [--no-curve]

The challenge's k-marginal compares, within each (pickup area, shift) group, the (c1, c2) cells
of the 28 pairs of its 8 columns (``dp_arena/metrics/challenge.py``). At the real sample's size (15,002
trips by default), for the simulation and for the real sample prepared as
``dp-arena-prepare chicago`` does (``dataset=chicago_sample``), this prints:

- distinct (group, c1, c2) cells per column pair (mean over the 28 pairs and per pair) and the
  singleton share (cells holding one trip / distinct cells);
- the challenge k-marginal of a random half against the whole (mean over ``--draws`` halves),
  overall and per group-size class (the group's trips in the whole);
- at ``--curve-trips`` simulated trips (1M by default), the k-marginal of 1%, 10%, 40% and 50%
  subsamples against the whole: a curve of how much a sample of each size already says.

Half and subsamples are scored with their group row counts scaled to the whole (divided by the
sampling fraction) before the bias penalty (a group whose counts differ by >= 250 scores 2):
unscaled, every large group of a half would be penalised and the figure would say nothing
about structure. The cell distances are scale-free.

The real sample has no trip_total (prepared as -1), so ``trip_total`` is held constant on both
sides (set to 0), as the issue's figures do; ``taxi_id`` is not scored by the k-marginal.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from dp_arena.metrics.challenge import (
    BIAS_PENALTY_CUTOFF,
    GROUP_COLUMNS,
    MARGINAL_COLUMNS,
    MAX_DISTANCE,
    challenge_groups,
    pair_distances_by_group,
    scoring_codes,
    unordered_pairs,
)

HELD_CONSTANT: tuple[str, ...] = ("trip_total",)
#: Group-size classes (trips of the group in the whole): lower bounds.
SIZE_CLASSES: tuple[int, ...] = (1, 10, 50, 200)
CURVE_FRACTIONS: tuple[float, ...] = (0.01, 0.10, 0.40, 0.50)
GOAL_CELL_RATIO, GOAL_HALF_POINTS = 0.10, 15.0


def load_real() -> pd.DataFrame:
    """The 15,002 real trips prepared in the Sprint 3 schema (record-level, no taxi_id)."""
    from dp_arena.data.datasets import load_chicago_sample

    return load_chicago_sample().private


def simulated(n_trips: int, seed: int, preset: str = "base") -> pd.DataFrame:
    """``n_trips`` simulated trips of a year preset (``private`` = the scoring year)."""
    from dp_arena.data.taxi.sim import simulate_trips

    return simulate_trips(n_trips, np.random.default_rng(seed), preset)


def comparable(df: pd.DataFrame) -> pd.DataFrame:
    """The scored columns with :data:`HELD_CONSTANT` columns set to 0."""
    out = df[[*GROUP_COLUMNS, *MARGINAL_COLUMNS]].copy()
    for column in HELD_CONSTANT:
        out[column] = 0
    return out


def cell_counts(df: pd.DataFrame) -> dict[tuple[str, str], np.ndarray]:
    """Per unordered column pair: the counts of the non-empty (group, c1, c2) cells."""
    groups = challenge_groups(df, df)
    codes = {c: scoring_codes(df, df, c) for c in MARGINAL_COLUMNS}
    out = {}
    for first, second in unordered_pairs(MARGINAL_COLUMNS):
        (a, _, size_a), (b, _, size_b) = codes[first], codes[second]
        counts = np.bincount((groups.gt * size_a + a) * size_b + b)
        out[(first, second)] = counts[counts > 0]
    return out


def cell_summary(df: pd.DataFrame) -> tuple[dict[tuple[str, str], int], float]:
    """(distinct cells per pair, singleton share over all pairs' cells)."""
    counts = cell_counts(df)
    singletons = sum(int((c == 1).sum()) for c in counts.values())
    cells = sum(len(c) for c in counts.values())
    return {pair: len(c) for pair, c in counts.items()}, singletons / cells


def group_distances(whole: pd.DataFrame, part: pd.DataFrame, fraction: float
                    ) -> tuple[np.ndarray, np.ndarray]:
    """(per-group distance 0..2 after the bias penalty on scaled counts, the group's trips in
    the whole), over the groups of the whole or the part."""
    groups = challenge_groups(whole, part)
    codes = {c: scoring_codes(whole, part, c) for c in MARGINAL_COLUMNS}
    total = np.zeros(groups.count)
    for first, second in unordered_pairs(MARGINAL_COLUMNS):
        total += pair_distances_by_group(groups, codes[first], codes[second])
    mean = total / len(unordered_pairs(MARGINAL_COLUMNS))
    gt_rows = groups.table["gt_rows"].to_numpy()
    scaled = groups.table["sub_rows"].to_numpy() / fraction
    penalised = np.abs(gt_rows - scaled) >= BIAS_PENALTY_CUTOFF
    return np.where(penalised, MAX_DISTANCE, mean), gt_rows


def score(distances: np.ndarray) -> float:
    """Challenge score (0..1) of per-group distances."""
    return float((MAX_DISTANCE - distances.mean()) / MAX_DISTANCE) if len(distances) else 0.0


def subsample_scores(df: pd.DataFrame, fraction: float, draws: int,
                     rng: np.random.Generator) -> tuple[float, dict[int, float]]:
    """Mean over ``draws`` random subsamples of ``fraction`` of the rows: (k-marginal x 1000,
    per group-size class k-marginal x 1000)."""
    overall, by_class = [], {c: [] for c in SIZE_CLASSES}
    for _ in range(draws):
        keep = rng.random(len(df)) < fraction
        dist, rows = group_distances(df, df[keep], fraction)
        overall.append(1000 * score(dist))
        size_class = np.asarray(SIZE_CLASSES)[np.searchsorted(SIZE_CLASSES, rows, side="right")
                                              - 1]
        for c in SIZE_CLASSES:
            if (size_class == c).any():
                by_class[c].append(1000 * score(dist[size_class == c]))
    return float(np.mean(overall)), {c: float(np.mean(v)) for c, v in by_class.items() if v}


def group_size_shares(df: pd.DataFrame) -> dict[int, tuple[int, float]]:
    """Per group-size class: (groups, share of trips)."""
    rows = df.groupby(list(GROUP_COLUMNS)).size().to_numpy()
    cls = np.asarray(SIZE_CLASSES)[np.searchsorted(SIZE_CLASSES, rows, side="right") - 1]
    return {c: (int((cls == c).sum()), float(rows[cls == c].sum() / len(df)))
            for c in SIZE_CLASSES}


def short(pair: tuple[str, str]) -> str:
    names = {"company_id": "company", "dropoff_community_area": "dropoff",
             "payment_type": "payment", "trip_seconds": "seconds", "trip_miles": "miles",
             "trip_total": "total"}
    return " x ".join(names.get(c, c) for c in pair)


def structure(sim: pd.DataFrame, real: pd.DataFrame, draws: int, seed: int) -> dict:
    """Every figure of the report at the real sample's size (see the module docstring)."""
    sim, real = comparable(sim), comparable(real)
    (sim_cells, sim_single), (real_cells, real_single) = cell_summary(sim), cell_summary(real)
    sim_half = subsample_scores(sim, 0.5, draws, np.random.default_rng(seed))
    real_half = subsample_scores(real, 0.5, draws, np.random.default_rng(seed))
    return {"sim_cells": sim_cells, "real_cells": real_cells, "sim_single": sim_single,
            "real_single": real_single, "sim_half": sim_half, "real_half": real_half,
            "sim_sizes": group_size_shares(sim), "real_sizes": group_size_shares(real)}


def checks(figures: dict) -> dict[str, bool]:
    """The issue's acceptance bounds: cells per pair within 10%, half-vs-whole within 15."""
    ratio = np.mean(list(figures["sim_cells"].values())) / np.mean(
        list(figures["real_cells"].values()))
    gap = abs(figures["sim_half"][0] - figures["real_half"][0])
    return {"cells": abs(ratio - 1) <= GOAL_CELL_RATIO, "half": gap <= GOAL_HALF_POINTS}


def print_structure(figures: dict, n_sim: int, n_real: int) -> None:
    sim_cells, real_cells = figures["sim_cells"], figures["real_cells"]
    mean_sim, mean_real = np.mean(list(sim_cells.values())), np.mean(list(real_cells.values()))
    print(f"within-group structure: simulation {n_sim:,} trips, real sample {n_real:,} trips "
          f"(trip_total held constant on both sides)")
    print(f"{'column pair':<22}{'cells sim':>10}{'cells real':>11}{'ratio':>7}")
    for pair in sim_cells:
        print(f"{short(pair):<22}{sim_cells[pair]:>10,}{real_cells[pair]:>11,}"
              f"{sim_cells[pair] / real_cells[pair]:>7.2f}")
    ok = checks(figures)
    print(f"{'mean over 28 pairs':<22}{mean_sim:>10,.0f}{mean_real:>11,.0f}"
          f"{mean_sim / mean_real:>7.2f}   goal within +-10%: {'PASS' if ok['cells'] else 'FAIL'}")
    print(f"singleton share of cells: simulation {figures['sim_single']:.3f}, "
          f"real {figures['real_single']:.3f}")
    (sh, sh_cls), (rh, rh_cls) = figures["sim_half"], figures["real_half"]
    print(f"\nk-marginal (x1000) of a random half against the whole: simulation {sh:.0f}, "
          f"real {rh:.0f}, gap {sh - rh:+.0f}   goal within 15: "
          f"{'PASS' if ok['half'] else 'FAIL'}")
    print(f"{'group size (trips)':<20}{'groups sim':>11}{'trips sim':>10}{'half sim':>9}"
          f"{'groups real':>12}{'trips real':>11}{'half real':>10}")
    bounds = [*SIZE_CLASSES[1:], None]
    for c, upper in zip(SIZE_CLASSES, bounds):
        label = f"{c}-{upper - 1}" if upper else f">= {c}"
        gs, ts = figures["sim_sizes"][c]
        gr, tr = figures["real_sizes"][c]
        print(f"{label:<20}{gs:>11,}{ts:>10.1%}{sh_cls.get(c, float('nan')):>9.0f}"
              f"{gr:>12,}{tr:>11.1%}{rh_cls.get(c, float('nan')):>10.0f}")


def print_curve(n_trips: int, seed: int, draws: int, preset: str) -> None:
    whole = comparable(simulated(n_trips, seed + 1, preset))
    rng = np.random.default_rng(seed)
    print(f"\nsubsample curve: k-marginal (x1000) of a random share of {n_trips:,} simulated "
          f"trips against the whole (counts scaled to the whole; mean of {draws} draws)")
    print(f"{'share':>6}{'trips':>11}{'k-marginal':>12}")
    for fraction in CURVE_FRACTIONS:
        value, _ = subsample_scores(whole, fraction, draws, rng)
        print(f"{fraction:>6.0%}{int(fraction * n_trips):>11,}{value:>12.0f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trips", type=int, default=None,
                        help="simulated trips (default: the real sample's size)")
    parser.add_argument("--draws", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--preset", default="base",
                        help="simulated year preset (base: the sample's era)")
    parser.add_argument("--curve-trips", type=int, default=1_000_000)
    parser.add_argument("--curve-draws", type=int, default=2)
    parser.add_argument("--no-curve", action="store_true")
    args = parser.parse_args(argv)
    real = load_real()
    sim = simulated(args.trips or len(real), args.seed, args.preset)
    figures = structure(sim, real, args.draws, args.seed)
    print_structure(figures, len(sim), len(real))
    if not args.no_curve:
        print_curve(args.curve_trips, args.seed, args.curve_draws, args.preset)
    return 0 if all(checks(figures).values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
