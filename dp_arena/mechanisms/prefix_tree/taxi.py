"""Taxi decoding (post-processing plus public data): released pickup sequences -> synthetic taxis,
with trip counts, further pickups and shifts from public chains and the rest from public
conditionals."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd

from dp_arena.data.datasets import Dataset
from dp_arena.data.taxi.sequences import (
    DAY_COLUMN,
    DROPOFF_COLUMN,
    FILL,
    HOUR_COLUMN,
    PICKUP_COLUMN,
    trip_order,
)
from dp_arena.errors import ConfigError
from dp_arena.mechanisms.conditional_fill import (
    FillStep,
    conform_to_schema,
    enforce_shift_times,
    fit_conditionals,
    sample_conditionals,
    sprint3_fill_steps,
)
from dp_arena.mechanisms.prefix_tree.release import Release

SHIFT_COLUMN = "shift"
COMPANY_COLUMN = "company_id"


@dataclass(frozen=True)
class PublicTaxiModel:
    """What the taxi output learns from public data: trip counts per taxi, the first-trip and
    next-trip chains, and the conditionals of the remaining columns."""

    trips_per_taxi: np.ndarray  # sorted
    first_location: Any  # ConditionalModel: location of first trips (marginal)
    next_location: Any  # ConditionalModel: location | first location, previous location
    first_shift: Any  # ConditionalModel: shift | location (first trips)
    next_shift: Any  # ConditionalModel: shift | previous shift, location
    fill: Any  # ConditionalModel: the other location, company, then the Sprint 3 chain


def public_trip_order(public: pd.DataFrame, id_column: str) -> pd.DataFrame:
    """Public trips in the shared view's time order
    (:func:`dp_arena.data.taxi.sequences.sequences_from_trips`:
    by taxi, day, hour, then row order), with each trip's position in its taxi's sequence."""
    ordered = public.iloc[trip_order(public, id_column)].reset_index(drop=True)
    ordered["_position"] = ordered.groupby(id_column, sort=False).cumcount().to_numpy()
    return ordered


def fit_public_taxi_model(public: pd.DataFrame, id_column: str, location: str,
                          other_location: str) -> PublicTaxiModel:
    """Public data only (no privacy cost): see :class:`PublicTaxiModel`."""
    ordered = public_trip_order(public, id_column)
    ids = ordered[id_column].to_numpy()
    first_row = np.r_[True, ids[1:] != ids[:-1]]
    later = np.flatnonzero(~first_row)
    if len(later) == 0:  # every public taxi has one trip: each trip follows itself
        later = np.arange(len(ordered))
    before = np.where(first_row[later], later, later - 1)
    loc = ordered[location].to_numpy()
    shift = ordered[SHIFT_COLUMN].to_numpy()
    first_loc = loc[np.maximum.accumulate(np.where(first_row, np.arange(len(ids)), 0))]
    transitions = pd.DataFrame({
        f"first_{location}": first_loc[later], f"prev_{location}": loc[before],
        location: loc[later], f"prev_{SHIFT_COLUMN}": shift[before], SHIFT_COLUMN: shift[later],
    })
    firsts = ordered[first_row]
    next_location = fit_conditionals(transitions, [FillStep(
        location, (f"first_{location}", f"prev_{location}"), fallbacks=((f"prev_{location}",),))])
    first_location = fit_conditionals(firsts, [FillStep(location)])
    first_shift = fit_conditionals(firsts, [FillStep(SHIFT_COLUMN, (location,))])
    next_shift = fit_conditionals(transitions, [FillStep(
        SHIFT_COLUMN, (f"prev_{SHIFT_COLUMN}", location),
        fallbacks=((f"prev_{SHIFT_COLUMN}",), (location,)))])
    loc_given = (SHIFT_COLUMN, location)
    steps = [FillStep(other_location, loc_given, fallbacks=((location,),)),
             FillStep(COMPANY_COLUMN, loc_given, fallbacks=((location,),)),
             *sprint3_fill_steps()]
    sizes = np.sort(public.groupby(id_column).size().to_numpy())
    return PublicTaxiModel(sizes, first_location, next_location, first_shift, next_shift,
                           fit_conditionals(public, steps))


def taxi_trip_counts(release: Release, h: int, public_sizes: np.ndarray,
                     rng: np.random.Generator, cap: int) -> np.ndarray:
    """Trips per released taxi: its sequence length if the sequence ended; else a public
    taxi's trip count drawn uniformly among those with at least ``L + 1`` trips (``h`` at
    depth ``h``), at least that bound when no public taxi has so many; at most ``cap``."""
    lengths = release.lengths
    need = np.where(release.is_open, np.where(lengths < h, lengths + 1, lengths), lengths)
    first = np.searchsorted(public_sizes, need, side="left")
    available = len(public_sizes) - first
    pick = first + np.floor(rng.random(len(need)) * np.maximum(available, 1)).astype(np.int64)
    drawn = np.where(available > 0, public_sizes[np.minimum(pick, len(public_sizes) - 1)], need)
    return np.minimum(np.where(release.is_open, np.maximum(drawn, need), lengths), cap)


def sample_chain(model: Any, frame: pd.DataFrame, rng: np.random.Generator) -> np.ndarray:
    """One draw of ``model``'s single step for each row of ``frame``."""
    column = model.steps[0].column
    return sample_conditionals(model, frame, rng)[column].to_numpy()


def taxi_locations_and_shifts(release: Release, trips: np.ndarray, labels: np.ndarray,
                              model: PublicTaxiModel, location: str,
                              rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Flat (taxi-major, time-ordered) location labels and shifts of every trip: the released
    prefix, then the public location chain; shifts from the public shift chain, then sorted
    within each taxi (so time order and sequence order agree)."""
    n_taxis, total = len(trips), int(trips.sum())
    start = np.cumsum(trips) - trips
    loc = np.empty(total, dtype=labels.dtype)
    shift = np.empty(total, dtype=np.int64)
    taxi_of = np.repeat(np.arange(n_taxis), trips)
    position = np.arange(total) - start[taxi_of]
    from_tree = position < release.lengths[taxi_of]
    loc[from_tree] = labels[release.codes[taxi_of[from_tree], position[from_tree]]]
    prev_loc, prev_shift = f"prev_{location}", f"prev_{SHIFT_COLUMN}"
    first_loc = f"first_{location}"
    for t in range(int(trips.max(initial=0))):
        taxis = np.flatnonzero(trips > t)
        rows = start[taxis] + t
        chain = np.flatnonzero(~from_tree[rows])
        if len(chain) and t == 0:  # no released location at all (an empty release)
            loc[rows[chain]] = sample_chain(model.first_location,
                                            pd.DataFrame(index=range(len(chain))), rng)
        elif len(chain):
            loc[rows[chain]] = sample_chain(model.next_location, pd.DataFrame(
                {first_loc: loc[start[taxis[chain]]], prev_loc: loc[rows[chain] - 1]}), rng)
        if t == 0:
            shift[rows] = sample_chain(model.first_shift, pd.DataFrame({location: loc[rows]}), rng)
        else:
            shift[rows] = sample_chain(model.next_shift, pd.DataFrame(
                {prev_shift: shift[rows - 1], location: loc[rows]}), rng)
    order = np.lexsort((shift, taxi_of))  # sorted shifts, assigned in sequence order
    shift = shift[order]
    return loc, shift


def taxi_frame(release: Release, alphabet: Sequence[Any], data: Dataset, location: str,
               h: int, rng: np.random.Generator) -> pd.DataFrame:
    """Step 4 for taxi data: one synthetic taxi per released sequence, in the schema."""
    schema, public, id_column = data.schema, data.public, data.id_column
    assert public is not None and id_column is not None
    loc_col = PICKUP_COLUMN if location == "pickup" else DROPOFF_COLUMN
    other_col = DROPOFF_COLUMN if location == "pickup" else PICKUP_COLUMN
    model = fit_public_taxi_model(public, id_column, loc_col, other_col)
    cap = int(data.max_records_per_individual or model.trips_per_taxi.max(initial=1))
    trips = taxi_trip_counts(release, h, model.trips_per_taxi, rng, cap)
    keep = trips > 0
    release = Release(release.codes[keep], release.lengths[keep], release.is_open[keep])
    trips = trips[keep]
    if len(trips) == 0:  # nothing released: one public-chain taxi, so the table is not empty
        release = Release(np.full((1, h), FILL, dtype=np.int32), np.zeros(1, dtype=np.int64),
                          np.ones(1, dtype=bool))
        trips = np.ones(1, dtype=np.int64)
    loc, shift = taxi_locations_and_shifts(release, trips, np.asarray(alphabet), model,
                                           loc_col, rng)
    id_col = schema[id_column]
    span = int(id_col.max) - int(id_col.min) + 1  # type: ignore[arg-type]
    if len(trips) > span:
        raise ConfigError(f"{len(trips)} synthetic taxis do not fit the id range",
                          "lower the budget or widen the id column")
    first_id = int(id_col.min)  # type: ignore[arg-type]
    ids = first_id + rng.choice(span, size=len(trips), replace=False)
    frame = pd.DataFrame({id_column: np.repeat(ids, trips), loc_col: loc, SHIFT_COLUMN: shift})
    frame = sample_conditionals(model.fill, frame, rng)
    frame = enforce_shift_times(frame, rng)
    frame = order_times_within_taxis(frame, id_column)
    frame = conform_to_schema(frame, schema)[schema.names]
    # shuffle whole taxis, keeping each taxi's trips contiguous and in sequence order
    block = np.repeat(rng.permutation(len(trips)), trips)
    return frame.iloc[np.argsort(block, kind="stable")].reset_index(drop=True)


def order_times_within_taxis(frame: pd.DataFrame, id_column: str) -> pd.DataFrame:
    """Give each taxi's trips (contiguous rows) its sorted (day, hour) values in row order.
    Shifts are already non-decreasing within a taxi, so only hours inside one shift move and
    ``shift = day * 3 + hour // 8`` still holds; the shared view then reads the trips in row
    order (it sorts by day, hour, then row)."""
    time_key = frame[DAY_COLUMN].to_numpy().astype(np.int64) * 24 + \
        frame[HOUR_COLUMN].to_numpy().astype(np.int64)
    # rows are grouped by taxi, so the i-th row of the (run, time)-sorted order is in the same
    # taxi as row i, at the same rank
    sorted_time = time_key[np.lexsort((time_key, taxi_runs(frame[id_column].to_numpy())))]
    frame = frame.copy()
    frame[HOUR_COLUMN] = sorted_time % 24
    frame[DAY_COLUMN] = sorted_time // 24
    return frame


def taxi_runs(ids: np.ndarray) -> np.ndarray:
    """Index of the run of equal consecutive ids each row belongs to."""
    return np.r_[0, np.cumsum(ids[1:] != ids[:-1])] if len(ids) else np.zeros(0, dtype=np.int64)


# ===== the mechanism ======================================================================
