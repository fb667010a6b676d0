"""The sequence papers' examples and the frames that hold sequences (MSNBC-style, taxi trips)."""

from __future__ import annotations

import pandas as pd

from dp_arena.data.datasets import Dataset
from dp_arena.data.schema import Schema
from dp_arena.data.taxi.sprint3 import taxi_schema

#: Chen et al. (KDD 2012), the example database: 8 sequences over L1..L4.
PAPER_EXAMPLE = [[1, 2, 3], [1, 2], [3, 2, 1], [1, 2, 4], [1, 2, 3], [3, 2], [1, 2, 4, 1], [3, 1]]


def msnbc_style_frame(sequences: list[list[int]], width: int = 5) -> pd.DataFrame:
    """Sequences as site_0..site_{width-1} columns (widened to fit the longest), 0 = ended
    (columns deliberately out of numeric order, as a domain.json with sorted keys gives them)."""
    width = max([width, *(len(s) for s in sequences)])
    rows = [list(s) + [0] * (width - len(s)) for s in sequences]
    frame = pd.DataFrame(rows, columns=[f"site_{j}" for j in range(width)])
    return frame[sorted(frame.columns)]


def taxi_frame(trips: list[tuple[int, int, int, int, int]]) -> pd.DataFrame:
    """A taxi-schema frame from (taxi_id, day, hour, pickup, dropoff) tuples; other columns
    get valid constants."""
    rows = []
    for taxi, day, hour, pickup, dropoff in trips:
        rows.append({"taxi_id": taxi, "shift": 0, "company_id": 1,
                     "pickup_community_area": pickup, "dropoff_community_area": dropoff,
                     "payment_type": 1, "trip_day_of_week": day, "trip_hour_of_day": hour,
                     "fare": 10, "tips": 0, "trip_total": 10, "trip_seconds": 600,
                     "trip_miles": 2})
    return pd.DataFrame(rows)[taxi_schema().names]


#: The paper example with three sequences changed: L1>L2 -> L1>L4, L3>L2 -> L3, L3>L1 -> L1>L2.
PERTURBED = [[1, 2, 3], [1, 4], [3, 2, 1], [1, 2, 4], [1, 2, 3], [3], [1, 2, 4, 1], [1, 2]]


def toy_dataset(sequences: list[list[int]] = PAPER_EXAMPLE,
                public: list[list[int]] | None = None) -> Dataset:
    frame = msnbc_style_frame(sequences)
    schema = Schema.from_domain({c: 5 for c in frame.columns})  # locations 1..4, 0 = end
    pub = None if public is None else msnbc_style_frame(public)
    return Dataset("toy", schema, frame, pub)
