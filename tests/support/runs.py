"""One run's config on CSV files, and the files a run logged."""

from __future__ import annotations

from pathlib import Path

from mlflow import MlflowClient

import dp_arena.audit.config_store  # noqa: F401 - registers every room's config schemas


def config(tmp_path: Path, uri: str, mechanism: str = "independent", epsilon: float = 1.0,
           **extra) -> dict:
    cfg = {
        "dataset": {"name": "csv", "path": str(tmp_path / "private.csv"),
                    "schema": str(tmp_path / "parameters.json"),
                    "public_path": str(tmp_path / "public.csv")},
        "mechanism": {"name": mechanism},
        "privacy": {"epsilon": epsilon, "delta": 1e-6, "accountant": "gdp"},
        "metrics": {"kmarginal": {"k": 2}},
        "trial": 0, "seed": 0,
        "tracking": {"uri": uri, "experiment": "test", "log_private_synthetic": False},
    }
    cfg.update(extra)
    return cfg


def logged_files(client: MlflowClient, run_id: str, root: Path) -> list[Path]:
    run = client.get_run(run_id)
    base = Path(run.info.artifact_uri.removeprefix("file://"))
    return [p for p in base.rglob("*") if p.is_file()]
