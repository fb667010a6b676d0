"""dp-arena behaves like a Hydra app people know: tab completion installs and
answers, ``--help`` says what dp-arena does and what the default sweep runs, and ``--cfg job``
on a sweep shows the first job's config with a note instead of an error or a traceback."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from dp_arena.cli.compose import first_job_command, overrides_of
from tests.support.forked import run_forked
from tests.sweep_support import ENV

CONF = Path(__file__).resolve().parents[1] / "dp_arena" / "conf"


def dp_arena(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return run_forked(("dp-arena", *args), cwd, ENV, timeout=120)


def test_flags_and_their_values_are_not_overrides():
    assert overrides_of(["-sc", "install=bash"]) == []
    assert overrides_of(["--cfg", "job", "-p", "privacy", "a=1", "-m", "b=2,3"]) == ["a=1", "b=2,3"]


def test_cfg_on_a_sweep_shows_the_first_job_with_a_note():
    command, note = first_job_command("config", CONF, ["--cfg", "job", "-m",
                                                       "mechanism=mst,independent",
                                                       "privacy.epsilon=2"])
    assert command[:2] == ["--cfg", "job"] and "-m" not in command
    assert "mechanism=mst" in command and "privacy.epsilon=2" in command
    assert "trial=0" in command  # the default sweep's first trial
    assert note.startswith("note: a sweep; this is its first job's config (mechanism=mst, ")
    assert "privacy.epsilon" not in note  # fixed on the command line: not swept
    assert first_job_command("config", CONF, ["--cfg", "job", "trial=1"])[1].endswith(
        "the jobs differ in mechanism, privacy.epsilon")


@pytest.mark.slow
def test_tab_completion_installs_and_answers(tmp_path):
    install = dp_arena("-sc", "install=bash", cwd=tmp_path)
    assert install.returncode == 0 and "hydra_bash_completion" in install.stdout, install.stderr
    query = run_forked(("dp-arena", "-sc", "query=bash"), tmp_path,
                       {**ENV, "COMP_LINE": "dp-arena mechanism=ai", "COMP_POINT": "21"},
                       timeout=120)
    assert query.returncode == 0 and "mechanism=aim_quick" in query.stdout.split()


@pytest.mark.slow
def test_help_says_what_dp_arena_does_and_what_the_default_sweep_runs(tmp_path):
    proc = dp_arena("--help", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "powered by Hydra" not in text
    assert text.startswith("dp-arena: a competition harness for differentially private")
    assert "mechanisms: independent, archetype, archetype_writeup, prefix_tree" in text
    assert "epsilons:   1.0, 10.0" in text and "trials:     0, 1, 2" in text
    assert "dataset:    taxi_sim" in text and 'eval "$(dp-arena -sc install=bash)"' in text
    smoke = dp_arena("--help", "competition=smoke", cwd=tmp_path).stdout
    assert "mechanisms: independent, uniform" in smoke


@pytest.mark.slow
@pytest.mark.parametrize("args", [("--cfg", "job", "mechanism=independent,mst"),
                                  ("-m", "--cfg", "job", "mechanism=independent,mst")])
def test_cfg_job_on_a_sweep_prints_one_config_and_no_traceback(tmp_path, args):
    proc = dp_arena(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "Ambiguous value" not in proc.stderr
    assert "first job's config (mechanism=independent" in proc.stderr
    assert proc.stdout.count("mechanism:\n  name: independent") == 1
    assert not (tmp_path / "multirun").exists()
