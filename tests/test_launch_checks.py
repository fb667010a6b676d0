"""Pre-launch gaps: every setting value of every swept mechanism and metric is
checked before launch, an unknown key names the option that lacks it, and launcher, folder and
tracking-server problems (and a sweep where nothing can run) are one message with the fix
before the parent run exists."""

from __future__ import annotations

import http.server
import io
import os
import shutil
import threading
from pathlib import Path

import pytest

from dp_arena.cli.compose import composition_problem, forced_option_settings
from dp_arena.errors import ConfigError, DPArenaError
from dp_arena.sweep import launch_checks
from dp_arena.sweep.plan import plan_sweep
from dp_arena.sweep.records import JobPlan, SweepPlan
from dp_arena.mechanisms import make_mechanism
from dp_arena.metrics import make_metric
from tests.sweep_support import CSV, dp_arena, runs_of

CONF = Path(__file__).resolve().parents[1] / "dp_arena" / "conf"


def job(**mechanism):
    return {"mechanism": mechanism, "privacy": {"epsilon": 1.0, "delta": 1e-9},
            "dataset": {"name": "taxi_sim", "n_private": 2000, "n_public": 2000},
            "metrics": {"kmarginal": {}}}


# ----- values, not only keys ------------------------------------------------------------------
def test_a_bad_choice_is_refused_when_the_sweep_is_planned():
    plan = plan_sweep([job(name="independent", noise="bogus"), job(name="independent")])
    assert [j.verdict for j in plan.jobs] == ["invalid", "run"]
    assert plan.jobs[0].reason == ("mechanism.noise must be one of 'auto', 'gaussian', 'laplace' "
                                   "(got 'bogus')\n  fix: e.g. mechanism.noise=auto")


@pytest.mark.parametrize("build, message", [
    (lambda: make_mechanism("independent", {"max_contrib": "five"}),
     "mechanism.max_contrib must be an integer or null (got 'five')"),
    (lambda: make_mechanism("independent", {"max_contrib": True}),
     "mechanism.max_contrib must be an integer or null (got True)"),
    (lambda: make_metric("kmarginal", {"k": "two"}), "metrics.kmarginal.k must be an integer"),
])
def test_ill_typed_values_are_one_message(build, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        build()


def test_good_values_and_numbers_for_floats_pass():
    assert make_mechanism("independent", {"noise": "laplace", "max_contrib": 3}).noise == "laplace"
    assert make_mechanism("aim", {"tol": 1}).tol == 1  # an integer is a number


# ----- unknown keys name the option -----------------------------------------------------------
def test_an_unknown_key_names_the_option_that_lacks_it_and_its_settings():
    problem = composition_problem(CONF, "config", ["mechanism=archetype,independent",
                                                   "mechanism.k=5"])
    assert problem.startswith("unknown setting mechanism.k: mechanism 'independent' has no "
                              "setting k (its settings: max_contrib, noise)")
    assert "archetype" not in problem.splitlines()[0]  # archetype has a k
    assert "fix:" in problem


def test_a_setting_every_swept_option_has_passes_though_the_default_option_lacks_it():
    # the config's default mechanism (independent) has no iters; both swept options do
    assert composition_problem(CONF, "config", ["mechanism=adaptive_grid,adaptive_grid_zcdp",
                                                "mechanism.iters=300"]) is None
    problem = composition_problem(CONF, "config", ["mechanism=adaptive_grid,independent",
                                                   "mechanism.iters=300"])
    assert problem.startswith("unknown setting mechanism.iters: mechanism 'independent' has no "
                              "setting iters")


def test_a_swept_options_setting_survives_hydras_base_composition():
    # Hydra composes a sweep's base config with the default mechanism (independent, no
    # iters) before expanding the sweep: the plain setting fails there, the forced one not
    from hydra import compose, initialize_config_dir

    argv = ["mechanism=adaptive_grid,adaptive_grid_zcdp", "mechanism.iters=300", "trial=0",
            "+mechanism.extra=1", "dataset.n_private=10"]
    forced = forced_option_settings(argv)
    assert forced == ["mechanism=adaptive_grid,adaptive_grid_zcdp", "++mechanism.iters=300",
                      "trial=0", "+mechanism.extra=1", "dataset.n_private=10"]
    assert forced_option_settings(["mechanism=mst", "mechanism.iters=3"]) == \
        ["mechanism=mst", "mechanism.iters=3"]  # nothing swept: nothing to force
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3", job_name="t"):
        with pytest.raises(Exception, match="iters"):
            compose("config", overrides=["mechanism.iters=300"])
        base = compose("config", overrides=["++mechanism.iters=300"])
        job = compose("config", overrides=["mechanism=adaptive_grid", "++mechanism.iters=300"])
    assert base.mechanism.name == "independent" and job.mechanism.iters == 300


def test_the_dataclass_message_names_the_mechanism():
    with pytest.raises(ConfigError) as err:
        make_mechanism("independent", {"k": 5})
    assert "(mechanism 'independent' has no such setting)" in str(err.value)
    assert err.value.fix == "the settings of mechanism 'independent' are max_contrib, noise"


# ----- the surroundings -----------------------------------------------------------------------
def test_slurm_without_sbatch_is_refused_with_the_fix(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ConfigError) as err:
        launch_checks.check_launcher(
            "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher")
    assert "no sbatch" in str(err.value) and "slurm_local" in err.value.fix
    launch_checks.check_launcher(  # the local executor needs no SLURM
        "hydra_plugins.hydra_submitit_launcher.submitit_launcher.LocalLauncher")


def test_ray_not_installed_is_refused(monkeypatch):
    monkeypatch.setattr(launch_checks.importlib.util, "find_spec",
                        lambda name: None if name == "ray" else object())
    with pytest.raises(ConfigError, match="needs Ray"):
        launch_checks.check_launcher("hydra_plugins.hydra_ray_launcher.ray_launcher.RayLauncher")


def test_a_sweep_folder_that_cannot_be_written_is_refused(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ConfigError) as err:
        launch_checks.check_sweep_folder(blocker / "multirun" / "x")
    assert "hydra.sweep.dir=" in err.value.fix
    launch_checks.check_sweep_folder(tmp_path / "ok")
    assert sorted(tmp_path.iterdir()) == [blocker]  # the probe and its new folder are removed


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_sweep_folder_is_refused(tmp_path):
    tmp_path.chmod(0o500)
    try:
        with pytest.raises(ConfigError):
            launch_checks.check_sweep_folder(tmp_path / "multirun")
    finally:
        tmp_path.chmod(0o700)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_tracking_server_that_does_not_answer_is_one_message_without_credentials():
    uri = f"http://alice:s3cret@127.0.0.1:{free_port()}"
    with pytest.raises(ConfigError) as err:
        launch_checks.check_tracking_server(uri, timeout_s=2)
    text = str(err.value)
    assert "does not answer" in text and "s3cret" not in text and "alice" not in text
    assert "tracking.uri" in err.value.fix


class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
        self.wfile.write(b"OK")

    def log_message(self, *args):
        pass


def test_a_tracking_server_that_answers_passes_and_local_stores_are_not_probed():
    server = http.server.HTTPServer(("127.0.0.1", 0), Health)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        launch_checks.check_tracking_server(f"http://127.0.0.1:{server.server_port}")
    finally:
        server.shutdown()
    launch_checks.check_tracking_server("sqlite:///nowhere/mlflow.db")
    launch_checks.check_tracking_server(None)


def test_nothing_runs_when_every_job_is_na_or_a_duplicate():
    jobs = (JobPlan(0, "n/a"), JobPlan(1, "n/a"))
    assert "every one of the sweep's 2 jobs is n/a (2)" in launch_checks.nothing_runs(
        SweepPlan(total=0, jobs=jobs))
    assert launch_checks.nothing_runs(SweepPlan(total=1, jobs=jobs)) is None
    assert launch_checks.nothing_runs(SweepPlan(total=None, jobs=jobs)) is None  # a search


# ----- end to end: nothing started ------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("overrides, message", [
    (("mechanism=archetype",), "nothing to run: every one of the sweep's 1 jobs is n/a"),
    (("mechanism=independent", "hydra/launcher=slurm"), "no sbatch"),
    (("mechanism=independent", "mechanism.noise=bogus"), "mechanism.noise must be one of"),
    (("mechanism=independent", "tracking.uri=http://u:pw@127.0.0.1:9"), "does not answer"),
])
def test_the_sweep_is_refused_before_the_parent_run_exists(csv_dir, overrides, message):
    if "slurm" in " ".join(overrides) and shutil.which("sbatch"):
        pytest.skip("this machine has SLURM")
    proc = dp_arena(csv_dir, *CSV, "privacy.epsilon=1", *overrides, timeout=120)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 2, text
    assert text.count(message) == 1 and "Traceback" not in text and "pw@" not in text
    assert not (csv_dir / "multirun").exists()
    assert not (csv_dir / "mlflow.db").exists() or not runs_of(csv_dir, kind="sweep")


# ----- planning says what it is doing ------------------------------------------------------
def test_planning_says_what_it_is_doing_when_it_takes_long():
    from dp_arena.sweep.plan import planning_reporter

    stream = io.StringIO()
    say = planning_reporter(every_s=0.0, stream=stream)
    say("checking", 4, 110)
    assert stream.getvalue().startswith("planning: checking job 5 of 110 (")
    quiet = io.StringIO()
    planning_reporter(every_s=3600, stream=quiet)("checking", 0, 2)
    assert quiet.getvalue() == ""  # a quick plan prints nothing


def test_plan_sweep_reports_each_job():
    from dp_arena.sweep.plan import plan_sweep

    seen = []
    plan_sweep([{"mechanism": {"name": "nope"}}] * 3, on_job=lambda k, n: seen.append((k, n)))
    assert seen == [(0, 3), (1, 3), (2, 3)]


# ----- a data file past the memory limit is refused unread -----------------------------------
def test_a_file_larger_than_the_memory_limit_is_refused_unread(tmp_path, monkeypatch):
    from dp_arena.sweep import plan as preflight

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
    # (dp_arena.run.preflight.estimated_loaded_bytes): 20 MB fits
    cfg["limits"]["memory_limit_mb"] = 20
    monkeypatch.setattr(preflight, "cached_dataset", lambda *a: (_ for _ in ()).throw(
        DPArenaError("loaded")))
    assert preflight.plan_sweep([cfg]).jobs[0].reason == "loaded"
