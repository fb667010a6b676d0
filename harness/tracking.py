"""MLflow plumbing: where runs go, and how a run's pieces are logged.

Default store: a SQLite file ``mlflow.db`` in the current folder, artifacts under
``./mlruns``. Any tracking URI (e.g. a shared ``mlflow server``) through
``tracking.uri=...`` or the ``MLFLOW_TRACKING_URI`` environment variable.
"""

from __future__ import annotations

import logging
import os
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from . import __version__
from .data import PROJECT_ROOT
from .errors import DPArenaError

#: MLflow stores +inf as the largest float; anything above this reads back as infinity.
INF_THRESHOLD = 1e300


def resolve_tracking_uri(uri: str | None = None) -> str:
    """``uri``, else $MLFLOW_TRACKING_URI, else ``sqlite:///<cwd>/mlflow.db``."""
    return uri or os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{Path.cwd() / 'mlflow.db'}"


def client_for(uri: str | None = None, must_exist: bool = False):  # -> mlflow.MlflowClient
    """An MLflow client; with ``must_exist`` a missing local SQLite store is an error rather
    than silently created empty."""
    from mlflow import MlflowClient

    quiet_mlflow_logs()
    resolved = resolve_tracking_uri(uri)
    if must_exist and resolved.startswith("sqlite:///"):
        path = Path(resolved.removeprefix("sqlite:///"))
        if not path.is_file():
            raise DPArenaError(f"no MLflow store at {path}",
                               "run dp-arena in this folder first, or pass --tracking-uri")
    return MlflowClient(tracking_uri=resolved)


def quiet_mlflow_logs() -> None:
    """MLflow (re)configures its loggers on import; keep database set-up chatter out."""
    for name in ("mlflow", "alembic", "sqlalchemy"):
        logging.getLogger(name).setLevel(logging.WARNING)


def ensure_experiment(client, name: str) -> str:
    """Id of experiment ``name``, created if missing (artifacts under ./mlruns for local
    SQLite stores, the server's default root otherwise)."""
    exp = client.get_experiment_by_name(name)
    if exp is not None:
        return exp.experiment_id
    location = None
    if client.tracking_uri.startswith("sqlite:"):
        location = (Path.cwd() / "mlruns").as_uri()
    return client.create_experiment(name, artifact_location=location)


def flatten(cfg: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """``{"a": {"b": 1}} -> {"a.b": "1"}`` (params are strings in MLflow)."""
    out: dict[str, str] = {}
    for key, value in cfg.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = str(value)
    return out


@lru_cache(maxsize=1)
def code_version() -> str:
    """``<package version>+<git commit>[.dirty]`` when run from a git checkout."""
    try:
        rev = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=PROJECT_ROOT,
                             capture_output=True, text=True, timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=5,
                               check=True).stdout.strip()
        return f"{__version__}+{rev}{'.dirty' if dirty else ''}"
    except (OSError, subprocess.SubprocessError):
        return __version__
