"""The default competition's runs, stored (``tests/fixtures/default_board_runs.json``), for
boards that show every view and column the default sweep gives.

The file holds the 20 runs of one trial of the default sweep (every mechanism of
``dp_arena/conf/config.yaml`` at epsilon 1 and 10, trial 0, simulated taxi data) as MLflow kept them:
status, tags (without MLflow's own, the code version and the sweep folder) and metrics. It was
made with ``dp-arena privacy.epsilon=1.0,10.0 trial=0`` in an empty folder, then each run's
tags and metrics written out. :func:`with_trials` adds trials by jittering every score of
trial 0, so a board of three trials (confidence intervals, ties) needs no 60-run sweep.

- :func:`stored_runs`: the runs as stored;
- :func:`with_trials`: those runs and ``trials - 1`` jittered copies;
- :func:`runs_frame`: the runs as :func:`dp_arena.report.leaderboard.load_runs` returns them;
- :func:`store_runs`: the runs logged into an MLflow store (for ``dp-arena-board`` itself).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd

FIXTURE = Path(__file__).parent.parent / "fixtures" / "default_board_runs.json"
EXPERIMENT = "dp-arena/taxi_sim"


def stored_runs() -> list[dict[str, Any]]:
    """The stored runs: ``{"status", "tags", "metrics"}`` each."""
    return json.loads(FIXTURE.read_text())["runs"]


def with_trials(runs: list[dict[str, Any]], trials: int = 3, seed: int = 58,
                spread: float = 0.01) -> list[dict[str, Any]]:
    """``runs`` (trial 0) and, per further trial, a copy of each with every metric multiplied
    by ``1 + spread * N(0, 1)`` (counts and spends kept), its own trial and content key."""
    rng = np.random.default_rng(seed)
    kept = {"epsilon_spent", "delta_spent", "n_synthetic_rows"}
    out = list(runs)
    for trial in range(1, trials):
        for run in runs:
            new = copy.deepcopy(run)
            new["tags"]["trial"] = str(trial)
            new["tags"]["run_key"] = f"{run['tags']['run_key']}-{trial}"
            new["metrics"] = {k: v if k in kept else float(v * (1 + spread * rng.normal()))
                              for k, v in run["metrics"].items()}
            out.append(new)
    return out


def mlflow_run(run: dict[str, Any], index: int) -> SimpleNamespace:
    """An object shaped as MLflow's ``Run`` for :func:`dp_arena.report.leaderboard.run_row`."""
    info = SimpleNamespace(run_id=f"run{index}", status=run["status"], start_time=index)
    return SimpleNamespace(info=info, data=SimpleNamespace(tags=run["tags"],
                                                           metrics=run["metrics"]))


def runs_frame(runs: list[dict[str, Any]]) -> pd.DataFrame:
    """``runs`` as ``load_runs`` returns them."""
    from dp_arena.report.leaderboard import run_row

    return pd.DataFrame([run_row(mlflow_run(r, i)) for i, r in enumerate(runs)])


def store_runs(uri: str, runs: list[dict[str, Any]], experiment: str = EXPERIMENT) -> None:
    """Log ``runs`` into the MLflow store at ``uri`` under ``experiment``."""
    from mlflow import MlflowClient
    from mlflow.entities import Metric

    client = MlflowClient(uri)
    exp = client.create_experiment(experiment)
    for i, run in enumerate(runs):
        r = client.create_run(exp, start_time=i, tags=run["tags"])
        client.log_batch(r.info.run_id, metrics=[Metric(k, float(v), i, 0)
                                                 for k, v in run["metrics"].items()])
        client.set_terminated(r.info.run_id, run["status"])
