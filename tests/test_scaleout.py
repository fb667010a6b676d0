"""Scale-out that has actually run: a small sweep goes through the Hydra submitit launcher
(submitit's local executor: the SLURM code path on this machine) and through the Hydra Ray
launcher on a local Ray cluster (head on this machine, started and stopped here), both logging
to a real ``mlflow server``; the leaderboard reads the runs back from the server. The path for
several machines runs too: the Ray cluster's workers log to an ``mlflow server`` whose store is
a real PostgreSQL database (tests.support.postgres; skipped without its server binaries,
failed on CI).

The Ray test needs the optional ``ray`` extra (``pip install -e ".[ray]"``) and skips with a
reason without it. Neither test touches another Ray cluster or process: the head runs in its
own process group and session folder and is stopped by killing that group.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from mlflow import MlflowClient

from dp_arena.report.leaderboard import build_leaderboard, load_runs
from tests.support.mlflow_server import free_port, mlflow_server

#: Two tiny jobs: one DP mechanism and the uniform floor, at epsilon 1, on 2,000 simulated trips.
SWEEP = ("mechanism=independent,uniform", "privacy.epsilon=1", "dataset.n_private=2000",
         "dataset.n_public=2000", "metrics=kmarginal", "trial=0")
EXPERIMENT = "dp-arena/taxi_sim"
RAY_READY_TIMEOUT_S = 120


def sweep_through(launcher: str, url: str, work: Path, extra_env: dict[str, str] | None = None,
                  sweep: tuple[str, ...] = SWEEP) -> subprocess.CompletedProcess:
    """``dp-arena`` on :data:`SWEEP` through ``hydra/launcher=<launcher>``, logging to ``url``.
    The sweep folder is absolute: a job may run in another working directory (Ray workers run
    in the raylet's), and on a cluster it must be on a filesystem every node shares."""
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    env.update(extra_env or {})
    return subprocess.run(
        [sys.executable, "-m", "dp_arena.cli.main", *sweep, f"hydra/launcher={launcher}",
         f"tracking.uri={url}", f"hydra.sweep.dir={work / 'multirun'}"],
        check=False, cwd=work, env=env, capture_output=True, text=True, timeout=600)


def assert_board_reads_back(url: str, work: Path) -> None:
    """Both jobs FINISHED on the server, ranked on a board built from the server's runs, and
    nothing went to a local store."""
    runs = load_runs(EXPERIMENT, url)
    assert sorted(runs["mechanism"]) == ["independent", "uniform"]
    assert set(runs["status"]) == {"FINISHED"}
    board = build_leaderboard(runs)
    assert set(board["mechanism"]) == {"independent", "uniform"}
    assert list(board["n"]) == [1, 1] and set(board["epsilon"]) == {1.0}
    client = MlflowClient(url)
    for run_id in runs["run_id"]:
        assert client.get_run(run_id).info.artifact_uri.startswith("mlflow-artifacts:")
    assert not (work / "mlflow.db").exists()
    assert len(list((work / "multirun").glob("*/outcome.json"))) == 2


@pytest.mark.slow
def test_a_sweep_through_the_submitit_local_executor_logs_to_a_server(tmp_path,
                                                                      empty_mlflow_store):
    server_root, work = tmp_path / "server", tmp_path / "work"
    server_root.mkdir()
    work.mkdir()
    with mlflow_server(server_root, empty_mlflow_store) as url:
        sweep = sweep_through("slurm_local", url, work)
        assert sweep.returncode == 0, sweep.stdout[-3000:] + sweep.stderr[-3000:]
        assert "sweep finished: 2 of 2 runs succeeded" in sweep.stdout
        # submitit ran the jobs: its pickled job and result files sit in the sweep folder
        assert len(list((work / "multirun" / ".submitit").glob("*/*_result.pkl"))) == 2
        assert_board_reads_back(url, work)


@dataclass(frozen=True)
class RayHead:
    address: str   # host:port of the head's GCS
    temp: Path     # its session folder root (logs of every worker)

    def workers_that_ran(self, task: str) -> int:
        """How many worker processes of this cluster ran the Ray task ``task``."""
        logs = self.temp.glob("session_[0-9]*/logs/worker-*.out")  # not the session_latest link
        return sum(f":task_name:{task}\n" in p.read_text(errors="replace") for p in logs)


@pytest.fixture
def ray_head() -> Iterator[RayHead]:
    """A one-node Ray cluster on this machine (2 CPUs, no dashboard).

    ``ray start`` runs in a new session, so the head and every process it starts share one
    process group, which is killed at the end (not ``ray stop``: that stops every Ray cluster
    of this user on the machine). The session folder lives under a short /tmp path (Ray's
    socket paths must stay under the 107-character limit)."""
    pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[ray]'")
    pytest.importorskip("hydra_plugins.hydra_ray_launcher",
                        reason="hydra-ray-launcher is not installed: pip install -e '.[ray]'")
    ray_cli = Path(sys.executable).with_name("ray")
    temp = Path(tempfile.mkdtemp(prefix="dpray", dir="/tmp"))
    port = free_port()
    cmd = [str(ray_cli), "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}",
           "--num-cpus=2", "--include-dashboard=false", "--disable-usage-stats",
           f"--ray-client-server-port={free_port()}", f"--temp-dir={temp}"]
    head = subprocess.Popen(cmd, cwd=temp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    try:
        out, _ = head.communicate(timeout=RAY_READY_TIMEOUT_S)
        if head.returncode != 0:
            pytest.fail(f"ray start failed ({head.returncode}):\n{out[-3000:]}")
        yield RayHead(f"127.0.0.1:{port}", temp)
    finally:
        stop_process_group(head.pid)
        shutil.rmtree(temp, ignore_errors=True)


def stop_process_group(pgid: int) -> None:
    """SIGTERM the group, then SIGKILL whatever is left after a bounded wait."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 5  # gcs_server takes SIGTERM slowly; SIGKILL follows
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@pytest.mark.slow
def test_a_sweep_through_the_ray_launcher_on_a_local_cluster_logs_to_a_server(tmp_path, ray_head):
    server_root, work = tmp_path / "server", tmp_path / "work"
    server_root.mkdir()
    work.mkdir()
    with mlflow_server(server_root) as url:
        # the shipped ray_cluster config joins the running cluster named by RAY_ADDRESS
        sweep = sweep_through("ray_cluster", url, work, {"RAY_ADDRESS": ray_head.address})
        assert sweep.returncode == 0, sweep.stdout[-3000:] + sweep.stderr[-3000:]
        assert "sweep finished: 2 of 2 runs succeeded" in sweep.stdout
        assert "Connecting to existing Ray cluster" in sweep.stdout + sweep.stderr
        # the jobs ran as the launcher's Ray tasks in workers of this cluster (max_calls: 1 in
        # the config gives each job a fresh worker)
        assert ray_head.workers_that_ran("_run_job") == 2
        assert_board_reads_back(url, work)


#: Four jobs (two mechanisms at two epsilons): more than the cluster's two CPUs run at once.
SWEEP_OF_FOUR = tuple("privacy.epsilon=1,2" if o.startswith("privacy.epsilon=") else o
                      for o in SWEEP)


@pytest.mark.slow
def test_a_ray_cluster_sweep_logs_through_a_server_to_postgres(tmp_path, ray_head, postgres):
    """What docs/running.md gives for several machines: Ray's workers log over HTTP to an
    ``mlflow server`` whose backend store is PostgreSQL and which serves the artifacts."""
    import psycopg

    server_root, work = tmp_path / "server", tmp_path / "work"
    server_root.mkdir()
    work.mkdir()
    with mlflow_server(server_root, backend=postgres.uri()) as url:
        sweep = sweep_through("ray_cluster", url, work, {"RAY_ADDRESS": ray_head.address},
                              SWEEP_OF_FOUR)
        assert sweep.returncode == 0, sweep.stdout[-3000:] + sweep.stderr[-3000:]
        assert "sweep finished: 4 of 4 runs succeeded" in sweep.stdout
        assert ray_head.workers_that_ran("_run_job") == 4  # one fresh worker per job
        runs = load_runs(EXPERIMENT, url)
        assert sorted(zip(runs["mechanism"], runs["epsilon"])) == [
            ("independent", 1.0), ("independent", 2.0), ("uniform", 1.0), ("uniform", 2.0)]
        assert set(runs["status"]) == {"FINISHED"}
        board = build_leaderboard(runs)
        assert len(board) == 4 and set(board["n"]) == {1}
        client = MlflowClient(url)
        for run_id in runs["run_id"]:
            assert client.get_run(run_id).info.artifact_uri.startswith("mlflow-artifacts:")
    # the runs are rows of the PostgreSQL database: four jobs and the sweep's parent run
    with psycopg.connect(postgres.uri()) as con:
        counts = dict(con.execute("SELECT status, count(*) FROM runs GROUP BY status"))
    assert counts == {"FINISHED": 5}
    assert not (work / "mlflow.db").exists()
    stored = {p.name for p in (server_root / "artifacts").rglob("*") if p.is_file()}
    assert {"scores.json", "ledger.json", "synthetic.parquet"} <= stored
