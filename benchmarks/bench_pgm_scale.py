"""Benchmark: AIM and MST at 10^6 rows (not a test).

    nice .venv/bin/python benchmarks/bench_pgm_scale.py [--rows 1000000] [--columns 20]
        [--table tree|taxi] [--mechanisms mst aim] [--epsilon 1] [--delta 1e-9]
        [--memory-mb 8000] [--time-limit-s 1200] [--sample 100000] [--k 3]

The table (``--table``):

- ``tree`` (default): a generated record-level table with known structure, ``--columns``
  categorical columns whose domain sizes cycle through :data:`DOMAINS` (2 to 32 values), drawn
  from a Bayesian network on a random tree (column j's parent is a seeded random earlier
  column; each conditional distribution a Dirichlet(0.5) draw), so every dependence is
  pairwise along the tree and MST's model class contains the truth;
- ``taxi``: the simulated taxi year (``dp_arena.data.taxi.sim``, ``load_taxi_sim`` with
  ``--rows`` private and 1,000 public trips, its 12 attributes and user-level unit: the
  mechanisms keep ``max_contrib`` trips per taxi as in the default competition).

Each mechanism runs with the settings ``dp_arena/conf/mechanism/NAME.yaml`` ships (the papers'
workload, the estimator that stops once converged) at (``--epsilon``, ``--delta``) under the zCDP accountant,
in a forked child under ``limits.memory_limit_mb=--memory-mb`` and ``--time-limit-s``
(:func:`dp_arena.run.isolation.call_isolated`: the run's own isolation, one BLAS thread). It
prints per fit: wall seconds of the fit, the peak resident memory of the child's tree as the
isolation sampled it (the table the child inherits from the parent included) and the child's
own ``ru_maxrss`` after the fit, and the mean total variation distance over the k-way
marginals (``dp_arena.metrics.kmarginal``, at most 100 of them, seeded) between a ``--sample``-row
sample of the real table and one of the synthetic table; sampling alone gives a TVD above 0,
printed first as the ``sampling floor`` (two disjoint samples of the real table). A fit that passes a limit
prints the limit it passed and the time it reached.

Noise: a generator seeded per mechanism (benchmark only; nothing is logged).
"""

from __future__ import annotations

import argparse
import resource
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dp_arena.data.datasets import Dataset
from dp_arena.data.schema import Schema
from dp_arena.errors import DPArenaError
from dp_arena.privacy.accounting import Budget, Ledger
from dp_arena.privacy.release import NumpySampler, Releaser
from dp_arena.run.isolation import call_isolated
from dp_arena.run.settings import Limits
from dp_arena.mechanisms import make_mechanism
from dp_arena.mechanisms.options import mechanism_conf
from dp_arena.metrics.kmarginal import KMarginal

#: Domain sizes of the generated columns, cycled.
DOMAINS = (2, 3, 5, 8, 12, 16, 24, 32, 4, 10)


def tree_parents(columns: int, rng: np.random.Generator) -> list[int | None]:
    """Column j's parent: a random earlier column (none for column 0)."""
    return [None] + [int(rng.integers(0, j)) for j in range(1, columns)]


def tree_table(rows: int, columns: int, seed: int = 0) -> tuple[pd.DataFrame, list]:
    """``rows`` rows drawn from a Bayesian network on a random tree (see the module
    docstring); the table of codes and the parents."""
    rng = np.random.default_rng(seed)
    sizes = [DOMAINS[j % len(DOMAINS)] for j in range(columns)]
    parents = tree_parents(columns, rng)
    codes = np.empty((rows, columns), dtype=np.int64)
    codes[:, 0] = rng.choice(sizes[0], size=rows, p=rng.dirichlet(np.full(sizes[0], 0.5)))
    for j in range(1, columns):
        p = parents[j]
        cpt = rng.dirichlet(np.full(sizes[j], 0.5), size=sizes[p])  # row: parent value
        cum = np.cumsum(cpt, axis=1)
        u = rng.random(rows)
        codes[:, j] = np.minimum((u[:, None] > cum[codes[:, p]]).sum(axis=1), sizes[j] - 1)
    names = [f"c{j:02d}" for j in range(columns)]
    return pd.DataFrame(codes, columns=names), parents


def tree_dataset(rows: int, columns: int, seed: int = 0) -> Dataset:
    frame, _ = tree_table(rows, columns, seed)
    schema = Schema.from_domain({c: DOMAINS[j % len(DOMAINS)]
                                 for j, c in enumerate(frame.columns)})
    return Dataset("tree", schema, frame, None, unit="record")


def taxi_dataset(rows: int) -> Dataset:
    from dp_arena.data.datasets import load_taxi_sim

    return load_taxi_sim(n_private=rows, n_public=1000, seed=0, n_heldout=0)


@dataclass(frozen=True)
class Fitted:
    seconds: float
    maxrss_mb: float
    tvd: float
    rows: int


def fit_and_score(name: str, data: Dataset, budget: Budget, seed: int, sample: int,
                  metric: KMarginal) -> Fitted:
    """In the child: fit, note ru_maxrss, score a sample against a sample."""
    release = Releaser(Ledger(budget, "zcdp", unit=data.ledger_unit),
                       NumpySampler(np.random.default_rng(10_000 + seed)))
    mech = make_mechanism(name, mechanism_conf(name))
    started = time.perf_counter()
    out = mech.fit_sample(data, budget, release, np.random.default_rng(seed))
    seconds = time.perf_counter() - started
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rng = np.random.default_rng(7)
    real = data.private.iloc[rng.choice(len(data.private), min(sample, len(data.private)),
                                        replace=False)]
    synth = out.iloc[rng.choice(len(out), min(sample, len(out)), replace=False)]
    scored = metric.score(Dataset(data.name, data.schema, real.reset_index(drop=True)),
                          synth.reset_index(drop=True))
    return Fitted(seconds, maxrss, scored.scores["mean_tvd"], len(out))


def sampling_floor(data: Dataset, sample: int, metric: KMarginal) -> tuple[float, int]:
    """The TVD two disjoint ``sample``-row samples of the real table have (about what a
    perfect synthesizer would score here; half the rows each when the table is smaller, which
    puts the floor about sqrt(2) above that of ``sample`` rows), and their size."""
    n = min(sample, len(data.private) // 2)
    order = np.random.default_rng(11).permutation(len(data.private))
    one, two = (data.private.iloc[order[i * n:(i + 1) * n]].reset_index(drop=True)
                for i in (0, 1))
    return metric.score(Dataset(data.name, data.schema, one), two).scores["mean_tvd"], n


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--columns", type=int, default=20)
    parser.add_argument("--table", choices=["tree", "taxi"], default="tree")
    parser.add_argument("--mechanisms", nargs="*", default=["mst", "aim"])
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-9)
    parser.add_argument("--memory-mb", type=float, default=8000)
    parser.add_argument("--time-limit-s", type=float, default=1200)
    parser.add_argument("--sample", type=int, default=100_000)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    started = time.perf_counter()
    data = (tree_dataset(args.rows, args.columns) if args.table == "tree"
            else taxi_dataset(args.rows))
    built = time.perf_counter() - started
    parent_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{args.table}: {len(data.private):,} rows, {len(data.schema.attributes)} attributes "
          f"({data.unit}-level), built in {built:.1f} s; parent process {parent_mb:.0f} MB; "
          f"eps={args.epsilon:g} delta={args.delta:g} zcdp; limits: "
          f"{args.memory_mb:g} MB, {args.time_limit_s:g} s", flush=True)
    metric = KMarginal(k=args.k, max_marginals=100, seed=0)
    floor, half = sampling_floor(data, args.sample, metric)
    print(f"sampling floor: TVD{args.k} {floor:.4f} between two disjoint {half:,}-row samples "
          f"of the real table", flush=True)
    budget = Budget(args.epsilon, args.delta)
    limits = Limits(time_limit_s=args.time_limit_s, memory_limit_mb=args.memory_mb)
    for name in args.mechanisms:
        t0 = time.perf_counter()
        try:
            fitted, report = call_isolated(
                lambda n=name: fit_and_score(n, data, budget, args.seed, args.sample, metric),
                limits)
        except DPArenaError as exc:
            print(f"{name:4s}: stopped after {time.perf_counter() - t0:.0f} s: "
                  f"{str(exc).splitlines()[0]}", flush=True)
            continue
        print(f"{name:4s}: fit {fitted.seconds:7.1f} s (child {report.seconds:.1f} s with "
              f"scoring), peak RSS {report.peak_rss_mb:6.0f} MB (child ru_maxrss "
              f"{fitted.maxrss_mb:.0f} MB), TVD{args.k} {fitted.tvd:.4f} on {args.sample:,}-row "
              f"samples, {fitted.rows:,} rows out", flush=True)


if __name__ == "__main__":
    main()
