"""The real-data side of a score, shared by runs (dp_arena.metrics.base.SharedReference,
dp_arena.run.references): reusing it changes no score, and a worker recomputes it exactly
when something it depends on changes."""

from __future__ import annotations

import pandas as pd
import pytest

from dp_arena.data.datasets import Dataset
from dp_arena.run.references import ReferenceMemo, metric_references, reference_key
from dp_arena.metrics import make_metric
from tests.conftest import make_small_frame, make_small_schema

SHARED = {"ml_efficacy": {"max_train_rows": 500},
          "range_query": {"n_queries": 200},
          "membership": {"max_targets": 60, "n_bootstrap": 20, "max_synthetic": 500}}


def small_dataset(heldout: pd.DataFrame | None = None) -> Dataset:
    """A user-level toy table (200 persons) with 200 held-out persons and target ``size``."""
    heldout = make_small_frame(1500, seed=3, first_id=20_001) if heldout is None else heldout
    return Dataset("small", make_small_schema(), make_small_frame(3000, seed=1), unit="user",
                   id_column="pid", max_records_per_individual=5, heldout=heldout,
                   target="size")


@pytest.mark.parametrize("name", sorted(SHARED))
def test_one_reference_scores_every_synthetic_table_as_a_fresh_score_does(name):
    data, metric = small_dataset(), make_metric(name, SHARED[name])
    close, far = make_small_frame(3000, seed=7), make_small_frame(3000, seed=8, n_people=5)
    far["size"] = 3  # a synthetic table far from the real one
    reference = metric.reference(data)
    first = metric.score_with(reference, data, close).scores
    second = metric.score_with(reference, data, far).scores
    assert first == metric.score(data, close).scores
    assert second == metric.score(data, far).scores  # using it once did not change it
    assert first != second


def test_the_worker_memo_computes_a_reference_once_per_content(monkeypatch):
    calls = []
    metric = make_metric("range_query", SHARED["range_query"])
    original = type(metric).reference
    monkeypatch.setattr(type(metric), "reference",
                        lambda self, data: calls.append(1) or original(self, data))
    memo = ReferenceMemo(size=2)
    data = small_dataset()
    first = memo.get(metric, data)
    again = memo.get(metric, small_dataset())  # reloaded: equal content, a new object
    assert again is first and len(calls) == 1
    changed = small_dataset(make_small_frame(1500, seed=4, first_id=20_001))
    memo.get(metric, changed)  # the held-out part changed (not in the data fingerprint)
    memo.get(make_metric("range_query", {"n_queries": 201}), data)  # a setting changed
    assert len(calls) == 3
    memo.get(metric, data)  # evicted by the two newer keys (size 2): computed again
    assert len(calls) == 4


def test_keys_differ_by_every_part_a_score_reads():
    data, metric = small_dataset(), make_metric("membership", SHARED["membership"])
    key = reference_key(metric, data)
    variants = [Dataset(**{**data.__dict__, "target": "color"}),
                Dataset(**{**data.__dict__, "public": make_small_frame(100, seed=9)}),
                Dataset(**{**data.__dict__, "private": data.private.iloc[1:]})]
    assert all(reference_key(metric, v) != key for v in variants)
    assert reference_key(make_metric("membership", {**SHARED["membership"], "seed": 1}),
                         data) != key


def test_metrics_without_a_real_side_get_none():
    metrics = {"kmarginal": make_metric("kmarginal", {"k": 2}),
               "range_query": make_metric("range_query", SHARED["range_query"])}
    out = metric_references(metrics, small_dataset(), ReferenceMemo())
    assert out["kmarginal"] is None and out["range_query"] is not None
