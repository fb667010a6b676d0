"""The metric interface: ``score(data, synthetic) -> MetricResult``, and which outputs are public.

A metric whose score needs work on the real tables alone (a model trained on the real rows,
the answers of the real table, reference densities) splits it off: :meth:`Metric.reference`
computes that part from ``data`` and the settings only, :meth:`Metric.score_with` scores a
synthetic table given it, and ``score`` is the two in turn (:class:`SharedReference`). Every
run of a sweep on one dataset needs the same reference, so a worker computes it once
(:mod:`dp_arena.run.references`) and its runs reuse it.

A metric is a dataclass whose fields are its settings (from ``dp_arena/conf/metrics/*.yaml``); what each
may be is declared in ``parameter_constraints`` and checked when it is built. Scores
are plain floats logged to MLflow as ``<metric>/<score>``; tables become CSV artifacts and
figures PNG artifacts.

Which outputs are private
-------------------------
- **Scores** are computed on the private data (as the challenge's published scores were); they
  are logged as they are, except the scores of a metric that reads the held-out persons
  (``reads_heldout``): those stay on the data owner's side (:mod:`dp_arena.run.heldout`), since
  a submission chooses the table they compare against held-out people.
- **Tables and figures** are private by declaration: only the names a metric lists in its
  ``public_outputs`` are public, i.e. computed from the synthetic table and public settings
  (schema, seeds, the public part of the dataset) only, so they are identical for any two
  private tables. A name in ``public_outputs`` covers the table *and* the figure of that name
  (one namespace, as the runner filters both by it). A table that compares real with synthetic
  (real counts, real proportions, real top-k, per-group errors) contains private aggregates
  and must not be declared public. :meth:`MetricResult.split` partitions a result by the
  declaration; the runner logs only the public part unless ``tracking.log_private_tables=true``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any, ClassVar

import pandas as pd

from dp_arena.data.datasets import Dataset
from dp_arena.params import Constraint, check_parameters


@dataclass(frozen=True)
class MetricOutputs:
    """Named tables and figures of one privacy class (see :meth:`MetricResult.split`)."""

    tables: dict[str, pd.DataFrame]
    figures: dict[str, Any]

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self.tables) | frozenset(self.figures)


@dataclass
class MetricResult:
    scores: dict[str, float]
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    #: name -> matplotlib Figure, or a zero-argument function that draws it (a figure that is
    #: rarely logged, e.g. a private one, is drawn only when it is: :func:`drawn`)
    figures: dict[str, Any] = field(default_factory=dict)

    def split(self, public_outputs: frozenset[str]) -> tuple[MetricOutputs, MetricOutputs]:
        """``(public, private)`` tables and figures: those named in ``public_outputs`` and all
        the others (private by declaration). Scores are in neither."""
        return (split_outputs(self.tables, self.figures, public_outputs, keep_public=True),
                split_outputs(self.tables, self.figures, public_outputs, keep_public=False))


def drawn(figure: Any) -> Any:
    """The matplotlib Figure of a ``MetricResult.figures`` value, drawing a deferred one."""
    return figure() if callable(figure) else figure


def split_outputs(tables: dict[str, pd.DataFrame], figures: dict[str, Any],
                  public_outputs: frozenset[str], keep_public: bool) -> MetricOutputs:
    """The tables and figures whose name is (``keep_public``) or is not in ``public_outputs``."""
    return MetricOutputs({k: v for k, v in tables.items() if (k in public_outputs) == keep_public},
                         {k: v for k, v in figures.items()
                          if (k in public_outputs) == keep_public})


@dataclass
class Metric(ABC):
    name: ClassVar[str]
    #: The score the leaderboard ranks by (a key of ``MetricResult.scores``).
    headline: ClassVar[str]
    #: Whether a smaller value ranks better: for the headline and every other score but those
    #: matching ``other_direction``. The board and tuning read the direction from here (the
    #: run tags it, :meth:`lower_scores`), never from a score's name.
    lower_is_better: ClassVar[bool] = False
    #: ``fnmatch`` patterns of score names that rank the other way from ``lower_is_better``.
    other_direction: ClassVar[tuple[str, ...]] = ()
    #: Names of the tables/figures computed from the synthetic table and public settings only.
    #: Everything else the metric returns is private (see the module docstring).
    public_outputs: ClassVar[frozenset[str]] = frozenset()
    #: What kind of data the metric needs, for the ``n/a`` reason when it does not apply.
    requires: ClassVar[str] = "another kind of data"
    #: What each setting may be (:mod:`dp_arena.params`), checked when the metric is built.
    parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {}
    #: Whether the metric reads the held-out persons (``data.heldout``). Only such a metric is
    #: given them (the others score the training view), and its scores stay on the data
    #: owner's side (:mod:`dp_arena.run.heldout`), never in the tracking store by default.
    reads_heldout: ClassVar[bool] = False

    def __post_init__(self) -> None:
        check_parameters(self, f"metrics.{self.name}")

    @classmethod
    def ranks_lower(cls, score: str) -> bool:
        """Whether a smaller value of this metric's ``score`` ranks better."""
        return cls.lower_is_better != any(fnmatchcase(score, p) for p in cls.other_direction)

    @classmethod
    def lower_scores(cls, scores: Iterable[str]) -> list[str]:
        """Of ``scores`` (names this metric returned), those where smaller ranks better."""
        return sorted(s for s in scores if cls.ranks_lower(s))

    def applies_to(self, data: Dataset) -> bool:
        """Whether this metric can score data of this kind (e.g. challenge: taxi schema)."""
        return True

    def not_applicable_reason(self, data: Dataset) -> str | None:
        """``None`` when the metric applies to ``data``, else why not (public facts only)."""
        if self.applies_to(data):
            return None
        return f"{self.name} needs {self.requires}; dataset {data.name!r} does not have it"

    @abstractmethod
    def score(self, data: Dataset, synthetic: pd.DataFrame) -> MetricResult:
        """Score ``synthetic`` against ``data.private``."""

    def reference(self, data: Dataset) -> Any:
        """What :meth:`score` computes from the real tables alone (never from a synthetic
        one), to share between runs on the same ``data`` with the same settings. **Private**
        like the scores: kept in memory, never written. None: nothing to share."""
        return None

    def score_with(self, reference: Any, data: Dataset, synthetic: pd.DataFrame) -> MetricResult:
        """:meth:`score` given ``reference = self.reference(data)`` (the default ignores it)."""
        return self.score(data, synthetic)

    def split_result(self, result: MetricResult) -> tuple[MetricOutputs, MetricOutputs]:
        """``(public, private)`` outputs of one of this metric's results."""
        return result.split(type(self).public_outputs)


class SharedReference(Metric):
    """A metric that computes its real-data side once (:meth:`reference`) and scores each
    synthetic table against it (:meth:`score_with`); ``score`` does both."""

    @abstractmethod
    def reference(self, data: Dataset) -> Any:
        """The real-data side of the score (see :meth:`Metric.reference`)."""

    @abstractmethod
    def score_with(self, reference: Any, data: Dataset, synthetic: pd.DataFrame) -> MetricResult:
        """Score ``synthetic`` given ``reference``."""

    def score(self, data: Dataset, synthetic: pd.DataFrame) -> MetricResult:
        return self.score_with(self.reference(data), data, synthetic)
