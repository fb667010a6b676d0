"""What dp-arena prints and logs keeps the data and the credentials out (dp_arena/redact.py and
the runner's failure reasons): error messages name a file without its bytes, offsets or rows;
a failure reason keeps a column's name but not its values; credentials are stripped from URIs,
commands and run params."""

from __future__ import annotations

import pytest

from dp_arena.data.datasets import read_csv_file
from dp_arena.errors import DPArenaError
from dp_arena.redact import (
    command_without_credentials,
    scrubbed_reason,
    without_credentials,
)
from dp_arena.report.tracking import log_params
from dp_arena.run.runner import failure_message

SECRET_ROW = "Alice Q. Smith,1987-03-04,42017"


# ----- error messages and failure reasons ---------------------------------------------------
def test_an_undecodable_csv_is_named_without_its_byte_or_offset(tmp_path):
    path = tmp_path / "data.csv"
    path.write_bytes(b"name,age\n" + b"ok,1\n" * 50 + b"J\xe9r\xf4me,37\n")
    with pytest.raises(DPArenaError) as err:
        read_csv_file(path, "dataset.path")
    text = str(err.value)
    assert "not UTF-8 text" in text and "fix:" in text
    text = text.replace(str(path), "<path>").replace("dataset.path", "")
    for leak in ("0xe9", "\\xe9", "position", "byte 0x", "J"):
        assert leak not in text


def test_a_ragged_csv_is_named_without_its_line_number_or_content(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("name,age\n" + "ok,1\n" * 30 + SECRET_ROW + ",extra\n")
    with pytest.raises(DPArenaError) as err:
        read_csv_file(path, "dataset.path")
    text = str(err.value)
    assert "different number of fields" in text
    text = text.replace(str(path), "<path>")  # the (public) path may hold any digits
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


# ----- CSV cells ------------------------------------------------------------------------------


# ----- the secret key -------------------------------------------------------------------------


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
    from dp_arena.run.config import parse_run_config

    cfg = {"mechanism": {"name": "uniform"}, "privacy": {"epsilon": 1.0, "delta": 1e-6},
           "dataset": {"name": "taxi_sim"}, "metrics": {"kmarginal": {}},
           "tracking": {"uri": "https://alice:s3cret@mlflow.example/?token=abc"}}
    client = RecordingClient()
    log_params(client, "run", parse_run_config(cfg).as_dict())
    assert client.params["tracking.uri"] == "https://mlflow.example/"
    assert not any("s3cret" in v or "abc" in v for v in client.params.values())


def test_the_parent_runs_command_holds_no_credentials(tmp_path, tracking_uri):
    from dp_arena.report.tracking import client_for
    from dp_arena.sweep.parents import start_parent_runs
    from dp_arena.sweep.records import JobPlan, SweepPlan

    plan = SweepPlan((JobPlan(0, "run", experiment="dp-arena/t"),), tracking_uri=tracking_uri,
                     total=1)
    parents = start_parent_runs(plan, tmp_path, ["tracking.uri=https://u:pw@h/", "trial=0"])
    run = client_for(tracking_uri).get_run(parents["dp-arena/t"])
    assert run.data.params["command"] == "tracking.uri=https://h/ trial=0"


# ----- prepared files -------------------------------------------------------------------------


# ----- memory limit ---------------------------------------------------------------------------
