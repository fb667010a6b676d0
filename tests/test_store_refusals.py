"""Tracking-store and environment problems before a sweep starts: a local MLflow store locked by
another process, a read-only one, one that cannot be created, a sweep folder that cannot be
written, and bad ``DP_ARENA_*`` values are each one message naming the problem and the fix,
exit status 2, and leave nothing behind (no sweep folder, no run in the store). The locked
store answers in seconds (it used to end in hundreds of lines of tracebacks and a hang).

Locks are real: another process holds an SQLite write (or exclusive) transaction on the store.
Read-only is real too: the tests run as root, who writes any file whatever its mode, so the
store file (or the output folder) is bind-mounted read-only in a private mount namespace
(``unshare -m``) of the command's own; where that is not allowed the test is skipped with the
reason.
"""

from __future__ import annotations

import hashlib
import shlex
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from dp_arena.errors import ConfigError
from dp_arena.sweep import launch_checks
from dp_arena.sweep.environment import environment_problems
from tests.support.forked import run_forked
from tests.support.planning import without_planning
from tests.sweep_support import ENV, runs_of

#: The csv_dir dataset, one job.
CSV = ("dataset=csv", "dataset.path=private.csv", "dataset.schema=parameters.json",
       "mechanism=independent", "privacy.epsilon=1", "privacy.delta=1e-6", "trial=0",
       "metrics=kmarginal")

#: A process that holds a write lock on the SQLite file argv[1] until its stdin closes.
HOLDER = """
import sqlite3, sys
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("PRAGMA journal_mode=" + sys.argv[2]).fetchone()
con.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.read()
con.execute("ROLLBACK")
con.close()
"""


@contextmanager
def locked(db: Path, journal: str = "wal") -> Iterator[None]:
    """Another process holds an exclusive write transaction on ``db`` for the block."""
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(db), journal],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        yield
    finally:
        holder.stdin.close()
        holder.wait(30)


# ----- the checks, in process ---------------------------------------------------------------
@pytest.mark.parametrize("name, value, words", [
    ("DP_ARENA_JOBS", "0", "DP_ARENA_JOBS='0'"),
    ("DP_ARENA_JOBS", "-1", "DP_ARENA_JOBS='-1'"),
    ("DP_ARENA_JOBS", "abc", "DP_ARENA_JOBS='abc'"),
    ("DP_ARENA_JOBS", "1.5", "DP_ARENA_JOBS='1.5'"),
    ("DP_ARENA_JOBS", "", "DP_ARENA_JOBS=''"),
    ("DP_ARENA_BOARD", "html", "DP_ARENA_BOARD='html' is not one of text, markdown"),
    ("DP_ARENA_DATA_CACHE", "maybe", "DP_ARENA_DATA_CACHE='maybe' is not one of"),
])
def test_a_bad_value_names_the_variable_the_value_and_the_fix(name, value, words):
    problems = environment_problems({name: value})
    assert len(problems) == 1
    assert words in problems[0].problem and name in problems[0].fix


@pytest.mark.parametrize("env", [
    {}, {"DP_ARENA_JOBS": "1"}, {"DP_ARENA_JOBS": "8"}, {"DP_ARENA_BOARD": ""},
    {"DP_ARENA_BOARD": "Markdown"}, {"DP_ARENA_DATA_CACHE": "off"},
    {"DP_ARENA_DEBUG": "1"}, {"DP_ARENA_DATA": "/no/such/folder"},
    {"DP_ARENA_SOMETHING_ELSE": "x"}])
def test_good_and_unset_values_pass(env):
    assert environment_problems(env) == []


def test_a_file_where_a_folder_belongs_and_a_folder_where_a_file_belongs(tmp_path):
    a_file = tmp_path / "f"
    a_file.write_text("")
    for name in ("DP_ARENA_DATA", "DP_ARENA_STATE_DIR", "DP_ARENA_CONTESTANTS"):
        (problem,) = environment_problems({name: str(a_file)})
        assert f"{name}={a_file} is a file" in problem.problem
    (problem,) = environment_problems({"DP_ARENA_SECRET_FILE": str(tmp_path)})
    assert "is a folder, but it names the file of the secret key" in problem.problem
    assert environment_problems({"DP_ARENA_SECRET_FILE": str(a_file),
                                 "DP_ARENA_DATA": str(tmp_path)}) == []


def sqlite_uri(path: Path) -> str:
    return f"sqlite:///{path}"


@pytest.mark.parametrize("journal", ["wal", "delete"])
def test_a_locked_store_is_refused_after_the_wait(tmp_path, empty_mlflow_store, journal):
    db = tmp_path / "mlflow.db"
    shutil.copyfile(empty_mlflow_store, db)
    with locked(db, journal):
        with pytest.raises(ConfigError) as err:
            launch_checks.check_tracking_store(sqlite_uri(db), wait_s=0.5)
    assert "is locked by another process" in err.value.problem
    assert "fuser -v" in err.value.fix and "tracking.uri=" in err.value.fix
    launch_checks.check_tracking_store(sqlite_uri(db), wait_s=0.5)  # released: fine
    with sqlite3.connect(db) as con:  # and the check wrote nothing
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
    assert "dp_arena_write_check" not in tables


def test_a_store_that_cannot_be_created_or_is_not_a_store(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(ConfigError, match="cannot create the MLflow store"):
        launch_checks.check_tracking_store(sqlite_uri(blocker / "sub" / "mlflow.db"))
    with pytest.raises(ConfigError, match="is a folder, not an SQLite file"):
        launch_checks.check_tracking_store(sqlite_uri(tmp_path))
    with pytest.raises(ConfigError, match="cannot be used") as err:
        launch_checks.check_tracking_store(sqlite_uri(blocker))
    assert "not a database" in err.value.problem and "not a folder" not in str(err.value)
    with pytest.raises(ConfigError, match="carries SQLite options") as err:
        launch_checks.check_tracking_store(sqlite_uri(tmp_path / "m.db") + "?mode=ro")
    assert f"sqlite:///{tmp_path / 'm.db'}" in err.value.fix
    launch_checks.check_tracking_store(sqlite_uri(tmp_path / "new" / "deeper" / "mlflow.db"))
    assert sorted(tmp_path.iterdir()) == [blocker]  # the probe made nothing
    launch_checks.check_tracking_store("http://127.0.0.1:9")  # a server: not this check's


def test_the_sweep_folder_check_leaves_no_folder_behind(tmp_path):
    launch_checks.check_sweep_folder(tmp_path / "multirun" / "day" / "time")
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "multirun").mkdir()
    (tmp_path / "multirun" / "kept").write_text("")
    launch_checks.check_sweep_folder(tmp_path / "multirun" / "day")
    assert [p.name for p in (tmp_path / "multirun").iterdir()] == ["kept"]


# ----- end to end ---------------------------------------------------------------------------
def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with a hash of its content (folders as ``dir``)."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            if p.is_file() else "dir" for p in sorted(folder.rglob("*"))}


def assert_refused(folder: Path, before: dict, proc: subprocess.CompletedProcess,
                   words: tuple[str, ...]) -> None:
    """One message with one fix, exit 2, no traceback, nothing left behind or RUNNING."""
    text = (proc.stderr + proc.stdout).strip()
    message = "\n".join(without_planning(text))
    assert proc.returncode == 2, f"exit {proc.returncode}:\n{text}"
    assert "Traceback" not in text and message.count("fix:") == 1, text
    assert message.startswith("dp-arena: the sweep was not started: "), message
    assert len(message.splitlines()) == 2, message
    for word in words:
        assert word in message, f"{word!r} not in:\n{message}"
    after = snapshot(folder)
    for files in (before, after):
        for name in ("mlflow.db", "mlflow.db.lock", "mlflow.db-wal", "mlflow.db-shm"):
            files.pop(name, None)
    assert after == before, f"left behind: {sorted(set(after) - set(before))}"
    assert runs_of(folder, kind="run") == [] and runs_of(folder, kind="sweep") == []


@pytest.mark.slow
@pytest.mark.parametrize("value", ["0", "abc"])
def test_bad_dp_arena_jobs_is_one_message(csv_dir, value):
    before = snapshot(csv_dir)
    proc = run_forked(["dp-arena", *CSV], csv_dir, {**ENV, "DP_ARENA_JOBS": value})
    assert_refused(csv_dir, before, proc, (f"DP_ARENA_JOBS='{value}'", "DP_ARENA_JOBS=2"))


@pytest.mark.slow
def test_a_launcher_told_to_run_nothing_at_a_time_is_one_message(csv_dir):
    before = snapshot(csv_dir)
    proc = run_forked(["dp-arena", *CSV, "hydra.launcher.n_jobs=0"], csv_dir, ENV)
    assert_refused(csv_dir, before, proc, ("hydra.launcher.n_jobs=0 is not a number of runs",
                                           "set hydra.launcher.n_jobs=2"))


@pytest.mark.parametrize("n_jobs, bad", [(0, True), ("2", True), (1.5, True), (True, True),
                                         (1, False), (8, False), (-1, False), (None, False)])
def test_the_launchers_n_jobs(n_jobs, bad):
    if bad:
        with pytest.raises(ConfigError, match="is not a number of runs at a time"):
            launch_checks.check_launcher_jobs(n_jobs)
    else:
        launch_checks.check_launcher_jobs(n_jobs)


@pytest.mark.slow
@pytest.mark.parametrize("journal", ["wal", "delete"])
def test_a_store_locked_by_another_process_is_one_message(csv_dir, journal):
    with locked(csv_dir / "mlflow.db", journal):
        before = snapshot(csv_dir)
        proc = run_forked(["dp-arena", *CSV], csv_dir, ENV, timeout=60)
    assert_refused(csv_dir, before, proc, ("is locked by another process", "fuser -v"))


@pytest.mark.slow
def test_a_store_that_cannot_be_created_is_one_message(csv_dir):
    before = snapshot(csv_dir)
    proc = run_forked(["dp-arena", *CSV, "tracking.uri=sqlite:///private.csv/mlflow.db"],
                      csv_dir, ENV)
    assert_refused(csv_dir, before, proc, ("cannot create the MLflow store",))


@pytest.mark.slow
def test_a_sweep_folder_that_cannot_be_created_is_one_message(csv_dir):
    before = snapshot(csv_dir)
    proc = run_forked(["dp-arena", *CSV, "hydra.sweep.dir=private.csv/sweep"], csv_dir, ENV)
    assert_refused(csv_dir, before, proc, ("cannot write the sweep folder private.csv/sweep",
                                           "hydra.sweep.dir=/a/writable/folder"))


def read_only_mount_works(folder: Path) -> bool:
    probe = folder / "probe"
    probe.write_text("")
    try:
        proc = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                               f"mount --bind {probe} {probe} && "
                               f"mount -o remount,bind,ro {probe} && ! (echo x >> {probe})"],
                              capture_output=True, timeout=30)
        return proc.returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        probe.unlink()


def read_only_run(folder: Path, read_only: Path, *overrides: str) -> subprocess.CompletedProcess:
    """The real ``dp-arena`` console script with ``overrides``, in a mount namespace of its
    own where ``read_only`` (a file or folder) is mounted read-only."""
    command = shlex.join([str(Path(sys.executable).parent / "dp-arena"), *overrides])
    return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                           f"mount --bind {read_only} {read_only} && "
                           f"mount -o remount,bind,ro {read_only} && exec {command}"],
                          cwd=folder, env=ENV, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
@pytest.mark.parametrize("what", ["store", "sweep folder"])
def test_a_read_only_store_or_sweep_folder_is_one_message(csv_dir, what):
    if shutil.which("unshare") is None or not read_only_mount_works(csv_dir):
        pytest.skip("cannot make a file read-only here (unshare -m and mount not allowed)")
    if what == "store":
        before = snapshot(csv_dir)
        proc = read_only_run(csv_dir, csv_dir / "mlflow.db", *CSV)
        assert_refused(csv_dir, before, proc, ("is read-only", "chmod u+w"))
    else:
        (csv_dir / "out").mkdir()
        before = snapshot(csv_dir)
        proc = read_only_run(csv_dir, csv_dir / "out", *CSV, "hydra.sweep.dir=out/sweep")
        assert_refused(csv_dir, before, proc, ("cannot write the sweep folder out/sweep "
                                               "(Read-only file system)",))


def test_a_database_store_needs_its_driver_and_a_server_that_answers(monkeypatch):
    import importlib.util
    import socket

    with pytest.raises(ConfigError) as err:  # no MySQLdb driver here, by that name
        launch_checks.check_database_server("mysql+mysqldb://u:s3cret@127.0.0.1/db")
    assert "the mysql driver is not installed (MySQLdb)" in err.value.problem
    assert "s3cret" not in str(err.value) and "pip install" in err.value.fix
    # with a driver (as if installed), the server must accept a connection (a MySQL one: a
    # PostgreSQL server must also take the login, tests/test_shared_store.py)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *args: object())
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        launch_checks.check_database_server(f"mysql://u:pw@127.0.0.1:{port}/db")
    with pytest.raises(ConfigError) as err:  # closed now: nothing listens on the port
        launch_checks.check_database_server(f"mysql://u:s3cret@127.0.0.1:{port}/db",
                                            timeout_s=2)
    assert "the mysql server of tracking.uri mysql://127.0.0.1:" in err.value.problem
    assert "does not answer" in err.value.problem and "s3cret" not in str(err.value)
