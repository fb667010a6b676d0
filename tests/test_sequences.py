"""The shared sequence view (dp_arena.data.taxi.sequences): MSNBC-style columns and taxi trips."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dp_arena.data.taxi.sequences as seqmod
from dp_arena.data.datasets import Dataset
from dp_arena.data.schema import Schema
from dp_arena.data.taxi.sequences import (
    FILL,
    SequenceSpec,
    detect_sequence_kind,
    has_sequence_view,
    sequence_view,
    sequences_from_columns,
    sequences_from_lists,
    sequences_from_trips,
    site_columns,
    visit_bitmask,
    visited_matrix,
)
from dp_arena.data.taxi.sprint3 import AREA_VALUES, taxi_schema
from dp_arena.errors import ConfigError, DPArenaError
from tests.support.sequences import PAPER_EXAMPLE, msnbc_style_frame, taxi_frame


def test_site_columns_are_ordered_by_number() -> None:
    cols = ["site_1", "site_10", "site_2", "other", "site_0"]
    assert site_columns(cols) == ["site_0", "site_1", "site_2", "site_10"]


def test_paper_example_from_columns() -> None:
    view = sequences_from_columns(msnbc_style_frame(PAPER_EXAMPLE),
                                  site_columns([f"site_{j}" for j in range(5)]))
    assert view.alphabet == [1, 2, 3, 4]
    assert view.to_lists() == PAPER_EXAMPLE
    assert view.lengths.tolist() == [3, 2, 3, 3, 3, 2, 4, 2]
    assert view.codes.shape == (8, 4)  # trimmed to the longest sequence
    assert view.codes[1].tolist() == [0, 1, FILL, FILL]
    assert view.ids.tolist() == list(range(8))


def test_end_value_ends_the_sequence_and_empty_rows() -> None:
    frame = pd.DataFrame({"site_0": [2, 0, 5], "site_1": [0, 3, 5], "site_2": [4, 0, 5]})
    view = sequences_from_columns(frame, ["site_0", "site_1", "site_2"], alphabet=[2, 3, 4, 5])
    assert view.to_lists() == [[2], [], [5, 5, 5]]
    assert view.lengths.tolist() == [1, 0, 3]


def test_value_outside_alphabet_is_an_error() -> None:
    frame = pd.DataFrame({"site_0": [1, 9]})
    with pytest.raises(DPArenaError, match="outside the location alphabet"):
        sequences_from_columns(frame, ["site_0"], alphabet=[1, 2, 3])


def test_sequence_view_of_a_dataset_uses_the_schema_domain() -> None:
    frame = msnbc_style_frame(PAPER_EXAMPLE)
    schema = Schema.from_domain({c: 6 for c in frame.columns})  # values 0..5; 5 never used
    data = Dataset("toy", schema, frame)
    view = sequence_view(data)
    assert view.alphabet == [1, 2, 3, 4, 5]
    assert view.to_lists() == PAPER_EXAMPLE
    assert sequence_view(frame.iloc[:2], schema=schema).alphabet == [1, 2, 3, 4, 5]


def test_taxi_sequences_ordered_by_day_hour_then_row_order() -> None:
    trips = [  # (taxi, day, hour, pickup, dropoff)
        (7, 1, 5, 8, 32),
        (3, 3, 0, -1, 8),
        (7, 0, 23, 32, 76),
        (3, 2, 10, 56, 32),
        (7, 1, 5, 76, 8),  # same day and hour as the first row: row order decides
        (7, 1, 4, 28, 28),
    ]
    frame = taxi_frame(trips)
    frame.index = [50, 10, 40, 20, 0, 30]  # labels must not matter, only positions
    view = sequences_from_trips(frame, schema=taxi_schema())
    assert view.ids.tolist() == [3, 7]
    assert view.to_lists() == [[56, -1], [32, 28, 8, 76]]
    assert view.alphabet == list(AREA_VALUES)
    assert view.codes[0].tolist() == [56, 0, FILL, FILL]  # code of area a is a; -1 has code 0
    dropoff = sequences_from_trips(frame, location="dropoff", schema=taxi_schema())
    assert dropoff.to_lists() == [[32, 8], [76, 28, 32, 8]]
    pair = sequences_from_trips(frame, location="pair", schema=taxi_schema())
    assert pair.n_locations == 78 * 78
    assert pair.to_lists() == [[(56, 32), (-1, 8)], [(32, 76), (28, 28), (8, 32), (76, 8)]]


def test_taxi_view_through_sequence_view_and_spec() -> None:
    frame = taxi_frame([(1, 0, 0, 8, 8), (1, 0, 1, 32, 8)])
    data = Dataset("taxi", taxi_schema(), frame, unit="user", id_column="taxi_id")
    assert sequence_view(data).to_lists() == [[8, 32]]
    assert sequence_view(data, {"location": "dropoff"}).to_lists() == [[8, 8]]
    with pytest.raises(ConfigError, match="location"):
        sequence_view(data, {"location": "both"})
    with pytest.raises(ConfigError, match="unknown setting"):
        sequence_view(data, {"locations": "pickup"})


def test_detection_of_sequence_data() -> None:
    assert detect_sequence_kind(taxi_schema().names) == "trips"
    assert detect_sequence_kind(["site_0", "site_1"]) == "columns"
    assert detect_sequence_kind(["age", "sex"]) is None
    adult_like = Schema.from_domain({"age": 5, "sex": 2})
    assert not has_sequence_view(adult_like)
    assert has_sequence_view(taxi_schema())
    assert not has_sequence_view(taxi_schema(), SequenceSpec(kind="columns"))
    with pytest.raises(ConfigError, match="no sequence view"):
        sequence_view(pd.DataFrame({"age": [1, 2]}))


def test_visit_bitmask_of_paper_example() -> None:
    view = sequences_from_lists([[f"L{x}" for x in s] for s in PAPER_EXAMPLE])
    bits = visit_bitmask(view)
    assert bits.shape == (8, 1) and bits.dtype == np.uint64
    # L1 -> bit 0, L2 -> bit 1, L3 -> bit 2, L4 -> bit 3
    assert bits[:, 0].tolist() == [0b0111, 0b0011, 0b0111, 0b1011, 0b0111, 0b0110, 0b1011,
                                   0b0101]


def test_visit_bitmask_with_many_locations() -> None:
    view = sequences_from_lists([[0, 63, 64, 200], [199]], alphabet=list(range(201)))
    bits = visit_bitmask(view)
    assert bits.shape == (2, 4)
    assert bits[0].tolist() == [1 | (1 << 63), 1, 0, 1 << 8]
    assert bits[1].tolist() == [0, 0, 0, 1 << 7]
    assert visited_matrix(view).sum(axis=1).tolist() == [4, 1]


def test_padded_matrix_size_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(seqmod, "MAX_PADDED_CELLS", 5)
    frame = taxi_frame([(1, 0, h, 8, 8) for h in range(3)] + [(2, 0, 0, 8, 8)])
    with pytest.raises(DPArenaError, match="bound each person's records"):
        sequences_from_trips(frame)
