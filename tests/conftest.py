"""Shared fixtures: small hand-made schemas and frames, the shared data folder, MLflow stores."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dp_arena.data.datasets import Dataset, shared_data_dir
from dp_arena.data.schema import Column, RunSpec, Schema
from dp_arena.errors import DPArenaError


@pytest.fixture(autouse=True, scope="session")
def secret_key_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every test (and every subprocess it starts) uses one throw-away secret key, never the
    developer's ~/.config/dp-arena/secret.key."""
    from dp_arena.privacy.secret import SECRET_ENV

    path = tmp_path_factory.mktemp("secret") / "secret.key"
    with environment(SECRET_ENV, str(path)):
        yield path


@pytest.fixture(autouse=True)
def throwaway_state_dir(tmp_path_factory: pytest.TempPathFactory,
                        monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test (and every subprocess it starts) records from-private marks
    (dp_arena.data.provenance) in a throw-away folder of its own, never
    ~/.local/state/dp-arena: a column one test registers must not mark another test's
    hand-written schema of the same content."""
    from dp_arena.data.provenance import STATE_ENV

    path = tmp_path_factory.mktemp("state")
    monkeypatch.setenv(STATE_ENV, str(path))
    return path


@contextmanager
def environment(name: str, value: str) -> Iterator[None]:
    """The environment variable ``name`` set to ``value`` for the block (restored after)."""
    previous = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = previous


@pytest.fixture
def shared_data() -> Path:
    """The shared benchmark folder, or a skip with the reason."""
    try:
        return shared_data_dir()
    except DPArenaError as exc:
        pytest.skip(f"shared benchmark data not available: {exc.problem}")


@pytest.fixture
def small_schema() -> Schema:
    return make_small_schema()


def make_small_schema() -> Schema:
    return Schema((
        Column("pid", "id", min=1, max=10_000),
        Column("color", "categorical", values=("red", "green", "blue"), dtype="str"),
        Column("size", "categorical", values=(0, 1, 2, 3)),
        Column("amount", "numeric", min=-1, max=100, bins=(0, 10, 50)),
    ), (RunSpec(1.0, 1e-6, max_records=100_000, max_records_per_individual=5),))


def make_small_frame(n: int, seed: int, n_people: int = 200, first_id: int = 1) -> pd.DataFrame:
    """A toy table with ~n/n_people rows per person, ids first_id..first_id+n_people-1."""
    rng = np.random.default_rng(seed)
    size = rng.choice(4, size=n, p=[0.5, 0.3, 0.15, 0.05])
    amount = np.clip(size * 20 + rng.integers(-5, 15, size=n), -1, 100)
    return pd.DataFrame({
        "pid": rng.integers(first_id, first_id + n_people, size=n),
        "color": rng.choice(["red", "green", "blue"], size=n, p=[0.6, 0.3, 0.1]),
        "size": size,
        "amount": amount,
    })


@pytest.fixture
def csv_files(tmp_path, small_schema):
    """The small table as CSV files (private, public, schema) in ``tmp_path``, and the private
    frame."""
    private, public = make_small_frame(3000, 1), make_small_frame(3000, 2, first_id=5001)
    private.to_csv(tmp_path / "private.csv", index=False)
    public.to_csv(tmp_path / "public.csv", index=False)
    small_schema.save(tmp_path / "parameters.json")
    return tmp_path, private


@pytest.fixture
def small_dataset(small_schema: Schema) -> Dataset:
    private = make_small_frame(3000, seed=1)
    public = make_small_frame(3000, seed=2, first_id=5001)
    return Dataset("small", small_schema, private, public, unit="user", id_column="pid",
                   max_records_per_individual=5)


@pytest.fixture(scope="session")
def empty_mlflow_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty MLflow SQLite store whose tables exist. Creating a store runs MLflow's schema
    migrations (1.5 s of CPU and dozens of disk syncs); the fixtures below copy this one
    instead. Tests of what creates a store (or must not) use a folder without it."""
    from mlflow import MlflowClient

    path = tmp_path_factory.mktemp("mlflow-store") / "mlflow.db"
    MlflowClient(f"sqlite:///{path}").search_experiments()
    return path


@pytest.fixture
def postgres():
    """A throwaway PostgreSQL server with an empty database (tests.support.postgres): skipped
    without Debian's server binaries, failed on CI."""
    from tests.support.postgres import postgres_server

    with postgres_server() as server:
        yield server


@pytest.fixture
def no_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A temporary working folder without an MLflow store, and the URI of the SQLite store
    that would be created there (for tests of what must not create one)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    return f"sqlite:///{tmp_path / 'mlflow.db'}"


@pytest.fixture
def tracking_uri(no_store: str, tmp_path: Path, empty_mlflow_store: Path) -> str:
    """An empty SQLite MLflow store of its own in a temporary working folder."""
    shutil.copyfile(empty_mlflow_store, tmp_path / "mlflow.db")
    return no_store


def write_csv_dataset(folder: Path, schema: Schema) -> Path:
    """private.csv, public.csv (disjoint person ids) and parameters.json in ``folder``."""
    make_small_frame(2000, 1).to_csv(folder / "private.csv", index=False)
    make_small_frame(2000, 2, first_id=5001).to_csv(folder / "public.csv", index=False)
    schema.save(folder / "parameters.json")
    return folder


@pytest.fixture
def csv_dir(tmp_path: Path, small_schema: Schema, empty_mlflow_store: Path) -> Path:
    """private.csv, public.csv (disjoint person ids) and parameters.json in a temp folder,
    beside an empty MLflow store (``./mlflow.db``, what ``dp-arena`` uses there)."""
    shutil.copyfile(empty_mlflow_store, tmp_path / "mlflow.db")
    return write_csv_dataset(tmp_path, small_schema)


@pytest.fixture
def contestant_sandbox() -> None:
    """For a test that runs a contestant: skipped (with the reason) where no sandbox can run,
    failed instead on CI (tests.support.external.sandbox_or_skip)."""
    from tests.support.external import sandbox_or_skip

    sandbox_or_skip()


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every private folder a test makes goes under one fresh TMPDIR (checked empty after by
    the tests that use it: contestants write the private table there)."""
    import tempfile

    folder = tmp_path / "tmpdir"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder
