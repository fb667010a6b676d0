"""Benchmark: what the held-out utility scores (ml_efficacy, propensity, range_query) cost.

    /work/main/.venv/bin/python benchmarks/bench_heldout_scores.py [--holdout 0.2] [--no-run]

On adult (48,842 rows; 20% held out by a seeded split made here) or, without the shared data,
the simulated taxi private table (50,000 rows; range_query and propensity only, it has no
target), single-threaded (threadpoolctl limit 1): seconds of ``kmarginal`` + ``count_query``
scoring against the same plus the three new metrics, on a synthetic table that is an
independent-marginals copy of the training part; then (unless ``--no-run``) the wall time of
one ``dp-arena`` run of ``mechanism=mst_quick`` with ``metrics=kmarginal`` and
``limits.threads=1`` (CLI start-up included), and the new scores' seconds as a share of it.
The issue's bar: at most 15% of a run's wall time.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from harness.data.datasets import Dataset, load_dataset
from harness.errors import DPArenaError
from metrics import make_metric

NEW = ("ml_efficacy", "propensity", "range_query")
BASE = ("kmarginal", "count_query")


def benchmark_data(holdout: float) -> Dataset:
    """Adult with a seeded held-out share and its income target, else the taxi simulation."""
    try:
        data = load_dataset({"name": "adult"})
    except DPArenaError:
        return load_dataset({"name": "taxi_sim", "n_private": 50_000, "n_public": 1000})
    order = np.random.default_rng(0).permutation(len(data.private))
    cut = int(holdout * len(order))
    return replace(data, private=data.private.iloc[np.sort(order[cut:])].reset_index(drop=True),
                   heldout=data.private.iloc[np.sort(order[:cut])].reset_index(drop=True),
                   target="income>50K")


def independent_copy(data: Dataset) -> object:
    rng = np.random.default_rng(1)
    out = data.private.copy()
    for column in out.columns:
        out[column] = rng.permutation(out[column].to_numpy())
    return out


def seconds_to_score(names: tuple[str, ...], data: Dataset, synthetic) -> dict[str, float]:
    out = {}
    for name in names:
        metric = make_metric(name, None)
        if metric.not_applicable_reason(data) is not None:
            continue
        started = time.perf_counter()
        metric.score(data, synthetic)
        out[name] = time.perf_counter() - started
    return out


def run_seconds() -> float:
    """Wall time of one CLI run of mst_quick on adult with the k-marginal score."""
    cli = Path(sys.executable).with_name("dp-arena")
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        subprocess.run([str(cli), "dataset=adult", "mechanism=mst_quick", "metrics=kmarginal",
                        "limits.threads=1", f"tracking.uri=sqlite:///{folder}/mlflow.db",
                        f"hydra.run.dir={folder}/run"], cwd=folder, check=True,
                       capture_output=True)
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--holdout", type=float, default=0.2)
    parser.add_argument("--no-run", action="store_true")
    args = parser.parse_args()
    data = benchmark_data(args.holdout)
    synthetic = independent_copy(data)
    with threadpool_limits(1):
        base = seconds_to_score(BASE, data, synthetic)
        new = seconds_to_score(NEW, data, synthetic)
    base_total, new_total = sum(base.values()), sum(new.values())
    print(f"dataset {data.name}: training rows {len(data.private)}")
    for name, seconds in {**base, **new}.items():
        print(f"  {name:12s} {seconds:7.2f} s")
    print(f"kmarginal+count_query {base_total:.2f} s; with the new scores "
          f"{base_total + new_total:.2f} s (x{(base_total + new_total) / base_total:.2f})")
    if not args.no_run:
        run = run_seconds()
        print(f"one mst_quick run (fit + kmarginal, CLI wall time) {run:.2f} s; the new scores "
              f"add {new_total:.2f} s = {100 * new_total / run:.0f}% of it (bar: 15%)")


if __name__ == "__main__":
    main()
