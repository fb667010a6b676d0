"""Drift report: how far the simulated public year (2019) is from each scoring year, structure
by structure, where each drift size comes from, and how many (pickup area, shift) groups a
scoring set of each preset size leaves empty.

    .venv/bin/python benchmarks/drift_taxi_sim.py [--trips 200000] [--seed 0] [--drift 1]
        [--no-coverage] [--null-draws 200]

1. *Evidence* (real data, no simulation): the real sample's 2013 vs 2015 slices (4,388 and
   4,636 trips) per structure beside a same-population null (the two slices pooled and split
   at random, mean +- sd over ``--null-draws``), and the City's per-area pickups Sep-Nov 2015 vs
   2016 (toddwschneider/chicago-taxi-data, ``data/community_areas_annual_growth.csv``).
2. *Drift* (simulation at ``--trips`` trips per year): for every structure a mechanism can
   copy from the public year (pickup x dropoff, pickup area x shift, trips per taxi-week,
   company, payment, fare, tips, taxis' home-area concentration) the TVD between the public
   year and the 2016 and 2020 scoring years, beside the same-year redraw (the scoring year
   against an independent draw of itself, the sampling noise at this size), and the source
   of the drift size. A non-DP reference: the challenge k-marginal (x1000) of the public year
   scored as a submission against the scoring year, beside a same-year redraw's (50,000
   trips each, the default competition's size).
3. *Coverage*: empty (pickup area, shift) groups at each preset size (the default 50k, 1M,
   the 2020 set's 3.6M), simulated, beside the expectation from the City's pickups per area
   (2013-2016, all 77 areas) and the base year's shift profile, trips independent.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from dp_arena.data.taxi import drift as D
from dp_arena.data.taxi.sim import (
    base_pair_table,
    simulate_trips,
    world_of,
)

#: Trip counts of the presets (dataset.n_private): default competition, sprint3_1m, sprint3.
PRESET_SIZES: dict[str, int] = {"default (50k)": 50_000, "sprint3_1m": 1_000_000,
                                "sprint3 (2020 set)": 3_600_000}
TRIP_BINS = (1, 2, 6, 11, 21, 51, 101)
N_GROUPS = 78 * 21
REAL_SAMPLE = "chicago-taxi-sample.csv"

#: Where each structure's drift size comes from (module dp_arena/data/taxi/drift.py).
EVIDENCE: dict[str, str] = {
    "pickup x dropoff": "areas: City per-area growth 2015-16; zone pairs: sample 2013 vs 2015; "
                        "airport/downtown shares: sample's trend lines",
    "pickup area x shift": "zone x hour: sample 2013 vs 2015 (within noise: point estimate)",
    "trips per taxi-week": "assumption anchored to City totals (31.8M trips 2016 -> 16.5M "
                           "2019): median 12 -> 8",
    "company": "assumption: small affiliations leave, the five largest grow",
    "payment": "sample's cash trend line (-6.6 points a year)",
    "fare ($)": "sample's log-fare slope (+2.1% a year)",
    "tips ($)": "sample's card tip-rate and tip-share slopes",
    "taxi home concentration": "traits not drifted (no taxi id in the sample); moves with "
                               "trips per taxi",
}


def labels(df: pd.DataFrame) -> dict[str, np.ndarray]:
    """Per structure: one integer label per trip (or per taxi for taxi-level structures)."""
    taxi = df["taxi_id"].to_numpy()
    _, code, trips = np.unique(taxi, return_inverse=True, return_counts=True)
    pickup = df["pickup_community_area"].to_numpy()
    # a taxi's share of trips in its most frequent pickup area, in tenths
    pairs = pd.DataFrame({"t": code, "a": pickup}).value_counts()
    modal = pairs.groupby(level=0).max().to_numpy()
    return {
        "pickup x dropoff": (pickup + 1) * 100 + df["dropoff_community_area"].to_numpy() + 1,
        "pickup area x shift": (pickup + 1) * 100 + df["shift"].to_numpy(),
        "trips per taxi-week": np.searchsorted(TRIP_BINS, trips, side="right"),
        "company": df["company_id"].to_numpy(),
        "payment": df["payment_type"].to_numpy(),
        "fare ($)": np.minimum(df["fare"].to_numpy(), 100),
        "tips ($)": np.minimum(df["tips"].to_numpy(), 50),
        "taxi home concentration": np.minimum((10 * modal / trips).astype(int), 9),
    }


def tvd(a: np.ndarray, b: np.ndarray) -> float:
    """Total variation distance between the empirical distributions of two label arrays."""
    pa = pd.Series(a).value_counts(normalize=True)
    pb = pd.Series(b).value_counts(normalize=True)
    return 0.5 * float(pa.sub(pb, fill_value=0.0).abs().sum())


def simulate(n: int, year: str, seed: int, world_seed: int, drift: float) -> pd.DataFrame:
    return simulate_trips(n, np.random.default_rng(seed), year, world_of(world_seed, drift))


def drift_table(n: int, seed: int, drift: float) -> dict[str, dict[str, float]]:
    """TVD per structure: public vs 2016, 2016 redraw, public vs 2020, 2020 redraw."""
    public = labels(simulate(n, "public", seed + 1, seed, drift))
    out: dict[str, dict[str, float]] = {}
    for year in ("2016", "2020"):
        a = labels(simulate(n, year, seed + 2, seed, drift))
        b = labels(simulate(n, year, seed + 3, seed, drift))
        for name in a:
            out.setdefault(name, {})[f"public vs {year}"] = tvd(public[name], a[name])
            out[name][f"{year} redraw"] = tvd(b[name], a[name])
    return out


def kmarginal_reference(n: int, seed: int, drift: float) -> dict[str, float]:
    """Challenge k-marginal x1000 of the public year and of a same-year redraw, each scored
    against the scoring year (equal sizes, so no scaling)."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "structure_taxi_sim", Path(__file__).with_name("structure_taxi_sim.py"))
    structure = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(structure)  # type: ignore[union-attr]
    public = structure.comparable(simulate(n, "public", seed + 1, seed, drift))
    out = {}
    for year in ("2016", "2020"):
        whole = structure.comparable(simulate(n, year, seed + 2, seed, drift))
        redraw = structure.comparable(simulate(n, year, seed + 3, seed, drift))
        for label, part in (("public", public), ("redraw", redraw)):
            dist, _ = structure.group_distances(whole, part, 1.0)
            out[f"{label} vs {year}"] = 1000 * structure.score(dist)
    return out


def real_evidence(null_draws: int, seed: int) -> list[tuple[str, float, float, float]]:
    """(structure, 2013 vs 2015 TVD, null mean, null sd) on the real sample."""
    from dp_arena.data.datasets import shared_data_dir

    raw = pd.read_csv(shared_data_dir() / REAL_SAMPLE)
    year = pd.to_datetime(raw["trip_start_timestamp"], unit="s").dt.year.to_numpy()
    pickup = raw["pickup_community_area"].fillna(0).astype(int).to_numpy()
    dropoff = raw["dropoff_community_area"].fillna(0).astype(int).to_numpy()
    pz, dz = D.zone_of_code(pickup), D.zone_of_code(dropoff)
    hour = raw["trip_start_hour"].to_numpy()
    structures = {
        "zone x zone": pz * 4 + dz,
        "zone x hour": pz * 24 + hour,
        "hour": hour,
        "payment (cash)": (raw["payment_type"] == "Cash").to_numpy().astype(int),
        "fare ($, <= 100)": np.minimum(np.rint(raw["fare"].fillna(0)).astype(int), 100),
        "area x area": pickup * 100 + dropoff,
    }
    rng = np.random.default_rng(seed)
    out = []
    for name, lab in structures.items():
        a, b = lab[year == 2013], lab[year == 2015]
        pool = np.r_[a, b]
        null = []
        for _ in range(null_draws):
            p = rng.permutation(pool)
            null.append(tvd(p[:len(a)], p[len(a):]))
        out.append((name, tvd(a, b), float(np.mean(null)), float(np.std(null))))
    return out


def area_growth_spread() -> dict[int, tuple[float, float]]:
    """Per zone: (trip-weighted mean log growth Sep-Nov 2015 -> 2016, weighted sd around it)."""
    areas = np.array(sorted(D.AREA_SEP_NOV_2015_2016))
    before = np.array([D.AREA_SEP_NOV_2015_2016[a][0] for a in areas], float)
    after = np.array([D.AREA_SEP_NOV_2015_2016[a][1] for a in areas], float)
    growth, zone = np.log(after / before), D.zone_of_code(areas)
    out = {}
    for z in range(D.N_ZONES):
        m = zone == z
        mean = np.average(growth[m], weights=before[m])
        out[z] = (float(mean), float(np.sqrt(np.average((growth[m] - mean) ** 2,
                                                        weights=before[m]))))
    return out


def shift_shares() -> np.ndarray:
    """(21,) base year's share of trips per shift (day x 8-hour block)."""
    from dp_arena.data.taxi import sim_tables as T

    counts = np.asarray(T.DAY_HOUR_COUNTS, float)
    by_shift = counts.reshape(7, 3, 8).sum(axis=2).ravel()
    return by_shift / by_shift.sum()


def city_area_shares() -> np.ndarray:
    """(78,) pickup shares: unknown as in the base year, the 77 areas as the City's totals."""
    return base_pair_table().sum(axis=1)


def empty_groups(df: pd.DataFrame) -> int:
    """(pickup area, shift) groups of the 78 x 21 with no trip."""
    seen = np.unique((df["pickup_community_area"].to_numpy() + 1) * 21 + df["shift"].to_numpy())
    return N_GROUPS - len(seen)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trips", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--drift", type=float, default=1.0)
    parser.add_argument("--null-draws", type=int, default=200)
    parser.add_argument("--no-coverage", action="store_true")
    args = parser.parse_args(argv)

    print("1. evidence: the real sample's 2013 vs 2015 slices (4,388 / 4,636 trips) against a "
          "same-population null")
    print(f"{'structure':<22}{'TVD 2013-15':>12}{'null':>8}{'+- sd':>7}{'excess (sd)':>12}")
    for name, value, mean, sd in real_evidence(args.null_draws, args.seed):
        print(f"{name:<22}{value:>12.3f}{mean:>8.3f}{sd:>7.3f}{(value - mean) / sd:>12.1f}")
    print("\nthe City's pickups per area, Sep-Nov 2015 -> 2016 (toddwschneider/chicago-taxi-data):")
    print(f"{'zone':<16}{'log growth':>11}{'area sd':>9}{'used per year':>14}")
    for z, (mean, sd) in area_growth_spread().items():
        print(f"{('downtown', 'near downtown', 'airports', 'rest')[z]:<16}{mean:>11.3f}{sd:>9.3f}"
              f"{D.AREA_LOG_SD[z]:>14.3f}")
    print(f"per-year sizes used: zone pair {D.PAIR_LOG_SD}, zone hour {D.HOUR_LOG_SD}, fares "
          f"{D.FARE_LOG_SLOPE:+.4f} log, card tip rate {D.CARD_TIP_RATE_SLOPE:+.4f}, tip share "
          f"{D.TIP_SHARE_LOG_SLOPE:+.4f} log, shares {D.SHARE_SLOPES}")

    print(f"\n2. drift {args.drift:g} at {args.trips:,} trips a year (seed {args.seed}): TVD "
          "public (2019) vs each scoring year, beside a same-year redraw")
    table = drift_table(args.trips, args.seed, args.drift)
    print(f"{'structure':<25}{'pub-2016':>9}{'redraw':>8}{'pub-2020':>9}{'redraw':>8}  evidence")
    for name, row in table.items():
        print(f"{name:<25}{row['public vs 2016']:>9.3f}{row['2016 redraw']:>8.3f}"
              f"{row['public vs 2020']:>9.3f}{row['2020 redraw']:>8.3f}  {EVIDENCE[name]}")
    ref = kmarginal_reference(50_000, args.seed, args.drift)
    print("\nnon-DP reference, 50,000 trips each: challenge k-marginal x1000 against the scoring "
          "year")
    for year in ("2016", "2020"):
        print(f"  {year}: public year as a submission {ref[f'public vs {year}']:.0f}, "
              f"same-year redraw {ref[f'redraw vs {year}']:.0f}")

    if not args.no_coverage:
        print(f"\n3. empty (pickup area, shift) groups of {N_GROUPS:,} at each preset size")
        print(f"{'preset':<20}{'trips':>10}{'sim 2016':>10}{'sim 2020':>10}"
              f"{'City shares':>13}")
        for label, n in PRESET_SIZES.items():
            sims = [empty_groups(simulate(n, year, args.seed + 2, args.seed, args.drift))
                    for year in ("2016", "2020")]
            expected = D.expected_empty_groups(city_area_shares(), shift_shares(), n)
            print(f"{label:<20}{n:>10,}{sims[0]:>7} {sims[0] / N_GROUPS:>3.0%}"
                  f"{sims[1]:>6} {sims[1] / N_GROUPS:>3.0%}{expected:>8.0f} "
                  f"{expected / N_GROUPS:>4.0%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
