import json

import numpy as np
import pandas as pd
import pytest

from dp_arena.data.schema import Column, Schema
from dp_arena.data.taxi.sprint3 import taxi_schema
from dp_arena.errors import DPArenaError, SchemaError


def test_validate_lists_every_problem_at_once(small_schema):
    df = pd.DataFrame({
        "pid": [1, 2, 3.5],
        "color": ["red", "purple", None],
        "size": [0, 7, 1],
        "amount": [5, 101, np.nan],
        "extra": [1, 2, 3],
    })
    with pytest.raises(SchemaError) as err:
        small_schema.validate(df)
    problems = err.value.problems
    text = "\n".join(problems)
    assert "unexpected columns: ['extra']" in text
    assert "pid: 1 non-integer value(s); allowed: integers in [1, 10000]" in text
    assert "color: 1 missing value(s)" in text
    assert "color: 1 value(s) not in the domain; allowed: ['red', 'green', 'blue']" in text
    assert "size: 1 value(s) not in the domain; allowed: 0..3" in text
    assert "amount: 1 value(s) outside [-1, 100]" in text
    assert "amount: 1 missing value(s)" in text
    assert len(problems) == 7
    # the offending values themselves are not echoed (they are private when the data is)
    assert "purple" not in text and "3.5" not in text and "101" not in text


@pytest.mark.parametrize("column, bad", [("pid", 987654.5), ("pid", 987654), ("size", 987654),
                                         ("amount", 987654), ("color", "x987654")])
def test_validation_messages_never_show_a_private_value_or_its_row(small_schema, column, bad):
    n = 50
    df = pd.DataFrame({"pid": np.arange(1, n + 1), "color": ["red"] * n, "size": [1] * n,
                       "amount": [5.0] * n})
    df[column] = df[column].astype(object)
    row = 37
    df.loc[row, column] = bad                     # one person's unique sentinel value
    df.loc[41, "amount"] = np.nan                 # and a missing value at another row
    with pytest.raises(SchemaError) as err:
        small_schema.validate(df)
    text = str(err.value)
    assert f"{column}: 1 " in text                # the column and the count are named
    assert "amount: 1 missing value(s) (NaN)" in text
    assert "987654" not in text                   # the value is not
    assert str(row) not in text and "41" not in text  # nor any row number


def test_encode_error_names_count_and_domain_not_values(small_schema):
    df = pd.DataFrame({"pid": [1, 2, 3], "color": ["red", "mauve987654", "mauve987654"],
                       "size": [0, 1, 2], "amount": [1, 2, 3]})
    with pytest.raises(SchemaError) as err:
        small_schema.encode(df)
    text = str(err.value)
    assert "color: 2 value(s) not in the domain; allowed: ['red', 'green', 'blue']" in text
    assert "987654" not in text


def test_domain_description_of_gappy_and_long_domains():
    from dp_arena.data.schema import domain_description, integer_runs

    assert integer_runs([-1, 1, 2, 3, 5]) == [(-1, -1), (1, 3), (5, 5)]
    assert domain_description(Column("a", "categorical", values=(-1, *range(1, 78)))) == \
        "-1, 1..77"
    assert domain_description(Column("b", "categorical", values=tuple(range(0, 60, 2)))) == \
        "30 values (listed in the schema)"
    assert domain_description(Column("c", "numeric", dtype="float64", min=0, max=1.5)) == \
        "[0, 1.5]"


def test_validate_missing_column_and_empty(small_schema):
    with pytest.raises(SchemaError) as err:
        small_schema.validate(pd.DataFrame({"pid": [], "color": [], "size": []}))
    assert err.value.problems == ["missing columns: ['amount']", "no rows"]


def test_valid_frame_passes(small_schema):
    df = pd.DataFrame({"pid": [1], "color": ["blue"], "size": [3], "amount": [100]})
    assert small_schema.problems(df) == []


def test_encode_numeric_bins_are_left_closed(small_schema):
    df = pd.DataFrame({"pid": [1] * 6, "color": ["red"] * 6, "size": [0] * 6,
                       "amount": [-1, 0, 9, 10, 50, 100]})
    codes = small_schema.encode(df)
    assert codes["amount"].tolist() == [0, 1, 1, 2, 3, 3]
    assert codes["color"].tolist() == [0] * 6
    assert list(codes.columns) == ["color", "size", "amount"]  # id column dropped


def test_decode_round_trip_stays_in_schema_and_in_bin(small_schema):
    rng = np.random.default_rng(0)
    codes = pd.DataFrame({"color": [0, 1, 2, 2], "size": [3, 2, 1, 0], "amount": [0, 1, 2, 3]})
    values = small_schema.decode(codes, rng)
    assert values["color"].tolist() == ["red", "green", "blue", "blue"]
    assert values["size"].tolist() == [3, 2, 1, 0]
    again = small_schema.encode(values.assign(pid=1))
    pd.testing.assert_frame_equal(again, codes, check_dtype=False)
    for _ in range(20):  # random draws inside each bin always re-encode to the same code
        big = pd.DataFrame({"color": [0] * 400, "size": [0] * 400,
                            "amount": np.repeat([0, 1, 2, 3], 100)})
        out = small_schema.decode(big, rng)
        assert small_schema.problems(out.assign(pid=1)) == []
        assert (small_schema.encode(out.assign(pid=1))["amount"] == big["amount"]).all()


def test_decode_with_reference_uses_reference_values(small_schema):
    rng = np.random.default_rng(0)
    ref = pd.DataFrame({"amount": [12, 12, 13]})  # bin 2 = [10, 50)
    out = small_schema.decode(pd.DataFrame({"amount": [2] * 50}), rng, reference=ref)
    assert set(out["amount"]) <= {12, 13}


def test_parameters_json_round_trip(tmp_path, small_schema):
    path = tmp_path / "parameters.json"
    small_schema.save(path)
    assert Schema.load(path) == small_schema


def test_domain_json(tmp_path):
    path = tmp_path / "d-domain.json"
    path.write_text(json.dumps({"a": 3, "b": 2}))
    schema = Schema.load(path)
    assert schema.domain() == {"a": 3, "b": 2}
    assert schema.to_domain() == {"a": 3, "b": 2}
    assert schema.problems(pd.DataFrame({"a": [0, 2], "b": [1, 2]})) == [
        "b: 1 value(s) not in the domain; allowed: 0..1"]


def test_bad_schema_files(tmp_path):
    with pytest.raises(DPArenaError, match="schema file not found"):
        Schema.load(tmp_path / "nope.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(DPArenaError, match="not valid JSON"):
        Schema.load(tmp_path / "bad.json")
    with pytest.raises(DPArenaError, match="needs 'min' and 'max'"):
        Column("x", "numeric")


def test_taxi_schema_agrees_with_the_challenge_parameters(shared_data):
    official = json.loads((shared_data / "sprint3-parameters.json").read_text())
    ours = taxi_schema().to_parameters()
    assert list(ours["schema"]) == list(official["schema"])
    for name, spec in official["schema"].items():
        mine = ours["schema"][name]
        for key in ("dtype", "kind", "values", "names", "min", "max"):
            assert mine.get(key) == spec.get(key), (name, key)
    assert [(r["epsilon"], r["delta"], r["max_records"]) for r in ours["runs"]] == [
        (r["epsilon"], r["delta"], r["max_records"]) for r in official["runs"]]
    # Our per-individual cap is the one the challenge's data preparation applied (200 trips),
    # not the file's 1,000,000.
    assert {r["max_records_per_individual"] for r in ours["runs"]} == {200}
    assert Schema.from_parameters(official).names == taxi_schema().names
