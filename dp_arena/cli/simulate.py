"""``dp-arena-simulate``: write the simulated Chicago taxi data (a private and a public year)
as CSV files plus the Sprint 3 ``parameters.json``.

    dp-arena-simulate --trips 50000 --seed 0 --out taxi_sim

writes ``taxi_sim/private.csv``, ``taxi_sim/public.csv`` and ``taxi_sim/parameters.json``,
which ``dataset=csv dataset.path=taxi_sim/private.csv dataset.public_path=taxi_sim/public.csv
dataset.schema=taxi_sim/parameters.json`` reads back.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from dp_arena.cli.exits import run_or_explain
from dp_arena.data.taxi.sim import simulate_years
from dp_arena.data.taxi.sprint3 import taxi_schema
from dp_arena.errors import ConfigError, DPArenaError

MIN_TRIPS = 1000


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="dp-arena-simulate",
        description="Write simulated Chicago taxi trips (private + public year) in the NIST "
                    "Sprint 3 schema.")
    parser.add_argument("--trips", type=int, default=50_000,
                        help="trips in the private year (default 50000, at least 1000)")
    parser.add_argument("--public-trips", type=int, default=None,
                        help="trips in the public year (default: same as --trips)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--out", default="taxi_sim",
                        help="output folder (default taxi_sim; created if missing)")
    return parser.parse_args(argv)


def check_trip_count(option: str, n: int) -> None:
    if n < MIN_TRIPS:
        raise ConfigError(f"{option} must be at least {MIN_TRIPS} (got {n})",
                          f"pass e.g. {option} 50000")


def prepare_output_dir(out: Path) -> None:
    """Create ``out`` and make sure a file can be written there."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".dp-arena-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise DPArenaError(f"cannot write to output folder {out} ({exc.strerror or exc})",
                           "pass --out a folder you can write to") from None


def write_csv(df: pd.DataFrame, path: Path) -> None:
    try:
        df.to_csv(path, index=False)
    except OSError as exc:
        raise DPArenaError(f"cannot write {path} ({exc.strerror or exc})",
                           "pass --out a folder you can write to") from None


def run(args: argparse.Namespace) -> None:
    n_private = args.trips
    n_public = args.trips if args.public_trips is None else args.public_trips
    check_trip_count("--trips", n_private)
    check_trip_count("--public-trips", n_public)
    out = Path(args.out).expanduser()
    prepare_output_dir(out)

    started = time.perf_counter()
    private, public = simulate_years(n_private=n_private, n_public=n_public, seed=args.seed)
    print(f"simulated {len(private):,} private and {len(public):,} public trips (seed "
          f"{args.seed}) in {time.perf_counter() - started:.2f} s")
    for name, df in (("private", private), ("public", public)):
        started = time.perf_counter()
        path = out / f"{name}.csv"
        write_csv(df, path)
        print(f"wrote {path} ({len(df):,} rows, {df['taxi_id'].nunique():,} taxis) in "
              f"{time.perf_counter() - started:.2f} s")
    schema_path = out / "parameters.json"
    try:
        taxi_schema().save(schema_path)
    except OSError as exc:
        raise DPArenaError(f"cannot write {schema_path} ({exc.strerror or exc})",
                           "pass --out a folder you can write to") from None
    print(f"wrote {schema_path} (Sprint 3 schema)")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    return run_or_explain("dp-arena-simulate", lambda: run(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
