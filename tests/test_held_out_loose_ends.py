"""Issue 27's loose ends from the held-out tables: resample's spend is infinity (not the
largest float), the board shows a metric's settings as settings (k=3), planning says what it
is doing when it takes long, and the native libraries' banners are silenced unless -v."""

from __future__ import annotations

import io
import math
import os
from types import SimpleNamespace

import pytest

from harness.report.leaderboard import build_leaderboard, run_row
from harness.run.runner import log_metrics, settings_text
from tests.test_leaderboard import NEW_TAGS, frame, md_header, run


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


def test_the_board_shows_the_metric_setting_not_its_hash():
    from harness.report.render import render_markdown

    rows = [run("a", 1.0, t, 900.0 + t, **{**NEW_TAGS, "metric_key/kmarginal": "h2",
                                           "metric_settings/kmarginal": "k=2"})
            for t in range(2)]
    rows += [run("a", 1.0, t, 700.0 + t, **{**NEW_TAGS, "metric_key/kmarginal": "h3",
                                            "metric_settings/kmarginal": "k=3"})
             for t in range(2)]
    board = build_leaderboard(frame(rows))
    assert sorted(board["metric_setting"]) == ["k=2", "k=3"]
    text = render_markdown(board)
    assert "kmarginal settings" in md_header(text) and "k=3" in text and "h3" not in text


def test_planning_says_what_it_is_doing_when_it_takes_long():
    from harness.sweep.plan import planning_reporter

    stream = io.StringIO()
    say = planning_reporter(every_s=0.0, stream=stream)
    say("checking", 4, 110)
    assert stream.getvalue().startswith("planning: checking job 5 of 110 (")
    quiet = io.StringIO()
    planning_reporter(every_s=3600, stream=quiet)("checking", 0, 2)
    assert quiet.getvalue() == ""  # a quick plan prints nothing


def test_plan_sweep_reports_each_job():
    from harness.sweep.plan import plan_sweep

    seen = []
    plan_sweep([{"mechanism": {"name": "nope"}}] * 3, on_job=lambda k, n: seen.append((k, n)))
    assert seen == [(0, 3), (1, 3), (2, 3)]


@pytest.mark.parametrize("argv, expected", [([], "3"), (["-v"], None)])
def test_native_banners_are_silenced_unless_verbose(monkeypatch, argv, expected):
    from harness.cli.main import quiet_banners

    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    quiet_banners(argv)
    assert os.environ.get("TF_CPP_MIN_LOG_LEVEL") == expected


# ----- the default delta ----------------------------------------------------------------------
def record_table(tmp_path, n: int, max_records: int | None = None):
    """A record-level CSV of ``n`` rows and its schema (no id column)."""
    import json

    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    pd.DataFrame({"a": rng.integers(0, 3, n), "b": rng.integers(0, 2, n)}).to_csv(
        tmp_path / "t.csv", index=False)
    runs = [{"epsilon": 1.0, "delta": 1e-9, "max_records": max_records}] if max_records else []
    (tmp_path / "t.json").write_text(json.dumps({"runs": runs, "schema": {
        "a": {"kind": "categorical", "dtype": "int64", "values": [0, 1, 2]},
        "b": {"kind": "categorical", "dtype": "int64", "values": [0, 1]}}}))
    return {"name": "csv", "path": str(tmp_path / "t.csv"), "schema": str(tmp_path / "t.json")}


def job_cfg(dataset, delta=2.5e-5):
    return {"mechanism": {"name": "independent"}, "metrics": {"kmarginal": {}},
            "privacy": {"epsilon": 1.0, "delta": delta}, "dataset": dataset}


def test_a_table_over_40000_rows_gets_the_documented_delta_not_a_refusal(tmp_path):
    from harness.sweep.plan import plan_sweep

    dataset = record_table(tmp_path, 45_000, max_records=50_000)
    plan = plan_sweep([job_cfg(dataset)] * 2, delta_given=[False, False])
    assert [j.verdict for j in plan.jobs] == ["run", "duplicate"]
    assert plan.jobs[0].delta == 1e-6  # 1/(10 x 50,000) = 2e-6 -> 1e-6
    note, = [n for n in plan.notes if n.startswith("privacy.delta is not set")]
    assert "N = 50,000 (the schema's max_records)" in note and plan.notes[note] == 1
    # the same command with the delta given is refused as before (the user chose it)
    refused = plan_sweep([job_cfg(dataset)], delta_given=[True])
    assert refused.jobs[0].verdict == "invalid" and "at or above 1/(number of persons" in \
        refused.jobs[0].reason


def test_without_a_public_figure_the_bound_is_a_billion_persons(tmp_path):
    from harness.sweep.plan import plan_sweep

    plan = plan_sweep([job_cfg(record_table(tmp_path, 45_000))], delta_given=[False])
    assert plan.jobs[0].verdict == "run" and plan.jobs[0].delta == 1e-10


def test_the_rule_uses_public_figures_only(small_dataset):
    from harness.run.preflight import default_delta, persons_bound

    bound, source = persons_bound(small_dataset)  # the schema's max_records: 100,000
    assert (bound, source) == (100_000, "the schema's max_records")
    assert default_delta(small_dataset)[0] == 1e-6
    without_cap = type(small_dataset)(
        "s", type(small_dataset.schema)(small_dataset.schema.columns, ()),
        small_dataset.private, small_dataset.public, unit="user", id_column="pid",
        max_records_per_individual=5)
    people = small_dataset.public["pid"].nunique()
    assert persons_bound(without_cap) == (10 * people, "10 x the public part's persons")


def test_taxi_data_and_a_chosen_delta_keep_their_delta(small_dataset):
    from harness.run.preflight import with_default_delta

    cfg = job_cfg({"name": "taxi_sim"})
    for name in ("taxi_sim", "taxi_sim_2020", "chicago_sample"):  # every scoring year
        taxi = type(small_dataset)(name, small_dataset.schema, small_dataset.private,
                                   small_dataset.public, unit="user", id_column="pid",
                                   max_records_per_individual=5)
        assert with_default_delta(cfg, taxi, False) == (cfg, ""), name
    assert with_default_delta(cfg, small_dataset, True) == (cfg, "")
    other = job_cfg({"name": "x"}, delta=1e-9)
    assert with_default_delta(other, small_dataset, False) == (other, "")
    changed, note = with_default_delta(cfg, small_dataset, False)
    assert changed["privacy"]["delta"] == 1e-6 and note


def test_which_overrides_choose_the_delta():
    from harness.sweep.plan import sets_delta

    assert sets_delta(["privacy.delta=1e-9"]) and sets_delta(["privacy=zcdp"])
    assert sets_delta(["competition=sprint3"])
    assert not sets_delta(["mechanism=mst", "privacy.epsilon=1", "dataset=csv"])
