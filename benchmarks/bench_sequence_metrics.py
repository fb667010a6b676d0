"""Benchmark of the sequence metrics on the full MSNBC data (a script, not a test).

10,000 location count queries (sizes 1..6) and the top-300 frequent patterns over all 989,818
MSNBC sequences, against a same-size synthetic set: the real sequences shuffled, with 10% of
their locations replaced by uniform random page categories (lengths unchanged).
Prints seconds per step and the process's peak memory (max RSS). Target: both metrics (default
settings, max_pattern_length=5) together under 60 s on 2 cores and under 4 GB; the exact top-k
(max_pattern_length=None) is timed too, for information.

    python benchmarks/bench_sequence_metrics.py [--data-dir DIR] [--queries N] [--k K]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
import warnings

import numpy as np
import pandas as pd

from dp_arena.data.datasets import Dataset, shared_data_dir
from dp_arena.data.schema import Schema
from dp_arena.metrics.count_query import CountQuery
from dp_arena.metrics.frequent_patterns import FrequentPatterns


def perturbed_copy(real: pd.DataFrame, fraction: float, seed: int) -> pd.DataFrame:
    """Rows shuffled; ``fraction`` of the non-end cells set to a uniform category 1..17."""
    rng = np.random.default_rng(seed)
    values = real.to_numpy()[rng.permutation(len(real))]
    alive = np.cumsum(values == 0, axis=1) == 0
    change = alive & (rng.random(values.shape) < fraction)
    values[change] = rng.integers(1, 18, size=int(change.sum()))
    return pd.DataFrame(values, columns=real.columns)


def peak_rss_gb() -> float:
    """Peak resident memory of this process in GB (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--max-size", type=int, default=6)
    parser.add_argument("--k", type=int, default=300)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore", UserWarning)  # the length-5 cut is reported, not timed

    folder = shared_data_dir(args.data_dir)
    t0 = time.perf_counter()
    real = pd.read_csv(folder / "msnbc.zip")
    schema = Schema.load(folder / "msnbc-domain.json")
    data = Dataset("msnbc", schema, real)
    synthetic = perturbed_copy(real, 0.10, seed=1)
    t_load = time.perf_counter() - t0
    print(f"load + synthetic copy: {t_load:6.2f} s  ({len(real):,} sequences each)")

    t0 = time.perf_counter()
    cq = CountQuery(n_queries=args.queries, max_size=args.max_size).score(data, synthetic)
    t_cq = time.perf_counter() - t0
    print(f"count_query ({args.queries:,} queries): {t_cq:6.2f} s  "
          f"mean relative error {cq.scores['mean_relative_error']:.4f}")

    t0 = time.perf_counter()
    fp = FrequentPatterns(k=args.k).score(data, synthetic)
    t_fp = time.perf_counter() - t0
    print(f"frequent_patterns (top-{args.k}):  {t_fp:6.2f} s  "
          f"TP {fp.scores['true_positives']:.0f}, FP {fp.scores['false_positives']:.0f}")

    t0 = time.perf_counter()
    exact = FrequentPatterns(k=args.k, max_pattern_length=None).score(data, synthetic)
    t_exact = time.perf_counter() - t0
    print(f"frequent_patterns (top-{args.k}, exact: max_pattern_length=None): "
          f"{t_exact:6.2f} s  TP {exact.scores['true_positives']:.0f}, "
          f"FP {exact.scores['false_positives']:.0f}")

    total = t_cq + t_fp
    peak = peak_rss_gb()
    print(f"both metrics: {total:.2f} s; peak memory (max RSS, whole process): {peak:.2f} GB")
    ok = total < 60 and peak < 4
    print("target (< 60 s, < 4 GB):", "met" if ok else "NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
