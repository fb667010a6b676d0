"""Benchmark: what floating-point-safe noise costs, per mechanism (not a test).

    .venv/bin/python benchmarks/bench_samplers.py [--trials 3] [--epsilons 1 10]
        [--only independent mst_quick ...] [--legacy]

For every DP mechanism of the default competition (the options of ``dp_arena/conf/config.yaml``'s
sweep) on the default dataset (``taxi_sim``, 50,000 + 50,000 trips; the mechanisms fit its
training view, as runs do) at the default ``privacy=sprint3`` delta, runs ``fit_sample`` with
``privacy.sampler=numpy`` and with ``privacy.sampler=opendp`` on the same runs, alternating
the order (A B, then B A, ...) so that drift on a shared machine hits both, both under the zCDP
accountant (the opendp sampler accounts in zCDP; the same accountant on both sides compares the
samplers only). ``--legacy`` adds a third sampler in the rotation: ``opendp`` with OpenDP's
default lattice ``2^-1074`` for float draws (the sampler before the lattice was chosen per release;
:func:`dp_arena.privacy.release.lattice_k` chooses a coarser lattice now).

Prints per mechanism and epsilon the median wall seconds of each sampler and the ratio
opendp / numpy of the medians, both for wall seconds and for this process's CPU seconds (on
a loaded machine the CPU ratio is the steadier figure: the fit runs in this process, one
thread). Seconds are one whole ``fit_sample`` (noise, estimation and sampling; JAX
compilation excluded by a warm-up run per sampler). The goal: at most 1.5x.
"""

from __future__ import annotations

import argparse
import statistics
import time
from contextlib import contextmanager, nullcontext

import numpy as np

from dp_arena.data.datasets import load_taxi_sim
from dp_arena.privacy import release as release_module
from dp_arena.privacy.accounting import Budget, Ledger
from dp_arena.privacy.release import Releaser, make_sampler
from dp_arena.mechanisms import make_mechanism
from dp_arena.mechanisms.options import shipped_settings

OPTIONS = ("independent", "archetype", "prefix_tree", "mst_quick", "aim_quick", "adaptive_grid")
DELTA = 2.5e-5
#: the sampler before the lattice was chosen per release: OpenDP's float draws on its default (finest) lattice
LEGACY = "opendp_2^-1074"


def mechanism_of(option: str):
    base = option.split("_quick")[0]
    return make_mechanism(base, shipped_settings(option) or {})


@contextmanager
def finest_lattice():
    """OpenDP's default lattice 2^-1074 for float draws (the sampler before the lattice was chosen per release)."""
    chosen = release_module.lattice_k
    release_module.lattice_k = lambda sensitivity, size: release_module.LATTICE_K_RANGE[0]
    try:
        yield
    finally:
        release_module.lattice_k = chosen


def one_run(option: str, data, epsilon: float, sampler: str, seed: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one ``fit_sample``."""
    budget = Budget(epsilon, DELTA)
    legacy = sampler == LEGACY
    release = Releaser(Ledger(budget, "zcdp", unit=data.ledger_unit),
                       make_sampler("opendp" if legacy else sampler,
                                    np.random.default_rng([seed, 1])))
    mechanism = mechanism_of(option)
    with finest_lattice() if legacy else nullcontext():
        wall, cpu = time.perf_counter(), time.process_time()
        mechanism.fit_sample(data, budget, release, np.random.default_rng(seed))
        return time.perf_counter() - wall, time.process_time() - cpu


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 10.0])
    parser.add_argument("--only", nargs="+", default=list(OPTIONS))
    parser.add_argument("--legacy", action="store_true",
                        help=f"also run {LEGACY} (OpenDP's default float lattice)")
    args = parser.parse_args(argv)
    data = load_taxi_sim(n_private=50_000, n_public=50_000, seed=0).training_view()
    samplers = ["numpy", "opendp", *([LEGACY] if args.legacy else [])]
    head = "  ".join(f"{s + ' s':>16}" for s in samplers)
    ratios = "  ".join(f"{label + ' wall':>12}" for label in ("opendp", "legacy")[:len(samplers) - 1])
    print(f"{'mechanism':<14} {'eps':>5} {head}  {ratios}  {'opendp cpu':>10}"
          f"{'  legacy cpu' if args.legacy else ''}   (ratios: / numpy)", flush=True)
    for option in args.only:
        for eps in args.epsilons:
            for sampler in samplers:  # warm-up: imports, JAX compilation
                one_run(option, data, eps, sampler, 99)
            wall: dict[str, list[float]] = {s: [] for s in samplers}
            cpu: dict[str, list[float]] = {s: [] for s in samplers}
            for trial in range(args.trials):
                for sampler in (samplers if trial % 2 == 0 else samplers[::-1]):
                    w, c = one_run(option, data, eps, sampler, trial)
                    wall[sampler].append(w)
                    cpu[sampler].append(c)
            med = {s: statistics.median(wall[s]) for s in samplers}
            cmed = {s: statistics.median(cpu[s]) for s in samplers}
            cells = "  ".join(f"{med[s]:>16.2f}" for s in samplers)
            rs = "  ".join(f"{med[s] / med['numpy']:>12.2f}" for s in samplers[1:])
            legacy = f"  {cmed[LEGACY] / cmed['numpy']:>10.2f}" if args.legacy else ""
            print(f"{option:<14} {eps:>5g} {cells}  {rs}  "
                  f"{cmed['opendp'] / cmed['numpy']:>10.2f}{legacy}", flush=True)


if __name__ == "__main__":
    main()
