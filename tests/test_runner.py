"""One run end to end: MLflow params, metrics, artifacts; private data never logged.

Tolerances: (c) the budget is spent to abs=1e-9 (the calibrations' root-finding target,
test_budget_edges.assert_spends_the_budget).
"""

import math
import os
import signal
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from mlflow import MlflowClient

import dp_arena.audit.config_store  # noqa: F401 - registers every room's config schemas
from dp_arena.errors import ConfigError, DPArenaError, SchemaError
from dp_arena.report.leaderboard import build_leaderboard, load_runs, run_row
from dp_arena.report.render import render_markdown
from dp_arena.report.tracking import log_metrics
from dp_arena.run.record import settings_text
from dp_arena.run.runner import run_one
from tests.support.runs import config, logged_files


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
    tmp_path, _private = csv_files
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
    # infinity, as a tag (a metric would read 1.797e308), flagged non-private
    assert resample.data.tags["epsilon_spent"] == "inf"
    assert "epsilon_spent" not in resample.data.metrics
    assert resample.data.tags["private"] == "false"


def test_the_leak_check_detects_private_rows_when_resample_opts_in(csv_files, tracking_uri):
    tmp_path, private = csv_files
    cfg = config(tmp_path, tracking_uri, "resample")
    cfg["tracking"]["log_private_synthetic"] = True
    cfg["dataset"]["holdout_fraction"] = 0.0  # every row is a training row resample can copy
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
    from dp_arena.mechanisms.reference import Uniform
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


def test_accountants_are_separate_settings_on_the_leaderboard(csv_files, tracking_uri):
    tmp_path, _ = csv_files
    run_one(config(tmp_path, tracking_uri))
    run_one(config(tmp_path, tracking_uri,
                   privacy={"epsilon": 1.0, "delta": 1e-6, "accountant": "zcdp"}))
    board = build_leaderboard(load_runs("test", tracking_uri))
    assert sorted(board["hyperparameters"]) == ["-", "accountant=zcdp"]
    assert (board["n"] == 1).all()


def test_the_zcdp_variant_of_adaptive_grid_composes_with_zcdp():
    """``mechanism=adaptive_grid_zcdp`` is adaptive_grid's settings under the zcdp accountant,
    in the default competition and in competition=sprint3; a command-line accountant wins."""
    from hydra import compose, initialize_config_dir

    from dp_arena.data.datasets import PROJECT_ROOT
    from dp_arena.mechanisms.options import mechanism_conf
    with initialize_config_dir(config_dir=str(PROJECT_ROOT / "dp_arena" / "conf"), version_base=None):
        for extra in ([], ["competition=sprint3"]):
            cfg = compose("config", overrides=["mechanism=adaptive_grid_zcdp", *extra])
            assert cfg.privacy.accountant == "zcdp"
            params = dict(cfg.mechanism)
            assert params.pop("name") == "adaptive_grid"
            assert params == mechanism_conf("adaptive_grid")
            assert compose("config", overrides=["mechanism=adaptive_grid", *extra]
                           ).privacy.accountant == "gdp"
        cfg = compose("config", overrides=["mechanism=adaptive_grid_zcdp",
                                           "privacy.accountant=gdp"])
        assert cfg.privacy.accountant == "gdp"


def test_a_run_over_its_memory_limit_fails_with_the_reason(csv_files, tracking_uri):
    import psutil

    tmp_path, _ = csv_files
    limit = psutil.Process().memory_info().rss / 2**20 + 300  # the run inherits this process
    cfg = config(tmp_path, tracking_uri, "test_memory_hog", plugins=["tests.doubles"],
                 limits={"memory_limit_mb": limit, "time_limit_s": 60})
    cfg["mechanism"].update(mb=1500, hold_s=5)
    with pytest.raises(DPArenaError, match=f"memory limit of {limit:g} MB exceeded"):
        run_one(cfg)
    client = MlflowClient(tracking_uri)
    run = client.search_runs([client.get_experiment_by_name("test").experiment_id])[0]
    assert run.info.status == "FAILED"
    assert "memory limit of" in run.data.tags["failure_reason"]


def test_resume_skips_a_finished_key_and_a_new_trial_is_a_new_key(csv_files, tracking_uri):
    tmp_path, _ = csv_files
    first = run_one(config(tmp_path, tracking_uri))
    again = run_one(config(tmp_path, tracking_uri))
    assert again.skipped and again.run_id == first.run_id and again.scores == first.scores
    other = run_one(config(tmp_path, tracking_uri, trial=1))
    assert not other.skipped and other.run_id != first.run_id
    forced = run_one(config(tmp_path, tracking_uri, resume=False))
    assert not forced.skipped
    client = MlflowClient(tracking_uri)
    tags = [r.data.tags for r in client.search_runs(
        [client.get_experiment_by_name("test").experiment_id])]
    assert len(tags) == 3 and all(len(t["code_hash"]) == 16 for t in tags)


def test_source_fingerprint_follows_the_code_a_run_imports():
    from dp_arena.report.tracking import imported_modules, source_fingerprint

    mods = imported_modules("dp_arena.mechanisms.independent",
                            (Path(__file__).parents[1] / "dp_arena" / "mechanisms" / "independent.py").read_text())
    assert "dp_arena.mechanisms.base" in mods and "dp_arena.privacy.accounting" in mods
    a = source_fingerprint(("dp_arena.mechanisms.independent", "dp_arena.metrics.kmarginal"))
    assert a == source_fingerprint(("dp_arena.mechanisms.independent", "dp_arena.metrics.kmarginal"))
    assert a != source_fingerprint(("dp_arena.mechanisms.reference", "dp_arena.metrics.kmarginal"))


def test_dp_select_charges_the_selection_and_stays_within_budget(csv_files, tracking_uri):
    import json

    tmp_path, _ = csv_files
    cfg = config(tmp_path, tracking_uri, tuning={
        "mode": "dp_select", "space": {"mechanism.max_contrib": "choice(1,5)"},
        "select_share": 0.2})
    out = run_one(cfg)
    client = MlflowClient(tracking_uri)
    run = client.get_run(out.run_id)
    assert run.data.tags["tuning"] == "dp_select" and run.data.tags["private"] == "true"
    assert run.data.tags["tuning_chosen"] in ("max_contrib=1", "max_contrib=5")
    assert "exponential mechanism" in run.data.tags["tuning_reason"]
    assert run.data.tags["hyperparameters"] == "select max_contrib∈{1,5}"
    # the selection (pure 0.2) and the chosen run's Gaussians (calibrated to 0.8 by basic
    # composition) compose under gdp to the smaller of the two valid bounds: at most 1, and
    # below it when the zCDP conversion of the whole is the tighter one (here about 0.98)
    assert 0.95 <= run.data.metrics["epsilon_spent"] <= 1.0
    ledger = json.loads(Path(client.download_artifacts(out.run_id, "ledger.json",
                                                       str(tmp_path))).read_text())
    kinds = [c["kind"] for c in ledger["charges"]]
    assert kinds[0] == "exponential" and len(kinds) > 1
    assert 2 * ledger["charges"][0]["sensitivity"] / ledger["charges"][0]["scale"] == \
        pytest.approx(0.2)


def test_oracle_tuning_needs_the_explicit_flag(csv_files, tracking_uri):
    tmp_path, _ = csv_files
    with pytest.raises(ConfigError, match="tuning.allow_oracle=true"):
        run_one(config(tmp_path, tracking_uri, tuning={"mode": "oracle", "stage": "search"}))
    out = run_one(config(tmp_path, tracking_uri, tuning={"mode": "oracle", "stage": "final",
                                                         "allow_oracle": True}))
    tags = MlflowClient(tracking_uri).get_run(out.run_id).data.tags
    assert tags["private"] == "false" and "oracle" in tags["non_private_note"]


def test_public_view_never_holds_the_private_part(small_dataset):
    from dp_arena.run.tuning import public_view

    view = public_view(small_dataset, 0.5, 0)
    both = pd.concat([view.private, view.public])
    assert len(both) == len(small_dataset.public)
    assert set(both["pid"]) <= set(small_dataset.public["pid"])
    assert not set(view.private["pid"]) & set(view.public["pid"])  # split by persons


def test_what_a_mechanism_trims_is_one_note_per_sweep_not_one_per_run(csv_files, tracking_uri):
    """AIM's workload trim (domain sizes only) is planned once for all jobs that share it."""
    from dp_arena.sweep.plan import plan_sweep

    tmp_path, _ = csv_files
    tiny = {"name": "aim", "max_cells": 12}  # every 3-way marginal of the small schema is larger
    configs = [config(tmp_path, tracking_uri, epsilon=e, mechanism="aim") for e in (1.0, 10.0)]
    for cfg in configs:
        cfg["mechanism"] = dict(tiny)
    plan = plan_sweep(configs)
    assert [j.verdict for j in plan.jobs] == ["run", "run"]
    (note, count), = [(n, c) for n, c in plan.notes.items() if n.startswith("aim on ")]
    assert note.startswith("aim on private: workload trimmed to fit memory") and count == 2
    untrimmed = plan_sweep([config(tmp_path, tracking_uri, mechanism="independent")])
    assert not [n for n in untrimmed.notes if n.startswith("independent on ")]


# ----- what the runner logs: an infinite spend is a tag, metric settings as text --------------
class Recorder:
    def __init__(self):
        self.metrics, self.tags = {}, {}

    def log_batch(self, run_id, metrics=(), tags=(), params=()):
        self.metrics.update({m.key: m.value for m in metrics})
        self.tags.update({t.key: t.value for t in tags})


def test_an_infinite_spend_is_a_tag_and_reads_back_as_infinity():
    client = Recorder()
    log_metrics(client, "r", {"epsilon_spent": math.inf, "delta_spent": 0.0, "seconds": 1.5})
    assert "epsilon_spent" not in client.metrics and client.tags["epsilon_spent"] == "inf"
    assert client.metrics == {"delta_spent": 0.0, "seconds": 1.5}
    mlflow_run = SimpleNamespace(
        info=SimpleNamespace(run_id="r", status="FINISHED", start_time=0),
        data=SimpleNamespace(tags={"mechanism": "resample", **client.tags},
                             metrics=client.metrics))
    assert run_row(mlflow_run)["epsilon_spent"] == math.inf


def test_metric_settings_are_written_as_settings():
    assert settings_text({"k": 3}) == "k=3"
    assert settings_text({}) == "defaults"
    assert settings_text({"max_marginals": 50, "k": 2}) == "k=2,max_marginals=50"


@pytest.mark.parametrize("end, stopped", [
    (lambda: os.kill(os.getpid(), signal.SIGTERM), True),
    (lambda: os.kill(os.getpid(), signal.SIGINT), True),
    (lambda: os._exit(143), True), (lambda: os._exit(130), True),
    (lambda: os.kill(os.getpid(), signal.SIGKILL), False), (lambda: os._exit(1), False)])
def test_a_run_stopped_by_a_stop_signal_is_stopped_not_failed(end, stopped, tmp_path):
    """A run's child ended by SIGINT/SIGTERM (the terminal's Ctrl-C, a sweep's stop) is a
    stop: the worker is interrupted (its run then KILLED, no FAILED outcome that a stopped
    sweep would count as finished); any other end without a result is a failure."""
    from dp_arena.run.isolation import RunError, _collect, stopped_by_signal
    from dp_arena.run.settings import Limits

    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        end()
    _, status = os.waitpid(pid, 0)
    assert stopped_by_signal(status) is stopped
    expected = KeyboardInterrupt if stopped else RunError
    with pytest.raises(expected):
        _collect(tmp_path / "no-result.pkl", status, Limits(), None)
