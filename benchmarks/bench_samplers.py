"""Benchmark: what floating-point-safe noise costs, per mechanism (not a test).

    .venv/bin/python benchmarks/bench_samplers.py [--trials 2] [--epsilons 1 10]
        [--only independent mst_quick ...]

For every DP mechanism of the default competition (the options of ``conf/config.yaml``'s
sweep) on the default dataset (``taxi_sim``, 50,000 + 50,000 trips) at the default
``privacy=sprint3`` delta, runs ``fit_sample`` with ``privacy.sampler=numpy`` and with
``privacy.sampler=opendp`` in turn (A B A B ..., so drift on a shared machine hits both), both
under the zCDP accountant (the opendp sampler accounts in zCDP; the same accountant on both
sides compares the samplers only), and prints the median seconds of each and the ratio
opendp / numpy. The goal (issue 24): at most 1.5x for every mechanism. Seconds are the wall time
of one whole run (noise, estimation and sampling; JAX compilation included).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from harness.data.datasets import load_taxi_sim
from harness.privacy.accounting import Budget, Ledger
from harness.privacy.release import Releaser, make_sampler
from mechanisms import make_mechanism, shipped_settings

OPTIONS = ("independent", "archetype", "prefix_tree", "mst_quick", "aim_quick", "adaptive_grid")
DELTA = 2.5e-5


def mechanism_of(option: str):
    base = option.split("_quick")[0]
    return make_mechanism(base, shipped_settings(option) or {})


def one_run(option: str, data, epsilon: float, sampler: str, seed: int) -> float:
    budget = Budget(epsilon, DELTA)
    release = Releaser(Ledger(budget, "zcdp", unit=data.ledger_unit),
                       make_sampler(sampler, np.random.default_rng([seed, 1])))
    started = time.perf_counter()
    mechanism_of(option).fit_sample(data, budget, release, np.random.default_rng(seed))
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 10.0])
    parser.add_argument("--only", nargs="+", default=list(OPTIONS))
    args = parser.parse_args(argv)
    data = load_taxi_sim(n_private=50_000, n_public=50_000, seed=0)
    print(f"{'mechanism':<14} {'eps':>5} {'numpy s':>9} {'opendp s':>9} {'ratio':>6}")
    for option in args.only:
        for eps in args.epsilons:
            for sampler in ("numpy", "opendp"):  # warm-up: imports, JAX compilation
                one_run(option, data, eps, sampler, 99)
            times: dict[str, list[float]] = {"numpy": [], "opendp": []}
            for trial in range(args.trials):
                for sampler in ("numpy", "opendp"):
                    times[sampler].append(one_run(option, data, eps, sampler, trial))
            a, b = (statistics.median(times[s]) for s in ("numpy", "opendp"))
            print(f"{option:<14} {eps:>5g} {a:>9.2f} {b:>9.2f} {b / a:>6.2f}", flush=True)


if __name__ == "__main__":
    main()
