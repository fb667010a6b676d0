"""Benchmark: ``adaptive_grid`` on generic tables of our own making (on held-out
tables it did not improve from epsilon 1 to 10 and lost to ``independent``).

    python benchmarks/bench_adaptive_grid_generic.py [--tables salary loans fire]
        [--epsilons 1 10] [--trials 2] [--rows 20000]
        [--variants default iters=1000 ...] [--mechanisms independent mst_quick]

Each table is drawn from a seeded random Bayesian network over mixed columns shaped like the
held-out CSVs (record level, no public part; numeric columns as 10 quantile bins, the
schema proposer's default, categoricals of 2-60 values; every column depends on one or two
earlier ones): ``salary`` (12 columns), ``loans`` (30, mostly numeric), ``fire`` (60, wider
categoricals).
Every mechanism runs in this process (``fit_sample`` with its ledger, as the runner does) at
each epsilon (delta = the default rule's 1e-10 for tables without a public figure, gdp) and
is scored with ``dp_arena.metrics.kmarginal`` (k=2, all pairs; and k=3, 100 sampled triples). Prints
one row per table x mechanism/variant x epsilon (mean over trials) and, per variant, the mean
gain from the smallest to the largest epsilon and the mean difference to ``independent``.

A variant is ``adaptive_grid`` with settings changed, written ``key=value[,key=value]``
(``default``: the shipped dp_arena/conf/mechanism/adaptive_grid.yaml).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from dp_arena.data.datasets import Dataset
from dp_arena.data.schema import Column, Schema
from dp_arena.privacy.accounting import Budget, Ledger
from dp_arena.privacy.release import Releaser
from dp_arena.mechanisms import make_mechanism
from dp_arena.mechanisms.options import mechanism_conf
from dp_arena.metrics.kmarginal import KMarginal

#: (number of columns, categorical widths to draw from, share of numeric columns)
TABLES = {"salary": (12, (2, 3, 5, 8, 12), 0.5),
          "loans": (30, (2, 3, 4, 7, 15, 30), 0.6),
          "fire": (60, (2, 5, 10, 25, 40, 60), 0.3)}


def bayes_net_table(name: str, n: int, seed: int = 0, public: bool = False) -> Dataset:
    """A record-level table of ``n`` rows drawn from a random Bayesian network (see the module
    docstring); numeric columns are bin codes 0..9 decoded to the bin's integer values. With
    ``public``, a public part of another ``n`` rows drawn from the same network."""
    frame, schema = network_sample(name, 2 * n if public else n, seed)
    return Dataset(name if not public else f"{name}+public", schema, frame.iloc[:n],
                   frame.iloc[n:].reset_index(drop=True) if public else None, unit="record")


def network_sample(name: str, n: int, seed: int) -> tuple[pd.DataFrame, Schema]:
    n_cols, widths, numeric_share = TABLES[name]
    rng = np.random.default_rng([seed, n_cols])
    columns, codes = [], {}
    for i in range(n_cols):
        numeric = rng.random() < numeric_share
        size = 10 if numeric else int(rng.choice(widths))
        parents = [] if i == 0 else list(rng.choice(i, size=min(i, int(rng.integers(1, 3))),
                                                    replace=False))
        parent_sizes = [10 if columns[p].kind == "numeric" else columns[p].size
                        for p in parents]
        n_configs = int(np.prod(parent_sizes)) if parents else 1
        table = rng.dirichlet(np.full(size, 0.4), size=n_configs)  # sharp conditionals
        key = np.zeros(n, dtype=np.int64)
        for p, s in zip(parents, parent_sizes):
            key = key * s + codes[f"x{p}"]
        u = rng.random(n)
        codes[f"x{i}"] = (u[:, None] > np.cumsum(table[key], axis=1)).sum(axis=1).clip(0,
                                                                                      size - 1)
        if numeric:
            columns.append(Column(f"x{i}", "numeric", dtype="int64", min=0, max=99,
                                  bins=tuple(float(10 * b) for b in range(1, 10))))
        else:
            columns.append(Column(f"x{i}", "categorical", values=tuple(range(size))))
    frame = pd.DataFrame({c.name: (codes[c.name] * 10 + rng.integers(0, 10, n)
                                   if c.kind == "numeric" else codes[c.name])
                          for c in columns})
    return frame, Schema(tuple(columns))


def settings_of(variant: str) -> tuple[str, dict]:
    """(mechanism, settings) of a variant: ``default``, ``key=value,...`` (adaptive_grid), or
    another mechanism's conf name (``independent``, ``mst_quick``)."""
    import yaml

    from dp_arena.resources import config_dir

    if variant != "default" and "=" not in variant:
        conf = yaml.safe_load((config_dir() / "mechanism" / f"{variant}.yaml").read_text())
        return conf.pop("name"), conf or {}
    params = mechanism_conf("adaptive_grid")
    if variant != "default":
        for item in variant.split(","):
            key, _, value = item.partition("=")
            params[key] = yaml.safe_load(value)
    return "adaptive_grid", params


def one_run(data: Dataset, variant: str, eps: float, seed: int) -> dict:
    name, params = settings_of(variant)
    budget = Budget(eps, 1e-10)
    ledger = Ledger(budget, "gdp")
    started = time.perf_counter()
    out = make_mechanism(name, params).fit_sample(data, budget, Releaser(ledger),
                                                  np.random.default_rng(seed))
    seconds = time.perf_counter() - started
    k2 = KMarginal(k=2, max_marginals=1000).score(data, out).scores["score"]
    k3 = KMarginal(k=3, max_marginals=100).score(data, out).scores["score"]
    return {"table": data.name, "variant": variant, "epsilon": eps, "trial": seed, "k2": k2,
            "k3": k3, "rows": len(out), "seconds": seconds,
            "spent": ledger.spent()[0]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", nargs="+", default=list(TABLES))
    parser.add_argument("--epsilons", nargs="+", type=float, default=[1.0, 10.0])
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--variants", nargs="+", default=["default"])
    parser.add_argument("--mechanisms", nargs="+", default=["independent", "mst_quick"])
    parser.add_argument("--public", action="store_true",
                        help="give every table a public part (another sample of its network)")
    args = parser.parse_args(argv)
    rows = []
    for table in args.tables:
        data = bayes_net_table(table, args.rows, public=args.public)
        print(f"[{table}] {len(data.private):,} rows, domain {data.schema.domain()}",
              flush=True)
        for variant in [*args.mechanisms, *args.variants]:
            for eps in args.epsilons:
                for seed in range(args.trials):
                    row = one_run(data, variant, eps, seed)
                    rows.append(row)
                    print(f"  {variant:40s} eps={eps:<5g} trial={seed} k2={row['k2']:.1f} "
                          f"k3={row['k3']:.1f} rows={row['rows']} {row['seconds']:.0f}s",
                          flush=True)
    runs = pd.DataFrame(rows)
    table = runs.groupby(["table", "variant", "epsilon"])[["k2", "k3", "seconds"]].mean()
    with pd.option_context("display.width", 200, "display.max_rows", 500,
                           "display.float_format", "{:.1f}".format):
        print(table.to_string())
        lo, hi = min(args.epsilons), max(args.epsilons)
        means = runs.groupby(["variant", "table", "epsilon"])["k2"].mean().unstack("epsilon")
        summary = pd.DataFrame({
            f"k2 gain eps {lo:g}->{hi:g}": (means[hi] - means[lo]).groupby("variant").mean(),
            "k2 minus independent": (means.sub(means.xs("independent", level="variant"),
                                               level="table").mean(axis=1)
                                     .groupby("variant").mean())
            if "independent" in runs["variant"].unique() else np.nan})
        print()
        print(summary.to_string())


if __name__ == "__main__":
    main()
