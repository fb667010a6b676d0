"""A store many workers share: MLflow on a real PostgreSQL server (tests.support.postgres,
Debian's server binaries; skipped without them, failed on CI).

- A sweep with four parallel workers logs to it, is killed hard (SIGKILL to its whole process
  group, as a lost machine would be) after some runs finished, and the same command resumes
  it: every planned run FINISHED exactly once, none lost, none twice, no lock errors; the
  resumed sweep skips what had finished and redoes what was in flight.
- The database's password, given in the tracking URI, is in none of what dp-arena prints or
  writes: console, MLflow params and tags, artifacts, the sweep folder.
- The launch check refuses a wrong password in one message, before anything starts.
- Four processes making their first use of an empty database at the same moment (sweeps
  started at once on four machines) all succeed: the advisory lock lets one create MLflow's
  tables (without it, plain MLflow fails in three of the four with a unique-key violation
  while creating them).
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from mlflow import MlflowClient

from dp_arena.errors import ConfigError
from dp_arena.report.tracking import client_for
from dp_arena.sweep import launch_checks
from tests.conftest import make_small_frame
from tests.support.postgres import PASSWORD
from tests.sweep_support import CSV, DOUBLES, ENV

EPSILONS, TRIALS = ("1", "2", "3", "4"), ("0", "1")
#: Eight runs of the sleeping double (each sleeps SLEEP_S seconds, then releases uniform
#: data): long enough that runs are in flight when the sweep is killed after the first ones
#: finished, and the same every time (a real mechanism's time varies with the machine's load).
SLEEP_S = 5
SWEEP = (*CSV, "mechanism=test_sleeper", f"mechanism.seconds={SLEEP_S}",
         f"privacy.epsilon={','.join(EPSILONS)}", f"trial={','.join(TRIALS)}", *DOUBLES)
#: What a worker contending for the store would print: SQLite's and PostgreSQL's lock,
#: deadlock and unique-key errors, and any traceback.
LOCK_ERRORS = ("locked", "deadlock", "could not serialize", "duplicate key", "uniqueviolation",
               "integrityerror", "traceback")
DEADLINE_S = 600


def start_sweep(work: Path, env: dict[str, str], log: Path) -> subprocess.Popen:
    """``dp-arena`` on :data:`SWEEP` in a process group of its own, output to ``log``."""
    with open(log, "w") as out:
        return subprocess.Popen([sys.executable, "-m", "dp_arena.cli.main", *SWEEP], cwd=work,
                                env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)


def job_runs(client) -> list:
    """Every job's run (not the sweeps' parent runs) in every experiment of the store."""
    runs = [r for e in client.search_experiments()
            for r in client.search_runs([e.experiment_id], max_results=1000)]
    return [r for r in runs if r.data.tags.get("kind", "run") == "run"]


def statuses(client) -> Counter:
    try:
        return Counter(r.info.status for r in job_runs(client))
    except Exception:  # noqa: BLE001 - the experiment may not exist yet
        return Counter()


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the process group (the sweep, its workers and their run children) and wait
    until none of it is left."""
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    pytest.fail("processes of the killed sweep are still alive after 60 s")


def write_table(work: Path, small_schema) -> None:
    make_small_frame(2000, 1).to_csv(work / "private.csv", index=False)
    make_small_frame(2000, 2, first_id=5001).to_csv(work / "public.csv", index=False)
    small_schema.save(work / "parameters.json")


def files_holding(folder: Path, secret: str) -> list[Path]:
    """Files under ``folder`` whose bytes contain ``secret``."""
    return [p for p in folder.rglob("*")
            if p.is_file() and secret.encode() in p.read_bytes()]


@pytest.mark.slow
def test_four_workers_share_a_postgres_store_and_a_killed_sweep_resumes_exactly(
        tmp_path, small_schema, postgres):
    work = tmp_path / "work"
    work.mkdir()
    write_table(work, small_schema)
    # the password travels in the environment's URI (a sweep's command line is written to its
    # folder by Hydra, so that is no place for one)
    env = {**ENV, "MLFLOW_TRACKING_URI": postgres.uri(), "DP_ARENA_JOBS": "4",
           "COLUMNS": "1000"}
    # dp-arena's client: its first use takes the advisory lock, so polling while the sweep
    # creates MLflow's tables does not race it
    client = client_for(postgres.uri())

    first = start_sweep(work, env, tmp_path / "first.log")
    try:
        deadline = time.monotonic() + DEADLINE_S
        while (now := statuses(client))["FINISHED"] < 2 or now["RUNNING"] < 1:
            assert first.poll() is None, (tmp_path / "first.log").read_text()[-3000:]
            assert time.monotonic() < deadline, f"not 2 runs finished and 1 running: {now}"
            time.sleep(0.3)
    finally:
        kill_group(first)
    at_kill = statuses(client)
    finished_before = {r.info.run_id for r in job_runs(client) if r.info.status == "FINISHED"}
    interrupted = {r.data.tags["run_key"] for r in job_runs(client)
                   if r.info.status == "RUNNING"}
    # the kill came with work left: runs in flight (SIGKILL left them RUNNING), none ended
    # otherwise
    assert 2 <= at_kill["FINISHED"] < len(EPSILONS) * len(TRIALS), at_kill
    assert interrupted and set(at_kill) == {"FINISHED", "RUNNING"}, at_kill

    second = start_sweep(work, env, tmp_path / "second.log")
    try:
        second.wait(timeout=DEADLINE_S)
    finally:
        if second.poll() is None:
            kill_group(second)
    out = (tmp_path / "second.log").read_text()
    assert second.returncode == 0, out[-3000:]
    assert (f"sweep finished: 8 of 8 runs succeeded, {len(finished_before)} already finished "
            f"earlier (skipped), {len(interrupted)} interrupted earlier and redone") in out

    runs = job_runs(client)
    finished = [r for r in runs if r.info.status == "FINISHED"]
    # every planned run once: each (epsilon, trial) and each content key exactly one FINISHED
    planned = set(itertools.product(EPSILONS, TRIALS))
    done = Counter((str(int(float(r.data.params["privacy.epsilon"]))), r.data.params["trial"])
                   for r in finished)
    assert set(done) == planned and set(done.values()) == {1}, done
    assert len({r.data.tags["run_key"] for r in finished}) == len(planned)
    assert finished_before <= {r.info.run_id for r in finished}  # kept, not redone
    # the runs the kill left RUNNING are the ones redone (and still say RUNNING: their
    # process is gone; the board counts FINISHED runs only)
    assert {r.data.tags["run_key"] for r in runs if r.info.status == "RUNNING"} == interrupted
    parents = [r for e in client.search_experiments()
               for r in client.search_runs([e.experiment_id]) if r.data.tags.get("kind") == "sweep"]
    assert sorted(r.info.status for r in parents) == ["FINISHED", "RUNNING"]

    both = (tmp_path / "first.log").read_text() + out
    assert not [e for e in LOCK_ERRORS if e in both.lower()], both[-3000:]
    assert_password_nowhere(client, both, work)


def assert_password_nowhere(client, output: str, work: Path) -> None:
    """The database password is in no console line, param, tag or logged text, nor in any
    file of the working folder (sweep folder, artifacts), while the store's address is."""
    assert PASSWORD not in output
    assert "mlflow ui --backend-store-uri postgresql://127.0.0.1:" in output
    every = [r for e in client.search_experiments()
             for r in client.search_runs([e.experiment_id], max_results=1000)]
    texts = [v for r in every for v in (*r.data.params.values(), *r.data.tags.values())]
    assert not [t for t in texts if PASSWORD in t]
    assert not files_holding(work, PASSWORD)


def test_a_wrong_database_password_is_refused_before_anything_starts(postgres, tmp_path,
                                                                     monkeypatch):
    wrong = postgres.uri().replace(PASSWORD, "not-the-password")
    with pytest.raises(ConfigError) as err:
        launch_checks.check_database_server(wrong, timeout_s=5)
    assert "refuses the login (" in err.value.problem and "password authentication failed" \
        in err.value.problem
    assert "not-the-password" not in str(err.value) and "~/.pgpass" in err.value.fix
    launch_checks.check_database_server(postgres.uri(), timeout_s=5)  # the right one passes
    # docs/running.md's way: no password in the URI, libpq finds it in a password file
    bare = postgres.uri(password=False)
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "none"))
    with pytest.raises(ConfigError, match="refuses the login"):
        launch_checks.check_database_server(bare, timeout_s=5)
    passfile = tmp_path / "pgpass"
    passfile.write_text(f"{postgres.host}:{postgres.port}:*:dparena:{PASSWORD}\n")
    passfile.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(passfile))
    launch_checks.check_database_server(bare, timeout_s=5)


def test_a_database_driver_that_is_not_installed_is_named_with_its_package():
    import importlib.util

    if importlib.util.find_spec("pg8000") is not None:
        pytest.skip("pg8000 is installed here: the test needs a driver that is not")
    with pytest.raises(ConfigError) as err:  # pg8000: a driver SQLAlchemy knows, not installed
        launch_checks.check_database_server("postgresql+pg8000://u:s3cret@127.0.0.1/db")
    assert "the postgresql driver is not installed (pg8000)" in err.value.problem
    assert "pip install pg8000" in err.value.fix and "s3cret" not in str(err.value)


#: Each process imports dp-arena, says it is ready, waits for the start file, then makes its
#: first use of the
#: store (which creates MLflow's tables when the database is empty).
FIRST_USE = """
import sys, time
from pathlib import Path
import mlflow.store.tracking.sqlalchemy_store, psycopg  # noqa: F401 - imported before the start
from dp_arena.report.tracking import client_for
start = Path(sys.argv[1])
(start.parent / f"ready-{sys.argv[3]}").touch()
while not start.exists():
    time.sleep(0.05)
client_for(sys.argv[2]).search_experiments()
"""


@pytest.mark.slow
def test_processes_first_using_an_empty_database_at_once_create_the_tables_once(tmp_path,
                                                                                postgres):
    """Four processes (as four machines' sweeps would) start on an empty database at the same
    moment: each one's first use runs under the advisory lock, so one creates MLflow's tables
    and the others find them; all succeed and the schema is at one revision."""
    import psycopg

    start = tmp_path / "start"
    procs = [subprocess.Popen([sys.executable, "-c", FIRST_USE, str(start), postgres.uri(),
                               str(k)], env=ENV, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
             for k in range(4)]
    try:
        deadline = time.monotonic() + DEADLINE_S
        while len(list(tmp_path.glob("ready-*"))) < 4:  # all imported: start them together
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs)
            time.sleep(0.1)
        start.touch()
        outputs = [p.communicate(timeout=DEADLINE_S)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert [p.returncode for p in procs] == [0] * 4, "\n".join(outputs)[-3000:]
    with psycopg.connect(postgres.uri()) as con:
        revisions = con.execute("SELECT version_num FROM alembic_version").fetchall()
        experiments = con.execute("SELECT name FROM experiments").fetchall()
    assert len(revisions) == 1 and experiments == [("Default",)]


@pytest.mark.slow
def test_a_password_in_tracking_uri_on_the_command_line_is_not_printed_nor_logged(
        tmp_path, small_schema, postgres):
    """``tracking.uri=postgresql://user:password@...`` given as an override: the run logs to
    the database, and neither the console nor any param or tag (the sweep's ``command``, the
    run's ``tracking.uri``) holds the password. (Hydra's own record of the command line in the
    sweep folder does: docs/running.md says to keep the password out of the URI.)"""
    from tests.support.forked import run_forked

    write_table(tmp_path, small_schema)
    env = {**ENV, "COLUMNS": "1000"}
    done = run_forked(("dp-arena", *CSV, "mechanism=uniform", "privacy.epsilon=1", "trial=0",
                       f"tracking.uri={postgres.uri()}"), tmp_path, env, timeout=DEADLINE_S)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "sweep finished: 1 of 1 runs succeeded" in done.stdout
    assert PASSWORD not in done.stdout + done.stderr
    client = MlflowClient(postgres.uri())
    every = [r for e in client.search_experiments()
             for r in client.search_runs([e.experiment_id], max_results=1000)]
    assert sorted(r.data.tags.get("kind", "run") for r in every) == ["run", "sweep"]
    params = {k: v for r in every for k, v in r.data.params.items()}
    assert "tracking.uri=postgresql://127.0.0.1:" in params["command"]
    assert params["tracking.uri"].startswith("postgresql://127.0.0.1:")
    assert not [v for r in every for v in (*r.data.params.values(), *r.data.tags.values())
                if PASSWORD in v]
    assert not (tmp_path / "mlflow.db").exists()
