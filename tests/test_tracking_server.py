"""A real shared tracking server: `mlflow server` with a SQL (SQLite) backend store and a
served artifact root on 127.0.0.1; a small parallel sweep logs to it over HTTP and the
leaderboard is read back from it. Needs nothing beyond the project's dependencies."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest
from mlflow import MlflowClient

from tests.conftest import make_small_frame
from tests.support.forked import run_forked
from tests.support.mlflow_server import mlflow_server


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
        # the commands in children of the fork server (tests.support.forked): what they log
        # over HTTP is the subject, not their interpreters' start
        sweep = run_forked(
            ("dp-arena", "dataset=csv", "dataset.path=private.csv",
             "dataset.schema=parameters.json", "dataset.public_path=public.csv",
             "privacy.delta=1e-6", "metrics=kmarginal", "mechanism=independent,uniform",
             "privacy.epsilon=10", "trial=0"), work, env, timeout=600)
        assert sweep.returncode == 0, sweep.stderr
        assert "sweep finished: 2 of 2 runs succeeded" in sweep.stdout
        board = run_forked(("dp-arena-board", "--tracking-uri", url, "--experiment",
                            "dp-arena/private", "--out", "lb"), work, os.environ, timeout=300)
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
