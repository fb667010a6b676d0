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
    from harness.cli.sweep import planning_reporter

    stream = io.StringIO()
    say = planning_reporter(every_s=0.0, stream=stream)
    say("checking", 4, 110)
    assert stream.getvalue().startswith("planning: checking job 5 of 110 (")
    quiet = io.StringIO()
    planning_reporter(every_s=3600, stream=quiet)("checking", 0, 2)
    assert quiet.getvalue() == ""  # a quick plan prints nothing


def test_plan_sweep_reports_each_job():
    from harness.run.preflight import plan_sweep

    seen = []
    plan_sweep([{"mechanism": {"name": "nope"}}] * 3, on_job=lambda k, n: seen.append((k, n)))
    assert seen == [(0, 3), (1, 3), (2, 3)]


@pytest.mark.parametrize("argv, expected", [([], "3"), (["-v"], None)])
def test_native_banners_are_silenced_unless_verbose(monkeypatch, argv, expected):
    from harness.cli.main import quiet_banners

    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    quiet_banners(argv)
    assert os.environ.get("TF_CPP_MIN_LOG_LEVEL") == expected
