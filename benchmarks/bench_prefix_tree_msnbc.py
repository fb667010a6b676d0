"""Benchmark: the prefix_tree mechanism on the full MSNBC data against ``independent`` (a script,
not a test).

    /tmp/venv/bin/python benchmarks/bench_prefix_tree_msnbc.py [--data-dir DIR]
        [--eps 0.5 1 2 5] [--trials 1] [--set h=8 --set threshold_ng_sd=1]

All 989,818 MSNBC sequences, record level, pure DP (delta = 0, so ``independent`` uses
Laplace). For every epsilon and trial (rng ``default_rng([0, trial])``: fixed seeds so
the figures repeat; the runner itself draws fresh OS entropy), both mechanisms run with their
default settings (``--set`` overrides
prefix_tree's) and are scored with

- ``count_query``: mean relative error of 1000 uniform location queries (seed 0), max |L| = 3
  and max |L| = 6 (``dp_arena.metrics.count_query.CountQuery``);
- ``frequent_patterns``: true positives among the top-100 contiguous patterns, exact ranking
  (``max_pattern_length=None``, the default metric configuration).

Printed: one row per (epsilon, mechanism) with the mean over trials of the scores, the fit
seconds, the peak resident memory during the fit (MB, the whole process: the loaded data
included), the released rows and the epsilon spent; a non-private reference row (the real
sequences cut to h locations: the error that truncation alone costs); then the acceptance
checks (prefix_tree's errors fall as epsilon grows and are below independent's at every
epsilon) and the process's peak memory.
"""

from __future__ import annotations

import argparse
import resource
import time
import warnings

import numpy as np
import pandas as pd
import yaml

from dp_arena.data.datasets import load_shared_dataset
from dp_arena.data.taxi.sequences import site_columns
from dp_arena.privacy.accounting import Budget, Ledger
from dp_arena.privacy.release import Releaser
from dp_arena.run.resources import ResourceMonitor
from dp_arena.mechanisms import make_mechanism
from dp_arena.metrics.count_query import CountQuery
from dp_arena.metrics.frequent_patterns import FrequentPatterns

SCORES = ("mre_max3", "mre_max6", "top100_tp")


def score(data, synthetic: pd.DataFrame, metrics: dict) -> dict[str, float]:
    return {name: float(metric.score(data, synthetic).scores[key])
            for name, (metric, key) in metrics.items()}


def truncated_truth(data, h: int) -> pd.DataFrame:
    """The real sequences with every location after the h-th replaced by the end value 0."""
    out = data.private.copy()
    for column in site_columns(out.columns)[h:]:
        out[column] = 0
    return out


def parse_settings(pairs: list[str]) -> dict:
    settings = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        settings[key] = yaml.safe_load(value)
    return settings


def run(data, eps_list: list[float], trials: int, params: dict, metrics: dict) -> pd.DataFrame:
    rows = []
    for eps in eps_list:
        budget = Budget(eps, 0.0)
        for label, name, settings in (("prefix_tree", "prefix_tree", params),
                                      ("independent", "independent", {})):
            for trial in range(trials):
                ledger = Ledger(budget, unit=data.ledger_unit)
                with ResourceMonitor() as fit:
                    out = make_mechanism(name, dict(settings)).fit_sample(
                        data, budget, Releaser(ledger), np.random.default_rng([0, trial]))
                problems = data.schema.problems(out)
                assert not problems, problems
                rows.append({"epsilon": eps, "mechanism": label, "trial": trial,
                             **score(data, out, metrics), "seconds": fit.seconds,
                             "peak_mb": fit.peak_mb, "rows": len(out),
                             "eps_spent": ledger.spent()[0]})
                print(f"  eps {eps:g} {label} trial {trial}: {fit.seconds:.1f} s", flush=True)
    return pd.DataFrame(rows)


def acceptance(table: pd.DataFrame) -> list[str]:
    """Verdicts: prefix_tree's errors fall with epsilon and beat independent's at every one."""
    means = table.groupby(["mechanism", "epsilon"])[list(SCORES)].mean()
    tree, base = means.loc["prefix_tree"], means.loc["independent"]
    out = []
    for column in ("mre_max3", "mre_max6"):
        falls = bool(np.all(np.diff(tree[column].to_numpy()) < 0))
        below = bool(np.all(tree[column] < base[column]))
        out.append(f"{column}: falls as epsilon grows: {'PASS' if falls else 'FAIL'}; "
                   f"below independent at every epsilon: {'PASS' if below else 'FAIL'}")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--eps", type=float, nargs="+", default=[0.5, 1.0, 2.0, 5.0])
    parser.add_argument("--trials", type=int, default=1)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a prefix_tree setting, e.g. --set h=8 (repeatable)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore", UserWarning)
    params = parse_settings(args.set)
    started = time.perf_counter()
    data = load_shared_dataset("msnbc", data_dir=args.data_dir)
    print(f"MSNBC: {len(data.private):,} sequences loaded in {time.perf_counter() - started:.1f} s;"
          f" prefix_tree settings: {params or 'defaults'}", flush=True)
    metrics = {"mre_max3": (CountQuery(max_size=3), "mean_relative_error"),
               "mre_max6": (CountQuery(max_size=6), "mean_relative_error"),
               "top100_tp": (FrequentPatterns(k=100, max_pattern_length=None),
                             "true_positives")}
    table = run(data, args.eps, args.trials, params, metrics)
    h = make_mechanism("prefix_tree", params).h  # type: ignore[attr-defined]
    reference = {"epsilon": float("inf"), "mechanism": f"truth cut to h={h} (non-private)",
                 "trial": 0, **score(data, truncated_truth(data, h), metrics)}
    summary = table.groupby(["epsilon", "mechanism"], sort=False).mean(numeric_only=True)
    summary = pd.concat([summary.drop(columns="trial"),
                         pd.DataFrame([reference]).set_index(["epsilon", "mechanism"])
                         .drop(columns="trial")])
    with pd.option_context("display.width", 200, "display.max_columns", 20,
                           "display.float_format", "{:.3f}".format):
        print(f"\nMSNBC, full data, delta 0, {args.trials} trial(s) per row (means):")
        print(summary.to_string())
    print()
    for line in acceptance(table):
        print(line)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"process peak memory: {peak:.2f} GB; total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
