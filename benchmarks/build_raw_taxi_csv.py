"""Build a "raw" CSV as people have it from the shared Chicago taxi sample (the own-data
path's test table): strings, ``YYYY-MM-DD`` dates, ``HH:MM`` times, floats with outliers, missing values.

    python benchmarks/build_raw_taxi_csv.py OUT_FOLDER [--data-dir ../shared/data]

writes ``OUT/raw.csv`` (all 15,002 trips), and a disjoint random split of it:
``OUT/private.csv`` and ``OUT/public.csv`` (half each, seed 0). The data stays outside the
repository: pass a folder outside it (tests use a temporary folder).

Columns: ``trip_date`` (YYYY-MM-DD), ``start_time`` (HH:MM), ``payment_type`` and ``company``
(strings; company missing for 5,140 trips), ``pickup_community_area`` /
``dropoff_community_area`` (integers with missing values), ``fare``, ``trip_miles`` (floats with
outliers: fare up to ~700, miles up to ~1,700), ``trip_seconds`` (integers, a few missing),
``tips`` and ``rating`` (1-5, from the tip share of card trips; missing for the others).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
import pandas as pd

SAMPLE = "chicago-taxi-sample.csv"


def default_data_dir() -> Path:
    raw = os.environ.get("DP_ARENA_DATA")
    return Path(raw) if raw else Path(__file__).resolve().parents[2] / "shared" / "data"


def raw_trips(sample: pd.DataFrame) -> pd.DataFrame:
    """The raw table, reshaped from the sample's columns (no row is dropped)."""
    start = pd.to_datetime(sample["trip_start_timestamp"], unit="s")
    card = sample["payment_type"].eq("Credit Card")
    share = sample["tips"] / sample["fare"].where(sample["fare"] > 0)
    rating = np.clip(np.floor(share.fillna(0) * 20) + 1, 1, 5).where(card)
    return pd.DataFrame({
        "trip_date": start.dt.strftime("%Y-%m-%d"),
        "start_time": start.dt.strftime("%H:%M"),
        "payment_type": sample["payment_type"],
        "company": sample["company"],
        "pickup_community_area": sample["pickup_community_area"].astype("Int64"),
        "dropoff_community_area": sample["dropoff_community_area"].astype("Int64"),
        "fare": sample["fare"].astype(float),
        "trip_miles": sample["trip_miles"].astype(float),
        "trip_seconds": sample["trip_seconds"].astype("Int64"),
        "tips": sample["tips"].astype(float),
        "rating": rating.astype("Int64"),
    })


def write_raw(data_dir: Path, out: Path, seed: int = 0) -> dict[str, Path]:
    """Write raw.csv, private.csv and public.csv (disjoint halves) into ``out``."""
    table = raw_trips(pd.read_csv(data_dir / SAMPLE))
    out.mkdir(parents=True, exist_ok=True)
    public = np.zeros(len(table), dtype=bool)
    public[np.random.default_rng(seed).permutation(len(table))[: len(table) // 2]] = True
    paths = {"raw": out / "raw.csv", "private": out / "private.csv", "public": out / "public.csv"}
    table.to_csv(paths["raw"], index=False)
    table[~public].to_csv(paths["private"], index=False)
    table[public].to_csv(paths["public"], index=False)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()
    paths = write_raw(Path(args.data_dir) if args.data_dir else default_data_dir(), Path(args.out))
    print("wrote " + ", ".join(str(p) for p in paths.values()))


if __name__ == "__main__":
    main()
