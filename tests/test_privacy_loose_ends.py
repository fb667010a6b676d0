"""Issue 27's privacy loose ends: what dp-arena prints and logs keeps the data and the
credentials out (error messages, failure reasons, URIs, file modes, CSV cells), AIM reports the
bound it can prove, and a data file that cannot fit the memory limit is refused unread."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.data.datasets import read_csv_file
from harness.errors import DPArenaError
from harness.privacy.accounting import Budget, Ledger
from harness.privacy.secret import local_secret
from harness.redact import command_without_credentials, scrubbed_reason, without_credentials
from harness.report.render import csv_cell, csv_safe
from harness.run.runner import failure_message, log_params, spent_budget
from mechanisms import make_mechanism
from tests.seeding import seeded

SECRET_ROW = "Alice Q. Smith,1987-03-04,42017"


# ----- error messages and failure reasons ---------------------------------------------------
def test_an_undecodable_csv_is_named_without_its_byte_or_offset(tmp_path):
    path = tmp_path / "data.csv"
    path.write_bytes(b"name,age\n" + b"ok,1\n" * 50 + b"J\xe9r\xf4me,37\n")
    with pytest.raises(DPArenaError) as err:
        read_csv_file(path, "dataset.path")
    text = str(err.value)
    assert "not utf-8 text" in text and "fix:" in text
    for leak in ("0xe9", "\\xe9", "position", "byte 0x", "J"):
        assert leak not in text.replace("dataset.path", "")


def test_a_ragged_csv_is_named_without_its_line_number_or_content(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("name,age\n" + "ok,1\n" * 30 + SECRET_ROW + ",extra\n")
    with pytest.raises(DPArenaError) as err:
        read_csv_file(path, "dataset.path")
    text = str(err.value)
    assert "different number of fields" in text
    assert "32" not in text and "Smith" not in text and "line" not in text


def test_a_foreign_failure_reason_keeps_the_column_but_not_the_values():
    exc = ValueError("could not convert string to float: 'Alice Smith' in column 'age' "
                     "at row 1234 (byte 0xff in position 17)")
    reason = failure_message("independent", exc, public=("age",))
    assert reason.startswith("mechanism 'independent' run failed: ValueError: could not")
    assert "'age'" in reason
    for leak in ("Alice", "1234", "0xff", "17"):
        assert leak not in reason


def test_a_dp_arena_error_is_its_own_message():
    exc = DPArenaError("column 'age': 3 values outside 0..120", "fix the schema")
    assert failure_message("mst", exc) == str(exc)


def test_scrubbed_reason_cuts_a_whole_quoted_row():
    reason = scrubbed_reason(KeyError(SECRET_ROW * 40))
    assert "Smith" not in reason and "42017" not in reason and len(reason) <= 520


# ----- AIM's bound ----------------------------------------------------------------------------
@pytest.mark.parametrize("accountant", ["gdp", "zcdp"])
def test_aim_reports_the_filter_budget_under_every_accountant(small_dataset, accountant):
    """Under gdp the ledger composes AIM's charges to less than the budget, but only the zCDP
    filter over the whole budget is proven for adaptively chosen scales: that is reported."""
    budget = Budget(1.0, 1e-6)
    ledger = Ledger(budget, accountant, unit=small_dataset.ledger_unit)
    aim = make_mechanism("aim", {"rounds": 4, "iters": 20, "final_iters": 20,
                                 "workload_degree": 2})
    aim.fit_sample(small_dataset, budget, seeded(ledger, 0), np.random.default_rng(0))
    assert spent_budget(aim, ledger) == (1.0, 1e-6)
    # the ledger's own figure is a valid bound too, never above the budget: under gdp, with
    # AIM's pure selections among the charges, it is the smaller of the gdp sum and the zCDP
    # conversion (Canonne-Kamath-Steinke), here the zCDP filter's own figure
    assert ledger.spent()[0] <= 1.0


def test_other_mechanisms_report_the_ledger(small_dataset):
    budget = Budget(1.0, 1e-6)
    ledger = Ledger(budget, "gdp", unit=small_dataset.ledger_unit)
    mech = make_mechanism("independent", {})
    mech.fit_sample(small_dataset, budget, seeded(ledger, 0), np.random.default_rng(0))
    assert spent_budget(mech, ledger) == ledger.spent()


# ----- CSV cells ------------------------------------------------------------------------------
@pytest.mark.parametrize("cell, safe", [
    ("x;=1+1", "x;'=1+1"), ("a,+SUM(A1)", "a,'+SUM(A1)"), ("a|@cmd", "a|'@cmd"),
    ("a\t=1", "a\t'=1"), ("a\r-1", "a\r'-1"), ("=1;=2", "'=1;'=2"),
    ("k=2", "k=2"), ("rounds=24,iters=100", "rounds=24,iters=100"), ("-", "-")])
def test_every_cell_a_spreadsheet_would_evaluate_is_guarded(cell, safe):
    assert csv_cell(cell) == safe


def test_csv_safe_guards_inner_separators_of_every_text_column():
    frame = csv_safe(pd.DataFrame({"hyperparameters": ["x;=1+1", "k=2"], "n": [1, 2]}))
    assert frame["hyperparameters"].tolist() == ["x;'=1+1", "k=2"]


# ----- the secret key -------------------------------------------------------------------------
@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660])
def test_a_secret_key_others_may_read_is_refused_with_the_fix(tmp_path, mode):
    key = tmp_path / "secret.key"
    key.write_bytes(os.urandom(32))
    key.chmod(mode)
    with pytest.raises(DPArenaError) as err:
        local_secret(key)
    assert "group or others" in str(err.value) and f"chmod 600 {key}" in str(err.value)
    key.chmod(0o600)
    assert local_secret(key) == key.read_bytes()


# ----- credentials in URIs --------------------------------------------------------------------
def test_credentials_are_stripped_from_uris_and_commands():
    assert without_credentials("https://bob:hunter2@mlflow.example:5000/api?token=t0k&x=1") \
        == "https://mlflow.example:5000/api?x=1"
    assert without_credentials("postgresql://u:p@db/mlflow") == "postgresql://db/mlflow"
    assert without_credentials("sqlite:////tmp/mlflow.db") == "sqlite:////tmp/mlflow.db"
    assert command_without_credentials(["tracking.uri=http://u:pw@h:9/", "trial=0"]) == \
        ["tracking.uri=http://h:9/", "trial=0"]


class RecordingClient:
    def __init__(self):
        self.params: dict[str, str] = {}

    def log_batch(self, run_id, params=(), **_):
        self.params.update({p.key: p.value for p in params})


def test_run_params_hold_no_credentials():
    from harness.run.config import parse_run_config

    cfg = {"mechanism": {"name": "uniform"}, "privacy": {"epsilon": 1.0, "delta": 1e-6},
           "dataset": {"name": "taxi_sim"}, "metrics": {"kmarginal": {}},
           "tracking": {"uri": "https://alice:s3cret@mlflow.example/?token=abc"}}
    client = RecordingClient()
    log_params(client, "run", parse_run_config(cfg))
    assert client.params["tracking.uri"] == "https://mlflow.example/"
    assert not any("s3cret" in v or "abc" in v for v in client.params.values())


def test_the_parent_runs_command_holds_no_credentials(tmp_path, tracking_uri):
    from harness.sweep.parents import start_parent_runs
    from harness.report.tracking import client_for

    from harness.sweep.records import JobPlan, SweepPlan

    plan = SweepPlan((JobPlan(0, "run", experiment="dp-arena/t"),), tracking_uri=tracking_uri,
                     total=1)
    parents = start_parent_runs(plan, tmp_path, ["tracking.uri=https://u:pw@h/", "trial=0"])
    run = client_for(tracking_uri).get_run(parents["dp-arena/t"])
    assert run.data.params["command"] == "tracking.uri=https://h/ trial=0"


# ----- prepared files -------------------------------------------------------------------------
@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_prepared_private_files_are_owner_only(tmp_path):
    from harness.cli.prepare import main as prepare_main

    old = os.umask(0o022)
    try:
        export = Path(__file__).parent / "fixtures" / "chicago_portal_export.csv"
        assert prepare_main(["chicago", str(export), str(tmp_path / "out")]) == 0
    finally:
        os.umask(old)
    for name in ("trips.csv", "parameters.json", "companies.json"):
        assert stat.S_IMODE((tmp_path / "out" / name).stat().st_mode) == 0o600, name


# ----- memory limit ---------------------------------------------------------------------------
def test_a_file_larger_than_the_memory_limit_is_refused_unread(tmp_path, monkeypatch):
    from harness.sweep import plan as preflight

    data = tmp_path / "big.csv"
    data.write_text("a\n" + "1\n" * 600_000)  # 1.2 MB
    cfg = {"mechanism": {"name": "uniform"}, "privacy": {"epsilon": 1.0, "delta": 1e-9},
           "dataset": {"name": "csv", "path": str(data), "schema": str(tmp_path / "s.json")},
           "metrics": {"kmarginal": {}}, "limits": {"memory_limit_mb": 1}}
    monkeypatch.setattr(preflight, "cached_dataset",
                        lambda *a: pytest.fail("the data was loaded"))
    plan = preflight.plan_sweep([cfg])
    assert plan.jobs[0].verdict == "invalid"
    assert "larger than limits.memory_limit_mb=1 MB" in plan.jobs[0].reason
    assert "1.2" not in plan.jobs[0].reason  # the size itself is not said
    # 1.2 MB of one-digit integers load as 4.8 MB (8 bytes each), 12 MB at the parser's peak
    # (harness.run.preflight.estimated_loaded_bytes): 20 MB fits
    cfg["limits"]["memory_limit_mb"] = 20
    monkeypatch.setattr(preflight, "cached_dataset", lambda *a: (_ for _ in ()).throw(
        DPArenaError("loaded")))
    assert preflight.plan_sweep([cfg]).jobs[0].reason == "loaded"
