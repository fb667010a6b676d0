"""``dp-arena-prepare chicago`` and ``dataset=chicago_sample``: Chicago taxi exports -> the Sprint 3
schema (dp_arena/data/taxi/chicago.py), hand-computed rows, the 200-trip cap, bad exports, the real
sample (realdata).

Tolerances: (a) every pytest.approx here compares hand-computed arithmetic: its default, 1e-6
relative (and 1e-12 absolute), is far above the rounding of a few operations and far below any
wrong formula.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dp_arena.cli.prepare import main as prepare_main
from dp_arena.data.datasets import load_dataset
from dp_arena.data.taxi.chicago import (
    ChicagoExportError,
    normalise_column_name,
    parse_start_times,
    prepare_trips,
    read_export,
    shift_index,
    week_index,
)
from dp_arena.data.taxi.sprint3 import taxi_schema
from dp_arena.errors import DPArenaError

FIXTURE = Path(__file__).parent / "fixtures" / "chicago_portal_export.csv"
SAMPLE = "chicago-taxi-sample.csv"
COLUMNS = taxi_schema().names


def run_prepare(export: Path, out: Path, capsys: pytest.CaptureFixture) -> tuple[int, str, str]:
    """Exit code, stdout, stderr of ``dp-arena-prepare chicago export out``."""
    try:
        code = prepare_main(["chicago", str(export), str(out)])
    except SystemExit as exc:
        code = int(exc.code)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ----- pure pieces ------------------------------------------------------------------------
def test_portal_names_normalise_to_bigquery_names():
    assert normalise_column_name("Trip Start Timestamp") == "trip_start_timestamp"
    assert normalise_column_name(" Pickup Community Area ") == "pickup_community_area"
    assert normalise_column_name("Taxi ID") == "taxi_id"
    assert normalise_column_name("trip_miles") == "trip_miles"


def test_shift_is_the_eight_hour_block_of_the_week():
    day = np.array([0, 0, 0, 0, 6, 6, 3])
    hour = np.array([0, 7, 8, 16, 15, 23, 12])
    assert shift_index(day, hour).tolist() == [0, 0, 1, 2, 19, 20, 10]


def test_the_three_timestamp_formats_give_the_same_wall_clock():
    portal = parse_start_times(pd.Series(["01/10/2016 11:59:00 PM", "01/11/2016 12:00:00 AM"]))
    iso = parse_start_times(pd.Series(["2016-01-10 23:59:00 UTC", "2016-01-11 00:00:00"]))
    unix = parse_start_times(pd.Series(["1452470340", "1452470400"]))  # 2016-01-10 23:59 / 01-11
    expected = pd.to_datetime(["2016-01-10 23:59:00", "2016-01-11 00:00:00"])
    for parsed in (portal, iso, unix):
        assert list(parsed) == list(expected)
    # Sunday 23:59 and Monday 00:00 are in consecutive Monday-start weeks.
    weeks = week_index(portal)
    assert weeks[1] == weeks[0] + 1
    assert week_index(pd.Series(pd.to_datetime(["2016-01-04 00:00", "2016-01-10 23:59"]))) \
        .tolist() == [weeks[0]] * 2


# ----- the portal fixture, exactly --------------------------------------------------------
#: Hand-computed from tests/fixtures/chicago_portal_export.csv. Taxi-weeks in sorted (taxi,
#: week) order: (3b9d42, week of Jan 4) = 1000000, (7c1e0a, Jan 4) = 1000001,
#: (7c1e0a, Jan 11) = 1000002, (c4a8b0, Jan 4) = 1000003, (c4a8b0, Jan 18) = 1000004,
#: (e05f17, Jan 18) = 1000005. Companies alphabetically: Blue Ribbon 1, Flash Cab 2,
#: Taxi Affiliation Services 3, Yellow Cab 4; empty 0.
EXPECTED_ROWS: dict[str, list[int]] = {
    # trip: taxi_id, shift, company, pickup, dropoff, payment, day, hour, fare, tips, total,
    #       seconds, miles
    # Mon 2016-01-04 07:45, $9.25 / $2.00 / $11.25, 900 s, 2.4 mi, card
    "t01": [1000001, 0, 2, 8, 32, 1, 0, 7, 9, 2, 11, 900, 2],
    # Sun 23:59 (same taxi-week as t01); $12.50 -> 13 and $13.50 -> 14 (half up); "1,080" s
    "t02": [1000001, 20, 2, 6, 8, 0, 6, 23, 13, 0, 14, 1080, 4],
    # Mon 2016-01-11 00:00: the next taxi-week; no dropoff area -> -1; 0.5 mi -> 1
    "t03": [1000002, 0, 2, 32, -1, 0, 0, 0, 6, 0, 6, 420, 1],
    # no pickup area -> -1; Tue 08:00 -> shift 4; Yellow Cab 4
    "t05": [1000000, 4, 4, -1, 8, 0, 1, 8, 5, 0, 5, 300, 1],
    # no trip seconds -> -1, 0 miles stays 0; Fri 02:30 -> shift 12
    "t10": [1000000, 12, 4, 24, 22, 0, 4, 2, 6, 0, 6, -1, 0],
    # pickup area 0 -> -1; Sat 13:00 -> shift 16
    "t11": [1000000, 16, 4, -1, 32, 1, 5, 13, 14, 3, 17, 1200, 4],
    # Mon 07:59 -> shift 0, Mon 08:00 -> shift 1; empty company -> 0
    "t21": [1000005, 0, 0, 8, 8, 0, 0, 7, 8, 0, 8, 660, 2],
    "t22": [1000005, 1, 0, 8, 28, 0, 0, 8, 12, 0, 12, 1200, 3],
    # Unknown payment -> -1, no dropoff -> -1
    "t25": [1000005, 10, 1, 8, -1, -1, 3, 10, 9, 0, 9, 780, 2],
    # "$10,500.00" above the schema's maximum -> 10000 (fare and total)
    "t30": [1000005, 19, 1, 77, 77, 0, 6, 15, 10000, 0, 10000, 300, 0],
}


@pytest.fixture
def fixture_prepared():
    return prepare_trips(read_export(FIXTURE))


def test_portal_fixture_rows_are_prepared_exactly(fixture_prepared):
    trips = fixture_prepared.trips
    trip_ids = pd.read_csv(FIXTURE, dtype=str)["Trip ID"].tolist()
    assert list(trips.columns) == COLUMNS
    assert len(trips) == 30 and fixture_prepared.unit == "user"
    for trip, expected in EXPECTED_ROWS.items():
        got = trips.iloc[trip_ids.index(trip)].tolist()
        assert got == expected, trip
    assert fixture_prepared.companies == {"Blue Ribbon Taxi Association Inc.": 1,
                                          "Flash Cab": 2, "Taxi Affiliation Services": 3,
                                          "Yellow Cab": 4}
    assert trips["taxi_id"].value_counts().sort_index().tolist() == [8, 2, 2, 4, 4, 10]
    assert (trips["shift"] == trips["trip_day_of_week"] * 3 + trips["trip_hour_of_day"] // 8).all()
    assert fixture_prepared.dropped_over_cap == 0
    assert fixture_prepared.notes == (
        "1 fare value(s) above the schema's maximum 10000 set to it",
        "1 trip_total value(s) above the schema's maximum 10000 set to it")


def test_snake_case_export_gives_the_same_table(tmp_path, fixture_prepared):
    raw = pd.read_csv(FIXTURE, dtype=str, keep_default_na=False)
    raw.columns = [normalise_column_name(c) for c in raw.columns]
    raw["trip_start_timestamp"] = pd.to_datetime(
        raw["trip_start_timestamp"], format="%m/%d/%Y %I:%M:%S %p").dt.strftime(
        "%Y-%m-%d %H:%M:%S UTC")
    path = tmp_path / "bigquery.csv"
    raw.to_csv(path, index=False)
    pd.testing.assert_frame_equal(prepare_trips(read_export(path)).trips, fixture_prepared.trips)


def test_cli_round_trips_through_dataset_csv(tmp_path, capsys, fixture_prepared):
    code, out, err = run_prepare(FIXTURE, tmp_path / "out", capsys)
    assert code == 0, err
    assert "30 trips, 6 taxi-weeks: user-level" in out
    assert "dataset=csv" in out
    ds = load_dataset({"name": "csv", "path": str(tmp_path / "out" / "trips.csv"),
                       "schema": str(tmp_path / "out" / "parameters.json"),
                       "holdout_fraction": 0.0})  # every trip: counted below
    assert ds.unit == "user" and ds.id_column == "taxi_id"
    assert ds.max_records_per_individual == 200
    pd.testing.assert_frame_equal(ds.private.astype(np.int64), fixture_prepared.trips)


# ----- the cap ----------------------------------------------------------------------------
def synthetic_export(n_busy: int) -> pd.DataFrame:
    """A portal-style export: one taxi with ``n_busy`` trips in the week of Mon 2016-01-04
    (one every 2 minutes from Monday 00:00, rows shuffled), one taxi with 3 trips."""
    rng = np.random.default_rng(0)
    times = pd.Timestamp("2016-01-04") + pd.to_timedelta(2 * np.arange(n_busy), unit="min")
    times = times.append(pd.DatetimeIndex(["2016-01-05 10:00", "2016-01-06 10:00",
                                           "2016-01-07 10:00"]))
    n = len(times)
    frame = pd.DataFrame({
        "Taxi ID": ["busy-taxi-secret"] * n_busy + ["quiet-taxi"] * 3,
        "Trip Start Timestamp": times.strftime("%m/%d/%Y %I:%M:%S %p"),
        "Trip Seconds": "600", "Trip Miles": "1.5", "Pickup Community Area": "8",
        "Dropoff Community Area": "32", "Fare": "$8.25", "Tips": "$0.00",
        "Trip Total": "$8.25", "Payment Type": "Cash", "Company": "Flash Cab",
    }, index=range(n))
    return frame.iloc[rng.permutation(n)].reset_index(drop=True)


def test_a_taxi_with_5000_trips_in_a_week_is_capped_at_its_earliest_200(tmp_path, capsys):
    export = synthetic_export(5000)
    prepared = prepare_trips(export)
    trips = prepared.trips
    assert len(trips) == 203 and prepared.dropped_over_cap == 4800
    counts = trips["taxi_id"].value_counts()
    assert sorted(counts.tolist()) == [3, 200]
    busy = trips[trips["taxi_id"] == counts.idxmax()]
    # The earliest 200 trips, every 2 minutes from Monday 00:00, end at 06:38.
    assert (busy["trip_day_of_week"] == 0).all() and busy["trip_hour_of_day"].max() == 6
    assert (busy["shift"] == 0).all()
    assert any("dropped 4,800 trips over the cap of 200 trips per taxi-week (from 1 taxi-week"
               in note for note in prepared.notes)

    path = tmp_path / "busy.csv"
    export.to_csv(path, index=False)
    code, out, err = run_prepare(path, tmp_path / "out", capsys)
    assert code == 0, err
    assert "note: dropped 4,800 trips over the cap of 200" in out
    assert "busy-taxi-secret" not in out + err


# ----- bad exports ------------------------------------------------------------------------
def test_missing_columns_are_named_with_what_is_expected(tmp_path, capsys):
    raw = pd.read_csv(FIXTURE, dtype=str, keep_default_na=False)
    path = tmp_path / "missing.csv"
    raw.drop(columns=["Trip Miles", "Fare"]).to_csv(path, index=False)
    code, out, err = run_prepare(path, tmp_path / "out", capsys)
    assert code == 2 and out == ""
    assert err.count("error:") == 1 and "Traceback" not in err
    assert "2 required column(s): ['trip_miles', 'fare']" in err
    assert "'Trip Start Timestamp'" in err and "fix:" in err
    assert not (tmp_path / "out").exists()


def test_unparsable_timestamps_are_counted_never_shown(tmp_path, capsys):
    text = FIXTURE.read_text()
    bad_values = ["2016-13-45 99:00:00", "next tuesday"]
    text = text.replace("01/05/2016 09:30:00 AM", bad_values[0], 1)
    text = text.replace("01/21/2016 09:00:00 PM", bad_values[1], 1)
    path = tmp_path / "bad_timestamps.csv"
    path.write_text(text)
    code, out, err = run_prepare(path, tmp_path / "out", capsys)
    assert code == 2 and out == ""
    assert err.count("error:") == 1 and "Traceback" not in err
    assert "2 of 30 trip start timestamps are missing or unparsable" in err
    for private in (*bad_values, "t06", "t19", "3b9d42", "c4a8b0", "row", "line"):
        assert private not in err
    with pytest.raises(ChicagoExportError):
        prepare_trips(read_export(path))


@pytest.mark.parametrize("content, message", [
    ("", "is empty"),
    (FIXTURE.read_text().splitlines()[0] + "\n", "no trips"),
])
def test_empty_exports_get_one_message(tmp_path, capsys, content, message):
    path = tmp_path / "empty.csv"
    path.write_text(content)
    code, _, err = run_prepare(path, tmp_path / "out", capsys)
    assert code == 2 and err.count("error:") == 1 and message in err


# ----- the real sample (snake_case, no taxi id) -------------------------------------------
@pytest.mark.realdata
def test_shared_sample_prepares_record_level_and_loads_through_dataset_csv(
        shared_data, tmp_path, capsys):
    path = shared_data / SAMPLE
    if not path.is_file():
        pytest.skip(f"{SAMPLE} not in the shared data folder")
    raw = pd.read_csv(path)
    code, out, err = run_prepare(path, tmp_path / "out", capsys)
    assert code == 0, err
    assert f"prepared {len(raw):,} trips: record-level" in out and "no taxi id" in out
    ds = load_dataset({"name": "csv", "path": str(tmp_path / "out" / "trips.csv"),
                       "schema": str(tmp_path / "out" / "parameters.json"),
                       "holdout_fraction": 0.0})  # every trip: counted below
    assert len(ds.private) == len(raw) == 15_002
    assert ds.unit == "record" and ds.id_column is None
    assert "taxi_id" not in ds.private.columns
    ds.schema.validate(ds.private)
    # Independent checks against the sample's own columns (1 = Sunday there, 0 = Monday here).
    assert (ds.private["trip_day_of_week"].to_numpy() == (raw["trip_start_day"] + 5) % 7).all()
    assert (ds.private["trip_hour_of_day"].to_numpy() == raw["trip_start_hour"]).all()
    assert ((ds.private["pickup_community_area"] == -1).sum()
            == raw["pickup_community_area"].isna().sum())
    assert (ds.private["trip_total"] == -1).all()


@pytest.mark.realdata
def test_chicago_sample_dataset(shared_data):
    if not (shared_data / SAMPLE).is_file():
        pytest.skip(f"{SAMPLE} not in the shared data folder")
    ds = load_dataset({"name": "chicago_sample", "data_dir": str(shared_data)})
    assert ds.name == "chicago_sample" and ds.unit == "record" and ds.public is None
    assert len(ds.private) == 15_002 and list(ds.private.columns) == COLUMNS[1:]
    ds.schema.validate(ds.private)
    split = load_dataset({"name": "chicago_sample", "public_fraction": 0.25, "split_seed": 3})
    assert len(split.public) == round(0.25 * 15_002)
    assert len(split.private) + len(split.public) == 15_002


def test_chicago_sample_without_the_file_says_where_it_looked(tmp_path):
    with pytest.raises(DPArenaError, match="chicago-taxi-sample.csv not found"):
        load_dataset({"name": "chicago_sample", "data_dir": str(tmp_path)})
    with pytest.raises(DPArenaError, match="shared data folder not found"):
        load_dataset({"name": "chicago_sample", "data_dir": str(tmp_path / "absent")})


def test_challenge_metric_scores_record_level_trips_without_hoc(fixture_prepared):
    from dp_arena.data.datasets import Dataset
    from dp_arena.data.taxi.chicago import prepared_schema
    from dp_arena.metrics.challenge import ChallengeMetric

    trips = fixture_prepared.trips.drop(columns="taxi_id")
    data = Dataset("trips", prepared_schema(record_level=True), trips, unit="record")
    metric = ChallengeMetric()
    assert metric.applies_to(data)
    same = metric.score(data, trips.copy()).scores
    assert same == {"k_marginal": 1.0, "graph_edge": 1.0, "overall": 1000.0}
    moved = trips.assign(dropoff_community_area=8)
    real = trips.groupby(["pickup_community_area", "dropoff_community_area"]).size() / len(trips)
    fake = moved.groupby(["pickup_community_area", "dropoff_community_area"]).size() / len(trips)
    l1 = real.sub(fake, fill_value=0).abs().sum()
    scores = metric.score(data, moved).scores
    assert scores["graph_edge"] == pytest.approx((2 - l1) / 2)
    assert scores["k_marginal"] < 1 and "hoc" not in scores
    assert scores["overall"] == pytest.approx(500 * (scores["k_marginal"] + scores["graph_edge"]))


# ----- prepared files are the owner's only -------------------------------------------------
@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_prepared_private_files_are_owner_only(tmp_path):
    from dp_arena.cli.prepare import main as prepare_main

    old = os.umask(0o022)
    try:
        export = Path(__file__).parent / "fixtures" / "chicago_portal_export.csv"
        assert prepare_main(["chicago", str(export), str(tmp_path / "out")]) == 0
    finally:
        os.umask(old)
    for name in ("trips.csv", "parameters.json", "companies.json"):
        assert stat.S_IMODE((tmp_path / "out" / name).stat().st_mode) == 0o600, name
