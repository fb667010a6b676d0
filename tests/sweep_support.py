"""What the command-line tests share: ``dp-arena`` as a user runs it (its own process in a temp
folder, forked by :func:`tests.support.forked.run_forked`; MLflow in ``./mlflow.db``), the
small CSV dataset's overrides, the test doubles, and the
runs a sweep left in MLflow."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from mlflow import MlflowClient

from dp_arena.data.datasets import PROJECT_ROOT
from tests.support.forked import run_forked

TEST_CONF = PROJECT_ROOT / "tests" / "conf"
#: One job at a time: every parallel worker is a fresh interpreter (about 5 s of CPU to import
#: and start), and the suite's own workers already share the cores. Tests of parallel runs
#: (a stop signal, a killed sweep) use :data:`PARALLEL`.
ENV = {**os.environ, "MLFLOW_TRACKING_URI": "", "PYTHONPATH": str(PROJECT_ROOT),
       "DP_ARENA_JOBS": "1"}
PARALLEL = {**ENV, "DP_ARENA_JOBS": "2"}
#: The ``csv_dir`` fixture's dataset (tests/conftest.py).
CSV = ("dataset=csv", "dataset.path=private.csv", "dataset.schema=parameters.json",
       "dataset.public_path=public.csv", "privacy.delta=1e-6", "metrics=kmarginal")
#: The mechanisms of tests/doubles.py and their configs.
DOUBLES = ("plugins=[tests.doubles]", f"hydra.searchpath=[file://{TEST_CONF}]")


def dp_arena(cwd: Path, *overrides: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """``dp-arena`` with ``overrides`` (one trial unless they sweep ``trial``)."""
    if not any(o.startswith("trial=") for o in overrides):
        overrides = (*overrides, "trial=0")
    return run_forked(("dp-arena", *overrides), cwd, ENV, timeout=timeout)


def runs_of(cwd: Path, experiment: str | None = None, kind: str = "run") -> list:
    """The runs of one kind (``run``: a job's run; ``sweep``: a sweep's parent) in ``experiment``
    (default: every experiment) of ``cwd/mlflow.db``."""
    client = MlflowClient(f"sqlite:///{cwd / 'mlflow.db'}")
    exps = [client.get_experiment_by_name(experiment)] if experiment else \
        client.search_experiments()
    runs = [r for e in exps if e is not None
            for r in client.search_runs([e.experiment_id], max_results=1000)]
    return [r for r in runs if r.data.tags.get("kind", "run") == kind]
