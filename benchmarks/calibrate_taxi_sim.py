"""Calibration report: the simulated base year (``taxi_sim``, the sample's era before any
drift) against real Chicago trips.

    .venv/bin/python benchmarks/calibrate_taxi_sim.py [--trips 200000] [--splits 20] [--seed 0]

For each column (pickup area, dropoff area, hour, day of week, miles, trip seconds, fare,
tipped, cash, pickup x dropoff) prints the total variation distance (TVD) between a simulated
base year and the real sample ``../shared/data/chicago-taxi-sample.csv``, beside the real
sample's own half-vs-half TVD (median over random splits), and PASS/FAIL against the goal
(1-way TVD <= 0.05, pickup x dropoff <= 0.15). Numeric columns are compared in the Sprint 3
scoring bins (``Schema.encode``).

The real trips are mapped to Sprint 3 values by :func:`real_to_sprint3` (a small private
mapping: ``dp_arena/data/taxi/chicago.py`` did not exist when this was written).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from dp_arena.data.taxi.sprint3 import PAYMENT_NAMES, PAYMENT_VALUES, taxi_schema

REAL_SAMPLE = "chicago-taxi-sample.csv"
GOAL_ONE_WAY, GOAL_PAIR = 0.05, 0.15
PAYMENT_CODE = dict(zip(PAYMENT_NAMES, PAYMENT_VALUES))
#: (label, derived column) compared; numeric columns in scoring bins.
COMPARED: tuple[str, ...] = ("pickup area", "dropoff area", "hour", "day of week", "miles",
                             "trip seconds", "fare", "tipped", "cash", "pickup x dropoff")


def real_sample_path() -> Path:
    """The real sample in the shared data folder (raises ``ConfigError`` when absent)."""
    from dp_arena.data.datasets import shared_data_dir

    return shared_data_dir() / REAL_SAMPLE


def real_to_sprint3(raw: pd.DataFrame) -> pd.DataFrame:
    """Real export rows -> the Sprint 3 columns we can compare (int64; unknown = -1).

    Areas: empty -> -1. Day: 1 = Sunday .. 7 = Saturday -> 0 = Monday .. 6 = Sunday.
    Payment text -> schema code (unmatched -> -1). Money and miles rounded to whole units,
    seconds whole; missing numerics -> -1.
    """
    def area(col: str) -> np.ndarray:
        return raw[col].fillna(-1).astype(np.int64).to_numpy()

    def whole(col: str) -> np.ndarray:
        return np.rint(raw[col].fillna(-1.0).to_numpy(dtype=float)).astype(np.int64)

    return pd.DataFrame({
        "pickup_community_area": area("pickup_community_area"),
        "dropoff_community_area": area("dropoff_community_area"),
        "trip_hour_of_day": raw["trip_start_hour"].astype(np.int64).to_numpy(),
        "trip_day_of_week": ((raw["trip_start_day"].astype(np.int64) + 5) % 7).to_numpy(),
        "payment_type": raw["payment_type"].map(PAYMENT_CODE).fillna(-1).astype(np.int64)
        .to_numpy(),
        "trip_miles": whole("trip_miles"),
        "trip_seconds": whole("trip_seconds"),
        "fare": whole("fare"),
        "tips": whole("tips"),
    })


def load_real() -> pd.DataFrame:
    """The real sample mapped to Sprint 3 values."""
    return real_to_sprint3(pd.read_csv(real_sample_path()))


def compared_columns(df: pd.DataFrame) -> dict[str, np.ndarray]:
    """The compared quantities of a Sprint 3 frame, as integer labels per row."""
    schema = taxi_schema()
    binned = schema.encode(df.reindex(columns=schema.attributes, fill_value=0))
    pickup = df["pickup_community_area"].to_numpy()
    dropoff = df["dropoff_community_area"].to_numpy()
    return {
        "pickup area": pickup,
        "dropoff area": dropoff,
        "hour": df["trip_hour_of_day"].to_numpy(),
        "day of week": df["trip_day_of_week"].to_numpy(),
        "miles": binned["trip_miles"].to_numpy(),
        "trip seconds": binned["trip_seconds"].to_numpy(),
        "fare": binned["fare"].to_numpy(),
        "tipped": (df["tips"].to_numpy() > 0).astype(np.int64),
        "cash": (df["payment_type"].to_numpy() == 0).astype(np.int64),
        "pickup x dropoff": (pickup + 1) * 100 + (dropoff + 1),
    }


def tvd(a: np.ndarray, b: np.ndarray) -> float:
    """Total variation distance between the empirical distributions of two label arrays."""
    pa = pd.Series(a).value_counts(normalize=True)
    pb = pd.Series(b).value_counts(normalize=True)
    return 0.5 * float(pa.sub(pb, fill_value=0.0).abs().sum())


def tvds(sim: pd.DataFrame, real: pd.DataFrame) -> dict[str, float]:
    """TVD per compared quantity between two Sprint 3 frames."""
    s, r = compared_columns(sim), compared_columns(real)
    return {name: tvd(s[name], r[name]) for name in COMPARED}


def half_vs_half(real: pd.DataFrame, splits: int, seed: int) -> dict[str, float]:
    """Median over random splits of the real sample's half-vs-half TVD per quantity."""
    rng = np.random.default_rng(seed)
    cols = compared_columns(real)
    out: dict[str, list[float]] = {name: [] for name in COMPARED}
    for _ in range(splits):
        half = rng.permutation(len(real)) < len(real) // 2
        for name in COMPARED:
            out[name].append(tvd(cols[name][half], cols[name][~half]))
    return {name: float(np.median(v)) for name, v in out.items()}


#: The real sample's year-over-year trends the public year extrapolates (indicator, areas).
TREND_YEARS_AHEAD = 3  # 2016 -> 2019


def trend_indicators(raw: pd.DataFrame) -> dict[str, np.ndarray]:
    """Per real trip: paid cash, touched an airport, picked up downtown (as in
    :data:`dp_arena.data.taxi.sim.PUBLIC_YEAR_TRENDS`)."""
    from dp_arena.data.taxi.sim import AIRPORTS, DOWNTOWN

    pickup, dropoff = raw["pickup_community_area"], raw["dropoff_community_area"]
    return {"cash": (raw["payment_type"] == "Cash").to_numpy(),
            "airport": (pickup.isin(AIRPORTS) | dropoff.isin(AIRPORTS)).to_numpy(),
            "downtown": pickup.isin(DOWNTOWN).to_numpy()}


def extrapolated_shares(raw: pd.DataFrame, years_ahead: int = TREND_YEARS_AHEAD
                        ) -> dict[str, tuple[float, float, float]]:
    """Per indicator: (pooled share, share fitted at the sample's last year, the least-squares
    line of the trip indicator on its year extrapolated ``years_ahead`` past that year)."""
    year = pd.to_datetime(raw["trip_start_timestamp"], unit="s").dt.year.to_numpy()
    last = int(year.max())
    design = np.c_[np.ones(len(year)), year - last]
    out = {}
    for name, flag in trend_indicators(raw).items():
        (at_last, slope), *_ = np.linalg.lstsq(design, flag.astype(float), rcond=None)
        out[name] = (float(flag.mean()), float(at_last), float(at_last + years_ahead * slope))
    return out


def goal(name: str) -> float:
    """The TVD bound a quantity must meet."""
    return GOAL_PAIR if name == "pickup x dropoff" else GOAL_ONE_WAY


def main(argv: list[str] | None = None) -> int:
    from dp_arena.data.taxi.sim import simulate_trips

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trips", type=int, default=200_000)
    parser.add_argument("--splits", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    real = load_real()
    sim = simulate_trips(args.trips, np.random.default_rng(args.seed), "base")
    got, noise = tvds(sim, real), half_vs_half(real, args.splits, args.seed)
    print(f"simulated base year (the sample's era, no drift): {args.trips:,} trips; "
          f"real sample: {len(real):,} trips")
    print(f"{'quantity':<18}{'TVD sim-real':>13}{'real half-half':>16}{'goal':>7}  result")
    failed = 0
    for name in COMPARED:
        ok = got[name] <= goal(name)
        failed += not ok
        print(f"{name:<18}{got[name]:>13.3f}{noise[name]:>16.3f}{goal(name):>7.2f}  "
              f"{'PASS' if ok else 'FAIL'}")
    from dp_arena.data.taxi.sim import year_params

    scoring, public = year_params("2016"), year_params("public")
    print("\nyears: the real sample's 2013-2016 trends (least-squares line on the trip's year)")
    print(f"{'share':<10}{'pooled':>8}{'2016 fit':>10}{'2019 trend':>12}{'sim 2016':>10}"
          f"{'sim 2019':>10}")
    for name, (pooled, at_last, ahead) in extrapolated_shares(
            pd.read_csv(real_sample_path())).items():
        sim_2016, sim_2019 = (getattr(y, f"{name}_share") for y in (scoring, public))
        print(f"{name:<10}{pooled:>8.3f}{at_last:>10.3f}{ahead:>12.3f}"
              f"{sim_2016:>10.3f}{sim_2019:>10.3f}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
