"""Benchmark: the tabular mechanisms at their shipped defaults on real data nobody tuned to.

    /work/main/.venv/bin/python benchmarks/bench_heldout_defaults.py [--trials 1]
        [--datasets adult nltcs titanic chicago_sample] [--epsilons 1 10]
        [--mechanisms independent mst aim aim_quick adaptive_grid] [--max-rows 20000]
        [--jobs 2]

Runs every mechanism x dataset x epsilon through the ``dp-arena`` CLI (the harness runner,
its per-run limits and privacy ledger) in a temporary folder with its own MLflow store
(``tracking.uri=sqlite:///<tmp>/mlflow.db``), one sweep per dataset, then prints one row per
mechanism x dataset x epsilon: the k-marginal score the runner logs (``kmarginal/score``,
0..1000, mean over trials), fit seconds, peak memory (MB) and the run status; and per
mechanism whether it scores at least as well as ``independent`` (mean over datasets and
epsilons) and better at the larger epsilon (mean over datasets). ``--max-rows`` subsamples
the larger shared tables (adult, nltcs) with the dataset's ``max_rows`` to keep the run short;
``chicago_sample`` is used when the dataset option exists. The default privacy settings
(``privacy=sprint3``: delta 2.5e-5, tight Gaussian DP accounting) apply.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
CLI = Path(sys.executable).with_name("dp-arena")
DATASETS = ("adult", "nltcs", "titanic", "chicago_sample")
MECHANISMS = ("independent", "mst", "aim", "aim_quick", "adaptive_grid")
SCORE = "kmarginal/score"


def sweep(dataset: str, args: argparse.Namespace, folder: Path) -> float:
    """One ``dp-arena`` sweep of every mechanism x epsilon x trial on ``dataset``."""
    overrides = [f"dataset={dataset}", f"mechanism={','.join(args.mechanisms)}",
                 f"privacy.epsilon={','.join(str(e) for e in args.epsilons)}",
                 f"trial={','.join(str(t) for t in range(args.trials))}",
                 f"tracking.uri=sqlite:///{folder}/mlflow.db", "metrics=default",
                 f"hydra.sweep.dir={folder}/multirun/{dataset}"]
    if args.max_rows and dataset in ("adult", "nltcs"):
        overrides.append(f"dataset.max_rows={args.max_rows}")
    started = time.perf_counter()
    done = subprocess.run([str(CLI), *overrides], check=False, cwd=folder, capture_output=True,
                          text=True, env={**_env(), "DP_ARENA_JOBS": str(args.jobs)})
    if done.returncode != 0:
        print(f"[{dataset}] dp-arena exited {done.returncode}:\n{done.stdout[-2000:]}"
              f"{done.stderr[-2000:]}", flush=True)
    return time.perf_counter() - started


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)


def collect(folder: Path) -> pd.DataFrame:
    """Every run in the benchmark's MLflow store: tags, score, seconds, peak memory."""
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{folder}/mlflow.db")
    rows = []
    for exp in client.search_experiments():
        for run in client.search_runs([exp.experiment_id], max_results=5000):
            tags, metrics = run.data.tags, run.data.metrics
            if "mechanism" not in tags:  # a sweep's parent run
                continue
            label = tags.get("hyperparameters", "-")
            rows.append({
                "dataset": tags.get("dataset", "?"),
                "mechanism": tags.get("mechanism", "?") + ("" if label in ("-", "") else
                                                           f" {label}"),
                "epsilon": float(tags.get("epsilon", "nan")),
                "trial": tags.get("trial", ""), "started": run.info.start_time,
                "score": metrics.get(SCORE, np.nan),
                "seconds": metrics.get("seconds", np.nan),
                "peak_mb": metrics.get("peak_memory_mb", np.nan),
                "status": run.info.status,
                "reason": tags.get("failure_reason", "")[:60],
            })
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    # a setting re-run after a code change: only its latest run counts
    latest = frame.sort_values("started").drop_duplicates(
        ["dataset", "mechanism", "epsilon", "trial"], keep="last")
    return latest.drop(columns="started").sort_values(["dataset", "mechanism", "epsilon"])


def summarise(runs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    table = (runs.groupby(["mechanism", "dataset", "epsilon"])
             .agg(score=("score", "mean"), seconds=("seconds", "mean"),
                  peak_mb=("peak_mb", "max"), runs=("status", "size"),
                  failed=("status", lambda s: int((s != "FINISHED").sum())))
             .reset_index())
    wide = table.pivot_table(index=["dataset", "epsilon"], columns="mechanism", values="score")
    indep = [c for c in wide.columns if c.startswith("independent")]
    verdict = []
    eps = sorted(table["epsilon"].unique())
    for mech in wide.columns:
        scores = wide[mech]
        beats = (float((scores - wide[indep[0]]).mean()) if indep else np.nan)
        by_eps = table[table["mechanism"] == mech].groupby("epsilon")["score"].mean()
        gain = float(by_eps.get(eps[-1], np.nan) - by_eps.get(eps[0], np.nan))
        verdict.append({"mechanism": mech, "mean score": float(scores.mean()),
                        "mean minus independent": beats,
                        "beats independent": bool(beats >= 0) if indep else None,
                        f"eps {eps[-1]:g} minus eps {eps[0]:g}": gain,
                        "improves with eps": bool(gain > 0)})
    return table, pd.DataFrame(verdict)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=1)
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--epsilons", nargs="+", type=float, default=[1.0, 10.0])
    parser.add_argument("--mechanisms", nargs="+", default=list(MECHANISMS))
    parser.add_argument("--max-rows", type=int, default=20000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--keep", type=Path, default=None, help="use this folder (kept)")
    args = parser.parse_args(argv)
    datasets = [d for d in args.datasets
                if (ROOT / "dp_arena" / "conf" / "dataset" / f"{d}.yaml").is_file()]
    for d in sorted(set(args.datasets) - set(datasets)):
        print(f"dataset {d}: no dp_arena/conf/dataset/{d}.yaml here, skipped")
    folder = args.keep or Path(tempfile.mkdtemp(prefix="bench_heldout_"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"folder {folder}; mechanisms {args.mechanisms}; epsilons {args.epsilons}; "
          f"trials {args.trials}; max_rows {args.max_rows} (adult, nltcs)", flush=True)
    for d in datasets:
        print(f"[{d}] sweep took {sweep(d, args, folder):.0f} s", flush=True)
    runs = collect(folder)
    table, verdict = summarise(runs)
    with pd.option_context("display.width", 200, "display.max_rows", 500,
                           "display.float_format", "{:.1f}".format):
        print(table.to_string(index=False))
        print()
        print(verdict.to_string(index=False))
    failed = runs[runs["status"] != "FINISHED"]
    if len(failed):
        print("\nruns that did not finish:")
        print(failed.to_string(index=False))


if __name__ == "__main__":
    main()
