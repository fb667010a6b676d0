"""A score's direction comes from its metric's declaration, never from its name: the tuning
objective and the run's direction tags follow ``lower_is_better`` and ``other_direction``."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass
from typing import ClassVar

import pytest

from dp_arena.metrics import METRICS, Metric, MetricResult, metric_class
from dp_arena.run.runner import direction_tags
from dp_arena.sweep.job import objective_value, ranks_lower


@dataclass
class DistanceScore(Metric):
    """A plugin metric whose name and headline say 'score' but whose value is a distance."""

    name: ClassVar[str] = "distance_score"
    headline: ClassVar[str] = "plugin_score"
    lower_is_better: ClassVar[bool] = True
    other_direction: ClassVar[tuple[str, ...]] = ("similarity_*",)

    def score(self, data, synthetic) -> MetricResult:  # pragma: no cover - not scored here
        return MetricResult(scores={})


@pytest.fixture
def plugin(monkeypatch):
    module = types.ModuleType("tests_plugin_distance")
    module.DistanceScore = DistanceScore
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(METRICS, "distance_score", f"{module.__name__}:DistanceScore")
    return DistanceScore


def test_the_metric_declares_each_scores_direction(plugin):
    assert ranks_lower("distance_score/plugin_score")
    assert not ranks_lower("distance_score/similarity_top")
    assert ranks_lower("seconds") and ranks_lower("epsilon_spent")
    assert plugin.lower_scores(["plugin_score", "similarity_a", "tvd"]) == ["plugin_score", "tvd"]


def test_builtin_directions_read_from_the_metrics():
    """Distances and errors rank lower, similarities and utilities higher; ml_efficacy's gap
    (synthetic minus real, <= 0 when the synthetic table is worse) ranks higher."""
    assert metric_class("kmarginal").lower_scores(["score", "mean_tvd", "max_tvd"]) == \
        ["max_tvd", "mean_tvd"]
    assert not ranks_lower("ml_efficacy/gap") and not ranks_lower("ml_efficacy/gap_auroc")
    assert ranks_lower("membership/auc") and not ranks_lower("membership/copy_share_heldout")
    assert ranks_lower("duke_utility/logreg_coef_rmse")
    assert not ranks_lower("duke_utility/logreg_coef_corr")
    assert ranks_lower("frequent_patterns/false_drops")
    assert not ranks_lower("frequent_patterns/true_positives")


def test_tuning_maximises_the_negated_distance(plugin):
    rc = types.SimpleNamespace(tuning=types.SimpleNamespace(objective="distance_score/plugin_score"))
    better, worse = (objective_value({"distance_score/plugin_score": v}, rc) for v in (0.1, 0.9))
    assert better == -0.1 and worse == -0.9 and better > worse
    rc.tuning.objective = "distance_score/similarity_top"
    assert objective_value({"distance_score/similarity_top": 0.9}, rc) == 0.9


def test_the_run_tags_each_metrics_lower_scores_of_the_stored_scores_only(plugin):
    """The tag lists the stored scores' names where smaller is better; a name that is not
    stored (an owner-side score, present only on some data) never reaches it."""
    stored = {"distance_score/plugin_score": 1.0, "distance_score/similarity_a": 2.0}
    tags = direction_tags(stored, {"distance_score": DistanceScore()})
    assert tags == {"lower_is_better/distance_score": "plugin_score"}
    assert direction_tags({}, {"distance_score": DistanceScore()}) == {}
