"""Benchmark of the Sprint 3 challenge score (dp_arena.metrics.challenge) on a million trips.

    python benchmarks/bench_challenge.py [--rows 1000000] [--taxis 15000] [--seed 0]

Builds a schema-valid ground truth and submission (taxis with a home area, a preferred shift
and a company; a heavy-tailed number of trips per taxi, at most 200; a few areas dominating
pickups and dropoffs; fares that follow miles; tips mostly on card payments), then times each
component and reports its peak traced memory (tracemalloc) and the process's peak RSS.
Target: the three components together under 10 s and 2 GB on 2 cores.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "2")

import argparse  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dp_arena.data.taxi.sprint3 import (  # noqa: E402
    AREA_VALUES,
    MAX_TRIPS_PER_TAXI,
    PAYMENT_VALUES,
    taxi_schema,
)
from dp_arena.metrics.challenge import graph_edge_score, hoc_score, k_marginal_score  # noqa: E402

#: Loop, Near North, Near West, O'Hare, Midway, Lake View, Lincoln Park dominate.
BUSY_AREAS = {32: 30.0, 8: 25.0, 28: 10.0, 76: 12.0, 56: 4.0, 6: 5.0, 7: 5.0, -1: 6.0}


def area_weights(rng: np.random.Generator) -> np.ndarray:
    """Pickup/dropoff weights over AREA_VALUES: a few busy areas, a long tail."""
    w = rng.gamma(0.6, 0.3, size=len(AREA_VALUES))
    for area, weight in BUSY_AREAS.items():
        w[AREA_VALUES.index(area)] = weight
    return w / w.sum()


def trips_per_taxi(rng: np.random.Generator, n_rows: int, n_taxis: int) -> np.ndarray:
    """Heavy-tailed trips per taxi in 1..200 summing to exactly ``n_rows``."""
    counts = np.minimum(MAX_TRIPS_PER_TAXI,
                        1 + rng.negative_binomial(1, n_taxis / n_rows, size=n_taxis))
    while (deficit := n_rows - int(counts.sum())) != 0:
        room = np.flatnonzero(counts < MAX_TRIPS_PER_TAXI if deficit > 0 else counts > 1)
        pick = rng.choice(room, size=min(abs(deficit), len(room)), replace=False)
        counts[pick] += 1 if deficit > 0 else -1
    return counts


def simulated_trips(seed: int, n_rows: int, n_taxis: int, first_taxi: int = 1_000_000,
                    drift: float = 0.0) -> pd.DataFrame:
    """A realistic-ish, schema-valid Sprint 3 table (int64 columns, as read from a CSV)."""
    rng = np.random.default_rng(seed)
    areas = np.asarray(AREA_VALUES)
    weights = area_weights(np.random.default_rng(1234))  # the city is the same in both tables
    if drift:
        weights = weights * rng.uniform(1 - drift, 1 + drift, size=len(weights))
        weights /= weights.sum()
    counts = trips_per_taxi(rng, n_rows, n_taxis)
    taxi = np.repeat(np.arange(n_taxis), counts)
    home = rng.choice(len(areas), size=n_taxis, p=weights)
    favourite_shift = rng.integers(0, 21, size=n_taxis)
    company = np.minimum(100, rng.zipf(1.6, size=n_taxis) - 1)

    at_home = rng.random(n_rows) < 0.55
    pickup = np.where(at_home, home[taxi], rng.choice(len(areas), size=n_rows, p=weights))
    dropoff = np.where(rng.random(n_rows) < 0.25, pickup,
                       rng.choice(len(areas), size=n_rows, p=weights))
    shift = (favourite_shift[taxi] + rng.choice([-1, 0, 0, 0, 1, 2], size=n_rows)) % 21
    miles = np.minimum(1900, rng.exponential(3.5, size=n_rows) * (1 + 4 * (pickup == 75)))
    seconds = np.clip(120 + miles * 170 + rng.normal(0, 200, size=n_rows), -1, 88000)
    fare = np.clip(3.25 + 2.25 * miles + seconds / 360 + rng.normal(0, 1, size=n_rows), -1, 10000)
    payment = rng.choice(np.asarray(PAYMENT_VALUES), size=n_rows,
                         p=[.03, .42, .45, .03, .02, .01, .01, .01, .02])
    tips = np.where(payment == 1, np.clip(fare * rng.uniform(0.1, 0.25, size=n_rows), 0, 800), 0)
    total = np.clip(fare + tips + rng.choice([0, 0, 1, 4], size=n_rows), -1, 10000)
    return pd.DataFrame({
        "taxi_id": first_taxi + taxi.astype(np.int64),
        "shift": shift.astype(np.int64),
        "company_id": company[taxi].astype(np.int64),
        "pickup_community_area": areas[pickup].astype(np.int64),
        "dropoff_community_area": areas[dropoff].astype(np.int64),
        "payment_type": payment.astype(np.int64),
        "trip_day_of_week": rng.integers(0, 7, size=n_rows),
        "trip_hour_of_day": rng.integers(0, 24, size=n_rows),
        "fare": fare.astype(np.int64),
        "tips": tips.astype(np.int64),
        "trip_total": total.astype(np.int64),
        "trip_seconds": seconds.astype(np.int64),
        "trip_miles": miles.astype(np.int64),
    })


def measured(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """``fn()``, its wall-clock seconds and its peak traced memory in MB."""
    tracemalloc.start()
    start = time.perf_counter()
    value = fn()
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return value, seconds, peak


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--taxis", type=int, default=15_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--check", action="store_true",
                        help="also validate both tables against the Sprint 3 schema")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    gt = simulated_trips(args.seed, args.rows, args.taxis)
    sub = simulated_trips(args.seed + 1, args.rows, args.taxis + args.taxis // 10,
                          first_taxi=1_005_000, drift=0.3)
    print(f"built ground truth {len(gt):,} trips / {gt.taxi_id.nunique():,} taxis and "
          f"submission {len(sub):,} trips / {sub.taxi_id.nunique():,} taxis "
          f"in {time.perf_counter() - start:.1f} s (peak RSS so far {peak_rss_mb():,.0f} MB)")
    if args.check:
        schema = taxi_schema()
        for name, df in (("ground truth", gt), ("submission", sub)):
            schema.validate(df, where=name)
        print("both tables are schema-valid")

    rss_before = peak_rss_mb()
    (km, groups), t_km, m_km = measured(lambda: k_marginal_score(gt, sub))
    ge, t_ge, m_ge = measured(lambda: graph_edge_score(gt, sub))
    hoc, t_hoc, m_hoc = measured(lambda: hoc_score(gt, sub))
    total = t_km + t_ge + t_hoc
    print(f"{'component':<12} {'score':>10} {'seconds':>9} {'peak MB':>9}")
    for name, score, secs, mem in (("k_marginal", km, t_km, m_km), ("graph_edge", ge, t_ge, m_ge),
                                   ("hoc", hoc, t_hoc, m_hoc)):
        print(f"{name:<12} {score:>10.6f} {secs:>9.2f} {mem:>9.0f}")
    print(f"{'total':<12} {1000 * np.mean([km, ge, hoc]):>10.4f} {total:>9.2f} "
          f"{max(m_km, m_ge, m_hoc):>9.0f}")
    print(f"groups: {len(groups):,} ({int(groups.bias_penalty.sum()):,} bias-penalised); "
          f"peak RSS {peak_rss_mb():,.0f} MB (data alone {rss_before:,.0f} MB)")
    ok = total < 10 and peak_rss_mb() < 2048
    print(f"target (< 10 s and < 2 GB): {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
