"""Honest tuning: public mode end to end with Optuna; dp_select's guarantee pieces.

Tolerances: (a) every pytest.approx here compares hand-computed arithmetic: its default, 1e-6
relative (and 1e-12 absolute), is far above the rounding of a few operations and far below any
wrong formula.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from mlflow import MlflowClient

from dp_arena.privacy.accounting import Budget
from dp_arena.run.dp_select import remaining_budget, selection_utility, utility_sensitivity
from dp_arena.run.tuning import candidates, parse_space
from dp_arena.mechanisms.base import clip_contributions


@pytest.mark.slow
def test_public_tuning_of_archetype_k_with_optuna_end_to_end(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "dp_arena.cli.main", "tuning=public", "space=archetype",
         "mechanism=archetype", "privacy.epsilon=10", "dataset.n_private=2000",
         "dataset.n_public=2000", "metrics=kmarginal", "hydra.sweeper.n_trials=2",
         "tuning.final_trials=[0]"],
        cwd=tmp_path, capture_output=True, text=True, timeout=900,
        env={**os.environ, "MLFLOW_TRACKING_URI": "", "DP_ARENA_JOBS": "1"})
    assert proc.returncode == 0, proc.stderr
    assert "\x1b[" not in proc.stdout + proc.stderr  # no Optuna colour codes by default
    assert "tuning (public): chose k=" in proc.stdout
    assert "why: best mean kmarginal/score on the public view" in proc.stdout
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    search = [r for r in client.search_runs([client.get_experiment_by_name(
        "dp-arena/taxi_sim/tuning").experiment_id]) if r.data.tags.get("kind", "run") == "run"]
    assert len(search) == 2
    for r in search:
        assert r.info.status == "FINISHED"
        assert r.data.tags["data_view"] == "public" and r.data.tags["tuning_stage"] == "search"
    assert len({r.data.tags["trial"] for r in search}) == 2  # fresh noise per Optuna trial
    final = [r for r in client.search_runs([client.get_experiment_by_name(
        "dp-arena/taxi_sim").experiment_id]) if r.data.tags.get("kind", "run") == "run"]
    assert len(final) == 1
    tags = final[0].data.tags
    assert tags["tuning"] == "public" and tags["data_view"] == "private"
    assert tags["tuning_chosen"].startswith("k=") and tags["hyperparameters"] == tags["tuning_chosen"]
    assert "best mean kmarginal/score on the public view" in tags["tuning_reason"]
    assert tags["private"] == "true"
    logged = {a.path for a in client.list_artifacts(final[0].info.run_id, "tuning")}
    assert logged == {"tuning/search.csv"}


def test_parse_space_and_candidates():
    space = parse_space({"mechanism.k": "choice(2, 4)", "mechanism.split": "range(0.1,0.3,0.1)"})
    assert space["mechanism.k"] == [2, 4] and len(space["mechanism.split"]) == 2
    assert len(candidates(space)) == 4 and {"k", "split"} == set(candidates(space)[0])
    with pytest.raises(Exception, match="finite"):
        parse_space({"mechanism.split": "interval(0.1, 0.3)"})


def test_selection_utility_sensitivity_bound_holds(small_dataset):
    """Removing any one person moves the utility by at most Delta_u = 1000 C / (2 N)."""
    schema = small_dataset.schema
    bound, n_public = 5, len(small_dataset.public)
    rng = np.random.default_rng(0)
    private = clip_contributions(small_dataset.private, "pid", bound, rng)
    synthetic = schema.encode(small_dataset.public.sample(800, random_state=1))
    pairs = [("color", "size"), ("size", "amount"), ("color", "amount")]
    domain = schema.domain()
    full = selection_utility(schema.encode(private), synthetic, pairs, domain, n_public)
    delta_u = utility_sensitivity(bound, n_public)
    worst = 0.0
    for pid in private["pid"].unique()[:60]:
        without = private[private["pid"] != pid]
        worst = max(worst, abs(full - selection_utility(schema.encode(without), synthetic, pairs,
                                                        domain, n_public)))
    assert 0 < worst <= delta_u + 1e-9


def test_budget_split():
    assert remaining_budget(Budget(1.0, 1e-5), 0.1, "gdp").epsilon == pytest.approx(0.9)
    zc = remaining_budget(Budget(1.0, 1e-5), 0.1, "zcdp")
    assert 0 < zc.epsilon <= 0.9 and zc.delta == 1e-5
