"""A real shared tracking server: `mlflow server` with a SQL (SQLite) backend store and a
served artifact root on 127.0.0.1; a small parallel sweep logs to it over HTTP and the
leaderboard is read back from it. Needs nothing beyond the project's dependencies."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Iterator

import pandas as pd
import pytest
from mlflow import MlflowClient

from tests.conftest import make_small_frame

READY_TIMEOUT_S = 180


def free_port() -> int:
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url: str, server: subprocess.Popen, log: Path) -> None:
    """Poll ``/health`` until it answers, the server dies, or the bounded wait runs out."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"mlflow server exited early ({server.returncode}):\n{log.read_text()}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"mlflow server not ready after {READY_TIMEOUT_S} s:\n{log.read_text()}")


@contextmanager
def mlflow_server(root: Path, store: Path | None = None) -> Iterator[str]:
    """``mlflow server`` on a free loopback port (its backend a copy of ``store``, an empty
    store whose tables exist, when given); always terminated."""
    if store is not None:
        shutil.copyfile(store, root / "server.db")
    port = free_port()
    log = root / "server.log"
    cmd = [sys.executable, "-m", "mlflow", "server",
           "--backend-store-uri", f"sqlite:///{root / 'server.db'}",
           "--artifacts-destination", str(root / "artifacts"), "--serve-artifacts",
           "--host", "127.0.0.1", "--port", str(port), "--workers", "1"]
    with open(log, "w") as out:
        server = subprocess.Popen(cmd, cwd=root, stdout=out, stderr=subprocess.STDOUT,
                                  start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, server, log)
        yield url
    finally:
        try:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(server.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            server.wait(timeout=20)


@pytest.mark.slow
def test_a_sweep_logs_to_a_shared_server_and_the_board_reads_it_back(tmp_path, small_schema,
                                                                     empty_mlflow_store):
    server_root, work = tmp_path / "server", tmp_path / "work"
    server_root.mkdir()
    work.mkdir()
    make_small_frame(2000, 1).to_csv(work / "private.csv", index=False)
    make_small_frame(2000, 2, first_id=5001).to_csv(work / "public.csv", index=False)
    small_schema.save(work / "parameters.json")
    with mlflow_server(server_root, empty_mlflow_store) as url:
        env = {**os.environ, "MLFLOW_TRACKING_URI": url, "DP_ARENA_JOBS": "1"}
        sweep = subprocess.run(
            [sys.executable, "-m", "harness.cli.main", "dataset=csv", "dataset.path=private.csv",
             "dataset.schema=parameters.json", "dataset.public_path=public.csv",
             "privacy.delta=1e-6", "metrics=kmarginal", "mechanism=independent,uniform",
             "privacy.epsilon=10", "trial=0"],
            cwd=work, env=env, capture_output=True, text=True, timeout=600)
        assert sweep.returncode == 0, sweep.stderr
        assert "sweep finished: 2 of 2 runs succeeded" in sweep.stdout
        board = subprocess.run(
            [sys.executable, "-m", "harness.cli.board", "--tracking-uri", url,
             "--experiment", "dp-arena/private", "--out", "lb"],
            cwd=work, capture_output=True, text=True, timeout=300)
        assert board.returncode == 0, board.stderr
        assert "### epsilon = 10" in board.stdout
        table = pd.read_csv(work / "lb" / "leaderboard.csv")
        assert len(table) == 2 and set(table["n"]) == {1}
        client = MlflowClient(url)
        every = client.search_runs([client.get_experiment_by_name("dp-arena/private").experiment_id])
        runs = [r for r in every if r.data.tags.get("kind", "run") == "run"]
        parent, = [r for r in every if r.data.tags.get("kind") == "sweep"]
        assert len(runs) == 2 and {r.info.status for r in runs} == {"FINISHED"}
        assert {r.data.tags["mlflow.parentRunId"] for r in runs} == {parent.info.run_id}
        assert all(r.info.artifact_uri.startswith("mlflow-artifacts:") for r in runs)
        scores = client.download_artifacts(runs[0].info.run_id, "scores.json", str(tmp_path))
        assert Path(scores).stat().st_size > 0  # artifacts are served over HTTP
    assert not (work / "mlflow.db").exists()  # nothing went to a local store
    stored = {p.name for p in (server_root / "artifacts").rglob("*") if p.is_file()}
    assert {"scores.json", "ledger.json", "synthetic.parquet"} <= stored
