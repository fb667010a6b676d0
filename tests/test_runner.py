"""One run end to end: MLflow params, metrics, artifacts; private data never logged."""

from pathlib import Path

import pandas as pd
import pytest
from mlflow import MlflowClient

from harness.errors import ConfigError, DPArenaError, SchemaError
from harness.leaderboard import build_leaderboard, load_runs, render_markdown
from harness.runner import run_one
from tests.conftest import make_small_frame


@pytest.fixture
def csv_files(tmp_path, small_schema):
    private, public = make_small_frame(3000, 1), make_small_frame(3000, 2, first_id=5001)
    private.to_csv(tmp_path / "private.csv", index=False)
    public.to_csv(tmp_path / "public.csv", index=False)
    small_schema.save(tmp_path / "parameters.json")
    return tmp_path, private


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


def private_row_share(frame: pd.DataFrame, private: pd.DataFrame) -> float:
    """Share of private rows (as a multiset, all columns) that appear in ``frame``."""
    if not set(private.columns) <= set(frame.columns):
        return 0.0
    cols = list(private.columns)
    a = private[cols].astype(str).value_counts()
    b = frame[cols].astype(str).value_counts()
    common = a.index.intersection(b.index)
    return float(pd.concat([a[common], b[common]], axis=1).min(axis=1).sum() / len(private))


def test_run_logs_params_metrics_and_artifacts(csv_files, tracking_uri):
    tmp_path, private = csv_files
    out = run_one(config(tmp_path, tracking_uri))
    assert out.status == "FINISHED"
    client = MlflowClient(tracking_uri)
    run = client.get_run(out.run_id)
    assert run.info.status == "FINISHED"
    assert run.data.params["mechanism.name"] == "independent"
    assert run.data.params["privacy.epsilon"] == "1.0"
    for key in ("kmarginal/score", "seconds", "peak_memory_mb", "epsilon_spent", "delta_spent"):
        assert key in run.data.metrics, key
    assert run.data.metrics["epsilon_spent"] == pytest.approx(1.0, abs=1e-9)  # = the budget
    assert run.data.tags["code_version"] and len(run.data.tags["data_fingerprint"]) == 16
    names = {p.name for p in logged_files(client, out.run_id, tmp_path)}
    assert {"synthetic.parquet", "scores.json", "ledger.json"} <= names


def test_private_data_never_reaches_mlflow(csv_files, tracking_uri):
    tmp_path, private = csv_files
    client = MlflowClient(tracking_uri)
    runs = [run_one(config(tmp_path, tracking_uri, m)) for m in
            ("independent", "resample", "public_only", "uniform")]
    for out in runs:
        for path in logged_files(client, out.run_id, tmp_path):
            if path.suffix == ".parquet":
                frame = pd.read_parquet(path)
            elif path.suffix == ".csv":
                frame = pd.read_csv(path)
            else:
                text = path.read_text(errors="ignore")
                assert private.to_csv(index=False)[:200] not in text
                continue
            assert private_row_share(frame, private) < 0.05, (out.mechanism, path.name)
    resample = client.get_run(runs[1].run_id)
    assert "synthetic_logged" in resample.data.tags
    assert resample.data.metrics["epsilon_spent"] > 1e300  # infinity, flagged non-private
    assert resample.data.tags["private"] == "false"


def test_the_leak_check_detects_private_rows_when_resample_opts_in(csv_files, tracking_uri):
    tmp_path, private = csv_files
    cfg = config(tmp_path, tracking_uri, "resample")
    cfg["tracking"]["log_private_synthetic"] = True
    out = run_one(cfg)
    client = MlflowClient(tracking_uri)
    parquet = [p for p in logged_files(client, out.run_id, tmp_path) if p.suffix == ".parquet"]
    assert private_row_share(pd.read_parquet(parquet[0]), private) > 0.5


def test_bad_input_fails_before_any_run_starts(csv_files, tracking_uri):
    tmp_path, _ = csv_files
    with pytest.raises(ConfigError, match="privacy.epsilon must be a finite number > 0"):
        run_one(config(tmp_path, tracking_uri, epsilon=-1))
    with pytest.raises(ConfigError, match="unknown mechanism 'nope'"):
        run_one(config(tmp_path, tracking_uri, "nope"))
    with pytest.raises(ConfigError, match="unknown metric"):
        run_one(config(tmp_path, tracking_uri, metrics={"nope": {}}))
    missing = config(tmp_path, tracking_uri)
    missing["dataset"]["path"] = "missing.csv"
    with pytest.raises(DPArenaError, match="file not found: missing.csv"):
        run_one(missing)
    assert MlflowClient(tracking_uri).get_experiment_by_name("test") is None


def test_out_of_domain_and_nan_are_listed_together(csv_files, tracking_uri):
    tmp_path, private = csv_files
    bad = private.copy().astype({"amount": float})
    bad.loc[3, "size"] = 9
    bad.loc[5, "amount"] = float("nan")
    bad.to_csv(tmp_path / "private.csv", index=False)
    with pytest.raises(SchemaError) as err:
        run_one(config(tmp_path, tracking_uri))
    assert len(err.value.problems) == 2
    assert "size: 1 value(s) not in the domain" in str(err.value)
    assert "amount: 1 missing value(s) (NaN)" in str(err.value)


def test_a_mechanism_that_emits_invalid_data_fails_its_run(csv_files, tracking_uri, monkeypatch):
    from mechanisms.reference import Uniform
    tmp_path, _ = csv_files
    real = Uniform.fit_sample

    def broken(self, data, budget, ledger, rng):
        return real(self, data, budget, ledger, rng).assign(size=99)

    monkeypatch.setattr(Uniform, "fit_sample", broken)
    with pytest.raises(SchemaError, match="synthetic data from mechanism 'uniform'"):
        run_one(config(tmp_path, tracking_uri, "uniform"))
    client = MlflowClient(tracking_uri)
    runs = client.search_runs([client.get_experiment_by_name("test").experiment_id])
    assert [r.info.status for r in runs] == ["FAILED"]
    assert "size" in runs[0].data.tags["failure_reason"]


def test_leaderboard_groups_trials_and_dedupes_reruns(csv_files, tracking_uri):
    tmp_path, _ = csv_files
    for trial in (0, 1, 2):
        run_one(config(tmp_path, tracking_uri, trial=trial))
    run_one(config(tmp_path, tracking_uri, trial=0))  # identical re-run: counted once
    run_one(config(tmp_path, tracking_uri, "uniform"))
    board = build_leaderboard(load_runs("test", tracking_uri))
    row = board[board["mechanism"] == "independent"].iloc[0]
    assert row["n"] == 3 and row["ci95"] > 0
    assert board.iloc[0]["mechanism"] == "independent" and board.iloc[0]["rank"] == 1
    text = render_markdown(board)
    assert "independent" in text and "uniform (floor)" in text
