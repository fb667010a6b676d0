"""A throwaway MLflow tracking server on a free port."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

READY_TIMEOUT_S = 180
#: The server without MLflow's job runner: from MLflow 3.x ``mlflow server`` also starts a
#: job runner with eight huey consumer processes (GenAI scoring, trace archival), nine more
#: interpreters importing MLflow at every start (13 s to ready under load, 9 s to stop);
#: runs, metrics and served artifacts, what the tests check, do not use it.
SERVER_ENV = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}


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
def mlflow_server(root: Path, store: Path | None = None,
                  backend: str | None = None) -> Iterator[str]:
    """``mlflow server`` on a free loopback port (its backend a copy of ``store``, an empty
    store whose tables exist, when given; or the database ``backend``, e.g. a PostgreSQL
    URI); always terminated."""
    if store is not None:
        shutil.copyfile(store, root / "server.db")
    port = free_port()
    log = root / "server.log"
    cmd = [sys.executable, "-m", "mlflow", "server",
           "--backend-store-uri", backend or f"sqlite:///{root / 'server.db'}",
           "--artifacts-destination", str(root / "artifacts"), "--serve-artifacts",
           "--host", "127.0.0.1", "--port", str(port), "--workers", "1"]
    with open(log, "w") as out:
        server = subprocess.Popen(cmd, cwd=root, stdout=out, stderr=subprocess.STDOUT,
                                  start_new_session=True, env=SERVER_ENV)
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
