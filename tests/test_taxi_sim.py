"""The embedded simulated Chicago taxi data generator and its CLI."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from harness.data.datasets import load_csv_dataset
from harness.cli.simulate import main
from harness.data.sprint3 import MAX_TRIPS_PER_TAXI, taxi_schema
from harness.data.taxi_sim import simulate_trips, simulate_years

N = 30_000
KEY_AREAS = {8, 32, 28, 76, 56}
CARD = (1, 2)


@pytest.fixture(scope="module")
def years() -> tuple[pd.DataFrame, pd.DataFrame]:
    return simulate_years(n_private=N, n_public=N, seed=7)


@pytest.fixture(scope="module")
def private(years) -> pd.DataFrame:
    return years[0]


@pytest.fixture(scope="module")
def public(years) -> pd.DataFrame:
    return years[1]


def trips_per_taxi(df: pd.DataFrame) -> pd.Series:
    return df.groupby("taxi_id").size()


def total_variation(a: pd.Series, b: pd.Series) -> float:
    pa, pb = a.value_counts(normalize=True), b.value_counts(normalize=True)
    return 0.5 * float(pa.sub(pb, fill_value=0.0).abs().sum())


@pytest.mark.parametrize("which", ["private", "public"])
def test_schema_valid_exact_rows_int64(which, request):
    df = request.getfixturevalue(which)
    assert list(df.columns) == taxi_schema().names
    assert len(df) == N
    assert all(str(t) == "int64" for t in df.dtypes)
    taxi_schema().validate(df)


@pytest.mark.parametrize("n", [1000, 5_000, 20_001])
def test_exactly_n_rows(n):
    df = simulate_trips(n, np.random.default_rng(3), "public")
    assert len(df) == n
    taxi_schema().validate(df)


def test_deterministic_per_seed_and_different_across_seeds():
    a_priv, a_pub = simulate_years(20_000, 20_000, seed=1)
    b_priv, b_pub = simulate_years(20_000, 20_000, seed=1)
    pd.testing.assert_frame_equal(a_priv, b_priv)
    pd.testing.assert_frame_equal(a_pub, b_pub)
    c_priv, c_pub = simulate_years(20_000, 20_000, seed=2)
    assert not a_priv.equals(c_priv)
    assert not a_pub.equals(c_pub)


def test_private_year_does_not_depend_on_public_size():
    a_priv, _ = simulate_years(20_000, 5_000, seed=4)
    b_priv, _ = simulate_years(20_000, 30_000, seed=4)
    pd.testing.assert_frame_equal(a_priv, b_priv)


@pytest.mark.parametrize("which", ["private", "public"])
def test_trips_per_taxi_heavy_tailed_and_capped(which, request):
    counts = trips_per_taxi(request.getfixturevalue(which))
    assert counts.max() <= MAX_TRIPS_PER_TAXI
    assert counts.max() / counts.median() > 10


def test_taxi_ids_of_the_two_years_are_disjoint(private, public):
    assert not set(private["taxi_id"]) & set(public["taxi_id"])


@pytest.mark.parametrize("which", ["private", "public"])
def test_pickup_dropoff_structure(which, request):
    df = request.getfixturevalue(which)
    pairs = df.groupby(["pickup_community_area", "dropoff_community_area"]).size()
    assert pairs.nlargest(10).sum() / len(df) > 0.30
    top_pickups = set(df["pickup_community_area"].value_counts().index[:10])
    assert KEY_AREAS <= top_pickups
    for column in ("pickup_community_area", "dropoff_community_area"):
        unknown = (df[column] == -1).mean()
        assert 0.003 < unknown < 0.04


@pytest.mark.parametrize("which", ["private", "public"])
def test_money_is_consistent(which, request):
    df = request.getfixturevalue(which)
    assert (df["trip_total"] >= df["fare"] + df["tips"]).all()
    assert (df["fare"] > 0).all()
    known = (df["trip_miles"] >= 0) & (df["trip_seconds"] >= 0)
    assert 0.98 < known.mean() < 1.0
    # fares follow miles: long trips cost more
    long_trips = df[known & (df["trip_miles"] >= 10)]
    short_trips = df[known & (df["trip_miles"] <= 2)]
    assert long_trips["fare"].median() > 3 * short_trips["fare"].median()
    assert df.loc[known, ["trip_miles", "trip_seconds"]].corr().iloc[0, 1] > 0.7


@pytest.mark.parametrize("which", ["private", "public"])
def test_tips_mostly_on_card_payments(which, request):
    df = request.getfixturevalue(which)
    card = df["payment_type"].isin(CARD)
    cash = df["payment_type"] == 0
    tipped_card = (df.loc[card, "tips"] > 0).mean()
    tipped_cash = (df.loc[cash, "tips"] > 0).mean()
    assert tipped_card > 0.6
    assert tipped_card > 5 * tipped_cash
    share = (df.loc[card & (df["tips"] > 0), "tips"] / df.loc[card & (df["tips"] > 0), "fare"])
    assert 0.12 < share.median() < 0.25


@pytest.mark.parametrize("which", ["private", "public"])
def test_payment_mix(which, request):
    mix = request.getfixturevalue(which)["payment_type"].value_counts(normalize=True)
    assert 0.33 < mix[0] < 0.47
    assert 0.43 < mix[1] < 0.57


@pytest.mark.parametrize("which", ["private", "public"])
def test_shift_is_the_eight_hour_block_of_the_week(which, request):
    df = request.getfixturevalue(which)
    expected = df["trip_day_of_week"] * 3 + df["trip_hour_of_day"] // 8
    assert (df["shift"] == expected).all()


def test_each_taxi_mostly_drives_for_one_company(public):
    top_share = public.groupby("taxi_id")["company_id"].agg(
        lambda s: s.value_counts(normalize=True).iloc[0])
    sizes = trips_per_taxi(public)
    assert top_share[sizes >= 20].median() > 0.9
    assert 60 < public["company_id"].nunique() < 101


def test_years_differ(private, public):
    assert total_variation(private["company_id"], public["company_id"]) > 0.05
    assert trips_per_taxi(private).mean() < 0.95 * trips_per_taxi(public).mean()


def test_bad_arguments_raise_clear_errors():
    from harness.errors import DPArenaError

    with pytest.raises(DPArenaError, match="positive integer"):
        simulate_trips(0, np.random.default_rng(0), "public")
    with pytest.raises(DPArenaError, match="unknown year"):
        simulate_trips(1000, np.random.default_rng(0), "2019")  # type: ignore[arg-type]


# ----- CLI --------------------------------------------------------------------------------
def test_cli_writes_readable_files(tmp_path, capsys):
    out = tmp_path / "sim"
    assert main(["--trips", "3000", "--public-trips", "2000", "--seed", "5",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "private.csv" in printed and "3,000 rows" in printed and "2,000 rows" in printed
    ds = load_csv_dataset(path=str(out / "private.csv"), schema=str(out / "parameters.json"),
                          public_path=str(out / "public.csv"))
    assert len(ds.private) == 3000 and len(ds.public) == 2000
    assert ds.unit == "user" and ds.id_column == "taxi_id"
    assert ds.max_records_per_individual == MAX_TRIPS_PER_TAXI
    expected_private, _ = simulate_years(3000, 2000, seed=5)
    pd.testing.assert_frame_equal(ds.private, expected_private)


@pytest.mark.parametrize("argv, message", [
    (["--trips", "10"], "--trips must be at least 1000"),
    (["--trips", "5000", "--public-trips", "999"], "--public-trips must be at least 1000"),
])
def test_cli_bad_trip_count_exits_2(argv, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--out", str(tmp_path / "x")])
    assert exc.value.code == 2
    captured = capsys.readouterr()
    assert message in captured.err
    assert "Traceback" not in captured.err
    assert not (tmp_path / "x").exists()


def test_cli_unwritable_output_exits_2(tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    with pytest.raises(SystemExit) as exc:
        main(["--trips", "1000", "--out", str(blocker / "sub")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "cannot write to output folder" in err
    assert "Traceback" not in err
