"""Sweeps a user can trust: bad input is one message before anything starts, mechanisms that
do not apply are n/a rows, identical jobs run once, a stop signal stops every worker and leaves
no run RUNNING, a sweep whose runs all fail exits non-zero, and runs hang under a parent run."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest
from mlflow import MlflowClient

from dp_arena.data.datasets import PROJECT_ROOT
from dp_arena.run.config import run_label
from dp_arena.mechanisms.options import hyperparameter_label, shipped_settings
from tests.conftest import make_small_schema, write_csv_dataset
from tests.support.planning import without_planning
from tests.sweep_support import CSV, DOUBLES, PARALLEL, TEST_CONF, dp_arena, runs_of

SHARED = PROJECT_ROOT.parent / "shared" / "data"


# ----- bad input: one message, nothing started -------------------------------------------------
BAD_INPUTS = {
    "negative epsilon": (("privacy.epsilon=-1",), "privacy.epsilon must be a finite number > 0"),
    "epsilon not a number": (("privacy.epsilon=abc",), "privacy.epsilon must be a number "
                             "(got 'abc')"),
    "one bad value in a sweep": (("privacy.epsilon=1,abc",), "privacy.epsilon must be a number "
                                 "(got 'abc')"),
    "an integer setting given a fraction": (("limits.threads=1.5",),
                                            "limits.threads must be an integer (got '1.5')"),
    "a list setting given a word": (("plugins=tests.doubles",), "plugins must be a list"),
    "negative trial": (("trial=-1",), "trial and seed must be non-negative integers"),
    "empty private part": (("dataset.n_private=0",), "dataset.n_private must be an integer"),
    "missing csv": (("dataset=csv", "dataset.path=/nonexistent.csv"),
                    "dataset.path: file not found: /nonexistent.csv"),
    "typo added with +": (("+privacy.epsilonn=1",),
                          "unknown setting privacy.epsilonn (did you mean privacy.epsilon?)"),
    "typo without +": (("privacy.epsilonn=1",),
                       "unknown setting privacy.epsilonn (did you mean privacy.epsilon?)"),
    "unknown top-level setting": (("+sead=1",), "unknown setting sead (did you mean seed?)"),
    "typo in a dataset setting": (("+dataset.n_privte=5000",),
                                  "unknown setting dataset.n_privte (did you mean "
                                  "dataset.n_private?)"),
    "unknown mechanism": (("mechanism=independent,nope",), "mechanism: no option named 'nope'"),
    "unknown mechanism with a search path": ((f"hydra.searchpath=[file://{TEST_CONF}]",
                                              "mechanism=nope"),
                                             "Could not find 'mechanism/nope'"),
}


#: Cases checked on the whole default sweep (20 jobs: the problem is in every job, or in half
#: of them, and is still one message); the others on one job (planning 20 jobs costs seconds).
WHOLE_SWEEP = ("negative trial", "one bad value in a sweep")


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_one_message_and_nothing_starts(tmp_path, case):
    overrides, problem = BAD_INPUTS[case]
    if case not in WHOLE_SWEEP:
        given = {o.lstrip("+").partition("=")[0] for o in overrides}
        overrides = (*(o for o in ("mechanism=independent", "privacy.epsilon=1")
                       if o.partition("=")[0] not in given), *overrides)
    proc = dp_arena(tmp_path, *overrides, timeout=180)
    assert proc.returncode not in (0, None)
    text = proc.stdout + proc.stderr
    assert "Traceback" not in text
    assert text.count(problem) == 1, text
    lines = without_planning(text)  # what a long plan says while it checks: status, not message
    assert len(lines) <= 6, text
    assert not (tmp_path / "multirun").exists(), "a job folder was created"
    assert not (tmp_path / "mlflow.db").exists(), "an MLflow store was created"


def test_the_plans_status_lines_are_told_apart_from_the_message():
    # the output of a sweep with a bad value on a loaded machine (20 s of planning): the status
    # lines name the job and wrap; the message is the four lines from "dp-arena:" on
    message = ["dp-arena: the sweep was not started: 1 problem in its 20 jobs:",
               "- privacy.epsilon must be a number (got 'abc')",
               "  fix: e.g. privacy.epsilon=1.5",
               "  (10 jobs, e.g. mechanism=independent privacy.epsilon=abc trial=0)"]
    status = ["planning: composing job 7 of 20 (5s)",
              "planning: checking job 2 of 20: mechanism=independent privacy.epsilon=abc",
              "  trial=0 (15s)",
              "planning: checking job 8 of 20: mechanism=mst_quick privacy.epsilon=abc trial=0",
              "  (20s)"]
    assert without_planning("\n".join(status + message)) == message
    assert without_planning("\n".join(message[:1] + status + message[1:])) == message
    # what only starts like a status stays, and so does an indented line after it
    odd = ["planning: checking job 2 of 20: x", "  trial=0", "planning: done"]
    assert without_planning("\n".join(odd + message)) == odd + message


# ----- n/a, duplicates, all-failed -----------------------------------------------------------
@pytest.mark.slow
@pytest.mark.realdata
def test_mechanisms_that_do_not_apply_are_na_rows_and_the_sweep_succeeds(tmp_path):
    if not (SHARED / "adult").exists() and not any(SHARED.glob("adult*")):
        pytest.skip(f"needs the shared adult data in {SHARED}")
    # the command (one trial: the n/a verdicts are per mechanism)
    proc = dp_arena(tmp_path, "dataset=adult", "mechanism=independent,archetype,prefix_tree",
                    "privacy.epsilon=1", "privacy.delta=1e-9", "trial=0")
    assert proc.returncode == 0, proc.stderr
    assert "sweep: 1 run, 2 n/a" in proc.stdout
    assert "n/a  archetype: archetype needs user-level data" in proc.stdout
    assert "1 of 1 runs succeeded" in proc.stdout
    board = pd.read_csv(next((tmp_path / "multirun").glob("*/*/leaderboard/leaderboard.csv")))
    na = board[board["status"].astype(str).str.startswith("n/a")]
    assert sorted(na["mechanism"]) == ["archetype", "prefix_tree"]
    assert len(runs_of(tmp_path)) == 1  # n/a jobs start no MLflow run
    # metrics that do not apply to adult (taxi-only challenge, sequences-only patterns) keep
    # their reason in the CSV; the Markdown leaves their all-n/a columns out and names them in
    # one line with the reason
    scored = board[board["mechanism"] == "independent"].iloc[0]
    assert "taxi" in scored["na:challenge"] and "sequence" in scored["na:frequent_patterns"]
    text = next((tmp_path / "multirun").glob("*/*/leaderboard/leaderboard.md")).read_text()
    assert "- scores not shown, as they apply to no row here: challenge" in text
    assert "n/a in a score column, challenge" not in text and "| challenge/" not in text


@pytest.mark.slow
def test_identical_jobs_run_once(csv_dir):
    """Under privacy=zcdp the adaptive_grid_zcdp preset is adaptive_grid itself."""
    proc = dp_arena(csv_dir, *CSV, "mechanism=adaptive_grid,adaptive_grid_zcdp", "privacy=zcdp",
                    "privacy.epsilon=1", "privacy.delta=1e-6")
    assert proc.returncode == 0, proc.stderr
    assert "sweep: 1 run, 1 identical to another job (run once)" in proc.stdout
    assert len(runs_of(csv_dir)) == 1


@pytest.mark.slow
def test_a_sweep_whose_runs_all_fail_exits_non_zero(csv_dir):
    proc = dp_arena(csv_dir, *CSV, "mechanism=test_fails", "privacy.epsilon=1,10", *DOUBLES)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "0 of 2 runs succeeded, 2 failed" in proc.stdout
    parent, = runs_of(csv_dir, kind="sweep")
    assert parent.info.status == "FAILED"


# ----- MLflow: parent run, inputs, progress ----------------------------------------------------
@pytest.fixture(scope="module")
def small_sweep(tmp_path_factory, empty_mlflow_store) -> tuple[Path, subprocess.CompletedProcess]:
    """One sweep that two tests read: independent and uniform run, public_only is n/a (the
    dataset has no public part)."""
    folder = tmp_path_factory.mktemp("small_sweep")
    shutil.copyfile(empty_mlflow_store, folder / "mlflow.db")
    write_csv_dataset(folder, make_small_schema())
    proc = dp_arena(folder, *CSV, "mechanism=independent,uniform,public_only",
                    "privacy.epsilon=1", "dataset.public_path=null")
    return folder, proc


@pytest.mark.slow
def test_runs_are_children_of_the_sweeps_parent_run_with_a_keyed_input(small_sweep):
    csv_dir, proc = small_sweep
    assert proc.returncode == 0, proc.stderr
    assert "[1/2]" in proc.stdout and "[2/2]" in proc.stdout
    parent, = runs_of(csv_dir, kind="sweep")
    children = runs_of(csv_dir)
    assert parent.info.status == "FINISHED" and len(children) == 2
    assert {c.data.tags["mlflow.parentRunId"] for c in children} == {parent.info.run_id}
    client = MlflowClient(f"sqlite:///{csv_dir / 'mlflow.db'}")
    assert any(a.path == "leaderboard" for a in client.list_artifacts(parent.info.run_id))
    for child in children:
        inputs = child.inputs.dataset_inputs
        assert len(inputs) == 1
        dataset = inputs[0].dataset
        # the digest is the keyed fingerprint (MLflow's own would hash the private rows), and
        # no profile (a row count of private data is private)
        assert dataset.digest == child.data.tags["data_fingerprint"]
        assert not dataset.profile
        assert child.data.tags.get("mlflow.source.name") == "dp-arena"


# ----- a stop signal ---------------------------------------------------------------------------
@pytest.mark.slow
def test_sigterm_stops_every_worker_and_leaves_no_run_running(csv_dir):
    sweep = (*CSV, "mechanism=test_sleeper", "mechanism.seconds=120", "privacy.epsilon=1,2,3",
             "trial=0", *DOUBLES)
    log = csv_dir / "sweep.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "dp_arena.cli.main", *sweep],
                                cwd=csv_dir, env=PARALLEL, stdout=out,
                                stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 300  # a busy machine starts workers slowly
        # the sweep creates the store before it writes its plan; only then may we read it
        while time.monotonic() < deadline and not running_runs(csv_dir, 2):
            assert proc.poll() is None, log.read_text()
            time.sleep(0.2)
        assert running_runs(csv_dir, 2), log.read_text()
        family = psutil.Process(proc.pid).children(recursive=True)
        assert family, "the sweep has no worker processes"
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, log.read_text()
    alive = still_alive(family, wait=20.0)
    assert not alive, f"still alive 20 s after SIGTERM: {[p.pid for p in alive]}"
    runs = runs_of(csv_dir)
    assert runs and not [r for r in runs if r.info.status == "RUNNING"]
    killed = [r for r in runs if r.info.status == "KILLED"]
    assert len(killed) >= 2 and all(r.data.tags.get("stopped_reason") for r in killed)
    text = log.read_text()
    assert "SIGTERM received" in text and "marked KILLED" in text

    again = dp_arena(csv_dir, *(o if o != "mechanism.seconds=120" else "mechanism.seconds=0"
                                for o in sweep))
    assert again.returncode == 0, again.stderr


def still_alive(processes: list, wait: float) -> list:
    """The processes still running (zombies count as gone) once all are gone or ``wait`` s
    have passed."""
    deadline = time.monotonic() + wait
    while True:
        alive = []
        for p in processes:
            try:
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                    alive.append(p)
            except psutil.NoSuchProcess:
                pass
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.2)


def running_runs(cwd: Path, at_least: int) -> bool:
    if not list(cwd.glob("multirun/*/*/plan.json")):
        return False
    try:
        return sum(r.info.status == "RUNNING" for r in runs_of(cwd)) >= at_least
    except Exception:  # noqa: BLE001 - the store is being created
        return False


# ----- labels ----------------------------------------------------------------------------------
def test_labels_are_relative_to_the_shipped_config_and_short():
    shipped = shipped_settings("mst")
    assert shipped and "iters" in shipped
    assert hyperparameter_label("mst", dict(shipped)) == "-"
    assert hyperparameter_label("mst", {**shipped, "iters": 7}) == "iters=7"
    long_label = hyperparameter_label("adaptive_grid",
                                      {**shipped_settings("adaptive_grid"),
                                       "marginals": [["a", "b"]] * 40})
    assert long_label.startswith("marginals=<list of 40 #") and len(long_label) < 40
    # presets extend their base config: adaptive_grid_zcdp ships adaptive_grid's settings
    assert shipped_settings("adaptive_grid_zcdp") == shipped_settings("adaptive_grid")
    assert hyperparameter_label("adaptive_grid", shipped_settings("adaptive_grid"),
                                "zcdp") == "[zcdp]"


def test_run_names_tell_swept_settings_and_accountants_apart():
    base = shipped_settings("archetype")
    names = {run_label("archetype", {**base, "k": k}, "", "gdp", 1.0, 0) for k in (5, 10, 20)}
    assert len(names) == 3
    assert run_label("adaptive_grid", {}, "", "zcdp", 1.0, 0) != \
        run_label("adaptive_grid", {}, "", "gdp", 1.0, 0)
    assert run_label("mst", shipped_settings("mst"), "", "gdp", 10.0, 2) == "mst eps=10 trial=2"


@pytest.mark.slow
def test_plan_file_is_json_with_a_verdict_per_job(small_sweep):
    """The plan a sweep writes (and each job reads) names every job's verdict."""
    csv_dir, proc = small_sweep
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(next((csv_dir / "multirun").glob("*/*/plan.json")).read_text())
    verdicts = {j["row"].get("mechanism") or j["label"].split()[0]: j["verdict"]
                for j in plan["jobs"]}
    assert verdicts == {"independent": "run", "uniform": "run", "public_only": "n/a"}


def test_challenge_scorer_refuses_a_non_taxi_table_with_one_message(csv_dir, capsys):
    from dp_arena.cli.score import main

    code = main([str(csv_dir / "private.csv"), str(csv_dir / "public.csv"),
                 "--parameters", str(csv_dir / "parameters.json")])
    err = capsys.readouterr().err
    assert code == 2
    assert "needs the Sprint 3 taxi columns" in err and "fix:" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 3
