"""Datetime columns with quantile bins, and the ISO8601 / mixed formats in a schema
(codes, decoding inside a bin, JSON round trip, validation errors)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dp_arena.data.datetimes import datetime_values, parse, strftime_pattern
from dp_arena.data.schema import Column, Schema, decode_column, encode_column
from dp_arena.errors import DPArenaError


def day_column(**over) -> Column:
    spec = dict(name="d", kind="datetime", dtype="str", resolution="day", format="%Y-%m-%d",
                min="2013-01-01", max="2013-12-31", bins=("2013-02-01", "2013-06-01"))
    spec.update(over)
    return Column(**spec)


def test_codes_are_left_closed_bins_hand_computed():
    col = day_column()
    assert col.present_size == 3 and col.size == 3
    values = pd.Series(["2013-01-01", "2013-01-31", "2013-02-01", "2013-05-31", "2013-06-01",
                        "2013-12-31"])
    assert encode_column(col, values).tolist() == [0, 0, 1, 1, 2, 2]
    assert day_column(allow_missing=True).size == 4


def test_decoded_values_fall_in_their_bins_and_are_uniform():
    """Codes -> values -> codes is the identity; a 3-day bin gets each day with probability 1/3:
    over 3,000 draws each day's count is Binomial(3000, 1/3), sd 25.8, checked within 5 sd."""
    col = day_column(bins=("2013-01-04", "2013-06-01"))
    rng = np.random.default_rng(3)
    codes = rng.integers(0, col.present_size, 5000)
    values = decode_column(col, codes, rng)
    assert encode_column(col, pd.Series(values)).tolist() == codes.tolist()
    first = pd.Series(decode_column(col, np.zeros(3000, dtype=np.int64), rng)).value_counts()
    assert sorted(first.index) == ["2013-01-01", "2013-01-02", "2013-01-03"]
    sd = np.sqrt(3000 * (1 / 3) * (2 / 3))
    assert np.all(np.abs(first.to_numpy() - 1000) < 5 * sd)
    last = decode_column(col, np.full(2000, 2), rng)
    assert min(last) == "2013-06-01" and max(last) == "2013-12-31"  # 214 days, 2000 draws


def test_missing_code_and_schema_round_trip(tmp_path):
    col = day_column(allow_missing=True)
    schema = Schema((col, Column("n", "numeric", "float", min=0, max=1)))
    path = tmp_path / "parameters.json"
    schema.save(path)
    again = Schema.load(path)
    assert again == schema and again["d"].bins == ("2013-02-01", "2013-06-01")
    assert Column.from_json("d", col.to_json()) == col
    df = pd.DataFrame({"d": ["2013-03-03", np.nan, "2013-01-05"], "n": [0.5, 0.1, 0.2]})
    codes = again.encode(df)
    assert codes["d"].tolist() == [1, 3, 0]
    back = again.decode(codes, np.random.default_rng(0))
    assert pd.isna(back["d"].iloc[1]) and again.encode(back)["d"].tolist() == [1, 3, 0]


def test_iso8601_column_reads_zones_and_writes_iso():
    col = Column("t", "datetime", "str", resolution="hour", format="ISO8601",
                 min="2013-01-01T00:00:00", max="2013-01-02T23:00:00",
                 bins=("2013-01-01T12:00:00", "2013-01-02T00:00:00"))
    values = pd.Series(["2013-01-01T13:30:00+02:00", "2013-01-01T12:00:00Z",
                        "2013-01-02 05:00:00", "2013-01-01"])
    # +02:00 is 11:30 UTC: bin 0; 12:00Z opens bin 1; day 2 is bin 2; midnight of day 1 bin 0
    assert encode_column(col, values).tolist() == [0, 1, 2, 0]
    out = decode_column(col, np.array([0, 1, 2]), np.random.default_rng(1))
    assert all(len(v) == 19 and v[10] == "T" and v.endswith(":00:00") for v in out)
    assert encode_column(col, pd.Series(out)).tolist() == [0, 1, 2]
    plain = Column("t", "datetime", "str", resolution="hour", format="ISO8601",
                   min="2013-01-01T00:00:00", max="2013-01-01T03:00:00")
    assert plain.present_size == 4
    assert decode_column(plain, np.array([3]), np.random.default_rng(0)).tolist() == [
        "2013-01-01T03:00:00"]


def test_month_format_and_mixed_format_bins():
    months = Column("m", "datetime", "str", resolution="month", format="%b-%Y", min="Jan-2018",
                    max="Dec-2019", bins=("Jul-2018", "Jan-2019"))
    assert encode_column(months, pd.Series(["Jan-2018", "Jul-2018", "Dec-2018", "Mar-2019"])
                         ).tolist() == [0, 1, 1, 2]
    assert set(decode_column(months, np.array([1] * 200), np.random.default_rng(0))) == {
        "Jul-2018", "Aug-2018", "Sep-2018", "Oct-2018", "Nov-2018", "Dec-2018"}
    mixed = Column("d", "datetime", "str", resolution="day", format="mixed", min="2016-01-01",
                   max="2016-12-31", bins=("2016-06-01",))
    values = pd.Series(["2016-03-07", "12/10/2016", "Aug 13 2016", "May-2016"])
    assert encode_column(mixed, values).tolist() == [0, 1, 1, 0]
    out = decode_column(mixed, np.array([0, 1]), np.random.default_rng(0))
    assert all(len(v) == 10 and v[4] == "-" for v in out)  # written %Y-%m-%d


def test_decoding_bins_without_a_generator_is_refused():
    with pytest.raises(DPArenaError) as exc:
        datetime_values(day_column(), np.array([0]))
    assert exc.value.fix


@pytest.mark.parametrize("over, words", [
    ({"bins": ("2013-06-01", "2013-02-01")}, "increase strictly"),
    ({"bins": ("2013-02-01", "2013-02-01")}, "increase strictly"),
    ({"resolution": "month", "bins": ("2013-02-01", "2013-02-15")}, "increase strictly"),
    ({"bins": ("2013-01-01",)}, "strictly between"),
    ({"bins": ("2013-12-31",)}, "strictly between"),
    ({"bins": ("2014-02-01",)}, "strictly between"),
    ({"bins": ("2013-02-01", "not a date")}, "1 bin cut point(s) do not parse"),
    ({"bins": ()}, "non-empty list"),
    ({"bins": "2013-02-01"}, "non-empty list"),
    ({"resolution": "day_of_week", "bins": ("2013-02-01",)}, "absolute resolution"),
])
def test_bad_bins_are_refused_with_a_fix(over, words):
    with pytest.raises(DPArenaError) as exc:
        day_column(**over)
    assert words in exc.value.problem and exc.value.fix
    assert "not a date" not in str(exc.value)  # a bad cut point is counted, never shown


def test_bins_from_json_are_validated():
    spec = day_column().to_json()
    assert spec["bins"] == ["2013-02-01", "2013-06-01"]
    spec["bins"] = ["2013-06-01", "2013-02-01"]
    with pytest.raises(DPArenaError, match="increase strictly"):
        Column.from_json("d", spec)


@pytest.mark.parametrize("fmt, res, text, back", [
    ("ISO8601", "hour", "2016-12-10T07:00:00", "2016-12-10 07:00"),
    ("ISO8601", "day", "2016-12-10", "2016-12-10"),
    ("mixed", "day", "2016-12-10", "2016-12-10"),
    ("mixed", "hour", "2016-12-10T07:00:00", "2016-12-10 07:00"),
    ("mixed", "month", "2016-12-10", "2016-12-10"),
    ("%b-%Y", "month", "Dec-2016", "2016-12-01"),
    (None, "minute", "2016-12-10 07:00", "2016-12-10 07:00"),
])
def test_bounds_written_with_strftime_pattern_parse_back(fmt, res, text, back):
    """What a proposal writes as min/max/bins (strftime_pattern) is read back by parse."""
    written = pd.Timestamp("2016-12-10 07:00").strftime(strftime_pattern(fmt, res))
    assert written == text
    assert parse(pd.Series([written]), fmt).iloc[0] == pd.Timestamp(back)
