"""Benchmark: MST and AIM on the real adult data, today's estimator settings beside the new
ones (and optionally beside smartnoise-synth); not a test.

    python benchmarks/bench_pgm_adult.py [--seeds 3] [--mechanisms mst aim] [--peer]
        [--accountant zcdp] [--epsilon 1] [--delta 1e-9] [--fast] [--fresh-noise]
        [--set KEY=VALUE ...]

Reads ``adult`` from the shared data folder (``dp_arena.data.datasets.load_shared_dataset``) and
runs each mechanism with the papers' settings (``PAPER`` below; ``--fast`` uses
``dp_arena/conf/mechanism/*_quick.yaml`` instead) at (epsilon, delta) = (1, 1e-9) under the zCDP
accountant the papers use, twice per seed: with the estimator settings from before the stopping rule
(``TODAY``: ``tol=1e-7``, ``patience=2``, every fit from the step ``2 / (L N)``) and with the
settings ``dp_arena/conf/mechanism/NAME.yaml`` ships now (``new``), alternating A B A B so that a
change in the machine's load hits both. ``--peer`` adds smartnoise-synth's ``smartnoise_mst``
/ ``smartnoise_aim`` with its defaults (in its own environment: ``dp-arena-contestants
install smartnoise``) after each pair. It prints per run and as means: the mean total
variation distance over *all* 364 3-way marginals (``dp_arena.metrics.kmarginal``, k=3), the wall
seconds and the CPU seconds of the fit (ours: this process; the peer: its child processes,
interpreter start and imports included), and the ratios new / today (and ours / peer).

Noise: by default each seed's noise comes from a generator seeded with that seed (benchmark
only: today and new see the same noise until their paths part; nothing is logged);
``--fresh-noise`` draws from OS entropy as real runs do. The peer draws its own noise.

Goals (same machine, same run): new AIM mean TVD <= 0.092 in at most 1/4 of
today's time per fit, new MST mean TVD <= 0.113 in at most 1/3. The goals against
smartnoise (``--peer``): MST at <= 1/3 of its time, AIM at <= 1/10.
"""

from __future__ import annotations

import argparse
import resource
import time
from dataclasses import dataclass

import numpy as np

from dp_arena.data.datasets import load_shared_dataset
from dp_arena.errors import DPArenaError
from dp_arena.privacy.accounting import Budget, Ledger
from dp_arena.privacy.release import NumpySampler, Releaser
from dp_arena.mechanisms import make_mechanism
from dp_arena.mechanisms.options import mechanism_conf
from dp_arena.metrics.kmarginal import KMarginal

#: The papers' settings (reference implementation defaults: ryan112358/private-pgm
#: dp_arena/mechanisms/mst.py and aim.py); dp_arena/conf/mechanism/{mst,aim}.yaml ship them too.
PAPER = {
    "mst": {"iters": 10000, "compress": True},
    "aim": {"workload_degree": 3, "rounds": None, "max_model_size": 80.0, "iters": 1000,
            "final_iters": 1000, "max_cells": 10000},
}
#: The estimator settings from before the stopping rule (the baseline), kept selectable.
TODAY = {"tol": 1e-7, "patience": 2}
TODAY_AIM = {**TODAY, "warm_step": False, "final_tol": 1e-7}
PEERS = {"mst": "smartnoise_mst", "aim": "smartnoise_aim"}
#: (TVD at most, time new / today at most)
GOALS = {"mst": (0.113, 1 / 3), "aim": (0.092, 1 / 4)}
#: (time ours / peer at most)
PEER_GOALS = {"mst": 1 / 3, "aim": 1 / 10}


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
                        help="use the budget presets dp_arena/conf/mechanism/NAME_quick.yaml")
    parser.add_argument("--peer", action="store_true",
                        help="also run smartnoise-synth's mechanism after each pair")
    parser.add_argument("--no-peer", action="store_true",
                        help="ours only (the default; kept for old command lines)")
    parser.add_argument("--fresh-noise", action="store_true",
                        help="draw our noise from OS entropy (default: seeded per seed)")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="override the new settings, e.g. tol=null")
    args = parser.parse_args(argv)

    data = load_shared_dataset("adult")
    metric = KMarginal(k=3, max_marginals=1000)
    budget = Budget(args.epsilon, args.delta)
    print(f"adult: {len(data.private):,} rows, {len(data.schema.attributes)} attributes; "
          f"eps={args.epsilon:g} delta={args.delta:g} accountant={args.accountant}; "
          f"noise {'fresh' if args.fresh_noise else 'seeded per seed'}", flush=True)
    for name in args.mechanisms:
        base = mechanism_conf(f"{name}_quick") if args.fast else {**mechanism_conf(name),
                                                                   **PAPER[name]}
        new = {**base}
        for item in args.set:
            key, _, value = item.partition("=")
            new[key] = parse_value(value, new.get(key))
        today = {**base, **(TODAY_AIM if name == "aim" else TODAY)}
        peer = PEERS[name] if args.peer and not args.no_peer else None
        why = peer_available(peer) if peer else None
        if why:
            print(f"{peer}: not run ({why})", flush=True)
            peer = None
        runs: dict[str, list[Fit]] = {"today": [], "new": [], "peer": []}
        for seed in range(args.seeds):
            for label, params in (("today", today), ("new", new)):
                runs[label].append(fit(name, params, data, budget, args.accountant, seed,
                                       args.fresh_noise, metric))
                print(f"{name} seed={seed} {label:5s}: {describe(runs[label][-1])}", flush=True)
            print(f"{name} seed={seed} new / today: time "
                  f"{runs['new'][-1].wall / runs['today'][-1].wall:.3f} (cpu "
                  f"{runs['new'][-1].cpu / runs['today'][-1].cpu:.3f})", flush=True)
            if peer:
                runs["peer"].append(fit(peer, {}, data, budget, args.accountant, seed, True,
                                        metric))
                print(f"{name} seed={seed} {peer}: {describe(runs['peer'][-1])}", flush=True)
        summary(name, today, new, runs, peer)


def parse_value(value: str, current):
    """A ``--set`` value: null/None, true/false, else the type of the current setting."""
    if value in ("null", "None"):
        return None
    if value in ("true", "false"):
        return value == "true"
    return type(current if current is not None else 1.0)(value)


def describe(f: Fit) -> str:
    return f"TVD {f.tvd:.4f} {f.wall:6.1f} s (cpu {f.cpu:6.1f} s) rows {f.rows}"


def summary(name: str, today: dict, new: dict, runs: dict[str, list[Fit]],
            peer: str | None) -> None:
    def stats(fits: list[Fit]) -> str:
        tvd = [f.tvd for f in fits]
        return (f"TVD {np.mean(tvd):.4f} (seeds {' / '.join(f'{t:.4f}' for t in tvd)}; "
                f"std {np.std(tvd):.4f}), {np.mean([f.wall for f in fits]):.1f} s/fit "
                f"(cpu {np.mean([f.cpu for f in fits]):.1f} s)")

    def ratio(a: list[Fit], b: list[Fit]) -> tuple[float, float]:
        return (sum(f.wall for f in a) / sum(f.wall for f in b),
                sum(f.cpu for f in a) / sum(f.cpu for f in b))

    goal_tvd, goal_ratio = GOALS[name]
    changed = {k: v for k, v in new.items() if today.get(k) != v}
    print(f"{name} {new}", flush=True)
    print(f"  today ({', '.join(f'{k}={today[k]}' for k in changed)}): {stats(runs['today'])}")
    print(f"  new   ({', '.join(f'{k}={v}' for k, v in changed.items())}): "
          f"{stats(runs['new'])}")
    wall, cpu = ratio(runs["new"], runs["today"])
    tvd_ok = bool(np.mean([f.tvd for f in runs["new"]]) <= goal_tvd)
    print(f"  time new / today: wall {wall:.3f}, cpu {cpu:.3f}; goal TVD <= {goal_tvd}: "
          f"{tvd_ok}; goal time <= {goal_ratio:.3f}: {max(wall, cpu) <= goal_ratio}",
          flush=True)
    if peer and runs["peer"]:
        wall, cpu = ratio(runs["new"], runs["peer"])
        print(f"  {peer}: {stats(runs['peer'])}")
        print(f"  time new / {peer}: wall {wall:.3f}, cpu {cpu:.3f}; goal <= "
              f"{PEER_GOALS[name]:.3f}: {max(wall, cpu) <= PEER_GOALS[name]}", flush=True)


if __name__ == "__main__":
    main()
