"""Late or wrong-subject failures, each now one message naming the problem
and the fix before any run, exit status 2, nothing left behind (no ``multirun``/``mlruns``
folder, no run in the store): a one-column table under ``kmarginal``'s ``k=2``, a tracking URI
of a scheme MLflow has no store for, a Hydra override syntax error, ``rdt`` on a table without
its default private attributes, ``dp-arena-score`` on a table that is not a taxi table; and
``dp-arena-audit --help`` describes the audit."""

from __future__ import annotations

import io
import subprocess
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dp_arena.cli.compose import override_syntax_problem
from dp_arena.data.schema import Column, Schema
from dp_arena.errors import ConfigError
from dp_arena.run.preflight import check_metric_sizes
from dp_arena.sweep.launch_checks import check_tracking_server, tracking_scheme_problem
from dp_arena.sweep.plan import planning_reporter, ticking
from dp_arena.metrics import make_metric
from tests.support.forked import run_forked
from tests.support.planning import without_planning
from tests.sweep_support import CSV, ENV, dp_arena, runs_of


def leftovers(folder: Path) -> list[Path]:
    """What a refused command must not leave: sweep folders, MLflow run folders, runs."""
    found = [p for p in folder.rglob("*") if p.name in ("multirun", "mlruns", "outputs",
                                                         "audits")]
    if (folder / "mlflow.db").exists():
        found += [Path(r.info.run_id) for kind in ("run", "sweep")
                  for r in runs_of(folder, kind=kind)]
    return found


def assert_one_message(proc: subprocess.CompletedProcess, problem: str, fix: str) -> None:
    text = proc.stdout + proc.stderr
    assert proc.returncode == 2, text
    assert "Traceback" not in text, text
    assert text.count(problem) == 1, text
    assert fix in text, text


# ----- the checks, in process --------------------------------------------------------------------
class Columns:
    """Just enough of a dataset for :func:`check_metric_sizes`: its schema."""

    def __init__(self, n: int):
        self.schema = Schema(tuple(Column(f"c{i}", "categorical", "str", values=("a", "b"))
                                   for i in range(n)))


def test_kmarginal_k_is_checked_against_the_number_of_attributes():
    two = {"kmarginal": make_metric("kmarginal", {"k": 2})}
    check_metric_sizes(two, Columns(2), "t")  # k = attributes: fine
    with pytest.raises(ConfigError) as exc:
        check_metric_sizes(two, Columns(1), "t")
    assert str(exc.value).splitlines() == [
        "metrics.kmarginal.k=2 scores 2-way marginals, but dataset 't' has 1 attribute",
        "  fix: set metrics.kmarginal.k=1 (or give the table more columns)"]
    check_metric_sizes({}, Columns(1), "t")  # no kmarginal: nothing to check


@pytest.mark.parametrize("uri, bad", [
    ("foo://bar", True), ("s3://bucket/x", True), ("sqlite:///x/mlflow.db", False),
    ("postgresql+psycopg2://u:p@h/db", False), ("file:///tmp/x", False), ("mlruns", False),
    ("/abs/path", False), (None, False)])
def test_tracking_uri_schemes(uri, bad):
    assert (tracking_scheme_problem(uri) is not None) == bad
    if bad:
        with pytest.raises(ConfigError, match="MLflow cannot store runs"):
            check_tracking_server(uri)


def test_a_credentialled_bad_uri_is_named_without_its_password():
    assert "pw" not in tracking_scheme_problem("foo://user:pw@host/x")


@pytest.mark.parametrize("argv, words", [
    (["dataset.label=my table(x)"], "cannot read the override 'dataset.label=my table(x)'"),
    (["privacy.epsilon=[1"], "cannot read the override 'privacy.epsilon=[1'"),
    (["mechanism"], "cannot read the argument 'mechanism': settings are key=value"),
])
def test_override_syntax_errors_name_the_override_and_the_fix(argv, words):
    problem = override_syntax_problem(argv)
    assert problem is not None and problem.startswith(words)
    assert "\n  fix: " in problem


@pytest.mark.parametrize("argv", [
    ["mechanism=independent", "privacy.epsilon=1,2", "~tracking", "x=range(1,3)",
     "+a.b=[1,2]", 'dataset.label="my table(x)"', "-m"]])
def test_good_overrides_pass_the_syntax_check(argv):
    assert override_syntax_problem(argv) is None


# ----- end to end -------------------------------------------------------------------------------
def one_column_csv(folder: Path) -> tuple[str, ...]:
    rng = np.random.default_rng(0)
    pd.DataFrame({"a": rng.choice(["x", "y", "z"], 500)}).to_csv(folder / "one.csv",
                                                                  index=False)
    Schema((Column("a", "categorical", "str", values=("x", "y", "z")),)).save(
        folder / "one.json")
    return ("dataset=csv", "dataset.path=one.csv", "dataset.schema=one.json",
            "privacy.delta=1e-6", "metrics=kmarginal")


@pytest.mark.slow
@pytest.mark.parametrize("case", ["one_column", "tracking_uri", "syntax", "rdt"])
def test_dp_arena_refuses_before_any_run(csv_dir, case):
    if case == "one_column":
        proc = dp_arena(csv_dir, *one_column_csv(csv_dir), "mechanism=independent",
                        "privacy.epsilon=1", timeout=300)
        assert_one_message(proc, "metrics.kmarginal.k=2 scores 2-way marginals, but dataset",
                           "fix: set metrics.kmarginal.k=1")
    elif case == "tracking_uri":
        proc = dp_arena(csv_dir, *CSV, "mechanism=independent", "privacy.epsilon=1",
                        "tracking.uri=foo://bar", timeout=300)
        assert_one_message(proc, "MLflow cannot store runs at a foo:// address",
                           "use sqlite:///path/to/mlflow.db")
        assert "model registry" not in proc.stderr.lower()
        assert not (csv_dir / "foo:").exists()
    elif case == "syntax":
        proc = dp_arena(csv_dir, *CSV, "mechanism=independent", "privacy.epsilon=1",
                        "dataset.label=my table(x)", timeout=300)
        assert_one_message(proc, "cannot read the override 'dataset.label=my table(x)'",
                           """'dataset.label="my table(x)"'""")
    else:
        # no sex/race columns and no target: rdt cannot choose its private attributes
        proc = dp_arena(csv_dir, *CSV, "mechanism=rdt", "privacy.epsilon=1",
                        "dataset.target=none", timeout=300)
        assert_one_message(proc, "rdt needs mechanism.private_attributes",
                           "mechanism.private_attributes=[color]")
        assert "[FAILED]" not in proc.stdout and "[1/1]" not in proc.stdout
    assert leftovers(csv_dir) == []


def score(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return run_forked(("dp-arena-score", *args), cwd, ENV)


def test_score_on_another_table_says_what_it_scores_and_the_fix(csv_dir):
    proc = score(csv_dir, "private.csv", "public.csv")
    assert_one_message(proc, "this command scores NIST 2020 Sprint 3 taxi tables",
                       "score another table with dp-arena itself: dp-arena dataset=csv")
    assert "the ground truth private.csv has 0 of them" in proc.stderr
    assert leftovers(csv_dir) == []


def test_audit_help_describes_the_audit(tmp_path):
    proc = run_forked(("dp-arena-audit", "--help"), tmp_path, ENV)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("dp-arena-audit: an empirical lower bound on a mechanism's epsilon")
    assert "powered by Hydra" not in out
    for words in ("VIOLATION", "audit.runs: 20000", "Exit codes: 0 ok, 3 VIOLATION, 2",
                  "mechanism: adaptive_grid", "dp-arena-audit dataset=titanic"):
        assert words in out, words
    assert max(len(line) for line in out.splitlines()) <= 100
    assert list(tmp_path.iterdir()) == []  # no outputs/ or audits/ folder


def test_planning_says_it_is_alive_inside_one_long_job():
    """A wide table's one slow job check (``aim_quick``'s notes on 110 columns took minutes)
    still prints a planning line every ``every_s`` seconds, from the ticking thread."""
    stream = io.StringIO()
    with ticking(planning_reporter(every_s=0.05, stream=stream), period_s=0.01) as say:
        say("checking", 2, 4)
        deadline = time.monotonic() + 30  # a loaded machine may starve the thread a while
        while stream.getvalue().count("\n") < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
    lines = stream.getvalue().splitlines()
    assert len(lines) >= 3, lines
    assert all(line.startswith("planning: checking job 3 of 4 (") for line in lines)
    quiet = io.StringIO()
    with ticking(planning_reporter(every_s=3600, stream=quiet), period_s=0.01) as say:
        say("checking", 0, 2)
        time.sleep(0.05)
    assert quiet.getvalue() == ""  # a quick plan prints nothing


# ----- a bad value given once is refused on the first job, before the others are composed ----
def plan_counting_compositions(overrides: list[str], monkeypatch) -> tuple[int | None, int]:
    """``plan_for`` of the sweep ``overrides`` make (in process, through Hydra's compose API):
    its exit status (``None``: planned) and how many jobs it composed."""
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.types import RunMode

    from dp_arena.resources import config_dir
    from dp_arena.sweep import plan

    composed: list[list[str]] = []
    original = plan.compose_job
    monkeypatch.setattr(plan, "compose_job",
                        lambda config, job: composed.append(job) or original(config, job))
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        config = GlobalHydra.instance().config_loader().load_configuration(
            "config", overrides, run_mode=RunMode.MULTIRUN)
        try:
            plan.plan_for(config)
        except SystemExit as stop:
            return stop.code, len(composed)
    return None, len(composed)


def default_sweep_jobs() -> int:
    """How many jobs the default sweep has: the product of its swept values' counts
    (dp_arena/conf/config.yaml)."""
    import math

    from omegaconf import OmegaConf

    from dp_arena.resources import config_dir

    params = OmegaConf.load(config_dir() / "config.yaml").hydra.sweeper.params
    return math.prod(len(str(v).split(",")) for v in params.values())


JOBS = default_sweep_jobs()


def test_a_bad_dataset_size_is_refused_on_the_first_of_the_default_jobs(monkeypatch, capsys):
    code, composed = plan_counting_compositions(["dataset.n_private=0"], monkeypatch)
    err = capsys.readouterr().err
    assert (code, composed) == (2, 1), err
    assert without_planning(err) == [
        f"dp-arena: the sweep was not started: a problem in the first of its {JOBS} jobs (the "
        f"other {JOBS - 1} were not checked):",
        "- dataset.n_private must be an integer >= 1000 (got 0)",
        "  fix: set dataset.n_private to e.g. 50000",
        "  (independent eps=1 trial=0)"]


@pytest.mark.parametrize("override, words", [
    ("mechanism.noise=bogus", "mechanism.noise must be one of"),  # a declared constraint
    ("limits.time_limit_s=-5", "limits.time_limit_s"),  # the typed settings' range
    ("+dataset.nosuch=1", "dataset.nosuch"),  # an unknown dataset setting
])
def test_other_values_given_once_are_refused_on_the_first_job(monkeypatch, capsys, override,
                                                              words):
    code, composed = plan_counting_compositions([override], monkeypatch)
    err = capsys.readouterr().err
    assert (code, composed) == (2, 1), err
    assert f"a problem in the first of its {JOBS} jobs" in err and words in err
    assert err.count("fix:") == 1, err


@pytest.mark.slow
def test_a_bad_value_in_a_later_job_is_still_found_by_the_whole_plan(monkeypatch, capsys):
    code, composed = plan_counting_compositions(
        ["mechanism=independent", "privacy.epsilon=1,-1", "trial=0", "metrics=kmarginal",
         "dataset.n_private=1000", "dataset.n_public=1000", "dataset.n_heldout=0"],
        monkeypatch)
    err = capsys.readouterr().err
    assert (code, composed) == (2, 2), err
    assert "1 problem in its 2 jobs" in err and "privacy.epsilon" in err


@pytest.mark.slow
def test_dp_arena_refuses_a_bad_dataset_size_before_planning(tmp_path):
    proc = dp_arena(tmp_path, "dataset.n_private=0", "trial=0,1,2", timeout=300)
    assert_one_message(proc, "dataset.n_private must be an integer >= 1000 (got 0)",
                       "fix: set dataset.n_private to e.g. 50000")
    assert f"a problem in the first of its {JOBS} jobs" in proc.stderr
    assert leftovers(tmp_path) == [] and not (tmp_path / "mlflow.db").exists()
