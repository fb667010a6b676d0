"""`dp-arena` and `dp-arena-board` as a user runs them (subprocesses in a temp folder)."""

import os
import subprocess
import sys

import pandas as pd
import pytest

from tests.sweep_support import CSV, dp_arena


def board(cwd, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dp_arena.cli.board", *args], cwd=cwd,
                          check=False, capture_output=True, text=True, timeout=300)


def assert_clean_failure(proc: subprocess.CompletedProcess, *needles: str) -> None:
    assert proc.returncode != 0
    err = proc.stderr
    assert "Traceback" not in err and "Traceback" not in proc.stdout
    for needle in needles:
        assert needle in err, err
    problem = needles[0]
    assert (proc.stdout + err).count(problem) == 1, "the problem is reported more than once"


@pytest.mark.slow
def test_sweep_prints_a_ranked_leaderboard_and_board_reads_it_back(csv_dir):
    proc = dp_arena(csv_dir, *CSV, "mechanism=independent,uniform,resample",
                    "privacy.epsilon=1,10")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "sweep finished: 6 of 6 runs succeeded" in out
    assert out.count("done   ") == 6  # one progress line per run
    eps10 = out.split("### epsilon = 10")[1].split("###")[0]
    order = [line.split("|")[2].strip().strip("*") for line in eps10.splitlines()
             if line.startswith("| ")][1:]
    assert order == ["resample (non-private ceiling)", "independent", "uniform (floor)"]
    assert "### overall (mean over epsilon 1, 10)" in out
    again = board(csv_dir, "--experiment", "dp-arena/private", "--out", "lb")
    assert again.returncode == 0, again.stderr
    assert "### epsilon = 1" in again.stdout
    table = pd.read_csv(csv_dir / "lb" / "leaderboard.csv")
    assert len(table) == 6 and set(table["n"]) == {1}
    assert (csv_dir / "lb" / "score_vs_epsilon.png").stat().st_size > 1000
    assert "<table" in (csv_dir / "lb" / "leaderboard.html").read_text()


def test_negative_epsilon(csv_dir):
    proc = dp_arena(csv_dir, *CSV, "mechanism=independent", "privacy.epsilon=-1")
    assert_clean_failure(proc, "privacy.epsilon must be a finite number > 0 (got -1.0)", "fix:")


def test_unknown_mechanism(csv_dir):
    proc = dp_arena(csv_dir, *CSV, "mechanism=nope")
    assert_clean_failure(proc, "mechanism: no option named 'nope'", "independent")


def test_missing_csv(csv_dir):
    proc = dp_arena(csv_dir, "dataset=csv", "dataset.path=missing.csv",
                    "dataset.schema=parameters.json", "mechanism=independent",
                    "privacy.epsilon=1")
    assert_clean_failure(proc, "dataset.path: file not found: missing.csv")


def test_csv_with_out_of_domain_value_and_nan(csv_dir):
    bad = pd.read_csv(csv_dir / "private.csv").astype({"amount": float})
    bad.loc[0, "color"] = "purple"
    bad.loc[1, "amount"] = float("nan")
    bad.to_csv(csv_dir / "private.csv", index=False)
    proc = dp_arena(csv_dir, *CSV, "mechanism=independent", "privacy.epsilon=1")
    assert_clean_failure(proc, "2 problems", "color: 1 value(s) not in the domain",
                         "amount: 1 missing value(s) (NaN)")


def test_board_without_runs(tmp_path):
    proc = board(tmp_path)
    assert proc.returncode == 2
    assert "no MLflow store at" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "mlflow.db").exists()  # nothing created behind the user's back


# ----- native libraries' banners ----------------------------------------------------------
@pytest.mark.parametrize("argv, expected", [([], "3"), (["-v"], None)])
def test_native_banners_are_silenced_unless_verbose(monkeypatch, argv, expected):
    from dp_arena.cli.main import quiet_banners

    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    quiet_banners(argv)
    assert os.environ.get("TF_CPP_MIN_LOG_LEVEL") == expected
