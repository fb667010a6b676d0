"""Contestants isolated, and each row says what it claims: the test double
(tests/contestant_double.py) looks for the harness's secret file and tracking URI in its
environment and reports what it saw; a failure line quoting a private record reaches MLflow as
a category only (the owner's file has it); report tags under undeclared names are dropped
without a count; the claims of the shipped adapters tag every run and show in
``dp-arena-contestants list``, with the isolation contestants run under. The sandbox itself
is tests/test_contestant_sandbox.py."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from dp_arena.data.datasets import Dataset
from dp_arena.data.schema import Column, RunSpec, Schema
from dp_arena.errors import ConfigError, DPArenaError
from dp_arena.run.isolation import call_isolated
from dp_arena.run.settings import Limits
from dp_arena.mechanisms import make_mechanism
from dp_arena.mechanisms.base import output_facts
from dp_arena.mechanisms.contestants import ADAPTER_DIR, KEPT_VARIABLES, allowed_environment
from dp_arena.mechanisms.contestants.claims import (
    CLAIM_TAGS,
    READS,
    SHIPPED,
    Claim,
    claim_from_config,
)
from dp_arena.mechanisms.contestant_output import report_tags
from dp_arena.mechanisms.external import FAILURES, OWNER_LOG, PROTOCOL_DIR
from tests.support.external import DOUBLE, fit, leftovers, probe, record_data

#: the protocol's own, and PWD (the private folder: bubblewrap's --chdir sets it)
PROTOCOL_VARIABLES = {"TMPDIR", "PYTHONNOUSERSITE", "MPLBACKEND", "PYTHONPATH", "PWD"}


#: every private folder of a test here goes under its own fresh TMPDIR (conftest.private_tmp)
pytestmark = pytest.mark.usefixtures("private_tmp")


def double(mode: str = "ok", table: str = "codes", report_tags: list[str] | None = None,
           **options) -> object:
    return make_mechanism("external", {"script": DOUBLE, "args": [str(ADAPTER_DIR)],
                                       "table": table, "report_tags": report_tags or [],
                                       "options": {"mode": mode, **options}})


# ----- the environment -----------------------------------------------------------------------
def test_allowed_environment_keeps_only_the_allow_list_then_the_protocol():
    harness = {"PATH": "/bin", "HOME": "/h", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1",
               "DP_ARENA_SECRET_FILE": "/k", "MLFLOW_TRACKING_URI": "sqlite:///m.db",
               "AWS_SECRET_ACCESS_KEY": "s", "PYTHONPATH": "/repo", "TMPDIR": "/tmp"}
    got = allowed_environment(harness, {"TMPDIR": "/f/tmp", "PYTHONNOUSERSITE": "1"})
    assert got == {"PATH": "/bin", "HOME": "/h", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1",
                   "TMPDIR": "/f/tmp", "PYTHONNOUSERSITE": "1"}


@pytest.mark.usefixtures("contestant_sandbox")
def test_a_contestant_cannot_read_the_secret_file_or_tracking_uri_from_its_environment(
        tmp_path, monkeypatch, private_tmp, capfd):
    """The harness's environment holds the path of an existing secret file, a tracking URI
    with a password, a data path, a cloud key and an unknown DP_ARENA_ setting; the double,
    started in the run's isolated child (threads=1), reports that it saw none of them, and did
    see the thread limit and the protocol's TMPDIR."""
    secret = tmp_path / "secret.key"
    secret.write_text("not a real key")
    monkeypatch.setenv("DP_ARENA_SECRET_FILE", str(secret))
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "https://user:pw@mlflow.example/")
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "pw")
    monkeypatch.setenv("DP_ARENA_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("DP_ARENA_SOMETHING_NEW", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "harness-path"))
    monkeypatch.setenv("DP_ARENA_DEBUG", "1")  # the double prints what it saw
    mech, data = double(env_probe=True), record_data()
    limits = Limits(time_limit_s=120, memory_limit_mb=None, threads=1, isolate=True)
    call_isolated(lambda: fit(mech, data), limits)
    seen = probe(capfd.readouterr().err, "ENV_PROBE")
    assert seen["secret_file"] is None and seen["secret_readable"] is False
    assert seen["tracking_uri"] is None
    assert not [n for n in seen["names"] if n.startswith(("DP_ARENA", "MLFLOW", "AWS"))]
    assert set(seen["names"]) <= set(KEPT_VARIABLES) | PROTOCOL_VARIABLES, seen["names"]
    assert {"PATH", "TMPDIR"} <= set(seen["names"])
    assert seen["threads"]["OMP_NUM_THREADS"] == "1"
    assert seen["pythonpath"] == str(PROTOCOL_DIR)  # the protocol's, not the harness's
    assert leftovers(private_tmp) == []


# ----- the failure line ----------------------------------------------------------------------
def planted_data(n: int = 1500) -> tuple[Dataset, dict[str, str]]:
    """A record-level table whose first record holds distinctive values (the plant)."""
    rng = np.random.default_rng(8)  # test data, not a mechanism's noise
    towns = ("Zanzibar", "Quixotic-Town", "Ulanbator")
    schema = Schema((Column("town", "categorical", values=towns, dtype="str"),
                     Column("income", "numeric", min=0, max=100_000, bins=(20_000, 60_000))),
                    (RunSpec(1.0, 1e-6, max_records=5000),))
    frame = pd.DataFrame({"town": rng.choice(towns, n), "income": rng.integers(0, 100_001, n)})
    frame.loc[0, ["town", "income"]] = ["Quixotic-Town", 48213]
    return Dataset("planted", schema, frame, None, unit="record"), \
        {"town": "Quixotic-Town", "income": "48213"}


@pytest.mark.usefixtures("contestant_sandbox")
def test_a_failure_line_holding_a_private_value_does_not_reach_mlflow(tmp_path, tracking_uri,
                                                                      private_tmp,
                                                                      throwaway_state_dir):
    """The double fails with a line quoting the first private record (values table) as a
    public error: the run's failure_reason tag is the category "non-zero exit", no tag or
    param and not the raised error holds the record; the owner's file does."""
    from mlflow import MlflowClient

    from dp_arena.run.runner import run_one

    data, plant = planted_data()
    data.private.to_csv(tmp_path / "private.csv", index=False)
    data.schema.save(tmp_path / "parameters.json")
    cfg = {"dataset": {"name": "csv", "path": str(tmp_path / "private.csv"),
                       "schema": str(tmp_path / "parameters.json"), "holdout_fraction": 0.0},
           "mechanism": {"name": "external", "script": DOUBLE, "args": [str(ADAPTER_DIR)],
                         "table": "values", "options": {"mode": "leak"}},
           "privacy": {"epsilon": 1.0, "delta": 1e-6}, "metrics": {"kmarginal": {"k": 1}},
           "trial": 0, "seed": 0, "tracking": {"uri": tracking_uri, "experiment": "leak"}}
    with pytest.raises(DPArenaError) as err:
        run_one(cfg)
    client = MlflowClient(tracking_uri)
    [run] = client.search_runs([client.get_experiment_by_name("leak").experiment_id])
    reason = run.data.tags["failure_reason"]
    assert reason.startswith(f"contestant 'external' {FAILURES['nonzero_exit']}")
    assert run.data.tags["contestant.failure"] == "nonzero_exit"
    assert "Quixotic-Town" in (throwaway_state_dir / OWNER_LOG).read_text()
    planted = [re.compile(rf"(?<![\w-]){re.escape(v)}(?![\w-])") for v in plant.values()]
    for text in (reason, str(err.value), *run.data.tags.values(), *run.data.params.values()):
        assert not [p.pattern for p in planted if p.search(text)], text
    assert leftovers(private_tmp) == []


# ----- report tags ---------------------------------------------------------------------------
def test_report_tags_keep_declared_names_only_and_drop_the_rest_without_a_count(tmp_path):
    (tmp_path / "report.json").write_text(json.dumps({"tags": {
        "rows_written": 1200, "rows_dropped": 2.5, "age_is_48213": 1, "inf_rows": 1,
        "flag": True}}))
    got = report_tags(tmp_path, ["rows_written", "rows_dropped", "flag", "inf_rows", "9bad"])
    assert got == {"contestant/rows_written": "1200", "contestant/rows_dropped": "2.5",
                   "contestant/inf_rows": "1"}
    assert report_tags(tmp_path, [], limit=10) == {}
    assert report_tags(tmp_path, ["rows_written"], limit=1) == {"contestant/rows_written":
                                                                "1200"}
    assert len(report_tags(tmp_path, ["rows_written", "rows_dropped"], limit=1)) == 1
    (tmp_path / "report.json").write_text("not json")
    assert report_tags(tmp_path, ["rows_written"]) == {}


@pytest.mark.usefixtures("contestant_sandbox")
def test_undeclared_report_tags_from_a_contestant_are_dropped(private_tmp):
    data = record_data()
    mech = double(report_tags=["rows_written"], report={"secret_48213": 48213})
    out, _ = fit(mech, data)
    tags = {**mech.setting_tags(), **output_facts(out)[0]}
    assert set(tags) == {*Claim().tags(), "contestant/rows_written"}
    assert not [v for v in tags.values() if "48213" in v]
    silent = double(report={"secret_48213": 48213})  # nothing declared: nothing kept
    out, _ = fit(silent, data)
    assert not [k for k in output_facts(out)[0] if k.startswith("contestant/")]
    assert leftovers(private_tmp) == []


# ----- claims --------------------------------------------------------------------------------
def test_claim_tags_say_the_guarantee_what_is_read_and_whose_budget():
    claim = claim_from_config({"guarantee": "pure", "accountant": "basic composition",
                               "reads_from_data": ["row_count", "domain"], "note": "n"})
    assert claim.tags() == {"claim.guarantee": "pure", "claim.accountant": "basic composition",
                            "claim.reads_from_data": "domain,row_count",
                            "claim.budget_checked": "false", "claim.budget_path": "library",
                            "claim.note": "n"}
    assert claim_from_config({}).tags()["claim.reads_from_data"] == "unknown"
    assert claim_from_config({"reads_from_data": []}).tags()["claim.reads_from_data"] == "none"
    assert claim_from_config({"reads_from_data": "bins,domain"}).reads_from_data == \
        ("bins", "domain")
    assert set(claim.tags()) <= set(CLAIM_TAGS)
    for bad in ({"guarantee": "sure"}, {"reads_from_data": ["ages"]},
                {"budget_path": "ours"}, {"budget_checked": True}):
        with pytest.raises(ConfigError):
            claim_from_config(bad)


#: The adapters of the first claims commit (later ones are tested beside their adapters).
FIRST_FOUR = ("opendp_aim", "opendp_mst", "smartnoise_aim", "smartnoise_mst")


def test_shipped_claims_from_reading_the_adapters():
    """OpenDP's adapters pass the domain as keys and use the model's noisy total; smartnoise's
    AIM gets the domain and the adapter's noisy count; smartnoise 1.0.8's MST normalizes its
    model to the exact private count (``known_total``) inside its fit. None is ledger-checked."""
    reads = {name: SHIPPED[name].claim.tags()["claim.reads_from_data"] for name in FIRST_FOUR}
    assert reads == {"opendp_aim": "none", "opendp_mst": "none", "smartnoise_aim": "none",
                     "smartnoise_mst": "row_count"}
    for name, adapter in SHIPPED.items():  # every shipped adapter, later ones too
        assert adapter.claim.guarantee in ("approximate", "pure")
        assert not adapter.claim.budget_checked
        assert adapter.claim.budget_path == "adapter"
        assert set(adapter.claim.reads_from_data or ()) <= set(READS)
        mech = make_mechanism(name, {"python": __import__("sys").executable})
        assert mech.setting_tags() == adapter.claim.tags()
        with pytest.raises(ConfigError, match="shipped adapter"):
            make_mechanism(name, {"python": __import__("sys").executable,
                                  "claim": {"guarantee": "pure"}})


def test_contestants_list_shows_the_claim_markers(tmp_path, monkeypatch, capsys):
    from dp_arena.cli.contestants import main

    monkeypatch.setenv("DP_ARENA_CONTESTANTS", str(tmp_path))
    main(["list"])
    lines = capsys.readouterr().out.splitlines()
    for name, adapter in SHIPPED.items():
        [line] = [ln for ln in lines if ln.strip().startswith(name + " ")]
        assert f"env {adapter.env} (not installed)" in line
        assert adapter.claim.markers() in line and "budget declared (passed by the adapter)" in line
    row = {ln.split()[0]: ln for ln in lines if ln.startswith("  ") and ln.split()}
    assert "reads from data: row_count" in row["smartnoise_mst"]
    assert all("reads from data: none" in row[n]
               for n in ("opendp_aim", "opendp_mst", "smartnoise_aim"))
    assert "reads from data: unknown" in row["external"]
