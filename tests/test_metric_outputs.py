"""Every metric's declared public outputs really are public.

An output declared in ``Metric.public_outputs`` must be a function of the synthetic table and
public settings only. So, with the synthetic table fixed, it must be identical when the private
table changes: to a neighbour (one person removed) and to a fresh draw of the population.
Everything else is private by declaration, and at least one private table must change, or the
comparison could not fail. A meta-check makes sure every registered metric is covered.

Tolerances: (a) np.isclose's defaults (1e-5 relative, 1e-8 absolute) compare two scorings of
the same inputs, which differ by rounding only.
"""

from __future__ import annotations

import dataclasses
import io
from typing import Any

import numpy as np
import pandas as pd
import pytest

from dp_arena.data.datasets import Dataset, load_taxi_sim
from dp_arena.metrics import METRICS, MetricResult, make_metric
from dp_arena.metrics.base import drawn
from tests.support.people import (
    people_data,
    person_table,
    without_one_person,
)

#: Settings that keep the runs small (defaults otherwise).
SETTINGS: dict[str, dict[str, Any]] = {"count_query": {"n_queries": 300}}


# ----- datasets ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cases() -> dict[str, tuple[Dataset, Dataset, Dataset, pd.DataFrame]]:
    """name -> (data, neighbour, resampled, synthetic); the synthetic table is the same for all
    three and computed from public data only (here: a copy of the public part)."""
    taxi = load_taxi_sim(n_private=2000, n_public=2000)
    taxi_other = load_taxi_sim(n_private=2000, n_public=2000, seed=1)
    people = people_data(0)
    return {
        "taxi_sim": (taxi, without_one_person(taxi),
                     dataclasses.replace(taxi, private=taxi_other.private),
                     taxi.public.copy()),
        "people": (people, without_one_person(people),
                   dataclasses.replace(people, private=person_table(3000, 7)),
                   person_table(2500, 99)),
        "people_categorical": categorical_only(
            (people, without_one_person(people),
             dataclasses.replace(people, private=person_table(3000, 7)),
             person_table(2500, 99))),
    }


def categorical_only(case: tuple[Dataset, Dataset, Dataset, pd.DataFrame]):
    """A case without its numeric columns (for metrics that bin only named ones: sdnist)."""
    data = case[0]
    keep = [c.name for c in data.schema.columns if c.kind != "numeric"]
    schema = dataclasses.replace(data.schema, columns=tuple(data.schema[n] for n in keep))

    def cut(d: Dataset) -> Dataset:
        return dataclasses.replace(d, schema=schema, private=d.private[keep],
                                   public=None if d.public is None else d.public[keep])
    return cut(case[0]), cut(case[1]), cut(case[2]), case[3][keep]


def applicable(cases) -> list[tuple[str, str]]:
    """(metric, case) pairs where the metric applies."""
    return [(name, case) for name in METRICS for case, (data, *_rest) in cases.items()
            if make_metric(name, SETTINGS.get(name)).applies_to(data)]


# ----- comparisons ------------------------------------------------------------------------
def figure_bytes(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=50, metadata={"Software": None})
    return buf.getvalue()


def same_table(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    return a.shape == b.shape and list(a.columns) == list(b.columns) and a.equals(b)


def close_figures(*results: MetricResult) -> None:
    import matplotlib.pyplot as plt

    for result in results:
        for fig in map(drawn, result.figures.values()):
            plt.close(fig)


# ----- tests ------------------------------------------------------------------------------
def test_every_registered_metric_is_covered(cases):
    covered = {name for name, _ in applicable(cases)}
    missing = set(METRICS) - covered
    assert not missing, (f"metrics {sorted(missing)} apply to none of this test's datasets: "
                         "add a dataset they score")


def test_declarations_name_only_outputs_the_metric_returns(cases):
    """A public name that matches nothing is a typo that would hide a real output."""
    for name, case in applicable(cases):
        metric = make_metric(name, SETTINGS.get(name))
        data, _, _, synthetic = cases[case]
        result = metric.score(data, synthetic)
        public, private = metric.split_result(result)
        assert type(metric).public_outputs <= public.names, name
        assert not public.names & private.names
        assert public.names | private.names == set(result.tables) | set(result.figures)
        close_figures(result)


@pytest.mark.parametrize("name", sorted(METRICS))
def test_public_outputs_do_not_depend_on_the_private_table(cases, name):
    pairs = [case for metric, case in applicable(cases) if metric == name]
    assert pairs, f"{name} is not covered"
    for case in pairs:
        data, neighbour, resampled, synthetic = cases[case]
        metric = make_metric(name, SETTINGS.get(name))
        base = metric.score(data, synthetic)
        public, private = metric.split_result(base)
        for other_data in (neighbour, resampled):
            other = metric.score(other_data, synthetic)
            other_public, other_private = metric.split_result(other)
            assert public.names == other_public.names
            for key, table in public.tables.items():
                assert same_table(table, other_public.tables[key]), (name, case, key)
            for key, fig in public.figures.items():
                assert figure_bytes(drawn(fig)) == figure_bytes(drawn(other_public.figures[key])), \
                    (name, key)
            if other_data is resampled:
                # The comparison can fail: some private table does move with the private data
                # (a metric with no table at all: some score does).
                changed = [k for k, t in private.tables.items()
                           if k in other_private.tables
                           and not same_table(t, other_private.tables[k])]
                if not private.tables:
                    changed = [k for k, v in base.scores.items()
                               if not np.isclose(v, other.scores.get(k, np.nan), equal_nan=True)]
                assert changed, f"{name} on {case}: nothing private changed"
            close_figures(other)
        close_figures(base)


def test_split_partitions_by_declaration():
    tables = {"a": pd.DataFrame({"x": [1]}), "b": pd.DataFrame({"x": [2]})}
    result = MetricResult({"s": 1.0}, tables, {"a": object(), "c": object()})
    public, private = result.split(frozenset({"a"}))
    assert set(public.tables) == {"a"} and set(public.figures) == {"a"}
    assert set(private.tables) == {"b"} and set(private.figures) == {"c"}
    nothing, everything = result.split(frozenset())
    assert nothing.names == frozenset() and everything.names == {"a", "b", "c"}


def test_duke_report_panels_are_covered_and_private(cases):
    """The Duke panels (a) (joint (sex, race, attribute) histograms), (b) over the
    (sex, race, attribute) categories and (d) (level correlations) are scored on the people
    case above, so the public-output test covers them; none is public, and each moves with the
    private table (it is a comparison with it), so it may be logged only by opt-in."""
    data, _, resampled, synthetic = cases["people"]
    metric = make_metric("duke_utility", None)
    new = {"duke_private_combinations", "duke_joint_histograms", "duke_level_correlations"}
    base, other = metric.score(data, synthetic), metric.score(resampled, synthetic)
    public, private = metric.split_result(base)
    assert new <= private.names and not new & public.names
    assert not same_table(base.tables["duke_private_combinations"],
                          other.tables["duke_private_combinations"])
    assert figure_bytes(base.figures["duke_joint_histograms"]) != \
        figure_bytes(other.figures["duke_joint_histograms"])
    close_figures(base, other)
