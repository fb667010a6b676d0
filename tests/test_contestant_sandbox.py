"""Contestants in an operating-system sandbox, and nothing they choose in MLflow but declared
fields: a hostile contestant (tests/hostile_contestant.py) run for real, in bubblewrap, by
``run_one`` against a real SQLite store, tries what an attacker did to an unsandboxed run
(the harness's environment through ``/proc/<ppid>/environ``, the key file, the state
folder, the store, a copy of the private table outside its folder, a double-forked
``setsid`` grandchild that outlives the run) and reports what it managed on its standard
output, which ``DP_ARENA_DEBUG=1`` shows on stderr. Without bubblewrap these tests skip,
except on CI (``CI=true``), where ``.ci/run`` installs it and they fail instead."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from dp_arena.data.datasets import PROJECT_ROOT
from dp_arena.errors import ConfigError
from dp_arena.run.isolation import call_isolated
from dp_arena.run.settings import Limits
from dp_arena.mechanisms import make_mechanism
from dp_arena.mechanisms.external import OWNER_LOG, ContestantFailed
from tests.support.external import fit, leftovers, record_data

HOSTILE = str(PROJECT_ROOT / "tests" / "hostile_contestant.py")
#: How long the test watches for the grandchild after the run ended. It would write 1 s after
#: it was forked; the sandbox's PID namespace ends with the run, so it is dead at once. The
#: issue's attacker waited 40 s; its delay does not matter here, since a dead process writes
#: nothing however long it meant to wait: the test checks the process is gone, then that its
#: file never appeared while it would have written.
WATCH_S = 4.0

pytestmark = pytest.mark.usefixtures("private_tmp", "contestant_sandbox")


def hostile_processes() -> list[int]:
    """Live processes running the hostile script (zombies excluded)."""
    import psutil

    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            if HOSTILE in (proc.info["cmdline"] or []) and \
                    proc.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(proc.pid)
        except psutil.Error:
            continue
    return found


def report(err: str) -> dict:
    [line] = [ln for ln in err.splitlines() if ln.startswith("HOSTILE ")]
    return json.loads(line.removeprefix("HOSTILE "))


def store_tags(uri: str) -> dict[str, dict[str, str]]:
    from mlflow import MlflowClient

    client = MlflowClient(uri)
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    return {r.info.run_id: dict(r.data.tags) for r in runs}


def config(tmp_path: Path, uri: str, options: dict) -> dict:
    data = record_data()
    data.private.to_csv(tmp_path / "private.csv", index=False)
    data.schema.save(tmp_path / "parameters.json")
    return {"dataset": {"name": "csv", "path": str(tmp_path / "private.csv"),
                        "schema": str(tmp_path / "parameters.json")},
            "mechanism": {"name": "external", "script": HOSTILE, "options": options},
            "privacy": {"epsilon": 1.0, "delta": 1e-6}, "metrics": {"kmarginal": {"k": 1}},
            "trial": 0, "seed": 0, "tracking": {"uri": uri, "experiment": "hostile"}}


def test_a_hostile_contestant_reaches_nothing_and_leaves_only_a_category(
        tmp_path, tracking_uri, private_tmp, secret_key_file, throwaway_state_dir, capfd,
        monkeypatch):
    """The run FAILS with the category "non-zero exit" (its exit code 113, its failure line
    and its 113 undeclared report tags reach no tag); every attempt fails; the store holds no
    tag of its; nothing is written outside its folder; its grandchild is dead."""
    from dp_arena.privacy.secret import local_secret
    from dp_arena.run.runner import run_one

    local_secret()  # the key file exists (a run would create it anyway)
    (throwaway_state_dir / "registry").write_text("state")
    monkeypatch.setenv("DP_ARENA_DEBUG", "1")
    outside = tmp_path / "stolen.csv"
    store = tmp_path / "mlflow.db"
    cfg = config(tmp_path, tracking_uri, {
        "key": str(secret_key_file), "state": str(throwaway_state_dir), "store": str(store),
        "outside": str(outside), "linger": 1})
    with pytest.raises(ContestantFailed) as err:
        run_one(cfg)
    ended = time.monotonic()
    assert err.value.kind == "nonzero_exit"
    seen = report(capfd.readouterr().err)
    assert seen["ran"] and seen["uid"] != os.getuid()
    for attempt in ("parent_environ", "any_environ", "key", "state", "store_read",
                    "store_tag", "outside"):
        assert seen[attempt].startswith("failed"), (attempt, seen[attempt])
    while time.monotonic() < ended + WATCH_S:  # the grandchild would write 1 s after forking
        assert hostile_processes() == []
        time.sleep(0.2)
    assert not outside.exists() and not Path(str(outside) + ".late").exists()
    [tags] = store_tags(tracking_uri).values()
    assert "hostile" not in tags
    assert tags["failure_reason"].startswith("contestant 'external' ended with a non-zero "
                                             "exit code")
    assert tags["contestant.failure"] == "nonzero_exit"
    assert tags["contestant.isolation"] == ("bubblewrap, as nobody" if os.getuid() == 0 else
                                            "bubblewrap, own user namespace")
    written = " ".join([*tags.values(), str(err.value)])
    assert "seventeen" not in written and "113" not in written
    assert not [k for k in tags if k.startswith("contestant/") or "dropped" in k]
    owner = (throwaway_state_dir / OWNER_LOG).read_text()  # the details: for the owner only
    assert "exit code 113" in owner and "seventeen" in owner
    assert oct((throwaway_state_dir / OWNER_LOG).stat().st_mode & 0o777) == "0o600"
    assert leftovers(private_tmp) == []


def test_a_grandchild_dies_with_a_contestant_killed_at_the_time_limit(tmp_path, private_tmp):
    """The contestant forks its grandchild, then sleeps past the run's time limit: the limit's
    kill ends the sandbox, and the grandchild with it."""
    outside = tmp_path / "stolen.csv"
    mech = make_mechanism("external", {"script": HOSTILE, "options": {
        "outside": str(outside), "linger": 1, "sleep": 60}})
    limits = Limits(time_limit_s=3, memory_limit_mb=None, threads=1, isolate=True)
    with pytest.raises(Exception, match="time limit"):
        call_isolated(lambda: fit(mech, record_data()), limits)
    ended = time.monotonic()
    while time.monotonic() < ended + WATCH_S:
        assert hostile_processes() == []
        time.sleep(0.2)
    assert not Path(str(outside) + ".late").exists()
    assert leftovers(private_tmp) == []


def test_without_the_sandbox_the_same_contestant_reads_the_key(secret_key_file, capfd,
                                                               monkeypatch, private_tmp):
    """The control: with ``contestant.isolation=none`` (knowingly) the hostile script does read
    the key file (so the probes above can see a leak), and its runs are tagged so."""
    from dp_arena.privacy.secret import local_secret

    local_secret()
    monkeypatch.setenv("DP_ARENA_DEBUG", "1")
    mech = make_mechanism("external", {"script": HOSTILE,
                                       "options": {"key": str(secret_key_file)}})
    mech.isolation = "none"
    assert mech.isolation_tag()["contestant.isolation"].startswith("none")
    with pytest.raises(ContestantFailed):
        fit(mech, record_data())
    assert report(capfd.readouterr().err)["key"] == "ok: 32"
    assert leftovers(private_tmp) == []


def test_a_view_that_would_show_the_key_is_refused(tmp_path, monkeypatch):
    """A contestant whose arguments would bind the key's folder into its view is refused."""
    key = tmp_path / "keys" / "secret.key"
    key.parent.mkdir()
    monkeypatch.setenv("DP_ARENA_SECRET_FILE", str(key))
    mech = make_mechanism("external", {"script": HOSTILE, "args": [str(key.parent)]})
    with pytest.raises(ConfigError, match="its sandbox would show"):
        mech.sandbox()


def test_without_a_sandbox_the_run_is_refused_before_it_starts_unless_none(
        tmp_path, tracking_uri, monkeypatch, private_tmp):
    """On a machine without bubblewrap (here: a PATH without it) a contestant's run is
    refused before any MLflow run exists; ``contestant.isolation=none`` runs it, tagged."""
    from mlflow import MlflowClient

    from dp_arena.run.runner import run_one
    from dp_arena.sandbox import find_sandbox

    bare = tmp_path / "bin"
    bare.mkdir()
    for tool in ("python3", "true", "setpriv"):
        (bare / tool).symlink_to(shutil.which(tool) or f"/usr/bin/{tool}")
    monkeypatch.setenv("PATH", str(bare))
    find_sandbox.cache_clear()
    try:
        assert "bubblewrap (bwrap) is not installed" in find_sandbox().problem
        cfg = config(tmp_path, tracking_uri, {})
        with pytest.raises(ConfigError, match="needs an operating-system sandbox"):
            run_one(cfg)
        client = MlflowClient(tracking_uri)
        assert client.search_runs([e.experiment_id for e in client.search_experiments()]) == []
        with pytest.raises(ContestantFailed):
            run_one({**cfg, "contestant": {"isolation": "none"}})
        [run] = client.search_runs([e.experiment_id for e in client.search_experiments()])
        assert run.data.tags["contestant.isolation"].startswith("none")
        assert run.data.params["contestant.isolation"] == "none"
    finally:
        find_sandbox.cache_clear()
    with pytest.raises(ConfigError, match="contestant.isolation must be one of"):
        run_one({**cfg, "contestant": {"isolation": "maybe"}})


def test_doctor_and_list_say_which_isolation_contestants_run_under(tmp_path, monkeypatch,
                                                                   capsys):
    from dp_arena.cli.contestants import main
    from dp_arena.sandbox import find_sandbox

    monkeypatch.setenv("DP_ARENA_CONTESTANTS", str(tmp_path / "envs"))
    main(["doctor"])
    said = capsys.readouterr().out
    assert said.startswith("isolation of every contestant on this machine: bubblewrap: own PID")
    main(["list"])
    assert said.strip() in capsys.readouterr().out
    monkeypatch.setenv("PATH", str(tmp_path))  # a machine without bubblewrap
    find_sandbox.cache_clear()
    try:
        with pytest.raises(SystemExit) as code:
            main(["doctor"])
        assert code.value.code != 0
        said = capsys.readouterr().out
        assert "no sandbox (bubblewrap (bwrap) is not installed)" in said
        assert "contestant.isolation=none" in said
    finally:
        find_sandbox.cache_clear()


def test_outputs_that_are_links_to_the_harness_side_are_not_read(tmp_path, private_tmp,
                                                                  throwaway_state_dir):
    """The contestant links synthetic.csv (and report.json, failure.txt) to a file outside its
    view that the harness can read, here a valid output table (as the held-out rows would
    be): the harness reads no link, so the run fails as "no output"."""
    target = tmp_path / "heldout.csv"
    target.write_text("a,b,c\n" + "0,1,2\n" * 1200)
    mech = make_mechanism("external", {"script": HOSTILE, "options": {"link": str(target)},
                                       "report_tags": ["x1"]})
    with pytest.raises(ContestantFailed) as err:
        fit(mech, record_data())
    assert err.value.kind == "no_output"
    assert leftovers(private_tmp) == []
