"""Benchmark: what the held-out scores cost against a run's wall time.

    /work/main/.venv/bin/python benchmarks/bench_heldout_scores.py [--dataset adult taxi_sim]
        [--metrics dp_arena/conf/metrics/default.yaml] [--repeat 1]

Single-threaded (threadpoolctl limit 1, as ``limits.threads=1``), on

- **adult** with ``holdout_fraction`` 0.2 (skipped, with the reason, when the shared data is
  absent) and
- **taxi_sim**, the simulated private year (50,000 trips) with its built-in held-out taxis
  (``n_heldout``) and target (``payment_type``),

it fits ``mst_quick`` and ``independent`` through the mechanism API (epsilon 1, the default
competition's delta) and times, on each synthetic table: the fit, the existing scores (every
metric of ``--metrics`` other than the new ones that applies to the dataset) and each new score
(``ml_efficacy``, ``propensity``, ``range_query``, and ``membership`` when it is registered),
as a sweep's run pays it: each metric's real-data side (``Metric.reference``: the
train-on-real model, the real answers, the attack's targets and reference density) is timed
apart and printed as "once per worker", since the worker computes it once and its runs share
it (``dp_arena.run.references``).
A run's wall time is taken as fit + existing scores, measured in-process: the CLI's start-up,
MLflow logging and the board are left out, so the printed share (new scores / run) is an upper
bound of what the scores add to a real run's wall time. With ``--cli`` the same runs are also
made by ``dp-arena`` (epsilon 1, trial 0, ``limits.threads=1``), once with the new scores
dropped (``~metrics.NAME``) and once with them, and both are printed: the run's own
``wall_seconds`` (the forked child's wall time from the sweep's ``outcome.json``: fit, scoring,
artifacts) and the whole command's seconds (start-up, imports made before the fork, MLflow,
the board). The issue's bar: at most 15%.

Then the scores' meaning: ``ml_efficacy`` (with its train-on-real reference), ``propensity``
and ``range_query`` on a bootstrap of the training rows (resample-like: should match the
reference, ratio ~1, small errors) and on an independent-columns table (each column shuffled
on its own: should fall towards AUROC 0.5 and a large propensity ratio).

The metric settings are those of ``--metrics`` (default: ``dp_arena/conf/metrics/default.yaml``, the
default competition's); ``--set NAME.KEY=VALUE`` changes one (e.g. to time an older setting).
"""

from __future__ import annotations

import argparse
import glob
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml
from threadpoolctl import threadpool_limits

from dp_arena.data.datasets import Dataset, load_dataset
from dp_arena.errors import DPArenaError
from dp_arena.privacy.accounting import Budget, Ledger
from dp_arena.privacy.release import NumpySampler, Releaser
from dp_arena.mechanisms import make_mechanism
from dp_arena.mechanisms.options import mechanism_conf
from dp_arena.metrics import METRICS, make_metric

ROOT = Path(__file__).resolve().parents[1]
NEW = tuple(n for n in ("ml_efficacy", "propensity", "range_query", "membership")
            if n in METRICS)
MECHANISMS = ("mst_quick", "independent")
EPSILON, DELTA = 1.0, 2.5e-5
MEANING = {"ml_efficacy": ("score", "real_score", "gap"),
           "propensity": ("pmse_ratio", "auc"), "range_query": ("mean_rel_error",)}


@dataclass(frozen=True)
class Timed:
    """One mechanism's fit on one dataset and the seconds of each score on its output."""

    mechanism: str
    fit: float
    existing: dict[str, float]
    new: dict[str, float]
    once: dict[str, float]  # each metric's real-data side: once per worker, not per run


def benchmark_datasets(names: list[str]) -> list[Dataset]:
    """Adult with a 20% holdout and the taxi simulation with its held-out taxis."""
    out = []
    for name in names:
        config = {"name": "adult", "holdout_fraction": 0.2} if name == "adult" else \
            {"name": name}
        try:
            out.append(load_dataset(config))
        except DPArenaError as err:
            print(f"{name}: skipped ({err})")
    return out


def metric_settings(path: Path, overrides: list[str]) -> dict[str, dict[str, Any]]:
    """The metric settings of a ``dp_arena/conf/metrics`` file, with ``NAME.KEY=VALUE`` overrides."""
    settings = {k: dict(v or {}) for k, v in yaml.safe_load(path.read_text()).items()}
    for item in overrides:
        key, value = item.split("=", 1)
        name, field = key.split(".", 1)
        settings.setdefault(name, {})[field] = yaml.safe_load(value)
    return settings


def bootstrap_copy(data: Dataset, seed: int) -> pd.DataFrame:
    """The training rows drawn with replacement (a resample-like synthetic table)."""
    rng = np.random.default_rng(seed)
    return data.private.iloc[rng.integers(0, len(data.private), len(data.private))] \
        .reset_index(drop=True)


def independent_copy(data: Dataset, seed: int) -> pd.DataFrame:
    """Each column of the training rows shuffled on its own (exact one-way marginals, no
    dependence between columns)."""
    rng = np.random.default_rng(seed)
    out = data.private.copy()
    for column in out.columns:
        out[column] = rng.permutation(out[column].to_numpy())
    return out


def fitted(mechanism: str, data: Dataset, seed: int) -> tuple[pd.DataFrame, float]:
    """A mechanism's synthetic table (epsilon 1) and the seconds its fit_sample took."""
    model = make_mechanism(mechanism.removesuffix("_quick"), mechanism_conf(mechanism))
    budget = Budget(EPSILON, DELTA)
    release = Releaser(Ledger(budget), NumpySampler(np.random.default_rng(seed)))
    started = time.perf_counter()
    synthetic = model.fit_sample(data.training_view(), budget, release,
                                 np.random.default_rng(seed))
    return synthetic, time.perf_counter() - started


def timed_scores(names: tuple[str, ...], settings: dict[str, dict[str, Any]], data: Dataset,
                 synthetic: pd.DataFrame, once: dict[str, float] | None = None
                 ) -> tuple[dict[str, float], dict[str, dict]]:
    """Seconds and scores of each applicable metric of ``names`` on ``synthetic``, as a run
    pays them: a metric's real-data side (:meth:`Metric.reference`) is computed once per
    worker (:mod:`dp_arena.run.references`), so it is timed apart, into ``once``."""
    seconds, scores = {}, {}
    for name in names:
        metric = make_metric(name, settings.get(name))
        if metric.not_applicable_reason(data) is not None:
            continue
        started = time.perf_counter()
        reference = metric.reference(data)
        if once is not None:
            once[name] = time.perf_counter() - started
        started = time.perf_counter()
        scores[name] = metric.score_with(reference, data, synthetic).scores
        seconds[name] = time.perf_counter() - started
    return seconds, scores


def existing_names(settings: dict[str, dict[str, Any]]) -> tuple[str, ...]:
    return tuple(n for n in settings if n not in NEW and n in METRICS)


def time_mechanism(mechanism: str, data: Dataset, settings: dict[str, dict[str, Any]],
                   repeat: int) -> Timed:
    """The fit and every score's seconds (the fastest of ``repeat`` scorings)."""
    synthetic, fit = fitted(mechanism, data, seed=0)
    existing, new, once = {}, {}, {}
    for _ in range(repeat):
        for out, names in ((existing, existing_names(settings)), (new, NEW)):
            first: dict[str, float] = {}
            seconds, _ = timed_scores(names, settings, data, synthetic, first)
            for name, s in seconds.items():
                out[name] = min(s, out.get(name, np.inf))
                once[name] = min(first[name], once.get(name, np.inf))
    return Timed(mechanism, fit, existing, new, once)


def cli_seconds(data: Dataset, mechanism: str, settings: dict[str, dict[str, Any]],
                metrics_file: Path, new_scores: bool) -> tuple[float, float]:
    """(the run's ``wall_seconds``, the command's seconds) of one ``dp-arena`` run with or
    without the new scores (module docstring)."""
    dataset = ["dataset=adult", "dataset.holdout_fraction=0.2"] if data.name == "adult" else \
        [f"dataset={data.name}"]
    dropped = [] if new_scores else [f"~metrics.{n}" for n in NEW if n in settings]
    with tempfile.TemporaryDirectory(prefix="dp-arena-bench-") as folder:
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "dp_arena.cli", *dataset, f"mechanism={mechanism}",
                        f"metrics={metrics_file.stem}", *dropped, f"privacy.epsilon={EPSILON}",
                        "trial=0", "limits.threads=1"], cwd=folder, check=True,
                       capture_output=True)
        command = time.perf_counter() - started
        outcome = glob.glob(f"{folder}/multirun/*/*/0/outcome.json")[0]
        return float(json.loads(Path(outcome).read_text())["wall_seconds"]), command


def print_cli(data: Dataset, rows: list[Timed], settings: dict[str, dict[str, Any]],
              metrics_file: Path) -> None:
    included = [n for n in NEW if n in settings]
    print(f"  dp-arena, one run without -> with {', '.join(included)}:")
    for r in rows:
        (run0, cmd0), (run1, cmd1) = (cli_seconds(data, r.mechanism, settings, metrics_file, flag)
                                      for flag in (False, True))
        new = sum(r.new.get(n, 0.0) for n in included)
        print(f"  {r.mechanism:12s} run wall_seconds {run0:6.2f} -> {run1:6.2f} "
              f"(+{100 * (run1 - run0) / run0:.0f}%); command {cmd0:6.2f} -> {cmd1:6.2f} s; "
              f"their in-process seconds {new:.2f} = {100 * new / run0:.0f}% of the run "
              f"(bar 15%)")


def print_costs(data: Dataset, rows: list[Timed]) -> None:
    new_names = [n for n in NEW if any(n in r.new for r in rows)]
    head = "".join(f"{n:>12s}" for n in new_names)
    print(f"\n{data.name}: seconds, one thread")
    print(f"  {'mechanism':12s}{'fit':>8s}{'existing':>10s}{'run':>8s}{head}{'new sum':>10s}"
          f"{'new/run':>9s}")
    for r in rows:
        run, new = r.fit + sum(r.existing.values()), sum(r.new.values())
        cells = "".join(f"{r.new.get(n, float('nan')):12.2f}" for n in new_names)
        print(f"  {r.mechanism:12s}{r.fit:8.2f}{sum(r.existing.values()):10.2f}{run:8.2f}"
              f"{cells}{new:10.2f}{100 * new / run:8.1f}%")
    print("  existing = " + ", ".join(f"{k} {v:.2f}" for k, v in rows[0].existing.items())
          + f" (on {rows[0].mechanism}); bar: new/run <= 15%")
    print("  once per worker (the real-data sides, shared by its runs): " + ", ".join(
        f"{k} {v:.2f}" for k, v in rows[0].once.items() if v >= 0.005))


def print_meaning(data: Dataset, settings: dict[str, dict[str, Any]]) -> None:
    names = tuple(n for n in MEANING if n in NEW)
    print(f"{data.name}: scores of a bootstrap of the training rows vs independent columns")
    for label, table in (("bootstrap", bootstrap_copy(data, 1)),
                         ("independent", independent_copy(data, 2))):
        _, scores = timed_scores(names, settings, data, table)
        cells = ", ".join(f"{n}/{k} {scores[n][k]:.3f}" for n in names if n in scores
                          for k in MEANING[n])
        print(f"  {label:12s} {cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", nargs="+", default=["adult", "taxi_sim"])
    parser.add_argument("--metrics", type=Path, default=ROOT / "dp_arena/conf/metrics/default.yaml")
    parser.add_argument("--set", action="append", default=[], metavar="NAME.KEY=VALUE")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--mechanisms", nargs="+", default=list(MECHANISMS))
    parser.add_argument("--cli", action="store_true", help="also time dp-arena runs")
    args = parser.parse_args()
    settings = metric_settings(args.metrics, args.set)
    print("new-score settings: " + "; ".join(f"{n} {settings.get(n, {})}" for n in NEW))
    with threadpool_limits(1):
        for data in benchmark_datasets(args.dataset):
            rows = [time_mechanism(m, data, settings, args.repeat) for m in args.mechanisms]
            print_costs(data, rows)
            print_meaning(data, settings)
            if args.cli:
                print_cli(data, rows, settings, args.metrics)


if __name__ == "__main__":
    main()
