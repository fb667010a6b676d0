"""The NIST 2020 Differential Privacy Temporal Map Challenge, Sprint 3 (Chicago taxi trips):
the schema, the privacy settings and the scoring bins, defined here as the project's own facts.

A test checks that this agrees with the challenge's published ``parameters.json``.
"""

from __future__ import annotations

import numpy as np

from dp_arena.data.schema import Column, RunSpec, Schema

#: Chicago's 77 community areas, numbered 1..77 (the city's official numbering).
COMMUNITY_AREAS: tuple[str, ...] = (
    "Rogers Park", "West Ridge", "Uptown", "Lincoln Square", "North Center", "Lake View",
    "Lincoln Park", "Near North Side", "Edison Park", "Norwood Park", "Jefferson Park",
    "Forest Glen", "North Park", "Albany Park", "Portage Park", "Irving Park", "Dunning",
    "Montclare", "Belmont Cragin", "Hermosa", "Avondale", "Logan Square", "Humboldt Park",
    "West Town", "Austin", "West Garfield Park", "East Garfield Park", "Near West Side",
    "North Lawndale", "South Lawndale", "Lower West Side", "(The) Loop[11]", "Near South Side",
    "Armour Square", "Douglas", "Oakland", "Fuller Park", "Grand Boulevard", "Kenwood",
    "Washington Park", "Hyde Park", "Woodlawn", "South Shore", "Chatham", "Avalon Park",
    "South Chicago", "Burnside", "Calumet Heights", "Roseland", "Pullman", "South Deering",
    "East Side", "West Pullman", "Riverdale", "Hegewisch", "Garfield Ridge", "Archer Heights",
    "Brighton Park", "McKinley Park", "Bridgeport", "New City", "West Elsdon", "Gage Park",
    "Clearing", "West Lawn", "Chicago Lawn", "West Englewood", "Englewood",
    "Greater Grand Crossing", "Ashburn", "Auburn Gresham", "Beverly Hills", "Washington Heights",
    "Mount Greenwood", "Morgan Park", "O'Hare", "Edgewater",
)
AREA_VALUES: tuple[int, ...] = (-1, *range(1, 78))
PAYMENT_VALUES: tuple[int, ...] = (-1, 0, 1, 2, 3, 5, 6, 7, 8)
PAYMENT_NAMES: tuple[str, ...] = ("Unknown", "Cash", "Credit Card", "Mobile", "Prcard",
                                  "No Charge", "Dispute", "Prepaid", "Pcard")

#: Left-closed scoring bins of the challenge: (-inf, 0, 10, ..., 90, +inf) -> 11 bins.
MONEY_MILES_CUTS: tuple[float, ...] = tuple(float(x) for x in range(0, 100, 10))
#: trip_seconds: (-inf, 0, 200, ..., 1800, +inf) -> 11 bins.
SECONDS_CUTS: tuple[float, ...] = tuple(float(x) for x in range(0, 2000, 200))

NUMERIC_MAX = {"fare": 10000, "tips": 800, "trip_total": 10000, "trip_seconds": 88000,
               "trip_miles": 1900}
NUMERIC_DTYPE = {"fare": "int16", "tips": "int16", "trip_total": "int16",
                 "trip_seconds": "int32", "trip_miles": "int16"}

EPSILONS: tuple[float, ...] = (1.0, 10.0)
DELTA = 2.5e-5  # = 1 / 200**2
MAX_RECORDS = 4_000_000
#: The challenge capped each taxi_id (a taxi-week) at 200 trips during data preparation.
MAX_TRIPS_PER_TAXI = 200


def taxi_schema(max_records: int = MAX_RECORDS,
                max_records_per_individual: int = MAX_TRIPS_PER_TAXI) -> Schema:
    """The Sprint 3 schema (columns in the challenge's order) and its two runs."""
    cols = [
        Column("taxi_id", "id", dtype="int64", min=1_000_000, max=9_999_999),
        Column("shift", "categorical", dtype="uint8", values=tuple(range(21))),
        Column("company_id", "categorical", dtype="int8", values=tuple(range(101))),
        Column("pickup_community_area", "categorical", dtype="int8", values=AREA_VALUES,
               names=("Unknown", *COMMUNITY_AREAS)),
        Column("dropoff_community_area", "categorical", dtype="int8", values=AREA_VALUES,
               names=("Unknown", *COMMUNITY_AREAS)),
        Column("payment_type", "categorical", dtype="int8", values=PAYMENT_VALUES,
               names=PAYMENT_NAMES),
        Column("trip_day_of_week", "categorical", dtype="int8", values=tuple(range(7))),
        Column("trip_hour_of_day", "categorical", dtype="int8", values=tuple(range(24))),
    ]
    for name, hi in NUMERIC_MAX.items():
        cuts = SECONDS_CUTS if name == "trip_seconds" else MONEY_MILES_CUTS
        cols.append(Column(name, "numeric", dtype=NUMERIC_DTYPE[name], min=-1, max=hi, bins=cuts))
    runs = tuple(RunSpec(e, DELTA, max_records, max_records_per_individual) for e in EPSILONS)
    return Schema(tuple(cols), runs)


def challenge_bin(values: np.ndarray, column: str) -> np.ndarray:
    """Challenge bin index 0..10 of a numeric taxi column (left-closed bins)."""
    cuts = SECONDS_CUTS if column == "trip_seconds" else MONEY_MILES_CUTS
    return np.searchsorted(np.asarray(cuts), np.asarray(values, dtype=float), side="right")
