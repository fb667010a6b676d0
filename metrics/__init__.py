"""Metric families, looked up by name (``conf/metrics/*.yaml`` keys)."""

from __future__ import annotations

from typing import Any


from .base import Metric, MetricResult

#: metric name -> "module:Class" (imported on first use).
METRICS: dict[str, str] = {
    "kmarginal": "metrics.kmarginal:KMarginal",
    "challenge": "metrics.challenge:ChallengeMetric",
    "count_query": "metrics.count_query:CountQuery",
    "frequent_patterns": "metrics.frequent_patterns:FrequentPatterns",
    "duke_utility": "metrics.duke_utility:DukeUtility",
    "ml_efficacy": "metrics.ml_efficacy:MLEfficacy",
    "propensity": "metrics.propensity:Propensity",
    "range_query": "metrics.range_query:RangeQuery",
    "membership": "metrics.membership:Membership",
}


def metric_class(name: str) -> type[Metric]:
    from harness.params import load_registered

    return load_registered(METRICS, name, "metric")


def make_metric(name: str, settings: dict[str, Any] | None) -> Metric:
    from harness.params import build_dataclass

    return build_dataclass(metric_class(name), settings or {}, f"metrics.{name}")


__all__ = ["Metric", "MetricResult", "METRICS", "metric_class", "make_metric"]
