"""A sweep's cost estimate (dp_arena/sweep/cost_estimate.py) and the ETA that reads it
(dp_arena/sweep/progress.py): every planned run priced from stored runs, an unknown mechanism
said with the command that prices it, the ETA from the model's per-run figures scaled by this
sweep's measured runs; and ``dp-arena --dry-run`` end to end: it prices, starts nothing and
writes nothing to the store.

Tolerances: pytest.approx's default (1e-6 relative) on hand-computed arithmetic: far above the
rounding of a few operations, far below any wrong formula.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow import MlflowClient

from dp_arena.run.cost_inputs import cost_inputs
from dp_arena.sweep.cost_estimate import Models, estimate_lines, price_plan, with_predictions
from dp_arena.sweep.cost_history import History
from dp_arena.sweep.cost_model import Observation, Sizes
from dp_arena.sweep.progress import (
    RunState,
    WallCalibration,
    estimate,
    run_group,
    wall_calibration,
)
from dp_arena.sweep.records import JobPlan, SweepPlan
from tests.sweep_support import CSV, dp_arena, runs_of

SIZES = {"rows": 1000, "rows_source": "the public part's rows", "columns": 5, "cells": 50}


def job(index: int, mechanism: str, eps: float, dataset: str = "toy", setting: str = "-",
        sizes: dict | None = None) -> JobPlan:
    return JobPlan(index, "run", f"{mechanism} eps={eps:g} trial=0", mechanism=mechanism,
                   setting=setting, epsilon=eps, dataset=dataset, sizes=sizes or SIZES,
                   overrides=(f"mechanism={mechanism}", f"privacy.epsilon={eps:g}",
                              f"dataset={dataset}", "trial=0"))


def history(*runs: tuple[str, float, float, float]) -> History:
    """(key, rows, cpu seconds, peak MB) runs at 5 columns, 50 cells, epsilon 1."""
    cpu = tuple(Observation(k, Sizes(r, 5, 50, 1.0), c) for k, r, c, _ in runs)
    mem = tuple(Observation(k, Sizes(r, 5, 50, 1.0), m) for k, r, _, m in runs)
    return History(cpu, mem)


def test_a_plan_is_priced_per_mechanism_and_dataset_and_an_unknown_one_is_said():
    models = Models.of(history(("independent", 1000, 2.0, 100.0),
                               ("independent", 1000, 2.0, 100.0)))
    plan = SweepPlan((job(0, "independent", 1.0), job(1, "independent", 1.0),
                      job(2, "mst", 1.0)), total=3)
    cost = price_plan(plan, models)
    known, unknown = cost.groups
    # two identical runs: the fit is exact (zero residual), each run costs 2 s
    assert (known.key, known.runs) == ("independent", 2)
    assert known.cpu.mean == pytest.approx(4.0) and known.peak.median == pytest.approx(100.0)
    assert unknown.cpu is None and cost.unknown_runs == 1
    text = "\n".join(estimate_lines(cost, models, 2, "sqlite:///x.db"))
    assert "no finished run of mst in the store" in text
    assert "dp-arena mechanism=mst privacy.epsilon=1 dataset=toy trial=0" in text
    assert "1 runs of unknown cost" in text
    priced = with_predictions(plan, models)
    assert [j.predicted_seconds for j in priced.jobs] == pytest.approx([2.0, 2.0, None])


def test_an_empty_store_prices_nothing_and_says_so():
    models = Models.of(History())
    cost = price_plan(SweepPlan((job(0, "aim", 1.0),), total=1), models)
    text = "\n".join(estimate_lines(cost, models, 2, "sqlite:///x.db"))
    assert "total: no run priced (1 of unknown cost)" in text
    assert "no finished run of aim in the store" in text


def state(mechanism: str, status: str, seconds: float = 0.0, eps: float = 1.0,
          trial: int = 0, predicted: float | None = None) -> RunState:
    label = f"{mechanism} eps={eps:g} trial={trial}"
    return RunState(mechanism, status, seconds, label, run_group(label), predicted)


def test_the_eta_before_any_run_is_the_models_figure():
    runs = [state("a", "pending", predicted=10.0), state("b", "pending", predicted=20.0),
            state("c", "pending", predicted=30.0)]
    eta = estimate(runs, 2)  # (10 + 20 + 30) / 2 = 30, the longest 30
    assert eta.seconds == pytest.approx(30.0) and eta.modelled and not eta.at_least
    assert eta.text() == "ETA ~30s"
    assert estimate([*runs, state("d", "pending")], 2) is None  # one run the model cannot price


def test_the_eta_prices_the_model_in_this_sweeps_wall_time():
    """'a' took 20 s where the model said 10: with one run, the slope is 1 and the job's
    overhead 20 - 10 = 10 s, so the unseen 'c' (model 30 s) costs 10 + 30 = 40 s; 'a' at
    eps 10 (model 40 s) is its group's 20 s moved by 1 x (40 - 10): 50 s."""
    runs = [state("a", "done", 20.0, predicted=10.0),
            state("a", "pending", eps=10, trial=1, predicted=40.0),
            state("c", "pending", predicted=30.0)]
    assert wall_calibration(runs) == WallCalibration(10.0, 1.0)
    eta = estimate(runs, 1)
    assert eta.seconds == pytest.approx(50.0 + 40.0)
    assert not eta.at_least and not eta.modelled and eta.text() == "ETA 1m30s"


def test_the_wall_time_of_a_run_is_overhead_plus_slope_times_the_model():
    """Three finished runs on the line wall = 10 + 2 x predicted (predictions 1 to 4: spread
    enough to fit the slope): recovered exactly; an unseen run of 8 s costs 26 s."""
    runs = [state("a", "done", 12.0, predicted=1.0), state("b", "done", 14.0, predicted=2.0),
            state("c", "done", 18.0, predicted=4.0), state("d", "pending", predicted=8.0)]
    cal = wall_calibration(runs)
    assert (cal.overhead, cal.slope) == pytest.approx((10.0, 2.0))
    assert estimate(runs, 1).seconds == pytest.approx(26.0)


# ----- end to end ------------------------------------------------------------------------------
def store_state(folder: Path) -> tuple[list[str], int, list[str]]:
    """The folder's files, and the store's runs and experiments."""
    client = MlflowClient(f"sqlite:///{folder / 'mlflow.db'}")
    experiments = sorted(e.name for e in client.search_experiments())
    runs = len(runs_of(folder)) + len(runs_of(folder, kind="sweep"))
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                   if not p.name.startswith("mlflow.db"))
    return files, runs, experiments


@pytest.mark.slow
def test_dry_run_prices_from_a_real_run_and_starts_nothing(csv_dir: Path):
    """One real run of 'independent' logs its CPU seconds and its public sizes; the dry run
    of a sweep of 'independent' and 'mst_quick' prices the first, says the second is
    unknown and how to price it, and leaves the folder and the store as they were."""
    done = dp_arena(csv_dir, "mechanism=independent", "privacy.epsilon=1", *CSV)
    assert done.returncode == 0, done.stderr
    assert "cost estimate: unknown (no finished run of these mechanisms" in done.stdout
    (run,) = runs_of(csv_dir)
    assert run.data.metrics["cpu_seconds"] > 0
    from dp_arena.data.datasets import load_dataset

    cfg = {"name": "csv", "path": str(csv_dir / "private.csv"),
           "schema": str(csv_dir / "parameters.json"),
           "public_path": str(csv_dir / "public.csv")}
    inputs = cost_inputs(cfg, load_dataset(cfg), 1.0)
    assert run.data.tags["cost.rows"] == str(inputs.rows)  # the public part's rows
    assert run.data.tags["cost.rows_source"] == "the public part's rows"
    assert run.data.tags["cost.columns"] == str(inputs.columns)
    assert run.data.tags["cost.cells"] == str(inputs.cells)
    before = store_state(csv_dir)
    dry = dp_arena(csv_dir, "--dry-run", "mechanism=independent,mst_quick",
                   "privacy.epsilon=1,10", "trial=0,1", *CSV)
    assert dry.returncode == 0, dry.stderr
    assert "cost estimate from 1 finished run in" in dry.stdout
    line = next(x for x in dry.stdout.splitlines() if x.strip().startswith("independent"))
    assert "spread unknown" in line and "unknown  unknown" not in line  # one run: no spread
    flat = " ".join(dry.stdout.split())  # the lines wrap where the figures' widths put them
    assert "no finished run of mst [quick] in the store" in flat
    assert "4 runs of unknown cost" in flat
    assert store_state(csv_dir) == before  # no run, no experiment, no sweep folder or file


@pytest.mark.slow
def test_dry_run_without_a_store_creates_none(csv_dir: Path):
    (csv_dir / "mlflow.db").unlink()
    dry = dp_arena(csv_dir, "--dry-run", "mechanism=independent", "privacy.epsilon=1", *CSV)
    assert dry.returncode == 0, dry.stderr
    assert "total: no run priced (1 of unknown cost)" in dry.stdout
    assert not (csv_dir / "mlflow.db").exists()
