"""Benchmark: attribute-inference risk of reference and DP mechanisms, and its cost.

    python benchmarks/bench_attribute_inference.py [--dataset adult] [--holdout 0.2]
        [--mechanisms resample uniform independent mst] [--epsilon 1] [--metrics heldout]
        [--secrets A B] [--quasi-identifiers C D]

For each mechanism, one trial through the real runner: ``dp-arena dataset=<dataset>
dataset.holdout_fraction=<holdout> mechanism=<m> metrics=<metrics> privacy.epsilon=<epsilon>
trial=0 limits.threads=1 tracking.log_private_synthetic=true`` in a temporary folder (its own
MLflow store). It prints, per mechanism, every secret's residual risk with its bootstrap 95%
CI, the members' and controls' accuracies, the CRC-style rarity-weighted accuracy, and the
overall risk (the largest over secrets) and mean, read back from the run's MLflow metrics.

Cost: the run's ``wall_seconds`` (the forked child: fit, every score of ``--metrics``,
artifacts; from the sweep's ``outcome.json``) against the metric's own time, measured again
in-process on the run's logged synthetic table with one BLAS thread: the real-data side
(``reference``: targets, frequencies, bootstrap draws, computed once per worker) and the score
(``score_with``), each the best of two. Share = (reference + score) / wall_seconds, an upper
bound of what the metric adds to a run (the reference is shared by a worker's runs).

The acceptance reading: resample (a copy) clearly above zero (>= 0.15 on at least two
secrets); uniform and independent within their CI of zero; DP mechanisms reported with CIs.
"""

from __future__ import annotations

import argparse
import glob
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml
from mlflow import MlflowClient
from threadpoolctl import threadpool_limits

from dp_arena.data.datasets import load_dataset
import dp_arena.metrics as metrics_module
from dp_arena.metrics import make_metric

METRIC = "attribute_inference"


def run_cli(folder: str, dataset: str, holdout: float, mechanism: str, epsilon: float,
            metrics: str, extra: list[str]) -> float:
    """Make one run with ``dp-arena`` in ``folder``; its ``wall_seconds``."""
    subprocess.run([sys.executable, "-m", "dp_arena.cli", f"dataset={dataset}",
                    f"dataset.holdout_fraction={holdout}", f"mechanism={mechanism}",
                    f"metrics={metrics}", f"privacy.epsilon={epsilon}", "trial=0",
                    "limits.threads=1", "tracking.log_private_synthetic=true", *extra],
                   cwd=folder, check=True, capture_output=True)
    outcome = sorted(glob.glob(f"{folder}/multirun/*/*/0/outcome.json"))[-1]
    return float(json.loads(Path(outcome).read_text())["wall_seconds"])


def logged_run(folder: str):
    """The run in the folder's MLflow store that logged the metric (the sweep's parent run
    logs none)."""
    client = MlflowClient(f"sqlite:///{folder}/mlflow.db")
    [run] = [r for e in client.search_experiments() for r in client.search_runs([e.experiment_id])
             if f"{METRIC}/risk" in r.data.metrics]
    return run


def metric_settings(metrics: str, secrets: list[str] | None,
                    quasi_identifiers: list[str] | None) -> dict:
    """The metric's settings in ``dp_arena/conf/metrics/<metrics>.yaml`` with the named
    columns."""
    conf = Path(metrics_module.__file__).parent.parent / "conf" / "metrics" / f"{metrics}.yaml"
    settings = dict(yaml.safe_load(conf.read_text())[METRIC])
    if secrets:
        settings["secrets"] = secrets
    if quasi_identifiers:
        settings["quasi_identifiers"] = quasi_identifiers
    return settings


def column_overrides(secrets: list[str] | None, quasi_identifiers: list[str] | None) -> list[str]:
    return [f"metrics.{METRIC}.{key}=[{','.join(names)}]"
            for key, names in (("secrets", secrets), ("quasi_identifiers", quasi_identifiers))
            if names]


def metric_seconds(settings: dict, data, synthetic: pd.DataFrame) -> tuple[float, float]:
    """Best of two (reference seconds, score seconds), one thread, process time."""
    metric = make_metric(METRIC, settings)
    best = (float("inf"), float("inf"))
    with threadpool_limits(1):
        for _ in range(2):
            t0 = time.process_time()
            reference = metric.reference(data)
            t1 = time.process_time()
            metric.score_with(reference, data, synthetic)
            t2 = time.process_time()
            best = (min(best[0], t1 - t0), min(best[1], t2 - t1))
    return best


def print_risks(mechanism: str, metrics: dict[str, float]) -> None:
    prefix = f"{METRIC}/risk_"
    secrets = sorted(k[len(prefix):] for k in metrics
                     if k.startswith(prefix) and not k.endswith(("_lo", "_hi"))
                     and k != f"{METRIC}/risk_mean")
    for s in secrets:
        m = lambda name: metrics.get(f"{METRIC}/{name}", float("nan"))  # noqa: E731
        print(f"  {mechanism:12s} {s:16s} risk {m('risk_' + s):+.3f} "
              f"[{m('risk_' + s + '_lo'):+.3f}, {m('risk_' + s + '_hi'):+.3f}]  "
              f"acc members {m('acc_members_' + s):.3f} controls {m('acc_controls_' + s):.3f}  "
              f"rarity-weighted {m('reconstruction_' + s):.3f} / "
              f"{m('reconstruction_controls_' + s):.3f}")
    for name in ("risk", "risk_mean"):
        print(f"  {mechanism:12s} {name:16s} {metrics[f'{METRIC}/{name}']:+.3f} "
              f"[{metrics[f'{METRIC}/{name}_lo']:+.3f}, {metrics[f'{METRIC}/{name}_hi']:+.3f}]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="adult")
    parser.add_argument("--holdout", type=float, default=0.2)
    parser.add_argument("--mechanisms", nargs="+",
                        default=["resample", "uniform", "independent", "mst"])
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--metrics", default="heldout")
    parser.add_argument("--secrets", nargs="+")
    parser.add_argument("--quasi-identifiers", nargs="+")
    args = parser.parse_args()
    data = load_dataset({"name": args.dataset, "holdout_fraction": args.holdout})
    settings = metric_settings(args.metrics, args.secrets, args.quasi_identifiers)
    extra = column_overrides(args.secrets, args.quasi_identifiers)
    print(f"{args.dataset}, holdout {args.holdout}, epsilon {args.epsilon}, "
          f"metrics={args.metrics} {' '.join(extra)}", flush=True)
    for mechanism in args.mechanisms:
        with tempfile.TemporaryDirectory(prefix="dp-arena-ai-") as folder:
            started = time.perf_counter()
            wall = run_cli(folder, args.dataset, args.holdout, mechanism, args.epsilon,
                           args.metrics, extra)
            command = time.perf_counter() - started
            run = logged_run(folder)
            print_risks(mechanism, run.data.metrics)
            artifact = Path(run.info.artifact_uri.removeprefix("file://")) / "synthetic.parquet"
            synthetic = pd.read_parquet(artifact)
            reference, score = metric_seconds(settings, data, synthetic)
            print(f"  {mechanism:12s} cost: reference {reference:.2f} s (once per worker) + "
                  f"score {score:.2f} s of the run's {wall:.1f} s wall time "
                  f"({100 * (reference + score) / wall:.1f}%; the command took {command:.0f} s)",
                  flush=True)


if __name__ == "__main__":
    main()
