"""MLflow plumbing: where runs go, and how a run's pieces are logged.

Default store: a SQLite file ``mlflow.db`` in the current folder, artifacts under
``./mlruns``. Any tracking URI (e.g. a shared ``mlflow server``) through
``tracking.uri=...`` or the ``MLFLOW_TRACKING_URI`` environment variable.

Parallel sweeps write one SQLite file from several processes. Three things keep that safe:
each process's first use of a local store runs under an exclusive file lock (``mlflow.db.lock``)
that creates the tables once and switches the file to write-ahead logging
(:func:`store_lock`, :func:`enable_wal`), experiment creation tolerates a concurrent creator
(:func:`ensure_experiment`), and every client call is retried with jittered backoff while
SQLite reports ``database is locked`` (:class:`RetryingClient`).

A store many workers (and machines) share: MLflow on a PostgreSQL server
(``tracking.uri=postgresql://user@host:port/db``). Each process's first use of it runs under a
PostgreSQL advisory lock (:func:`database_lock`), so only one creates or migrates MLflow's
tables, whichever machine it runs on; a sweep's launching process is the first (it creates the
sweep's parent runs before any worker starts). Two runs logging the same dataset at once
(a unique-key violation for the loser) and PostgreSQL's deadlock and serialization errors are
retried like SQLite's lock errors.
"""

from __future__ import annotations

import ast
import hashlib
import logging
import math
import os
import random
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from dp_arena.version import VERSION as __version__
from dp_arena.errors import DPArenaError
from dp_arena.redact import command_without_credentials
from dp_arena.resources import checkout_root, source_root

#: MLflow stores +inf as the largest float; anything above this reads back as infinity.
INF_THRESHOLD = 1e300
#: Tag ``metric_na/<metric>`` = why that metric did not apply to the run's data (public facts).
METRIC_NA_TAG = "metric_na/"
#: Tag ``lower_is_better/<metric>`` = the scores of that metric (comma-separated) where a smaller
#: value ranks better, as the metric declares them (:meth:`dp_arena.metrics.base.Metric.ranks_lower`).
LOWER_IS_BETTER_TAG = "lower_is_better/"
#: The runner's own numbers (time, memory, spend): a smaller one is better.
RUN_NUMBERS_LOWER = frozenset({"seconds", "score_seconds", "cpu_seconds", "fit_cpu_seconds",
                               "peak_memory_mb", "fit_memory_mb",
                               "epsilon_spent", "delta_spent"})


def resolve_tracking_uri(uri: str | None = None) -> str:
    """``uri``, else $MLFLOW_TRACKING_URI, else ``sqlite:///<cwd>/mlflow.db``."""
    return uri or os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{Path.cwd() / 'mlflow.db'}"


def client_for(uri: str | None = None, must_exist: bool = False) -> RetryingClient:
    """An MLflow client (retrying on SQLite lock contention); with ``must_exist`` a missing
    local SQLite store is an error rather than silently created empty."""
    quiet_mlflow_logs()
    resolved = resolve_tracking_uri(uri)
    if must_exist and resolved.startswith("sqlite:///"):
        path = Path(resolved.removeprefix("sqlite:///"))
        if not path.is_file():
            raise DPArenaError(f"no MLflow store at {path}",
                               "run dp-arena in this folder first, or pass --tracking-uri")
    return _cached_client(resolved, os.getpid())


@lru_cache(maxsize=8)
def _cached_client(resolved: str, pid: int) -> RetryingClient:
    """One client per store and process (a forked child never reuses its parent's). For a
    local SQLite store the first use in each process runs under a file lock, so parallel
    workers never race to create the tables, and turns on write-ahead logging."""
    from mlflow import MlflowClient

    quiet_mlflow_logs()  # importing mlflow resets its loggers
    if is_database_server(resolved):
        with database_lock(resolved):  # the client creates/migrates the tables at first use
            client = RetryingClient(MlflowClient(tracking_uri=resolved))
            client.search_experiments(max_results=1)
        return client
    if not resolved.startswith("sqlite:///"):
        return RetryingClient(retry(lambda: MlflowClient(tracking_uri=resolved)))
    db = Path(resolved.removeprefix("sqlite:///"))
    with store_lock(db):  # the client creates/migrates the tables as it is constructed
        client = RetryingClient(retry(lambda: MlflowClient(tracking_uri=resolved)))
        client.search_experiments(max_results=1)
        enable_wal(db)
    return client


@contextmanager
def store_lock(db: Path) -> Iterator[None]:
    """An exclusive lock on ``<db>.lock`` (POSIX ``flock``; a no-op elsewhere)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    db.parent.mkdir(parents=True, exist_ok=True)
    with open(db.with_name(db.name + ".lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


#: Database servers MLflow's SQL store runs on (a URI scheme, maybe with ``+driver``).
DATABASE_SCHEMES = ("postgresql", "mysql", "mssql")
#: The PostgreSQL advisory lock key of a store's first use (any fixed 64-bit number: the
#: database's other users do not take it).
STORE_LOCK_KEY = 0x6470_6172_656E_61  # "dparena"


def is_database_server(uri: str) -> bool:
    """Whether ``uri`` names a database server (PostgreSQL, MySQL, SQL Server)."""
    return uri.partition("://")[0].partition("+")[0].lower() in DATABASE_SCHEMES


@contextmanager
def database_lock(uri: str) -> Iterator[None]:
    """A PostgreSQL session advisory lock on the store's database, held for the block (taken
    over a connection of its own, released when it closes even if this process dies, so a
    waiter waits for a first use of seconds at most); a no-op for other databases."""
    if not uri.lower().startswith("postgresql"):
        yield
        return
    import sqlalchemy
    from sqlalchemy.pool import NullPool

    engine = sqlalchemy.create_engine(uri, poolclass=NullPool)
    try:
        with engine.connect() as con:
            con.execute(sqlalchemy.text("SELECT pg_advisory_lock(:key)"), {"key": STORE_LOCK_KEY})
            try:
                yield
            finally:
                con.execute(sqlalchemy.text("SELECT pg_advisory_unlock(:key)"),
                            {"key": STORE_LOCK_KEY})
    finally:
        engine.dispose()


def uri_to_record(resolved: str | None) -> str | None:
    """What a file of the sweep folder says of a run's store: ``None`` when it is the store
    ``$MLFLOW_TRACKING_URI`` names (the reader resolves ``None`` from that variable too, so a
    password in it is never written to a file), else ``resolved``."""
    if resolved and resolved == os.environ.get("MLFLOW_TRACKING_URI"):
        return None
    return resolved


def enable_wal(db: Path) -> None:
    """Switch a SQLite file to write-ahead logging (persistent; readers never block the
    writer, and writers wait on each other instead of failing)."""
    with sqlite3.connect(db, timeout=30) as con:
        if con.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            con.execute("PRAGMA journal_mode=WAL")


#: Substrings of errors worth retrying: store contention between sweep workers.
TRANSIENT_ERRORS = ("database is locked", "database table is locked", "database is busy",
                    # two runs logging the same dataset input at once: the loser's retry
                    # finds the row the winner created
                    "unique constraint failed: datasets.",
                    # the same on PostgreSQL, and its errors a retried transaction gets past
                    'violates unique constraint "dataset_pk"', "deadlock detected",
                    "could not serialize access")


def is_transient(exc: BaseException) -> bool:
    text = f"{type(exc).__name__}: {exc}".lower()
    return any(t in text for t in TRANSIENT_ERRORS)


def retry(call: Callable[[], Any], attempts: int = 12, base_delay: float = 0.05) -> Any:
    """``call()``, retried with jittered exponential backoff (capped at 2 s) while it fails
    with a transient store error."""
    for attempt in range(attempts):
        try:
            return call()
        except Exception as exc:
            if attempt == attempts - 1 or not is_transient(exc):
                raise
            time.sleep(min(2.0, base_delay * 2**attempt) * (0.5 + random.random()))
    raise AssertionError("unreachable")


class RetryingClient:
    """An ``MlflowClient`` whose methods retry on transient store errors."""

    def __init__(self, client: Any):
        self._client = client

    @property
    def tracking_uri(self) -> str:
        return self._client.tracking_uri

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            return retry(lambda: attr(*args, **kwargs))

        return call


def init_store(uri: str | None = None) -> str:
    """Create the store's tables now, under the store lock, with write-ahead logging."""
    resolved = resolve_tracking_uri(uri)
    client_for(resolved)
    return resolved


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
    try:
        return client.create_experiment(name, artifact_location=location)
    except Exception:  # another worker may have created it a moment ago
        exp = client.get_experiment_by_name(name)
        if exp is None:
            raise
        return exp.experiment_id


def find_finished_run(client, experiment_id: str, key: str):
    """The most recent FINISHED run of ``experiment_id`` whose ``run_key`` tag is ``key``."""
    runs = client.search_runs([experiment_id],
                              filter_string=f"tags.run_key = '{key}' and "
                                            "attributes.status = 'FINISHED'",
                              max_results=1, order_by=["attributes.start_time DESC"])
    return runs[0] if runs else None


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


#: Bump when the runner's own computation changes meaning (seeding, validation, scoring
#: protocol): it is part of every run's content key.
RUNNER_PROTOCOL = 3  # 3: noise from OS entropy, keyed fingerprints
#: Registries (name -> class path), package docstrings and presentation code: editing them does
#: not change what a run computes, so they are left out of the source fingerprint. Whole rooms
#: (``dp_arena.cli``, ``dp_arena.report``) are excluded by prefix.
FINGERPRINT_EXCLUDES = frozenset({"dp_arena", "dp_arena.mechanisms", "dp_arena.metrics",
                                  "dp_arena.data", "dp_arena.privacy", "dp_arena.run"})
FINGERPRINT_EXCLUDED_ROOMS = ("dp_arena.cli", "dp_arena.report")
PROJECT_PACKAGES = ("dp_arena",)


def module_path(module: str) -> Path | None:
    """Source file of a project module (``a.b`` -> ``a/b.py`` or ``a/b/__init__.py``)."""
    base = source_root().joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def imported_modules(module: str, source: str) -> set[str]:
    """Project modules that ``source`` (the text of ``module``) imports, anywhere in it."""
    package = module if module_path(module) and module_path(module).name == "__init__.py" \
        else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                root = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{root}.{node.module}" if node.module else root
            else:
                base = node.module or ""
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
    return {m for m in found if m.split(".")[0] in PROJECT_PACKAGES and module_path(m)}


def fingerprint_excluded(module: str) -> bool:
    """Whether editing ``module`` leaves run keys alone (see :data:`FINGERPRINT_EXCLUDES`)."""
    return module in FINGERPRINT_EXCLUDES or any(
        module == room or module.startswith(room + ".") for room in FINGERPRINT_EXCLUDED_ROOMS)


@lru_cache(maxsize=256)
def source_fingerprint(roots: tuple[str, ...]) -> str:
    """Hash of the source of ``roots`` and every project module they import, transitively
    (registries and presentation code excluded, see :data:`FINGERPRINT_EXCLUDES`).

    This is what "same code" means for resuming a sweep: a run is redone only when code it
    actually executes changed, whether or not that change is committed; editing another
    mechanism, the README or the leaderboard leaves its key alone.
    """
    seen: dict[str, str] = {}
    todo = [r for r in roots if module_path(r)]
    while todo:
        mod = todo.pop()
        if mod in seen:
            continue
        path = module_path(mod)
        if path is None:
            continue
        text = path.read_text()
        seen[mod] = text
        todo.extend(m for m in imported_modules(mod, text)
                    if m not in seen and not fingerprint_excluded(m))
    h = hashlib.sha256(f"protocol={RUNNER_PROTOCOL}".encode())
    for mod in sorted(seen):
        h.update(f"\0{mod}\0".encode())
        h.update(seen[mod].encode())
    return h.hexdigest()[:16]


@lru_cache(maxsize=1)
def code_version() -> str:
    """``<package version>+<git commit>[.dirty]`` when run from a git checkout, else (a regular
    install, whose folder may sit inside someone else's repository) the package version."""
    checkout = checkout_root()
    if checkout is None:
        return __version__
    try:
        rev = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=checkout,
                             capture_output=True, text=True, timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=checkout, capture_output=True, text=True, timeout=5,
                               check=True).stdout.strip()
        return f"{__version__}+{rev}{'.dirty' if dirty else ''}"
    except (OSError, subprocess.SubprocessError):
        return __version__


def find_interrupted_run(client, experiment_id: str, key: str):
    """The most recent run with ``run_key`` ``key`` that never ended (RUNNING: its process was
    killed hard) or was stopped (KILLED): a resumed sweep redoes it and says so."""
    runs = client.search_runs([experiment_id],
                              filter_string=f"tags.run_key = '{key}' and "
                                            "attributes.status != 'FINISHED' and "
                                            "attributes.status != 'FAILED'",
                              max_results=1, order_by=["attributes.start_time DESC"])
    return runs[0] if runs else None


def mark_killed(client, run_id: str, reason: str) -> None:
    """End a run that was stopped: status KILLED, the reason in ``stopped_reason``."""
    client.set_tag(run_id, "stopped_reason", reason[:5000])
    client.set_terminated(run_id, "KILLED")


@lru_cache(maxsize=1)
def source_tags() -> dict[str, str]:
    """MLflow's own source tags (``mlflow.source.*``): the program and, from a git checkout,
    the full commit (public: the code, not the data)."""
    tags = {"mlflow.source.name": "dp-arena", "mlflow.source.type": "LOCAL"}
    checkout = checkout_root()
    if checkout is None:
        return tags
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=checkout,
                                capture_output=True, text=True, timeout=5,
                                check=True).stdout.strip()
        if commit:
            tags["mlflow.source.git.commit"] = commit
    except (OSError, subprocess.SubprocessError):
        pass
    return tags


# ----- writing a run ---------------------------------------------------------------------
def run_tag(key: str, value: str):
    """An MLflow tag, its value cut to the store's limit."""
    from mlflow.entities import RunTag

    return RunTag(key, str(value)[:5000])


def log_params(client, run_id: str, config: dict[str, Any]) -> None:
    """A config as the run's params (flattened; credentials removed from every value)."""
    from mlflow.entities import Param

    params = flatten(config)
    # a URI (tracking.uri, a dataset path) may carry a user name, password or token
    items = [Param(k, command_without_credentials([v])[0][:6000])
             for k, v in sorted(params.items())]
    for start in range(0, len(items), 100):
        client.log_batch(run_id, params=items[start:start + 100])


def log_metrics(client, run_id: str, numbers: dict[str, float]) -> None:
    """Finite numbers as metrics; an infinite one (``resample``'s ``epsilon_spent``) as a tag
    ``<name>=inf``, since MLflow would store the largest float (1.797e308) instead."""
    from mlflow.entities import Metric as MlflowMetric

    now = int(time.time() * 1000)
    items = [MlflowMetric(k, float(v), now, 0) for k, v in numbers.items()
             if math.isfinite(float(v))]
    infinite = [run_tag(k, "inf" if float(v) > 0 else "-inf") for k, v in numbers.items()
                if math.isinf(float(v))]
    client.log_batch(run_id, metrics=items, tags=infinite)


def log_folder(client, run_id: str, folder: Path) -> None:
    """Log every file in ``folder`` (top-level files at the artifact root, sub-folders as
    artifact paths)."""
    for path in sorted(folder.iterdir()):
        if path.is_file():
            client.log_artifact(run_id, str(path))
        elif path.is_dir() and any(path.iterdir()):
            client.log_artifacts(run_id, str(path), path.name)


def json_safe(obj: Any) -> Any:
    """``obj`` with numpy scalars as Python numbers and non-finite floats as text (JSON)."""
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if isinstance(obj, np.generic):
        return json_safe(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    return obj
