"""Benchmark: MST and AIM on the real adult data beside smartnoise-synth (not a test).

    python benchmarks/bench_pgm_adult.py [--seeds 3] [--mechanisms mst aim] [--no-peer]
        [--accountant zcdp] [--epsilon 1] [--delta 1e-9] [--fast] [--fresh-noise]

Reads ``adult`` from the shared data folder (``harness.data.datasets.load_shared_dataset``) and
runs each mechanism with the papers' settings (``PAPER`` below; ``--fast`` uses
``conf/mechanism/*_quick.yaml`` instead) at (epsilon, delta) = (1, 1e-9) under the zCDP
accountant the papers use. For every seed it runs ours, then the peer (smartnoise-synth's
``smartnoise_mst`` / ``smartnoise_aim`` with its defaults, in its own environment: install it
with ``dp-arena-contestants install smartnoise``), alternating A B A B so that a change in the
machine's load hits both. It prints per run and as means: the mean total variation distance
over *all* 364 3-way marginals (``metrics.kmarginal``, k=3), the wall seconds and the CPU
seconds of the fit (ours: this process, JAX's threads included; the peer: its child
processes, interpreter start and imports included), and the ratio ours / peer.

Noise: by default each seed's noise comes from a generator seeded with that seed (benchmark
only: paired comparisons before and after a change; nothing is logged); ``--fresh-noise``
draws from OS entropy as real runs do. The peer draws its own noise.

Goals (issue 31; 2 idle cores): MST mean TVD <= 0.113 at <= 1/3 of smartnoise's time, AIM
mean TVD <= 0.096 at <= 1/10 of smartnoise's default time.
"""

from __future__ import annotations

import argparse
import resource
import time
from dataclasses import dataclass

import numpy as np

from harness.data.datasets import load_shared_dataset
from harness.errors import DPArenaError
from harness.privacy.accounting import Budget, Ledger
from harness.privacy.release import NumpySampler, Releaser
from mechanisms import make_mechanism, mechanism_conf
from metrics.kmarginal import KMarginal

#: The papers' settings (reference implementation defaults: ryan112358/private-pgm
#: mechanisms/mst.py and aim.py); conf/mechanism/{mst,aim}.yaml ship them too.
PAPER = {
    "mst": {"iters": 10000, "compress": True},
    "aim": {"workload_degree": 3, "rounds": None, "max_model_size": 80.0, "iters": 1000,
            "final_iters": 1000, "max_cells": 10000},
}
PEERS = {"mst": "smartnoise_mst", "aim": "smartnoise_aim"}
GOALS = {"mst": (0.113, 1 / 3), "aim": (0.096, 1 / 10)}


@dataclass
class Fit:
    tvd: float
    wall: float
    cpu: float
    rows: int


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def fit(name: str, params: dict, data, budget: Budget, accountant: str, seed: int,
        fresh_noise: bool, metric: KMarginal) -> Fit:
    ledger = Ledger(budget, accountant)
    sampler = NumpySampler(np.random.default_rng(None if fresh_noise else 10_000 + seed))
    mech = make_mechanism(name, params)
    wall, cpu, child = time.perf_counter(), time.process_time(), children_cpu()
    out = mech.fit_sample(data, budget, Releaser(ledger, sampler=sampler),
                          np.random.default_rng(seed))
    wall = time.perf_counter() - wall
    cpu = (time.process_time() - cpu) + (children_cpu() - child)
    return Fit(metric.score(data, out).scores["mean_tvd"], wall, cpu, len(out))


def peer_available(name: str) -> str | None:
    """``None`` if the peer can run, else why not."""
    try:
        make_mechanism(name, {})
    except DPArenaError as exc:
        return str(exc).splitlines()[0]
    return None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--mechanisms", nargs="+", default=["mst", "aim"], choices=list(PAPER))
    parser.add_argument("--accountant", default="zcdp", choices=["gdp", "zcdp"])
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-9)
    parser.add_argument("--fast", action="store_true",
                        help="use the budget presets conf/mechanism/NAME_quick.yaml")
    parser.add_argument("--no-peer", action="store_true", help="run ours only")
    parser.add_argument("--fresh-noise", action="store_true",
                        help="draw our noise from OS entropy (default: seeded per seed)")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="override our mechanism's settings, e.g. tol=null")
    args = parser.parse_args(argv)

    data = load_shared_dataset("adult")
    metric = KMarginal(k=3, max_marginals=1000)
    budget = Budget(args.epsilon, args.delta)
    print(f"adult: {len(data.private):,} rows, {len(data.schema.attributes)} attributes; "
          f"eps={args.epsilon:g} delta={args.delta:g} accountant={args.accountant}; "
          f"noise {'fresh' if args.fresh_noise else 'seeded per seed'}", flush=True)
    for name in args.mechanisms:
        params = mechanism_conf(f"{name}_quick") if args.fast else {**mechanism_conf(name),
                                                                     **PAPER[name]}
        for item in args.set:
            key, _, value = item.partition("=")
            params[key] = None if value in ("null", "None") else type(
                params.get(key) if params.get(key) is not None else 1.0)(value)
        peer = None if args.no_peer else PEERS[name]
        why = peer_available(peer) if peer else None
        if why:
            print(f"{peer}: not run ({why})", flush=True)
            peer = None
        ours, theirs = [], []
        for seed in range(args.seeds):
            ours.append(fit(name, params, data, budget, args.accountant, seed,
                            args.fresh_noise, metric))
            line = (f"{name} seed={seed}: TVD {ours[-1].tvd:.4f} {ours[-1].wall:6.1f} s "
                    f"(cpu {ours[-1].cpu:6.1f} s) rows {ours[-1].rows}")
            if peer:
                theirs.append(fit(peer, {}, data, budget, args.accountant, seed, True, metric))
                line += (f" | {peer}: TVD {theirs[-1].tvd:.4f} {theirs[-1].wall:6.1f} s "
                         f"(cpu {theirs[-1].cpu:6.1f} s) | time ratio "
                         f"{ours[-1].wall / theirs[-1].wall:.3f} (cpu "
                         f"{ours[-1].cpu / theirs[-1].cpu:.3f})")
            print(line, flush=True)
        summary(name, params, ours, theirs, peer)


def summary(name: str, params: dict, ours: list[Fit], theirs: list[Fit],
            peer: str | None) -> None:
    def stats(fits: list[Fit]) -> str:
        tvd = [f.tvd for f in fits]
        return (f"TVD {np.mean(tvd):.4f} (seeds {' / '.join(f'{t:.4f}' for t in tvd)}; "
                f"std {np.std(tvd):.4f}), {np.mean([f.wall for f in fits]):.1f} s/run "
                f"(cpu {np.mean([f.cpu for f in fits]):.1f} s)")

    goal_tvd, goal_ratio = GOALS[name]
    print(f"{name} {params}", flush=True)
    print(f"  ours: {stats(ours)}; goal TVD <= {goal_tvd}: "
          f"{np.mean([f.tvd for f in ours]) <= goal_tvd}")
    if theirs:
        wall = sum(f.wall for f in ours) / sum(f.wall for f in theirs)
        cpu = sum(f.cpu for f in ours) / sum(f.cpu for f in theirs)
        print(f"  {peer}: {stats(theirs)}")
        print(f"  time ours / {peer}: wall {wall:.3f}, cpu {cpu:.3f}; goal <= {goal_ratio:.3f}: "
              f"{max(wall, cpu) <= goal_ratio}", flush=True)


if __name__ == "__main__":
    main()
