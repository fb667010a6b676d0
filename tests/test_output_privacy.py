"""What a run writes keeps the guarantee: attacks from the privacy review that must now fail.

1. noise replayable from logged values (seed, trial) -> noise comes from fresh OS entropy;
2. runs sharing (seed, trial) shared noise, so differencing them cancelled it -> independent;
3. the data fingerprint was an unkeyed SHA-256 of the private table -> keyed HMAC;
4. metric tables with exact private statistics were logged -> only with an opt-in, tagged;
5. a delta at or above 1/n was accepted -> refused unless explicitly allowed.

Tolerances: (b) correlations of independent draws are N(0, 1/n): |r| < 5 / sqrt(n) fails by
chance with probability 6e-7 per assertion; a test making several such assertions on fresh noise
splits the suite's 1e-6 between them (z = tests.support.tolerances.z_quantile(1e-6 / k)).
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mlflow import MlflowClient

from dp_arena.data.datasets import load_taxi_sim
from dp_arena.errors import ConfigError
from dp_arena.privacy.noise import fresh_rng, replayable_rng
from dp_arena.privacy.secret import keyed_digest
from dp_arena.run.runner import data_fingerprint, run_one
from tests.support.runs import config, logged_files
from tests.support.tolerances import FALSE_FAILURE, z_quantile

ROOT = Path(__file__).resolve().parents[1]


def echo_run(tmp_path: Path, uri: str, epsilon: float, tag: str, **privacy) -> np.ndarray:
    path = tmp_path / f"echo-{tag}.npy"
    cfg = config(tmp_path, uri, "test_noise_echo", epsilon, plugins=["tests.doubles"],
                 resume=False)
    cfg["mechanism"]["echo_path"] = str(path)
    cfg["privacy"].update(privacy)
    assert run_one(cfg).status == "FINISHED"
    return np.load(path)


def test_runs_differing_only_in_epsilon_draw_uncorrelated_noise(csv_files, tracking_uri):
    tmp_path, _ = csv_files
    a = echo_run(tmp_path, tracking_uri, 1.0, "a")
    b = echo_run(tmp_path, tracking_uri, 10.0, "b")
    # Same seed and trial: the old default_rng([seed, trial]) gave identical draws (corr = 1).
    # Independent N(0,1) vectors of length 2000: corr ~ N(0, 1/2000); 5 sd = 0.11.
    assert abs(np.corrcoef(a, b)[0, 1]) < 5 / np.sqrt(len(a))
    assert not np.allclose(a, b)


def test_noise_cannot_be_replayed_from_logged_seed_and_trial(csv_files, tracking_uri):
    tmp_path, _ = csv_files
    draws = echo_run(tmp_path, tracking_uri, 1.0, "replay")
    # The attacker's replay: every generator a reader could build from the logged params.
    # Nine guesses against one fresh draw: 5 sd each would fail by chance 9 x 6e-7 = 5e-6 of
    # the time; they share 1e-6 instead (z = 5.31, r < 0.119 at n = 2,000; a replay gives 1)
    guesses = [(seed, trial) for seed in range(3) for trial in range(3)]
    z = z_quantile(FALSE_FAILURE / len(guesses))
    for seed, trial in guesses:
        guess = np.random.default_rng([seed, trial]).standard_normal(len(draws))
        assert abs(np.corrcoef(draws, guess)[0, 1]) < z / np.sqrt(len(draws))


def test_identical_runs_give_different_synthetic_tables(csv_files, tracking_uri):
    tmp_path, _ = csv_files
    client = MlflowClient(tracking_uri)
    tables = []
    for _ in range(2):
        out = run_one(config(tmp_path, tracking_uri, "independent", resume=False))
        parquet = [p for p in logged_files(client, out.run_id, tmp_path) if p.suffix == ".parquet"]
        tables.append(pd.read_parquet(parquet[0]))
        assert client.get_run(out.run_id).data.tags["noise"] == "secret"
    assert not tables[0].equals(tables[1])


def test_replayable_mode_reproduces_and_is_labelled(csv_files, tracking_uri):
    tmp_path, _ = csv_files
    a = echo_run(tmp_path, tracking_uri, 1.0, "r", noise="replayable")
    b = echo_run(tmp_path, tracking_uri, 1.0, "r", noise="replayable")  # same content key
    assert np.array_equal(a, b)
    c = echo_run(tmp_path, tracking_uri, 10.0, "r", noise="replayable")
    assert abs(np.corrcoef(a, c)[0, 1]) < 5 / np.sqrt(len(a))
    runs = MlflowClient(tracking_uri).search_runs(
        [MlflowClient(tracking_uri).get_experiment_by_name("test").experiment_id])
    tags = [r.data.tags for r in runs]
    assert all(t["noise"] == "replayable" and "not a DP release" in t["noise_note"] for t in tags)


def test_replayable_streams_depend_on_the_secret_key():
    key_a, key_b = b"a" * 32, b"b" * 32
    x = replayable_rng("run-key", key_a).standard_normal(500)
    assert np.array_equal(x, replayable_rng("run-key", key_a).standard_normal(500))
    y = replayable_rng("run-key", key_b).standard_normal(500)
    z = replayable_rng("other-key", key_a).standard_normal(500)
    for other in (y, z):
        assert abs(np.corrcoef(x, other)[0, 1]) < 5 / np.sqrt(500)
    assert not np.array_equal(fresh_rng().standard_normal(5), fresh_rng().standard_normal(5))


def test_fingerprint_cannot_be_linked_to_a_table_without_the_key(secret_key_file):
    data = load_taxi_sim(n_private=2000, n_public=2000, seed=1)
    neighbour = load_taxi_sim(n_private=2000, n_public=2000, seed=1)
    neighbour.private.loc[0, "fare"] = neighbour.private.loc[0, "fare"] + 1
    tag, tag_n = data_fingerprint(data), data_fingerprint(neighbour)
    assert tag != tag_n and tag == data_fingerprint(data)  # identifies the data (resume works)
    # The attacker hashes each candidate table, as the old unkeyed tag allowed.
    for candidate in (data, neighbour):
        digest = candidate.content_digest()
        unkeyed = {hashlib.sha256(digest).hexdigest()[:16], digest.hex()[:16]}
        assert tag not in unkeyed and tag_n not in unkeyed
    # Under another key the same table gets an unrelated tag: the tag is a function of the key.
    other = keyed_digest(data.content_digest(), "data-fingerprint", b"x" * 32)[:16]
    assert other != tag


def test_default_run_logs_no_table_computed_on_private_data(tracking_uri, monkeypatch):
    cfg = {
        "dataset": {"name": "taxi_sim", "n_private": 2000, "n_public": 2000, "seed": 0,
                    "unit": "user"},
        "mechanism": {"name": "independent"},
        "privacy": {"epsilon": 1.0, "delta": 2.5e-5, "accountant": "gdp"},
        "metrics": {"challenge": {}, "count_query": {}, "frequent_patterns": {}},
        "trial": 0, "seed": 0, "resume": False,
        "tracking": {"uri": tracking_uri, "experiment": "taxi"},
    }
    client = MlflowClient(tracking_uri)
    from dp_arena.metrics import make_metric

    declared = set().union(*(getattr(type(make_metric(n, {})), "public_outputs", frozenset())
                             for n in cfg["metrics"]))
    out = run_one(cfg)
    files = logged_files(client, out.run_id, Path())
    assert not [p for p in files if p.suffix == ".csv"]  # no table at all by default
    assert {p.stem for p in files if p.suffix == ".png"} <= declared
    assert client.get_run(out.run_id).data.tags["private_tables"] == "false"
    cfg["tracking"]["log_private_tables"] = True
    out = run_one(cfg)
    opted = logged_files(client, out.run_id, Path())
    csvs = [p for p in opted if p.suffix == ".csv"]
    assert {p.stem for p in csvs} - declared  # the private tables are there, by opt-in
    assert "challenge_heatmap" in {p.stem for p in opted if p.suffix == ".png"}  # drawn late
    assert client.get_run(out.run_id).data.tags["private_tables"] == "true"


def test_delta_at_or_above_one_over_n_is_refused(csv_files, tracking_uri):
    tmp_path, _ = csv_files
    cfg = config(tmp_path, tracking_uri)
    cfg["privacy"]["delta"] = 0.4
    with pytest.raises(ConfigError, match="at or above 1/"):
        run_one(cfg)
    assert not (tmp_path / "mlruns").exists() or not any((tmp_path / "mlruns").rglob("meta.yaml"))
    cfg["privacy"]["allow_large_delta"] = True
    out = run_one(cfg)
    assert MlflowClient(tracking_uri).get_run(out.run_id).data.tags["large_delta"] == "true"


@pytest.mark.slow
def test_cli_refuses_a_large_delta_on_taxi_data_with_one_message(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "dp_arena.cli", "mechanism=independent", "privacy.epsilon=1",
         "privacy.delta=0.4", "dataset.n_private=2000", "dataset.n_public=2000"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    text = proc.stdout + proc.stderr
    assert text.count("at or above 1/") == 1
    assert "Traceback" not in text


def test_reference_outputs_that_are_private_are_not_logged(csv_files, tracking_uri):
    """uniform without a public part emits exactly the private row count; resample emits private
    rows: neither the table nor its row count is logged without the opt-in."""
    tmp_path, private = csv_files
    client = MlflowClient(tracking_uri)
    for mechanism in ("uniform", "resample"):
        cfg = config(tmp_path, tracking_uri, mechanism)
        del cfg["dataset"]["public_path"]
        run = client.get_run(run_one(cfg).run_id)
        files = {p.name for p in logged_files(client, run.info.run_id, tmp_path)}
        assert "synthetic.parquet" not in files
        assert "n_synthetic_rows" not in run.data.metrics
        assert run.data.tags["synthetic_logged"].startswith("false")
    cfg = config(tmp_path, tracking_uri, "uniform")  # with a public part: public row count
    run = client.get_run(run_one(cfg).run_id)
    assert run.data.metrics["n_synthetic_rows"] == 3000
