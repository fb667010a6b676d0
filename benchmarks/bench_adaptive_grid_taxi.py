"""Benchmark: adaptive_grid vs independent on the simulated taxi data (not a test).

    /tmp/venv/bin/python benchmarks/bench_adaptive_grid_taxi.py [--trials 3] [--trips 50000]
        [--eps 1 10] [--params "{'C': {1: 30, 10: 100}}"] [--accountant gdp]

For each epsilon (delta 2.5e-5, the challenge's) and trial, runs both mechanisms on
``load_taxi_sim(n_private=trips, n_public=trips)`` with the same seed, scores them with the
challenge metric (``dp_arena.metrics.challenge.score_challenge``: k-marginal, graph edge, HOC,
overall), and prints per-trial rows, then the means over trials, whether adaptive_grid beats
independent on every component, and adaptive_grid's synthetic row count error. Mechanism
hyperparameters default to ``dp_arena/conf/mechanism/*.yaml``; ``--params`` overrides adaptive_grid's.
Seconds are wall time of ``fit_sample`` (they include JAX compilation; the machine may be
shared, so they are indicative).
"""

from __future__ import annotations

import argparse
import ast
import time

import numpy as np

from dp_arena.data.datasets import load_taxi_sim
from dp_arena.privacy.accounting import Budget, Ledger
from dp_arena.privacy.release import Releaser
from dp_arena.mechanisms import make_mechanism
from dp_arena.mechanisms.options import mechanism_conf
from dp_arena.metrics.challenge import score_challenge

COMPONENTS = ("k_marginal", "graph_edge", "hoc", "overall")
DELTA = 2.5e-5


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--trips", type=int, default=50_000)
    parser.add_argument("--eps", type=float, nargs="+", default=[1.0, 10.0])
    parser.add_argument("--params", type=str, default="{}",
                        help="Python dict literal overriding adaptive_grid's conf values")
    parser.add_argument("--accountant", default="gdp", choices=["gdp", "zcdp"])
    args = parser.parse_args(argv)

    data = load_taxi_sim(n_private=args.trips, n_public=args.trips)
    params = {"adaptive_grid": {**mechanism_conf("adaptive_grid"), **ast.literal_eval(args.params)},
              "independent": mechanism_conf("independent")}
    print(f"taxi_sim: {len(data.private):,} private / {len(data.public):,} public trips; "
          f"accountant {args.accountant}; adaptive_grid {params['adaptive_grid']}")
    all_ok = True
    for eps in args.eps:
        budget = Budget(eps, DELTA)
        results: dict[str, list[dict]] = {"adaptive_grid": [], "independent": []}
        for trial in range(args.trials):
            for name in results:
                mech = make_mechanism(name, params[name])
                ledger = Ledger(budget, args.accountant, unit=data.ledger_unit)
                started = time.perf_counter()
                out = mech.fit_sample(data, budget, Releaser(ledger), np.random.default_rng([0, trial]))
                seconds = time.perf_counter() - started
                data.schema.validate(out, where=f"{name} output")
                scores = score_challenge(data.private, out)
                row = {**scores, "rows": len(out), "seconds": seconds,
                       "spent": ledger.spent()[0]}
                results[name].append(row)
                print(f"eps={eps:g} trial={trial} {name:13s} "
                      + " ".join(f"{k}={row[k]:.4f}" for k in COMPONENTS[:3])
                      + f" overall={row['overall']:.1f} rows={row['rows']} "
                        f"spent={row['spent']:.9f} {seconds:.1f}s", flush=True)
        means = {name: {k: float(np.mean([r[k] for r in rows])) for k in (*COMPONENTS, "rows",
                                                                          "seconds")}
                 for name, rows in results.items()}
        print(f"eps={eps:g} mean over {args.trials} trials:")
        for name, m in means.items():
            print(f"  {name:13s} " + " ".join(f"{k}={m[k]:.4f}" for k in COMPONENTS[:3])
                  + f" overall={m['overall']:.1f} rows={m['rows']:.0f} {m['seconds']:.1f}s/run")
        beats = {k: means["adaptive_grid"][k] > means["independent"][k] for k in COMPONENTS}
        row_err = [abs(r["rows"] - len(data.private)) / len(data.private)
                   for r in results["adaptive_grid"]]
        print(f"  adaptive_grid beats independent: {beats}; row count error vs true "
              f"{len(data.private):,}: mean {np.mean(row_err):.2%}, max {np.max(row_err):.2%}")
        all_ok &= all(beats.values())
    print("ALL COMPONENTS BEATEN AT EVERY EPSILON" if all_ok else "NOT ALL COMPONENTS BEATEN")


if __name__ == "__main__":
    main()
