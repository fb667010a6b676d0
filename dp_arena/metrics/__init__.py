"""Metric families, looked up by name (``dp_arena/conf/metrics/*.yaml`` keys)."""

from __future__ import annotations

from typing import Any


from .base import Metric, MetricResult

#: metric name -> "module:Class" (imported on first use).
METRICS: dict[str, str] = {
    "kmarginal": "dp_arena.metrics.kmarginal:KMarginal",
    "challenge": "dp_arena.metrics.challenge:ChallengeMetric",
    "count_query": "dp_arena.metrics.count_query:CountQuery",
    "frequent_patterns": "dp_arena.metrics.frequent_patterns:FrequentPatterns",
    "duke_utility": "dp_arena.metrics.duke_utility:DukeUtility",
    "ml_efficacy": "dp_arena.metrics.ml_efficacy:MLEfficacy",
    "propensity": "dp_arena.metrics.propensity:Propensity",
    "range_query": "dp_arena.metrics.range_query:RangeQuery",
    "membership": "dp_arena.metrics.membership:Membership",
    "sdnist": "dp_arena.metrics.sdnist:SDNist",
    "attribute_inference": "dp_arena.metrics.attribute_inference:AttributeInference",
}


def metric_class(name: str) -> type[Metric]:
    from dp_arena.params import load_registered

    return load_registered(METRICS, name, "metric")


def make_metric(name: str, settings: dict[str, Any] | None) -> Metric:
    from dp_arena.params import build_dataclass

    return build_dataclass(metric_class(name), settings or {}, f"metrics.{name}")


__all__ = ["Metric", "MetricResult", "METRICS", "metric_class", "make_metric"]
