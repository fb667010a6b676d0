"""Datetime and missing values in the schema, schema proposals (public, DP, private
opt-in), dp-arena-schema, dataset.columns/drop, fitting data to a proposed schema, guards.

Tolerances: (a) a scale is 1 / (share * epsilon), two operations: rel=1e-6 (approx's default)
is far above their rounding.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from dp_arena.cli.schema import main as schema_main
from dp_arena.data.conform import conform
from dp_arena.data.datasets import Dataset, load_dataset
from dp_arena.data.guards import dataset_warnings
from dp_arena.data.propose import ProposalSettings, propose, quantile_edges, threshold
from dp_arena.data.schema import Column, Schema
from dp_arena.errors import DPArenaError
from dp_arena.privacy.accounting import Budget, Ledger
from dp_arena.privacy.release import NumpySampler, Releaser


def run_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        code = schema_main(argv)
    except SystemExit as exc:
        code = int(exc.code)
    out = capsys.readouterr()
    return code, out.out, out.err


def raw_table(n: int = 400, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    days = pd.Timestamp("2015-01-01") + pd.to_timedelta(rng.integers(0, 365, n), unit="D")
    minutes = rng.integers(0, 24 * 60, n)
    fare = np.round(rng.lognormal(2.3, 0.6, n), 2)
    fare[:3] = [700.0, 650.0, 999.0]  # outliers
    company = rng.choice(["A Cab", "B Cab", "C Cab"], n).astype(object)
    company[rng.random(n) < 0.3] = np.nan
    return pd.DataFrame({"day": days.strftime("%Y-%m-%d"),
                         "time": [f"{m // 60:02d}:{m % 60:02d}" for m in minutes],
                         "company": company, "fare": fare})


# ----- schema: missing values and datetimes ---------------------------------------------------
def test_missing_and_datetime_codes_round_trip():
    schema = Schema((
        Column("c", "categorical", "str", values=("a", "b"), allow_missing=True),
        Column("x", "numeric", "float", min=0, max=10, bins=(2, 5), allow_missing=True),
        Column("d", "datetime", "str", min="2013-01-01", max="2013-12-31", resolution="day",
               format="%Y-%m-%d", allow_missing=True),
        Column("t", "datetime", "str", resolution="hour_of_day", format="%H:%M"),
        Column("w", "datetime", "str", resolution="day_of_week_hour", format="%Y-%m-%d %H:%M")))
    df = pd.DataFrame({"c": ["a", None, "b"], "x": [1.0, np.nan, 7.0],
                       "d": ["2013-01-05", None, "2013-12-31"], "t": ["00:15", "23:59", "12:00"],
                       "w": ["2016-03-07 14:25", "2016-03-13 23:00", "2016-03-08 00:10"]})
    assert schema.problems(df) == []
    codes = schema.encode(df)
    # hand-computed: missing = last code; day 4 = Jan 5; Mon 14h = 14, Sun 23h = 6*24+23
    assert codes["c"].tolist() == [0, 2, 1] and codes["x"].tolist() == [0, 3, 2]
    assert codes["d"].tolist() == [4, 365, 364] and codes["t"].tolist() == [0, 23, 12]
    assert codes["w"].tolist() == [14, 167, 24]
    assert schema.domain() == {"c": 3, "x": 4, "d": 366, "t": 24, "w": 168}
    back = schema.decode(codes, np.random.default_rng(0))
    assert back.isna().sum().tolist() == [1, 1, 1, 0, 0]
    assert schema.problems(back) == []
    assert (schema.encode(back) == codes).all().all()
    assert back["t"].tolist() == ["00:00", "23:00", "12:00"]
    assert Schema.from_parameters(schema.to_parameters()) == schema


def test_bad_datetime_is_counted_never_shown():
    col = Column("d", "datetime", "str", min="2013-01-01", max="2013-12-31", resolution="day",
                 format="%Y-%m-%d")
    bad = pd.DataFrame({"d": ["2013-02-30", "secret-value", "2013-03-01", "2014-06-01"]})
    problems = Schema((col,)).problems(bad)
    assert problems == ["d: 2 value(s) do not parse as dates with format '%Y-%m-%d'",
                        "d: 1 value(s) outside [2013-01-01, 2013-12-31]"]
    assert "secret" not in " ".join(problems)


@pytest.mark.parametrize("spec, words", [
    ({"kind": "datetime", "resolution": "fortnight"}, "resolution"),
    ({"kind": "datetime", "resolution": "day"}, "needs 'min' and 'max'"),
    ({"kind": "datetime", "resolution": "day", "format": "%Y-%m-%d", "min": "2014-01-01",
      "max": "2013-01-01"}, "min is after max"),
    ({"kind": "numeric", "min": 0, "max": 1, "allow_missing": "yes"}, "allow_missing"),
])
def test_schema_file_edited_into_an_invalid_state_is_one_message(tmp_path, spec, words):
    path = tmp_path / "parameters.json"
    path.write_text(json.dumps({"schema": {"col": spec}, "runs": []}))
    csv = tmp_path / "d.csv"
    csv.write_text("col\n1\n")
    with pytest.raises(DPArenaError) as exc:
        load_dataset({"name": "csv", "path": str(csv), "schema": str(path)})
    assert words in str(exc.value) and "fix:" in str(exc.value)


# ----- proposals ------------------------------------------------------------------------------
def test_exact_proposal_kinds_and_quantile_bins():
    df = raw_table()
    prop = propose(df, ProposalSettings("public", bins=4))
    s = prop.schema
    assert [c.kind for c in s.columns] == ["datetime", "datetime", "categorical", "numeric"]
    assert s["day"].resolution == "day" and s["time"].resolution == "hour_of_day"
    assert s["company"].values == ("A Cab", "B Cab", "C Cab") and s["company"].allow_missing
    assert s["fare"].max == 999.0
    expected = np.quantile(df["fare"], [0.25, 0.5, 0.75])
    assert np.allclose(s["fare"].bins, expected)
    assert prop.spent() == (0.0, 0.0)
    assert propose(df, ProposalSettings("private")).spent() == (math.inf, 0.0)


def test_quantile_edges_hand_computed():
    lo, hi = np.array([0.0, 1.0, 2.0, 3.0]), np.array([1.0, 2.0, 3.0, 4.0])
    # CDF 0.1, 0.5, 0.6, 1.0: the median is reached in key 1, the quartiles in keys 1 and 3
    assert quantile_edges(lo, hi, np.array([1.0, 4.0, 1.0, 4.0]), 2) == [2.0]
    assert quantile_edges(lo, hi, np.array([1.0, 4.0, 1.0, 4.0]), 4) == [2.0]


def test_threshold_formula_and_delta():
    eps, delta = 0.5, 1e-6
    tau = threshold(eps, delta, 1)
    assert tau == pytest.approx(1 + 2 * math.log(1 / (2e-6)))
    # a value held by one person is released with probability exp(-(tau - 1) eps) / 2 = delta
    assert 0.5 * math.exp(-(tau - 1) * eps) == pytest.approx(delta)


def seeded_releaser(epsilon: float, seed: int) -> Releaser:
    return Releaser(Ledger(Budget(epsilon, 0.0)), NumpySampler(np.random.default_rng(seed)))


def test_dp_categories_are_exactly_the_values_above_the_threshold():
    """Re-draw the noise with the releaser's seed: the kept categories are exactly the keys
    whose noisy count passed tau, and a value held by one person is (almost) never kept."""
    from dp_arena.data.infer import CLASSES

    n_common = 3000
    df = pd.DataFrame({"pay": ["Cash"] * n_common + ["Card"] * n_common + ["Rare"]})
    kept_rare = 0
    for seed in range(20):
        settings = ProposalSettings("dp", epsilon=1.0, delta=1e-6)
        releaser = seeded_releaser(1.0, seed)
        prop = propose(df, settings, releaser)
        charges = releaser.ledger.charges
        assert [c.kind for c in charges] == ["laplace", "laplace", "laplace"]
        # no missing value: the rows outside the kept values are counted (the missing code)
        assert [c.name for c in charges] == ["pay: type", "pay: values", "pay: outside"]
        # replay: the type histogram (every public class + missing), then the 3 keys
        rng = np.random.default_rng(seed)
        rng.laplace(0.0, charges[0].scale, size=len(CLASSES) + 1)
        counts = pd.Series(df["pay"]).value_counts()
        noisy = counts.to_numpy() + rng.laplace(0.0, charges[1].scale, size=len(counts))
        tau = prop.thresholds["pay"]
        expected = sorted(counts.index[noisy > tau])
        assert list(prop.schema["pay"].values) == expected
        # one row outside the kept values stays under the noise floor: no missing code
        assert not prop.schema["pay"].allow_missing
        kept_rare += "Rare" in expected
    assert kept_rare == 0
    eps, delta = prop.spent()
    assert eps <= 1.0 and delta == pytest.approx(1e-6)
    # the split: 10% of the column's share on its type, the rest on its values (10% of which
    # on the count of rows outside the kept values)
    assert charges[0].scale == pytest.approx(1 / (0.1 * 1.0), rel=1e-6)
    assert charges[1].scale == pytest.approx(1 / (0.9 * 0.9 * 1.0), rel=1e-6)
    assert charges[2].scale == pytest.approx(1 / (0.9 * 0.1 * 1.0), rel=1e-6)


def test_dp_spend_is_the_ledgers_and_never_over_budget():
    df = raw_table(n=3000)
    prop = propose(df, ProposalSettings("dp", epsilon=2.0, delta=1e-6))
    eps, delta = prop.spent()
    assert 1.99 < eps <= 2.0 and delta <= 1e-6
    charged = sum(c.sensitivity / c.scale * (2 if c.kind == "exponential" else 1)
                  for c in (pytest.importorskip("dp_arena.privacy.accounting").Charge(**c)
                            for c in prop.ledger["charges"]))
    assert charged == pytest.approx(eps)


def test_numeric_dp_bins_spread_rows():
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"fare": np.round(rng.lognormal(2.3, 0.7, 20000), 2)})
    df.loc[:5, "fare"] = 900.0
    prop = propose(df, ProposalSettings("dp", epsilon=1.0))
    col = prop.schema["fare"]
    codes = np.searchsorted(col.cut_points, df["fare"].clip(col.min, col.max), side="right")
    assert np.bincount(codes).max() / len(df) <= 0.5


# ----- the command ----------------------------------------------------------------------------
def test_no_source_is_refused_naming_the_three_options(tmp_path, capsys):
    csv = tmp_path / "d.csv"
    raw_table().to_csv(csv, index=False)
    code, out, err = run_cli([str(csv), "--out", str(tmp_path / "p.json")], capsys)
    assert code == 2 and err.count("error:") == 1
    assert all(opt in err for opt in ("--public FILE", "--epsilon E", "--from-private"))
    assert list(tmp_path.iterdir()) == [csv]


def test_dp_command_writes_schema_and_ledger_and_runs_report_it(tmp_path, capsys):
    csv = tmp_path / "d.csv"
    raw_table(n=3000).to_csv(csv, index=False)
    out = tmp_path / "parameters.json"
    code, text, _ = run_cli([str(csv), "--out", str(out), "--epsilon", "1"], capsys)
    assert code == 0
    params = json.loads(out.read_text())
    ledger = json.loads((tmp_path / "parameters.ledger.json").read_text())
    assert params["proposal"]["source"] == "dp"
    assert params["proposal"]["epsilon_spent"] == ledger["total"]["epsilon"] <= 1.0
    ds = load_dataset({"name": "csv", "path": str(csv), "schema": str(out)})
    assert ds.schema_source.epsilon == ledger["total"]["epsilon"]
    from dp_arena.data.conform import schema_numbers
    numbers = schema_numbers(ds.schema_source, 1.0, 0.0)
    assert numbers["epsilon_total"] == pytest.approx(1.0 + ledger["total"]["epsilon"])


def test_from_private_is_labelled(tmp_path, capsys):
    csv = tmp_path / "d.csv"
    raw_table().to_csv(csv, index=False)
    out = tmp_path / "p.json"
    assert run_cli([str(csv), "--out", str(out), "--from-private"], capsys)[0] == 0
    ds = load_dataset({"name": "csv", "path": str(csv), "schema": str(out)})
    from dp_arena.data.conform import schema_tags
    assert schema_tags(ds.schema_source)["schema_note"] == "schema from private data (not DP)"


# ----- loading: columns, drop, fitting ---------------------------------------------------------
def test_columns_and_drop(tmp_path, capsys):
    csv = tmp_path / "d.csv"
    df = raw_table()
    df.assign(extra=1).to_csv(csv, index=False)
    public = tmp_path / "pub.csv"
    raw_table(seed=1).to_csv(public, index=False)  # another sample: DATA itself is refused
    out = tmp_path / "p.json"
    assert run_cli([str(csv), "--out", str(out), "--public", str(public), "--drop", "extra"],
                   capsys)[0] == 0
    ds = load_dataset({"name": "csv", "path": str(csv), "schema": str(out), "drop": ["extra"]})
    assert list(ds.private.columns) == ["day", "time", "company", "fare"]
    with pytest.raises(DPArenaError) as exc:
        load_dataset({"name": "csv", "path": str(csv), "schema": str(out),
                      "columns": ["fare", "nope"]})
    assert "['nope'] not among" in str(exc.value)


def test_conform_maps_unseen_values_to_missing_and_clips():
    schema = Schema((Column("c", "categorical", "str", values=("a",), allow_missing=True),
                     Column("x", "numeric", "float", min=0, max=10)))
    df = pd.DataFrame({"c": ["a", "z", None], "x": [-5.0, 3.0, 50.0]})
    out, notes = conform(df, schema)
    assert out["c"].isna().tolist() == [False, True, True]
    assert out["x"].tolist() == [0.0, 3.0, 10.0]
    text = " ".join(notes)
    assert "z" not in text
    assert notes == ("c: values outside the proposed schema set missing",
                     "x: values outside the proposed schema clipped or set missing")
    assert not any(ch.isdigit() for ch in text), "a count of private rows in a note"


def test_conform_names_the_columns_of_dropped_rows_without_a_count():
    schema = Schema((Column("c", "categorical", "str", values=("a", "b")),
                     Column("x", "numeric", "float", min=0, max=10, allow_missing=True)))
    df = pd.DataFrame({"c": ["a", "z", None, "b"], "x": [1.0, None, 2.0, 3.0]})
    out, notes = conform(df, schema)
    assert out["c"].tolist() == ["a", "b"] and len(out) == 2
    assert notes[-1] == "rows dropped: missing where the schema allows none (columns c)"


# ----- guards ---------------------------------------------------------------------------------
def small(n: int, x: np.ndarray, size: int = 3) -> Dataset:
    schema = Schema((Column("x", "numeric", "float", min=0, max=1000),
                     Column("c", "categorical", "int64", values=tuple(range(size)))))
    return Dataset("t", schema, pd.DataFrame({"x": x[:n], "c": np.arange(n) % size}))


def test_guards_each_warn_once_with_the_fix():
    rng = np.random.default_rng(0)
    ok = small(500, rng.uniform(0, 1000, 500))
    assert dataset_warnings(ok) == []
    few = dataset_warnings(small(50, rng.uniform(0, 1000, 50)))
    assert len(few) == 1 and "fewer than 100 persons" in few[0] and "fix" in few[0]
    skew = dataset_warnings(small(500, rng.exponential(5, 500)))
    assert len(skew) == 1 and "'x'" in skew[0] and "quantile" in skew[0]
    huge = dataset_warnings(small(500, rng.uniform(0, 1000, 500), size=20_000))
    assert len(huge) == 1 and "'c'" in huge[0] and "coarsen" in huge[0]


def test_the_challenges_fixed_bins_get_no_one_bin_warning():
    skewed = small(500, np.random.default_rng(0).exponential(5, 500))
    for name in ("taxi_sim", "taxi_sim_2020", "chicago_sample"):
        taxi = Dataset(name, skewed.schema, skewed.private)
        assert dataset_warnings(taxi) == [], name


# ----- a refused sweep leaves nothing behind -------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("case", ["unknown column", "invalid schema", "unparsable datetime"])
def test_a_sweep_refused_for_its_schema_or_columns_leaves_nothing_behind(tmp_path, case):
    from tests.sweep_support import dp_arena

    df = raw_table(n=200)
    df.to_csv(tmp_path / "d.csv", index=False)
    schema = propose(df, ProposalSettings("public")).schema.to_parameters()
    overrides = ["dataset=csv", "dataset.path=d.csv", "dataset.schema=p.json",
                 "mechanism=independent,uniform", "privacy.delta=1e-6", "metrics=kmarginal",
                 "dataset.holdout_fraction=0"]  # every row: the bad values are counted below
    if case == "unknown column":
        overrides.append("dataset.columns=[day,fare,nope]")
        words = "dataset.columns: ['nope'] not among the CSV's 4 columns"
    elif case == "invalid schema":
        schema["schema"]["day"]["resolution"] = "fortnight"
        words = "datetime column 'day' has resolution 'fortnight'"
    else:
        df.loc[:9, "day"] = "secret-day"
        df.to_csv(tmp_path / "d.csv", index=False)
        words = "day: 10 value(s) do not parse as dates with format '%Y-%m-%d'"
    (tmp_path / "p.json").write_text(json.dumps(schema))
    before = sorted(p.name for p in tmp_path.iterdir())
    proc = dp_arena(tmp_path, *overrides, timeout=180)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 2, text
    assert "the sweep was not started" in text and text.count(words) == 1, text
    assert "Traceback" not in text and "secret" not in text
    assert sorted(p.name for p in tmp_path.iterdir()) == before, "something was left behind"


def id_table(n: int = 300) -> pd.DataFrame:
    """An R export's row numbers, order ids and a real categorical column."""
    rng = np.random.default_rng(4)
    return pd.DataFrame({"rownames": np.arange(1, n + 1),
                         "order_id": [f"A{k:05d}" for k in rng.permutation(n)],
                         "pay": rng.choice(["cash", "card"], n),
                         "day": pd.date_range("2020-01-01", periods=n).strftime("%Y-%m-%d"),
                         "fare": rng.gamma(2, 5, n).round(2)})


def test_row_numbers_and_identifiers_of_a_public_sample_are_left_out_with_a_word():
    prop = propose(id_table(), ProposalSettings("public"))
    assert set(prop.dropped) == {"rownames", "order_id"}
    # dates and decimals all distinct (a daily table, measurements): kept
    assert list(prop.schema.names) == ["pay", "day", "fare"]
    lines = {line.split(":")[0]: line for line in prop.report}
    assert "named like a row number" in lines["rownames"]
    assert "every value distinct in the sample" in lines["order_id"]
    assert "--hint 'order_id={kind: categorical}'" in lines["order_id"]
    # a hint says what the column is: kept
    kept = propose(id_table(), ProposalSettings("public", hints={"order_id": {
        "kind": "categorical"}}))
    assert "order_id" in kept.schema.names


def test_a_dp_proposal_leaves_out_row_numbers_by_name_only():
    """All-distinct on the private table is not released: only the name decides (the ids'
    text release finds no value above its threshold, charged, and says so)."""
    prop = propose(id_table(2000), ProposalSettings("dp", epsilon=2.0))
    assert "rownames" in prop.dropped and "order_id" in prop.dropped
    charged = {c["name"].split(":")[0] for c in prop.ledger["charges"]}
    assert "rownames" not in charged and "order_id" in charged
    line = next(r for r in prop.report if r.startswith("order_id"))
    assert "no value passed the threshold" in line
