"""Value classes and column types that read real files (ISO timestamps, months,
mixed date formats, mostly-whole floats, text that must stay text under noise).

Tolerances: (a) every pytest.approx here compares hand-computed arithmetic: its default, 1e-6
relative (and 1e-12 absolute), is far above the rounding of a few operations and far below any
wrong formula; the exp(-t / scale) < 1e-6 condition is a threshold's stated failure
probability, not a tolerance.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dp_arena.data.datetimes import RESOLUTIONS, parse
from dp_arena.data.infer import (CLASSES, COVERS, TYPES, choose_type, class_counts,
                                resolution_of, type_misfits, value_classes)


def by_class(pairs: dict[str, float]) -> np.ndarray:
    """A class histogram: the named classes' counts, 0 elsewhere."""
    out = np.zeros(len(CLASSES))
    for name, count in pairs.items():
        out[CLASSES.index(name)] = count
    return out


def type_of(values: list) -> str:
    return choose_type(class_counts(pd.Series(values, dtype=object)))


# ----- the public lists -----------------------------------------------------------------------
def test_covers_is_consistent_with_classes_and_types():
    assert set(COVERS) == set(TYPES) and TYPES[-1] == "text" and CLASSES[-1] == "text"
    assert COVERS["text"] == frozenset(range(len(CLASSES)))
    assert COVERS["integer"] < COVERS["number"]
    dates = {CLASSES.index(c) for c in ("%Y-%m-%d", "ISO8601", "%m/%d/%Y", "%b %d %Y", "%b-%Y",
                                        "%Y-%m", "%B %Y")}
    assert COVERS["mixed"] == frozenset(dates)
    assert not COVERS["mixed"] & {CLASSES.index("%H:%M"), CLASSES.index("%H:%M:%S")}
    for t in TYPES:
        res = resolution_of(t)
        assert (res is None) == (t in ("integer", "number", "text"))
        assert res is None or res in RESOLUTIONS
        if t in CLASSES:  # every type that is a class covers its own class
            assert CLASSES.index(t) in COVERS[t]
    assert resolution_of("ISO8601") == "hour" and resolution_of("mixed") == "day"
    assert resolution_of("%b-%Y") == "month" and resolution_of("%H:%M:%S") == "hour_of_day"


def test_each_value_gets_its_first_class():
    values = pd.Series(["2013-01-01T10:00:00Z", "2013-01-01T10:00:00", "2013-01-01 10:00:00+00:00",
                        "2013-01-01 10:00:00.250", "2013-01-01", " Mar-2018 ", "2018-03",
                        "March 2018", "12/10/2016", "Aug 13 2016", "10:00", "10:00:00", "0",
                        "0.01", "1e3", "A Cab", "", None, np.nan, "inf", "2013-13-01T10:00",
                        "25:00", "24 Seven Taxi"], dtype=object)
    expected = ["ISO8601"] * 4 + ["%Y-%m-%d", "%b-%Y", "%Y-%m", "%B %Y", "%m/%d/%Y", "%b %d %Y",
                                  "%H:%M", "%H:%M:%S", "integer", "number", "integer", "text",
                                  "text", "text", "text", "text"]
    # the blank, None and NaN are not present: 20 present values
    assert [CLASSES[i] for i in value_classes(values)] == expected


# ----- the problems real files gave ---------------------------------------------------------------
def test_iso_timestamps_with_zone_are_a_datetime_type_read_in_utc():
    values = ["2013-01-01T10:00:00Z", "2013-01-01T11:30:00Z", "2013-01-01T12:00:00+02:00",
              "2013-01-02T00:00:00.5Z", "2013-01-02 01:00:00"]
    assert type_of(values) == "ISO8601"
    stamps = parse(pd.Series(values), "ISO8601")
    assert stamps.dt.tz is None
    assert list(stamps) == [pd.Timestamp("2013-01-01 10:00"), pd.Timestamp("2013-01-01 11:30"),
                            pd.Timestamp("2013-01-01 10:00"), pd.Timestamp("2013-01-02 00:00:00.5"),
                            pd.Timestamp("2013-01-02 01:00")]


@pytest.mark.parametrize("values, fmt", [
    (["Mar-2018", "Apr-2018", "Dec-2019"], "%b-%Y"),
    (["2018-03", "2018-04", "2019-12"], "%Y-%m"),
    (["March 2018", "April 2018", "December 2019"], "%B %Y"),
])
def test_months_are_month_types(values, fmt):
    assert type_of(values * 10) == fmt and resolution_of(fmt) == "month"
    assert list(parse(pd.Series(values), fmt)) == [
        pd.Timestamp("2018-03-01"), pd.Timestamp("2018-04-01"), pd.Timestamp("2019-12-01")]


def test_mixed_date_formats_are_one_mixed_type_read_month_first():
    values = ["2016-03-07", "12/10/2016", "Aug 13 2016", "Mar-2018", "2016-03-07T10:00:00Z"]
    assert type_of(values * 20) == "mixed"
    assert list(parse(pd.Series(values + ["10:00", "junk"]), "mixed")) == [
        pd.Timestamp("2016-03-07"), pd.Timestamp("2016-12-10"), pd.Timestamp("2016-08-13"),
        pd.Timestamp("2018-03-01"), pd.Timestamp("2016-03-07 10:00"), pd.NaT, pd.NaT]
    # one format alone is that format, not mixed; dates with times of day are text
    assert type_of(["2016-03-07"] * 5) == "%Y-%m-%d"
    assert type_of(["2016-03-07", "10:00"] * 5) == "text"


def test_mostly_whole_floats_are_numbers():
    """Precipitation: 90% zeros, 10% hundredths. Typed integer, the rainy rows were lost."""
    as_text = ["0"] * 90 + ["0.01"] * 10
    assert type_of(as_text) == "number"
    assert choose_type(class_counts(pd.Series([0.0] * 90 + [0.01] * 10))) == "number"
    assert choose_type(class_counts(pd.Series([0.0, 1.0, 2.0] * 10))) == "integer"
    assert type_of(["3", "-4", "12"]) == "integer"


def test_company_names_stay_text_under_large_laplace_noise():
    """A text column of n rows has every value in ``text``; its noisy histogram adds L_i ~
    Laplace(b) to each of the K = len(CLASSES) counts. A type T other than text is chosen only
    if covered(T) >= 0.99 * total, where covered(T) <= sum of the positive noise on the K - 1
    other classes and total >= covered(T) + max(0, n + L_text): so only if
    covered(T) >= 99 * max(0, n + L_text). If every |L_i| <= t then covered(T) <= (K - 1) t and
    n + L_text >= n - t, which is impossible for (K - 1) t < 99 (n - t), i.e.
    t < 99 n / (99 + K - 1). With n = 2000, b = 100: t = 1780 < 1784, and
    P(some |L_i| > t) <= K exp(-t / b) = 13 e^-17.8 ~ 2e-7 per draw: over 200 draws the test
    fails with probability below 1e-4 (and never with these seeds)."""
    names = ["Taxi Affiliation Services", "Flash Cab", "24 Seven Taxi", "3141 - Zip Cab",
             "Sun Taxi", "Chicago Carriage Cab Corp", "5074 - 54002 Ahzmi Inc", "Medallion 7:45"]
    n, scale = 2000, 100.0
    k = len(CLASSES)
    t = 1780.0
    assert (k - 1) * t < 99 * (n - t) and k * math.exp(-t / scale) < 1e-6
    rng = np.random.default_rng(0)
    values = pd.Series(rng.choice(names, n), dtype=object)
    exact = class_counts(values)
    assert exact[CLASSES.index("text")] == n and choose_type(exact) == "text"
    for _ in range(200):
        noisy = exact + rng.laplace(0.0, scale, size=k)
        assert choose_type(noisy) == "text"


# ----- choose_type on hand-computed counts ----------------------------------------------------
def test_choose_type_hand_computed():
    assert choose_type(by_class({"integer": 900, "number": 100})) == "number"       # integer 0.9
    assert choose_type(by_class({"integer": 990, "text": 10})) == "integer"         # exactly 0.99
    assert choose_type(by_class({"integer": 989, "text": 11})) == "text"            # 0.989
    assert choose_type(by_class({"%Y-%m-%d": 995, "text": 5})) == "%Y-%m-%d"  # 99.5% dates
    assert choose_type(by_class({"%Y-%m-%d": 980, "text": 20})) == "text"
    assert choose_type(by_class({"%Y-%m-%d": 600, "ISO8601": 400})) == "ISO8601"
    assert choose_type(by_class({"%Y-%m-%d": 500, "%m/%d/%Y": 500})) == "mixed"
    assert choose_type(by_class({"%H:%M": 500, "%H:%M:%S": 500})) == "text"
    assert choose_type(by_class({"integer": 80, "number": 20}), min_fit=0.8) == "integer"
    assert choose_type(np.zeros(len(CLASSES))) == "text"
    assert choose_type(-np.ones(len(CLASSES))) == "text"


def test_choose_type_clips_negative_noise_first():
    # clipped: integer 985 of 995 = 0.98995 < 0.99 -> text; unclipped the total would be -5
    counts = by_class({"integer": 985, "text": 10})
    counts[CLASSES.index("%H:%M")] = -1000
    assert choose_type(counts) == "text"
    counts[CLASSES.index("text")] = 5  # 985 / 990 = 0.99495
    assert choose_type(counts) == "integer"


def test_choose_type_refuses_a_wrong_length():
    with pytest.raises(ValueError):
        choose_type(np.ones(len(CLASSES) - 1))


def test_misfits_are_the_uncovered_present_values():
    values = pd.Series(["1", "2.5", "2016-03-07", "x", None, ""], dtype=object)
    misfits = type_misfits(values)
    assert set(misfits) == set(TYPES)
    assert misfits["text"] == 0 and misfits["number"] == 2 and misfits["integer"] == 3
    assert misfits["%Y-%m-%d"] == 3 and misfits["mixed"] == 3 and misfits["%H:%M"] == 4
