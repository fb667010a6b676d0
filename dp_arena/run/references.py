"""The real-data side of the scores, computed once per worker and shared by its runs.

A sweep runs every mechanism, epsilon and trial on one dataset, and a metric's
:meth:`~dp_arena.metrics.base.Metric.reference` (a model trained on the real rows, the real table's
answers, the targets and reference densities of a membership attack) is the same for all of
them. :func:`metric_references` computes each metric's reference in the process that forks the
runs (a joblib worker runs many), before the fork, and remembers the last
:data:`REMEMBERED` of them, keyed by :func:`reference_key`: the metric's class and settings and
the content of everything a score may read (private, public and held-out tables, schema, unit,
target). A changed table, setting or schema is a new key, so a stale reference is never used.

Privacy: a reference is computed from private rows like the scores are; it stays in the
worker's memory (no file, no log, no tag) and dies with the worker.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import asdict
from typing import Any

import pandas as pd

from dp_arena.data.datasets import Dataset
from dp_arena.metrics import Metric

#: How many references a worker keeps (a sweep over several datasets or metric settings
#: needs one per pair; the oldest is dropped first).
REMEMBERED = 16


def table_digest(frame: pd.DataFrame | None) -> bytes:
    """SHA-256 of a table's content and column names (b"" for no table). **Private**: used
    only as an in-memory key."""
    if frame is None:
        return b""
    h = hashlib.sha256(repr(list(frame.columns)).encode())
    h.update(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
    return h.digest()


def reference_key(metric: Metric, data: Dataset) -> bytes:
    """What a metric's reference depends on: its class, its settings and every part of
    ``data`` a score may read."""
    h = hashlib.sha256(f"{type(metric).__module__}.{type(metric).__qualname__}".encode())
    h.update(repr(sorted(asdict(metric).items())).encode())  # type: ignore[call-overload]
    h.update(repr((data.name, data.unit, data.id_column, data.target, data.schema)).encode())
    for part in (data.private, data.public, data.heldout):
        h.update(table_digest(part))
    return h.digest()


class ReferenceMemo:
    """The last :data:`REMEMBERED` references by key (a bounded memo of a pure function)."""

    def __init__(self, size: int = REMEMBERED) -> None:
        self.size = size
        self.entries: OrderedDict[bytes, Any] = OrderedDict()

    def get(self, metric: Metric, data: Dataset) -> Any:
        """``metric.reference(data)``, computed once per key."""
        key = reference_key(metric, data)
        if key in self.entries:
            self.entries.move_to_end(key)
            return self.entries[key]
        value = metric.reference(data)
        self.entries[key] = value
        while len(self.entries) > self.size:
            self.entries.popitem(last=False)
        return value


#: The worker's memo (a process-wide cache of pure results, like the privacy conversions'
#: ``lru_cache``: nothing in it changes what a run computes, only when).
WORKER_MEMO = ReferenceMemo()


def metric_references(metrics: dict[str, Metric], data: Dataset,
                      memo: ReferenceMemo = WORKER_MEMO) -> dict[str, Any]:
    """Every metric's reference for ``data`` (None for metrics without one), from ``memo``.
    A metric that keeps the default :meth:`~dp_arena.metrics.base.Metric.reference` costs nothing."""
    return {name: (memo.get(metric, scoring_view(metric, data))
                   if type(metric).reference is not Metric.reference else None)
            for name, metric in metrics.items()}


def scoring_view(metric: Metric, data: Dataset) -> Dataset:
    """What a metric scores against: the whole dataset for a metric that declares it reads the
    held-out persons (``reads_heldout``), the training view (no held-out part) for any other,
    so an undeclared read of ``data.heldout`` finds nothing."""
    return data if type(metric).reads_heldout else data.training_view()
