"""Benchmark: time the taxi simulator (not a test).

    .venv/bin/python benchmarks/bench_taxi_sim.py [--trips 1000000] [--repeat 3]

Prints the best wall time, rows per second and the peak memory of one run (tracemalloc peak of
Python/numpy allocations, measured in a separate run since tracing slows things down) and the
process's peak resident set size.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
import tracemalloc

import numpy as np

from dp_arena.data.taxi.sim import simulate_trips


def time_once(n_trips: int, seed: int) -> float:
    started = time.perf_counter()
    df = simulate_trips(n_trips, np.random.default_rng(seed), "private")
    elapsed = time.perf_counter() - started
    assert len(df) == n_trips
    return elapsed


def traced_peak_bytes(n_trips: int, seed: int) -> int:
    tracemalloc.start()
    simulate_trips(n_trips, np.random.default_rng(seed), "private")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def max_rss_mib() -> float:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 2**20 if sys.platform == "darwin" else rss / 2**10


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trips", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    time_once(10_000, 0)  # warm up imports and caches
    times = [time_once(args.trips, seed) for seed in range(args.repeat)]
    best = min(times)
    peak = traced_peak_bytes(args.trips, 0)
    print(f"simulate_trips({args.trips:,}): best {best:.2f} s of {args.repeat} "
          f"(all: {', '.join(f'{t:.2f}' for t in times)}), {args.trips / best:,.0f} rows/s")
    print(f"peak traced memory {peak / 2**20:.0f} MiB "
          f"(output frame {args.trips * 13 * 8 / 2**20:.0f} MiB); "
          f"process max RSS {max_rss_mib():.0f} MiB")


if __name__ == "__main__":
    main()
