"""dp_arena.mechanisms.conditional_fill: exact public conditional tables, fallbacks, vectorised sampling.

Tolerances: (a) every pytest.approx here compares hand-computed arithmetic: its default, 1e-6
relative (and 1e-12 absolute), is far above the rounding of a few operations and far below any
wrong formula.
"""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chisquare

from dp_arena.data.datasets import load_taxi_sim
from dp_arena.mechanisms.conditional_fill import (SPRINT3_LOCATION, FillStep, conform_to_schema,
                                         enforce_shift_times, fit_conditionals, fit_key_coder,
                                         fit_table, sample_conditionals, sprint3_fill_steps)

# a:  0  0  0  0  1  1  2  2  2  2
# b: 10 10 20 20 10 10 10 10 10 20
# c:  5  5  6  7  5  5  7  7  8  8
PUBLIC = pd.DataFrame({
    "a": [0, 0, 0, 0, 1, 1, 2, 2, 2, 2],
    "b": [10, 10, 20, 20, 10, 10, 10, 10, 10, 20],
    "c": [5, 5, 6, 7, 5, 5, 7, 7, 8, 8],
})


def test_tables_match_hand_computed_conditionals():
    t = fit_table(PUBLIC, "c", ("a", "b"))
    assert t.distribution((0, 10)) == {5: 1.0}
    assert t.distribution((0, 20)) == {6: 0.5, 7: 0.5}
    assert t.distribution((1, 10)) == {5: 1.0}
    assert t.distribution((2, 10)) == pytest.approx({7: 2 / 3, 8: 1 / 3})
    assert t.distribution((2, 20)) == {8: 1.0}
    assert t.distribution((1, 20)) == {}  # never occurs publicly
    assert t.n_groups == 5
    a = fit_table(PUBLIC, "c", ("a",))
    assert a.distribution((0,)) == {5: 0.5, 6: 0.25, 7: 0.25}
    assert a.distribution((2,)) == {7: 0.5, 8: 0.5}
    m = fit_table(PUBLIC, "c", ())
    assert m.distribution(()) == {5: 0.4, 6: 0.1, 7: 0.3, 8: 0.2}
    long = t.as_frame()
    assert list(long.columns) == ["a", "b", "c", "count", "probability"]
    assert long["count"].sum() == len(PUBLIC)
    row = long[(long.a == 2) & (long.b == 10) & (long.c == 7)].iloc[0]
    assert (row["count"], row["probability"]) == (2, pytest.approx(2 / 3))


def test_key_coder_packs_without_overflow_and_marks_unseen():
    big = pd.DataFrame({"x": [0, 2**40, 5, 2**40], "y": [-(2**40), 3, 3, 7],
                        "z": [1, 1, 2, 2]})
    coder = fit_key_coder(big, ("x", "y", "z"))
    codes = coder.codes(big)
    assert sorted(codes.tolist()) == [0, 1, 2, 3] and coder.n_groups == 4
    probe = pd.DataFrame({"x": [2**40, 2**40, 1], "y": [3, 4, 3], "z": [1, 1, 1]})
    got = coder.codes(probe)
    assert got[0] == codes[1] and got[1] == -1 and got[2] == -1


def test_fallback_order_unseen_then_location_then_marginal():
    step = FillStep("c", ("a", "b"), fallbacks=(("a",),))
    assert step.levels == (("a", "b"), ("a",), ())
    model = fit_conditionals(PUBLIC, [step])
    synth = pd.DataFrame({"a": [0] * 200 + [1] * 200 + [9] * 2000,
                          "b": [20] * 200 + [20] * 200 + [10] * 2000})
    out, levels = sample_conditionals(model, synth, np.random.default_rng(0), return_levels=True)
    lv = levels["c"]
    # (0, 20) seen -> level 0, only its values {6, 7}
    assert (lv[:200] == 0).all() and set(out["c"][:200]) == {6, 7}
    # (1, 20) unseen, a = 1 seen -> level 1, a = 1 only has c = 5
    assert (lv[200:400] == 1).all() and set(out["c"][200:400]) == {5}
    # a = 9 unseen everywhere -> the marginal, every public value
    assert (lv[400:] == 2).all() and set(out["c"][400:]) == {5, 6, 7, 8}
    assert list(synth.columns) == ["a", "b"]  # input untouched


def test_min_count_treats_rare_combinations_as_unseen():
    model = fit_conditionals(PUBLIC, [FillStep("c", ("a", "b"), (("a",),))], min_count=2)
    synth = pd.DataFrame({"a": [2, 0, 2], "b": [20, 20, 10]})  # counts 1, 2, 3
    _, levels = sample_conditionals(model, synth, np.random.default_rng(0), return_levels=True)
    assert levels["c"].tolist() == [1, 0, 0]


def test_sampler_frequencies_match_conditional_probabilities():
    rng = np.random.default_rng(1)
    n_pub = 20_000
    a = rng.integers(0, 50, n_pub)
    c = (a * 7 + rng.geometric(0.3, n_pub)) % 40  # a different distribution per a
    public = pd.DataFrame({"a": a, "c": c})
    table = fit_table(public, "c", ("a",))
    n = 400_000
    synth = pd.DataFrame({"a": rng.integers(0, 50, n)})
    drawn = sample_conditionals(fit_conditionals(public, [FillStep("c", ("a",))]), synth,
                                np.random.default_rng(2))["c"].to_numpy()
    worst_z = 0.0
    for group in (0, 17, 49):
        p = table.distribution((group,))
        sel = drawn[synth["a"].to_numpy() == group]
        values = np.array(sorted(p))
        expected = np.array([p[v] for v in values]) * len(sel)
        observed = np.array([(sel == v).sum() for v in values])
        assert observed.sum() == len(sel)  # never a value outside the group's support
        assert chisquare(observed, expected).pvalue > 1e-4
        std = np.sqrt(expected * (1 - expected / len(sel)))
        worst_z = max(worst_z, float(np.max(np.abs(observed - expected) / std)))
    assert worst_z < 5.0


def test_sampling_needs_its_conditioning_columns():
    model = fit_conditionals(PUBLIC, [FillStep("c", ("a", "b"))])
    with pytest.raises(ValueError, match="conditions on"):
        sample_conditionals(model, pd.DataFrame({"a": [0]}), np.random.default_rng(0))
    with pytest.raises(ValueError, match="no column"):
        fit_conditionals(PUBLIC, [FillStep("d", ("a",))])
    with pytest.raises(ValueError, match="itself"):
        FillStep("a", ("a",))


def test_sprint3_chain_fills_a_valid_taxi_table():
    data = load_taxi_sim(n_private=5000, n_public=20_000, seed=3)
    model = fit_conditionals(data.public, sprint3_fill_steps())
    rng = np.random.default_rng(0)
    synth = data.private[["taxi_id", "company_id", *SPRINT3_LOCATION]].copy()
    out, levels = sample_conditionals(model, synth, rng, return_levels=True)
    out = conform_to_schema(enforce_shift_times(out, rng), data.schema)[data.schema.names]
    assert data.schema.problems(out) == []
    assert (out["shift"] == out["trip_day_of_week"] * 3 + out["trip_hour_of_day"] // 8).all()
    # where fare was drawn given the location, (location, fare) exists publicly
    seen = levels["fare"] == 0
    assert 0 < seen.mean() < 1  # some private locations never occur in the public year
    assert (levels["tips"][seen] == 0).all() and (levels["trip_miles"][seen] == 0).all()
    assert (levels["tips"][~seen] == 2).all()  # unseen location: straight to the marginal


def test_enforce_shift_times_repairs_inconsistent_hours():
    frame = pd.DataFrame({"shift": [0, 4, 20], "trip_hour_of_day": [3, 23, 17],
                          "trip_day_of_week": [6, 6, 6]})
    out = enforce_shift_times(frame.copy(), np.random.default_rng(0))
    assert out["trip_day_of_week"].tolist() == [0, 1, 6]
    assert out["trip_hour_of_day"].iloc[0] == 3 and out["trip_hour_of_day"].iloc[2] == 17
    assert 8 <= out["trip_hour_of_day"].iloc[1] < 16


def test_conform_to_schema_rounds_and_clips(small_schema):
    frame = pd.DataFrame({"amount": [-5.0, 3.6, 250.0], "size": [0, 1, 2]})
    out = conform_to_schema(frame, small_schema)
    assert out["amount"].tolist() == [-1, 4, 100] and out["size"].tolist() == [0, 1, 2]
