"""Declared parameter constraints (dp_arena/params.py): the vocabulary, every mechanism's and
metric's declarations, and one message at the path the user wrote."""

from __future__ import annotations

import dataclasses

import pytest

from dp_arena.errors import ConfigError
from dp_arena.params import Interval, OneOf, Satisfies, accepts, check_parameters
from dp_arena.mechanisms import MECHANISMS, make_mechanism, mechanism_class
from dp_arena.metrics import METRICS, make_metric, metric_class


@pytest.mark.parametrize("constraint, good, bad, words", [
    (Interval(int, 1), [1, 7, 10**9], [0, -1, 1.5, True, "2"], "an integer >= 1"),
    (Interval(float, 0, closed="neither"), [1e-9, 2, 3.5], [0, -0.1, float("inf"), False],
     "a number > 0"),
    (Interval(float, 0, 1, closed="left"), [0, 0.5, 0.999], [1, 1.0, -1e-9, float("nan")],
     "in [0, 1)"),
    (Interval(int, 2, 5), [2, 5], [1, 6, 3.0], "an integer in [2, 5]"),
    (OneOf("a", "b"), ["a", "b"], ["c", None, 1], "one of 'a', 'b'"),
    (OneOf(1), [1], [True, 1.0, "1"], "1"),
    (Satisfies(lambda v: len(v) == 2, "a pair"), [(1, 2), "ab"], [(1,), 3], "a pair"),
    (None, [None], [0, ""], None),
    (bool, [True, False], [0, "true"], None),
])
def test_the_vocabulary_accepts_what_it_says(constraint, good, bad, words):
    assert all(accepts(constraint, v) for v in good)
    assert not any(accepts(constraint, v) for v in bad)
    if words is not None:
        assert constraint.describe() == words


def registered(registry: dict[str, str], load) -> list[type]:
    classes = []
    for name in sorted(registry):
        try:
            classes.append(load(name))
        except ConfigError:  # a family whose module is missing here
            continue
    return classes


@pytest.mark.parametrize("cls", registered(MECHANISMS, mechanism_class)
                         + registered(METRICS, metric_class), ids=lambda c: c.__name__)
def test_every_declaration_names_a_setting_its_default_meets(cls):
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    for key, allowed in cls.parameter_constraints.items():
        assert key in fields, f"{cls.__name__} declares a constraint on {key}, not a setting"
        default = fields[key].default
        if default is not dataclasses.MISSING:
            assert any(accepts(c, default) for c in allowed), (cls.__name__, key, default)


def test_a_value_outside_is_one_message_with_an_example_at_the_path_written():
    with pytest.raises(ConfigError) as caught:
        make_mechanism("mst", {"iters": 0})
    assert str(caught.value) == ("mechanism.iters must be an integer >= 1 (got 0)\n"
                                 "  fix: e.g. mechanism.iters=10000")
    with pytest.raises(ConfigError, match=r"^mechanism\.base_params\.iters must be an integer"):
        make_mechanism("mst", {"iters": 0}, "mechanism.base_params")
    with pytest.raises(ConfigError, match=r"^metrics\.count_query\.workload must be one of "
                                          r"'uniform', 'public' \(got 'zipf'\)"):
        make_metric("count_query", {"workload": "zipf"})


def test_built_directly_the_constraints_still_hold():
    from dp_arena.mechanisms.rdt import RDT

    with pytest.raises(ConfigError, match=r"mechanism\.max_depth must be null or an integer >= 0 "
                                          r"or 'all' \(got -1\)"):
        RDT(max_depth=-1)
    mechanism = RDT(max_depth="all")
    check_parameters(mechanism, "mechanism")  # a value the constraints allow passes
