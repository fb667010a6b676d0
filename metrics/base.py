"""The metric interface: ``score(data, synthetic) -> MetricResult``.

A metric is a dataclass whose fields are its settings (from ``conf/metrics/*.yaml``). Scores
are plain floats logged to MLflow as ``<metric>/<score>``; tables become CSV artifacts and
figures PNG artifacts. Tables and figures must hold aggregates only, never private rows.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pandas as pd

from harness.data.datasets import Dataset


@dataclass
class MetricResult:
    scores: dict[str, float]
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    figures: dict[str, Any] = field(default_factory=dict)  # name -> matplotlib Figure


@dataclass
class Metric(ABC):
    name: ClassVar[str]
    #: The score the leaderboard ranks by (a key of ``MetricResult.scores``; higher is better
    #: unless ``lower_is_better``).
    headline: ClassVar[str]
    lower_is_better: ClassVar[bool] = False

    def applies_to(self, data: Dataset) -> bool:
        """Whether this metric can score data of this kind (e.g. challenge: taxi schema)."""
        return True

    @abstractmethod
    def score(self, data: Dataset, synthetic: pd.DataFrame) -> MetricResult:
        """Score ``synthetic`` against ``data.private``."""
