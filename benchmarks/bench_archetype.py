"""Benchmark: the archetype (GooseDP) mechanism against ``independent`` (not a test).

    /tmp/venv/bin/python benchmarks/bench_archetype.py [--trips 50000] [--trials 3]
        [--sample-trips 1000000]

On taxi_sim (``--trips`` private and public trips, data seed 0) runs both mechanisms at
epsilon 1 and 10 (delta 2.5e-5, GDP accountant) for ``--trials`` trials
(rng ``default_rng([0, trial])``:
fixed seeds so the benchmark's figures repeat; the runner itself draws fresh OS entropy), scores
each with the challenge scorer and prints the
mean and std of every component and of the fit seconds, then whether archetype beats
independent per component. ``archetype`` is the write-up's rule (every synthetic taxi gets its
archetype's public average trips per taxi); ``archetype[public_trips]`` is the labelled variant
that draws each taxi's count from its archetype's public taxis. Finally it times step 2 alone (sampling plus the
public-conditional fill) for ``--sample-trips`` synthetic trips.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from dp_arena.data.datasets import load_taxi_sim
from dp_arena.data.taxi.sprint3 import DELTA
from dp_arena.privacy.accounting import Budget, Ledger
from dp_arena.privacy.release import Releaser
from dp_arena.mechanisms import make_mechanism
from dp_arena.mechanisms.archetype import fit_public_archetypes, sample_trips
from dp_arena.mechanisms.conditional_fill import (
    conform_to_schema,
    enforce_shift_times,
    fit_conditionals,
    sample_conditionals,
    sprint3_fill_steps,
)
from dp_arena.metrics.challenge import score_challenge

COMPONENTS = ("k_marginal", "graph_edge", "hoc", "overall")
VARIANTS = {
    "archetype": ("archetype", {}),
    "archetype[public_trips]": ("archetype", {"trips_per_taxi": "public"}),
    "independent": ("independent", {}),
}


def compare(n_trips: int, trials: int) -> pd.DataFrame:
    data = load_taxi_sim(n_private=n_trips, n_public=n_trips, seed=0)
    rows = []
    for eps in (1.0, 10.0):
        budget = Budget(eps, DELTA)
        for label, (name, params) in VARIANTS.items():
            for trial in range(trials):
                ledger = Ledger(budget, "gdp", unit=data.ledger_unit)
                started = time.perf_counter()
                out = make_mechanism(name, params).fit_sample(
                    data, budget, Releaser(ledger), np.random.default_rng([0, trial]))
                seconds = time.perf_counter() - started
                problems = data.schema.problems(out)
                assert not problems, problems
                rows.append({"mechanism": label, "epsilon": eps, "trial": trial,
                             "seconds": seconds, "rows": len(out),
                             "spent": ledger.spent()[0], **score_challenge(data.private, out)})
    return pd.DataFrame(rows)


def summarise(results: pd.DataFrame) -> None:
    stats = results.groupby(["epsilon", "mechanism"], sort=False)[
        [*COMPONENTS, "seconds", "rows"]].agg(["mean", "std"])
    with pd.option_context("display.width", 200, "display.max_columns", 30,
                           "display.float_format", "{:.4f}".format):
        print(stats)
    means = results.groupby(["epsilon", "mechanism"])[list(COMPONENTS)].mean()
    print("\narchetype vs independent (mean of trials):")
    for eps in (1.0, 10.0):
        for label in ("archetype", "archetype[public_trips]"):
            a, b = means.loc[(eps, label)], means.loc[(eps, "independent")]
            verdict = ", ".join(f"{c} {a[c]:.4f} vs {b[c]:.4f} "
                                f"{'WIN' if a[c] > b[c] else 'loss'}" for c in COMPONENTS)
            print(f"  eps {eps:g} {label}: {verdict}")


def time_sampling(n_trips: int, public_trips: int) -> None:
    data = load_taxi_sim(n_private=1000, n_public=public_trips, seed=0)
    rng = np.random.default_rng(0)
    model = fit_public_archetypes(data.public, "taxi_id", data.schema, 10, rng)
    fill = fit_conditionals(data.public, sprint3_fill_steps())
    # noisy counts: the public mix scaled so the synthetic table has about n_trips trips
    taxis = model.taxis * n_trips / model.trips.sum()
    companies = np.full(data.schema["company_id"].size, 10.0)
    for mode in ("average", "public"):
        started = time.perf_counter()
        trips = sample_trips(model, data.schema, "taxi_id", taxis, companies, None, mode, rng)
        mid = time.perf_counter()
        trips = sample_conditionals(fill, trips, rng)
        trips = conform_to_schema(enforce_shift_times(trips, rng), data.schema)
        done = time.perf_counter()
        assert data.schema.problems(trips[data.schema.names]) == []
        print(f"step 2 ({mode}): {len(trips):,} trips in {done - started:.2f} s "
              f"(taxis + locations {mid - started:.2f} s, conditional fill {done - mid:.2f} s)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trips", type=int, default=50_000)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--sample-trips", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    results = compare(args.trips, args.trials)
    print(f"taxi_sim {args.trips:,} private / {args.trips:,} public trips, delta {DELTA:g}, "
          f"{args.trials} trials")
    summarise(results)
    time_sampling(args.sample_trips, args.trips)


if __name__ == "__main__":
    main()
