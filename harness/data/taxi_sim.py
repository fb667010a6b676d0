"""Simulated Chicago taxi trips in the NIST Sprint 3 schema (the embedded ``taxi_sim`` data).

The model
---------
A *taxi* is a taxi-week (the challenge's ``taxi_id``). Each taxi belongs to one of four
behavioural **archetypes** (:data:`ARCHETYPES`):

- ``airport``: airport runners shuttling between O'Hare (76) / Midway (56) and the Loop (32) /
  Near North Side (8); early-morning shifts, few long trips, mostly card payments.
- ``downtown``: Loop and downtown work (8, 32, 28 Near West, 33, 6, 7, 24); day shifts, many
  short trips, weekdays.
- ``neighbourhood``: a taxi based in an outer community area (its *home area*), short trips
  around it; more cash.
- ``night``: night shift (about 20:00 to 04:59), nightlife pickups (8, 6, 7, 24, 22, ...) to
  residential areas, weekend heavy.

Per taxi (drawn once, vectorised over taxis):

- archetype ~ the year's archetype mix (:attr:`YearParams.archetype_weights`);
- number of trips ~ ``ceil(LogNormal(log(median * trips_scale), trips_sigma))`` clipped to
  ``[1, MAX_TRIPS_PER_TAXI]`` (200): a heavy tail of a few very busy taxis; taxis are drawn
  until the trip total reaches ``n_trips`` and the last taxi is cut so the total is exact;
- a *home company* (0..100) it drives for on :data:`HOME_COMPANY_SHARE` of its trips; company
  popularity is a heavy-tailed power law over a fixed ranking of the 101 ids, some ids unused,
  tilted per archetype (each archetype favours a different set of companies) and per year;
- a shift: start hour and length from the archetype's profile; and 3..6 working days chosen
  without replacement with archetype day-of-week weights (Efraimidis-Spirakis keys);
- a home area (used by ``neighbourhood`` taxis) and a cash propensity (a normal random effect
  on the log-odds of paying cash).

Per trip:

- ``trip_hour_of_day`` = (shift start + uniform offset within the shift) mod 24; the trip's
  ``trip_day_of_week`` (0 = Monday .. 6 = Sunday) is one of the taxi's working days, plus one
  when the shift has run past midnight;
- ``shift`` is the challenge's 8-hour block index within the week:
  ``shift = trip_day_of_week * 3 + trip_hour_of_day // 8`` (0..20);
- ``company_id`` = home company, else a draw from the year's company popularity;
- ``pickup_community_area`` from the archetype's pickup distribution (for ``neighbourhood``
  taxis: a gravity distribution around the home area), ``dropoff_community_area`` from the
  archetype's pickup->dropoff matrix (airport shuttles, gravity ``attraction ** a *
  exp(-distance / scale)`` with the downtown areas most attractive); -1 (unknown, e.g. outside
  the city) for a small share (:attr:`Archetype.unknown_pickup`, ``unknown_dropoff``);
- ``trip_miles``: each area has a rough 2-D position in miles (:data:`AREA_XY`, the Loop at the
  origin, O'Hare ~17 miles north-west, Midway ~10 miles south-west); miles = road factor *
  straight-line distance * log-normal noise; within one area a Gamma(2, 0.45) distance; to or
  from an unknown area 5 + Gamma(2, 4) miles;
- ``trip_seconds`` = 90 s + miles / speed * log-normal noise, speed from the hour of day (rush
  hours 7-9 and 16-18 slowest) and faster for long (expressway) trips;
- ``fare`` = 3.25 + 2.25 per mile + 0.25 per 36 s of *slow* time (time beyond what the
  distance takes at 20 mph; the meter charges time when the cab crawls), whole dollars;
- ``payment_type``: cash (0) with a per-taxi probability around the year's cash share scaled by
  the archetype; otherwise the year's non-cash mix (1 Credit Card, 2 Mobile, 3 Prcard,
  5 No Charge, 6 Dispute, 7 Prepaid, 8 Pcard, -1 Unknown);
- ``tips``: tipped with :data:`TIP_PROBABILITY` by payment type (about 80% of credit-card and
  mobile trips, 3% of cash trips: cash tips are rarely recorded), 15-30% of the fare;
- ``trip_total`` = fare + tips + extras (random extras, a $4 airport pickup surcharge, rare
  tolls), so ``trip_total >= fare + tips`` on every row;
- about 0.4% of ``trip_seconds`` and of ``trip_miles`` are -1 (unknown); fare, tips and total
  are always known. Every value is an integer clipped to the schema's maximum.

Rows are shuffled (they are not grouped by taxi).

Years
-----
The ``public`` and ``private`` years run the same code with :data:`YEAR_PARAMS`: the private
year has fewer trips per taxi (``trips_scale`` 0.65), slightly more neighbourhood and night
taxis, a different company mix (some companies grow or shrink, a few exit and a few new ones
enter) and more card/mobile payments. Taxi ids (7 digits) of the two years never overlap:
public taxi-weeks use ``[1_000_000, 5_499_999]`` and private ones ``[5_500_000, 9_999_999]``
(a taxi-week cannot be in two years).

Randomness: :func:`simulate_trips` draws only from the ``rng`` it is given;
:func:`simulate_years` spawns two independent child seeds of ``SeedSequence(seed)`` (one per
year), so the private year does not depend on the public size and vice versa. The city's
structure (area positions, company ranking) is fixed, not random.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from harness.errors import ConfigError
from harness.data.sprint3 import MAX_TRIPS_PER_TAXI, NUMERIC_MAX, taxi_schema

Year = Literal["public", "private"]
YEARS: tuple[str, ...] = ("public", "private")

# ----- geography --------------------------------------------------------------------------
O_HARE, MIDWAY, LOOP, NEAR_NORTH, NEAR_WEST = 76, 56, 32, 8, 28
AIRPORTS: tuple[int, ...] = (O_HARE, MIDWAY)
DOWNTOWN: tuple[int, ...] = (NEAR_NORTH, LOOP, NEAR_WEST, 33, 6, 7, 24)
N_AREA_CODES = 78  # index 0 = unknown (-1), index k = community area k

#: Rough centroid of each community area in miles: x east, y north, the Loop at the origin.
AREA_XY: dict[int, tuple[float, float]] = {
    1: (-1.0, 9.5), 2: (-2.8, 9.0), 3: (-0.8, 6.8), 4: (-2.5, 6.8), 5: (-2.5, 5.0),
    6: (-0.8, 4.8), 7: (-0.8, 2.8), 8: (0.0, 1.2), 9: (-10.0, 10.0), 10: (-8.8, 8.2),
    11: (-7.0, 7.5), 12: (-6.0, 8.5), 13: (-4.0, 8.5), 14: (-4.2, 7.0), 15: (-7.0, 5.8),
    16: (-4.8, 5.5), 17: (-9.0, 5.5), 18: (-9.3, 4.0), 19: (-7.5, 4.0), 20: (-5.5, 4.0),
    21: (-4.0, 4.3), 22: (-3.5, 3.0), 23: (-4.5, 1.5), 24: (-2.0, 1.3), 25: (-7.5, 1.0),
    26: (-5.5, 0.0), 27: (-4.2, 0.0), 28: (-1.8, -0.3), 29: (-4.5, -1.5), 30: (-4.5, -3.0),
    31: (-2.3, -2.3), 32: (0.0, 0.0), 33: (0.3, -1.8), 34: (-0.3, -3.2), 35: (0.8, -3.5),
    36: (1.5, -4.2), 37: (-0.3, -4.8), 38: (0.5, -5.0), 39: (1.8, -5.5), 40: (0.5, -6.5),
    41: (2.2, -6.8), 42: (1.5, -7.8), 43: (3.0, -8.8), 44: (0.8, -10.0), 45: (2.0, -10.0),
    46: (4.5, -10.5), 47: (1.8, -11.2), 48: (3.0, -11.2), 49: (1.0, -13.0), 50: (2.0, -13.5),
    51: (4.0, -13.5), 52: (5.5, -12.5), 53: (0.5, -15.0), 54: (2.5, -15.5), 55: (5.5, -15.5),
    56: (-7.0, -7.0), 57: (-5.5, -5.5), 58: (-3.8, -4.8), 59: (-2.5, -4.0), 60: (-1.2, -3.8),
    61: (-2.5, -5.8), 62: (-5.5, -7.0), 63: (-3.8, -7.0), 64: (-8.0, -8.5), 65: (-5.5, -8.5),
    66: (-3.8, -8.5), 67: (-2.5, -8.0), 68: (-1.2, -7.8), 69: (0.8, -8.8), 70: (-4.5, -11.0),
    71: (-1.5, -10.0), 72: (-2.5, -12.8), 73: (-0.8, -12.5), 74: (-4.5, -13.8),
    75: (-2.0, -14.3), 76: (-13.5, 10.5), 77: (-0.8, 8.3),
}

#: How strongly an area attracts trips (1 = an ordinary residential area).
AREA_ATTRACTION: dict[int, float] = {
    8: 60.0, 32: 60.0, 28: 25.0, 76: 15.0, 6: 12.0, 7: 12.0, 33: 10.0, 24: 10.0, 56: 6.0,
    22: 5.0, 3: 5.0, 77: 4.0, 41: 4.0, 1: 3.0, 4: 3.0, 5: 3.0, 34: 2.0, 35: 2.0, 60: 2.0,
    31: 2.0, 21: 1.5, 39: 1.5,
    **{k: 0.4 for k in (*range(44, 56), *range(70, 76))},
}

# ----- companies --------------------------------------------------------------------------
N_COMPANIES = 101
#: Company ids in order of (public-year) popularity: a fixed permutation of 0..100.
COMPANY_RANKING: tuple[int, ...] = tuple((17 * r + 3) % N_COMPANIES for r in range(N_COMPANIES))
COMPANY_POWER = 1.1  # popularity of rank r ~ (r + 2) ** -COMPANY_POWER
N_UNUSED_COMPANIES = 14  # the least popular ids never appear in either year
HOME_COMPANY_SHARE = 0.95

# ----- payments and money -----------------------------------------------------------------
CASH = 0
NON_CASH_TYPES: tuple[int, ...] = (-1, 1, 2, 3, 5, 6, 7, 8)
TIP_PROBABILITY: dict[int, float] = {0: 0.03, 1: 0.82, 2: 0.88, 3: 0.25, 8: 0.30}
TIP_PERCENTAGES: tuple[float, ...] = (0.15, 0.18, 0.20, 0.25, 0.30)
TIP_PERCENTAGE_WEIGHTS: tuple[float, ...] = (0.22, 0.33, 0.28, 0.12, 0.05)
FLAG_FALL, PER_MILE, PER_36_SECONDS, METER_TIME_MPH = 3.25, 2.25, 0.25, 20.0
AIRPORT_SURCHARGE = 4
UNKNOWN_NUMERIC_RATE = 0.004
#: Typical speed (mph) by hour of day: rush hours 7-9 and 16-18 are slowest.
HOURLY_MPH: tuple[float, ...] = (
    24, 25, 26, 26, 25, 22, 18, 12, 11, 12, 15, 15, 14, 15, 15, 14, 11, 10, 11, 15, 17, 19, 21,
    23,
)


@dataclass(frozen=True)
class Archetype:
    """A behavioural kind of taxi (see module docstring)."""

    name: str
    median_trips: float  # median trips per taxi-week in the public year
    shift_starts: dict[int, float]  # start hour -> weight
    shift_length: tuple[int, int]  # hours, inclusive range
    day_weights: tuple[float, ...]  # Monday..Sunday preference for working days
    pickup_focus: dict[int, float]  # explicit pickup shares; the rest spread by attraction
    cash_factor: float  # multiplies the year's cash share
    unknown_pickup: float
    unknown_dropoff: float


ARCHETYPES: tuple[Archetype, ...] = (
    Archetype("airport", 9.0, {4: 0.15, 5: 0.25, 6: 0.25, 7: 0.15, 12: 0.1, 14: 0.1}, (9, 12),
              (1.2, 1.0, 1.0, 1.2, 1.3, 0.8, 1.2),
              {O_HARE: 0.38, MIDWAY: 0.24, LOOP: 0.12, NEAR_NORTH: 0.14, NEAR_WEST: 0.04},
              0.6, 0.01, 0.05),
    Archetype("downtown", 16.0, {6: 0.2, 7: 0.25, 8: 0.15, 10: 0.1, 14: 0.15, 15: 0.15}, (8, 11),
              (1.3, 1.3, 1.3, 1.3, 1.2, 0.6, 0.5),
              {NEAR_NORTH: 0.32, LOOP: 0.28, NEAR_WEST: 0.12, 33: 0.05, 6: 0.05, 7: 0.06,
               24: 0.04},
              1.0, 0.008, 0.01),
    Archetype("neighbourhood", 10.0, {6: 0.2, 8: 0.2, 9: 0.2, 11: 0.15, 13: 0.15, 15: 0.1},
              (6, 10), (1.0, 1.0, 1.0, 1.0, 1.1, 1.0, 0.8), {}, 1.35, 0.02, 0.02),
    Archetype("night", 12.0, {20: 0.5, 21: 0.3, 22: 0.2}, (7, 9),
              (0.6, 0.6, 0.8, 1.0, 1.6, 1.8, 0.9),
              {NEAR_NORTH: 0.24, LOOP: 0.10, 6: 0.12, 7: 0.10, 24: 0.10, 22: 0.06, 3: 0.05,
               NEAR_WEST: 0.06, 77: 0.03},
              1.15, 0.012, 0.03),
)
AIRPORT, DOWNTOWN_TAXI, NEIGHBOURHOOD, NIGHT = range(len(ARCHETYPES))


@dataclass(frozen=True)
class YearParams:
    """What differs between the public and the private year."""

    archetype_weights: tuple[float, float, float, float]
    trips_scale: float  # multiplies each archetype's median trips per taxi
    trips_sigma: float  # log-normal sigma of trips per taxi
    cash_share: float
    non_cash_mix: dict[int, float]  # over NON_CASH_TYPES
    company_growth: dict[int, float]  # company *rank* -> popularity multiplier (0 = absent)
    id_range: tuple[int, int]  # inclusive taxi_id range


YEAR_PARAMS: dict[str, YearParams] = {
    "public": YearParams(
        archetype_weights=(0.20, 0.36, 0.29, 0.15), trips_scale=1.0, trips_sigma=1.15,
        cash_share=0.38,
        non_cash_mix={-1: 0.008, 1: 0.86, 2: 0.07, 3: 0.03, 5: 0.013, 6: 0.003, 7: 0.002,
                      8: 0.014},
        company_growth={84: 0.0, 85: 0.0, 86: 0.0},  # three companies not yet operating
        id_range=(1_000_000, 5_499_999),
    ),
    "private": YearParams(
        archetype_weights=(0.17, 0.33, 0.33, 0.17), trips_scale=0.65, trips_sigma=1.2,
        cash_share=0.33,
        non_cash_mix={-1: 0.008, 1: 0.82, 2: 0.11, 3: 0.025, 5: 0.013, 6: 0.003, 7: 0.002,
                      8: 0.019},
        company_growth={0: 0.6, 1: 0.5, 2: 1.4, 4: 2.0, 9: 2.5, 15: 3.0, 22: 2.5,
                        80: 0.0, 81: 0.0, 82: 0.0, 83: 0.0, 84: 4.0, 85: 4.0, 86: 4.0},
        id_range=(5_500_000, 9_999_999),
    ),
}


# ----- city structure (fixed) -------------------------------------------------------------
def area_positions() -> np.ndarray:
    """(78, 2) positions in miles by area code index; row 0 (unknown) is NaN."""
    xy = np.full((N_AREA_CODES, 2), np.nan)
    for area, pos in AREA_XY.items():
        xy[area] = pos
    return xy


def area_distances() -> np.ndarray:
    """(78, 78) straight-line miles between areas; NaN where either area is unknown."""
    xy = area_positions()
    return np.hypot(xy[:, None, 0] - xy[None, :, 0], xy[:, None, 1] - xy[None, :, 1])


def area_attraction() -> np.ndarray:
    """(78,) attraction by area code index; 0 for unknown."""
    out = np.ones(N_AREA_CODES)
    out[0] = 0.0
    for area, weight in AREA_ATTRACTION.items():
        out[area] = weight
    return out


def area_code_to_value(codes: np.ndarray) -> np.ndarray:
    """Area code index (0..77) -> schema value (-1, 1..77)."""
    return np.where(codes == 0, -1, codes)


def company_popularity(year: Year) -> np.ndarray:
    """(101,) company shares of the year: power law over :data:`COMPANY_RANKING`."""
    ranks = np.arange(N_COMPANIES, dtype=float)
    by_rank = (ranks + 2.0) ** -COMPANY_POWER
    by_rank[N_COMPANIES - N_UNUSED_COMPANIES:] = 0.0
    for rank, factor in YEAR_PARAMS[year].company_growth.items():
        by_rank[rank] *= factor
    out = np.zeros(N_COMPANIES)
    out[np.asarray(COMPANY_RANKING)] = by_rank
    return out / out.sum()


def archetype_company_weights(year: Year) -> np.ndarray:
    """(4, 101) home-company distribution per archetype: the year's popularity, tripled for
    the companies an archetype favours (among the top 40 ranks, rank % 4 == archetype)."""
    popularity = company_popularity(year)
    rank_of = np.empty(N_COMPANIES, dtype=int)
    rank_of[np.asarray(COMPANY_RANKING)] = np.arange(N_COMPANIES)
    favoured = (rank_of[None, :] % len(ARCHETYPES) == np.arange(len(ARCHETYPES))[:, None]) \
        & (rank_of[None, :] < 40)
    weights = popularity[None, :] * np.where(favoured, 3.0, 1.0)
    return weights / weights.sum(axis=1, keepdims=True)


def focused_distribution(focus: dict[int, float], spread: np.ndarray) -> np.ndarray:
    """(78,) explicit ``focus`` shares plus the remaining mass spread in proportion to
    ``spread`` over the areas not in ``focus``."""
    out = np.zeros(N_AREA_CODES)
    for area, share in focus.items():
        out[area] = share
    rest = spread.copy()
    rest[list(focus)] = 0.0
    out += (1.0 - sum(focus.values())) * rest / rest.sum()
    return out


def gravity_matrix(exponent: float, scale: float, self_bonus: float = 1.0) -> np.ndarray:
    """(78, 78) rows ``attraction ** exponent * exp(-distance / scale)`` (same area times
    ``self_bonus``); the unknown origin row has no distance term; the unknown column is 0."""
    attraction = area_attraction() ** exponent
    decay = np.exp(-np.nan_to_num(area_distances(), nan=0.0) / scale)
    decay[0, :] = 1.0
    weights = attraction[None, :] * decay
    diagonal = np.arange(1, N_AREA_CODES)
    weights[diagonal, diagonal] *= self_bonus
    weights[:, 0] = 0.0
    return weights / weights.sum(axis=1, keepdims=True)


def airport_destinations() -> np.ndarray:
    """(78,) where a trip to the airport goes: O'Hare 72%, Midway 28%."""
    out = np.zeros(N_AREA_CODES)
    out[O_HARE], out[MIDWAY] = 0.72, 0.28
    return out


def pickup_matrix() -> np.ndarray:
    """(4 + 78, 78) pickup distributions: rows 0..3 per archetype, row 4 + h for a
    neighbourhood taxi whose home area has code index h."""
    attraction = area_attraction()
    rows = [focused_distribution(a.pickup_focus, attraction) for a in ARCHETYPES]
    rows[NEIGHBOURHOOD] = focused_distribution({}, attraction ** 0.5)
    around_home = 0.9 * gravity_matrix(0.5, 1.5, self_bonus=6.0) \
        + 0.1 * focused_distribution(ARCHETYPES[DOWNTOWN_TAXI].pickup_focus, attraction)[None, :]
    return np.vstack([np.array(rows), around_home])


def dropoff_matrix() -> np.ndarray:
    """(4 * 78, 78) dropoff distribution; row ``archetype * 78 + pickup code``."""
    airport = airport_destinations()[None, :]
    downtown = np.isin(np.arange(N_AREA_CODES), DOWNTOWN)[:, None]
    at_airport = np.isin(np.arange(N_AREA_CODES), AIRPORTS)[:, None]

    from_airport = gravity_matrix(1.4, 15.0)
    from_airport[:, list(AIRPORTS)] *= 0.05
    from_airport /= from_airport.sum(axis=1, keepdims=True)
    airport_runner = np.where(at_airport, from_airport,
                              np.where(downtown, 0.55 * airport + 0.45 * gravity_matrix(1.2, 3.0),
                                       0.4 * airport + 0.6 * gravity_matrix(1.0, 4.0)))
    downtown_taxi = 0.94 * gravity_matrix(1.4, 2.5, self_bonus=2.0) + 0.06 * airport
    neighbourhood = 0.95 * gravity_matrix(0.5, 1.6, self_bonus=4.0) \
        + 0.05 * gravity_matrix(1.5, 1e9)
    night = 0.72 * gravity_matrix(0.4, 4.0) + 0.25 * gravity_matrix(1.3, 2.0) + 0.03 * airport
    return np.vstack([airport_runner, downtown_taxi, neighbourhood, night])


# ----- vectorised sampling helpers --------------------------------------------------------
def row_cdfs(probabilities: np.ndarray) -> np.ndarray:
    """Flattened row-wise CDFs of a (rows, k) probability matrix, row r offset by r, so one
    ``searchsorted`` samples every row (see :func:`sample_rows`)."""
    p = probabilities / probabilities.sum(axis=1, keepdims=True)
    cdf = np.cumsum(p, axis=1)
    k = p.shape[1]
    last_positive = k - 1 - np.argmax(p[:, ::-1] > 0, axis=1)
    cdf = np.where(np.arange(k)[None, :] >= last_positive[:, None], 1.0, cdf)
    return (cdf + np.arange(len(p))[:, None]).ravel()


def sample_rows(cdfs: np.ndarray, n_columns: int, rows: np.ndarray,
                rng: np.random.Generator) -> np.ndarray:
    """One column index per entry of ``rows``, drawn from that row's distribution."""
    rows = np.asarray(rows, dtype=np.int64)
    u = np.minimum(rng.random(len(rows)), 1.0 - 1e-9)
    return np.searchsorted(cdfs, rows + u, side="right") - rows * n_columns


def weighted_day_orders(day_weights: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(taxis, 7) days in a random order where heavier days tend to come first (weighted
    sampling without replacement by Efraimidis-Spirakis keys ``log(u) / w``)."""
    keys = np.log(rng.random(day_weights.shape)) / day_weights
    return np.argsort(-keys, axis=1).astype(np.int8)


# ----- taxis ------------------------------------------------------------------------------
@dataclass
class Taxis:
    """Per-taxi attributes (arrays of length = number of taxis)."""

    taxi_id: np.ndarray
    archetype: np.ndarray
    trips: np.ndarray
    home_company: np.ndarray
    home_area: np.ndarray  # code index 1..77
    shift_start: np.ndarray
    shift_length: np.ndarray
    day_order: np.ndarray  # (taxis, 7)
    work_days: np.ndarray
    cash_effect: np.ndarray


def draw_trip_counts(archetype: np.ndarray, params: YearParams,
                     rng: np.random.Generator) -> np.ndarray:
    """Heavy-tailed trips per taxi: ceil(log-normal), clipped to [1, MAX_TRIPS_PER_TAXI]."""
    medians = np.array([a.median_trips for a in ARCHETYPES])[archetype] * params.trips_scale
    raw = np.ceil(rng.lognormal(np.log(medians), params.trips_sigma))
    return np.clip(raw, 1, MAX_TRIPS_PER_TAXI).astype(np.int64)


def draw_archetypes_and_counts(n_trips: int, params: YearParams,
                               rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Draw taxis (archetype, trip count) in batches until they cover ``n_trips``, then cut
    the last taxi so the counts sum to exactly ``n_trips``."""
    weights = np.asarray(params.archetype_weights) / sum(params.archetype_weights)
    archetypes, counts, total = [], [], 0
    while total < n_trips:
        batch = (n_trips - total) // 10 + 16
        a = rng.choice(len(ARCHETYPES), size=batch, p=weights).astype(np.int8)
        c = draw_trip_counts(a, params, rng)
        archetypes.append(a)
        counts.append(c)
        total += int(c.sum())
    archetype, trips = np.concatenate(archetypes), np.concatenate(counts)
    cumulative = np.cumsum(trips)
    n_taxis = int(np.searchsorted(cumulative, n_trips)) + 1
    archetype, trips = archetype[:n_taxis], trips[:n_taxis].copy()
    trips[-1] -= int(cumulative[n_taxis - 1]) - n_trips
    return archetype, trips


def draw_taxi_ids(n_taxis: int, params: YearParams, rng: np.random.Generator) -> np.ndarray:
    """Distinct taxi ids in the year's id range."""
    lo, hi = params.id_range
    if n_taxis > hi - lo + 1:
        raise ConfigError(f"taxi_sim: {n_taxis} taxis do not fit the id range [{lo}, {hi}]",
                          "simulate fewer trips")
    return rng.choice(hi - lo + 1, size=n_taxis, replace=False).astype(np.int64) + lo


def draw_shift_starts(archetype: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Shift start hour per taxi from its archetype's start-hour profile."""
    probabilities = np.zeros((len(ARCHETYPES), 24))
    for i, a in enumerate(ARCHETYPES):
        for hour, weight in a.shift_starts.items():
            probabilities[i, hour] = weight
    return sample_rows(row_cdfs(probabilities), 24, archetype, rng).astype(np.int8)


def draw_shift_lengths(archetype: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Shift length in hours per taxi, uniform in the archetype's range."""
    lo = np.array([a.shift_length[0] for a in ARCHETYPES])[archetype]
    hi = np.array([a.shift_length[1] for a in ARCHETYPES])[archetype]
    return rng.integers(lo, hi + 1).astype(np.int8)


def draw_home_areas(n_taxis: int, rng: np.random.Generator) -> np.ndarray:
    """Home area code per taxi: an outer area (not downtown, not an airport)."""
    weights = area_attraction() ** 0.7
    weights[list(DOWNTOWN) + list(AIRPORTS)] = 0.0
    return rng.choice(N_AREA_CODES, size=n_taxis, p=weights / weights.sum()).astype(np.int16)


def draw_taxis(n_trips: int, year: Year, rng: np.random.Generator) -> Taxis:
    """All taxis of a year, with trip counts summing to ``n_trips``."""
    params = YEAR_PARAMS[year]
    archetype, trips = draw_archetypes_and_counts(n_trips, params, rng)
    n = len(trips)
    company_cdfs = row_cdfs(archetype_company_weights(year))
    day_weights = np.array([a.day_weights for a in ARCHETYPES])[archetype]
    return Taxis(
        taxi_id=draw_taxi_ids(n, params, rng),
        archetype=archetype,
        trips=trips,
        home_company=sample_rows(company_cdfs, N_COMPANIES, archetype, rng).astype(np.int8),
        home_area=draw_home_areas(n, rng),
        shift_start=draw_shift_starts(archetype, rng),
        shift_length=draw_shift_lengths(archetype, rng),
        day_order=weighted_day_orders(day_weights, rng),
        work_days=rng.integers(3, 7, size=n).astype(np.int8),
        cash_effect=rng.normal(0.0, 0.8, size=n),
    )


# ----- trips ------------------------------------------------------------------------------
def draw_times(taxis: Taxis, taxi: np.ndarray,
               rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(day of week, hour of day) per trip: an hour within the taxi's shift on one of its
    working days (the next day once the shift has passed midnight)."""
    start = taxis.shift_start[taxi].astype(np.int64)
    offset = (rng.random(len(taxi)) * taxis.shift_length[taxi]).astype(np.int64)
    clock = start + offset
    which_day = (rng.random(len(taxi)) * taxis.work_days[taxi]).astype(np.int64)
    day = taxis.day_order[taxi, which_day].astype(np.int64)
    return (day + clock // 24) % 7, clock % 24


def shift_index(day: np.ndarray, hour: np.ndarray) -> np.ndarray:
    """The challenge's shift: 8-hour block of the week, ``day * 3 + hour // 8`` (0..20)."""
    return day * 3 + hour // 8


def draw_companies(taxis: Taxis, taxi: np.ndarray, year: Year,
                   rng: np.random.Generator) -> np.ndarray:
    """The taxi's home company on most trips, otherwise any company of the year."""
    other = rng.choice(N_COMPANIES, size=len(taxi), p=company_popularity(year))
    return np.where(rng.random(len(taxi)) < HOME_COMPANY_SHARE,
                    taxis.home_company[taxi], other).astype(np.int64)


def draw_areas(taxis: Taxis, taxi: np.ndarray,
               rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(pickup, dropoff) area code indices per trip (0 = unknown)."""
    archetype = taxis.archetype[taxi].astype(np.int64)
    pickup_row = np.where(archetype == NEIGHBOURHOOD,
                          len(ARCHETYPES) + taxis.home_area[taxi].astype(np.int64), archetype)
    pickup = sample_rows(row_cdfs(pickup_matrix()), N_AREA_CODES, pickup_row, rng)
    unknown_pickup = np.array([a.unknown_pickup for a in ARCHETYPES])[archetype]
    pickup = np.where(rng.random(len(taxi)) < unknown_pickup, 0, pickup)
    dropoff = sample_rows(row_cdfs(dropoff_matrix()), N_AREA_CODES,
                          archetype * N_AREA_CODES + pickup, rng)
    unknown_dropoff = np.array([a.unknown_dropoff for a in ARCHETYPES])[archetype]
    dropoff = np.where(rng.random(len(taxi)) < unknown_dropoff, 0, dropoff)
    return pickup, dropoff


def draw_miles(pickup: np.ndarray, dropoff: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Trip length in miles (float): road distance between the areas with noise."""
    n = len(pickup)
    straight = area_distances()[pickup, dropoff]
    between = 1.15 * np.nan_to_num(straight) * rng.lognormal(0.0, 0.18, size=n)
    within = rng.gamma(2.0, 0.45, size=n)
    outside = 5.0 + rng.gamma(2.0, 4.0, size=n)
    unknown = (pickup == 0) | (dropoff == 0)
    return np.where(unknown, outside, np.where(pickup == dropoff, within, between))


def draw_seconds(miles: np.ndarray, hour: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Trip duration in seconds (float): slower at rush hours, faster on long trips."""
    speed = np.asarray(HOURLY_MPH)[hour] * (1.0 + 0.6 * np.minimum(miles / 15.0, 1.0))
    return 90.0 + 3600.0 * miles / speed * rng.lognormal(0.0, 0.3, size=len(miles))


def meter_fare(miles: np.ndarray, seconds: np.ndarray) -> np.ndarray:
    """Whole-dollar fare: flag fall + per mile + per 36 s of time slower than 20 mph."""
    slow_seconds = np.maximum(seconds - 3600.0 * miles / METER_TIME_MPH, 0.0)
    fare = FLAG_FALL + PER_MILE * miles + PER_36_SECONDS * np.floor(slow_seconds / 36.0)
    return np.rint(fare).astype(np.int64)


def draw_payments(taxis: Taxis, taxi: np.ndarray, year: Year,
                  rng: np.random.Generator) -> np.ndarray:
    """Payment type per trip: cash with a per-taxi probability, else the year's non-cash mix."""
    params = YEAR_PARAMS[year]
    cash_factor = np.array([a.cash_factor for a in ARCHETYPES])
    base = np.clip(params.cash_share * cash_factor, 0.01, 0.99)
    log_odds = np.log(base / (1 - base))[taxis.archetype[taxi]] + taxis.cash_effect[taxi]
    is_cash = rng.random(len(taxi)) < 1.0 / (1.0 + np.exp(-log_odds))
    mix = np.array([params.non_cash_mix[t] for t in NON_CASH_TYPES])
    other = np.asarray(NON_CASH_TYPES)[rng.choice(len(mix), size=len(taxi), p=mix / mix.sum())]
    return np.where(is_cash, CASH, other).astype(np.int64)


def draw_tips(fare: np.ndarray, payment: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Whole-dollar tips: mostly on card payments, 15-30% of the fare."""
    probability = np.zeros(len(fare))
    for payment_type, p in TIP_PROBABILITY.items():
        probability[payment == payment_type] = p
    tipped = rng.random(len(fare)) < probability
    share = np.asarray(TIP_PERCENTAGES)[rng.choice(len(TIP_PERCENTAGES), size=len(fare),
                                                   p=TIP_PERCENTAGE_WEIGHTS)]
    share = np.maximum(share + rng.normal(0.0, 0.02, size=len(fare)), 0.05)
    return np.where(tipped, np.maximum(np.rint(fare * share), 1), 0).astype(np.int64)


def draw_extras(pickup: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Whole-dollar extras: random extras, an airport pickup surcharge, rare tolls."""
    n = len(pickup)
    extras = np.where(rng.random(n) < 0.3, rng.integers(1, 6, size=n), 0)
    extras += np.where(np.isin(pickup, AIRPORTS), AIRPORT_SURCHARGE, 0)
    extras += np.where(rng.random(n) < 0.003, np.rint(rng.gamma(2.0, 3.0, size=n)), 0).astype(
        np.int64)
    return extras.astype(np.int64)


def with_unknowns(values: np.ndarray, rate: float, rng: np.random.Generator) -> np.ndarray:
    """``values`` with a random ``rate`` share replaced by -1 (unknown)."""
    return np.where(rng.random(len(values)) < rate, -1, values)


def simulate_trips(n_trips: int, rng: np.random.Generator, year: Year) -> pd.DataFrame:
    """``n_trips`` simulated trips of one year, in the Sprint 3 schema's column order, int64.

    Draws only from ``rng``; see the module docstring for the model.
    """
    if isinstance(n_trips, bool) or not isinstance(n_trips, (int, np.integer)) or n_trips < 1:
        raise ConfigError(f"taxi_sim: n_trips must be a positive integer (got {n_trips!r})",
                          "ask for e.g. 50000 trips")
    if year not in YEARS:
        raise ConfigError(f"taxi_sim: unknown year {year!r}", f"use one of {list(YEARS)}")
    if not isinstance(rng, np.random.Generator):
        raise ConfigError("taxi_sim: rng must be a numpy.random.Generator",
                          "pass numpy.random.default_rng(seed)")
    n_trips = int(n_trips)
    taxis = draw_taxis(n_trips, year, rng)
    taxi = rng.permutation(np.repeat(np.arange(len(taxis.trips)), taxis.trips))

    # One int64 block, filled column by column, becomes the frame without a copy.
    names = taxi_schema().names
    table = np.empty((len(names), n_trips), dtype=np.int64)
    out = dict(zip(names, table))
    out["taxi_id"][:] = taxis.taxi_id[taxi]

    day, hour = draw_times(taxis, taxi, rng)
    out["trip_day_of_week"][:], out["trip_hour_of_day"][:] = day, hour
    out["shift"][:] = shift_index(day, hour)
    del day
    out["company_id"][:] = draw_companies(taxis, taxi, year, rng)
    pickup, dropoff = draw_areas(taxis, taxi, rng)
    out["pickup_community_area"][:] = area_code_to_value(pickup)
    out["dropoff_community_area"][:] = area_code_to_value(dropoff)
    payment = out["payment_type"]
    payment[:] = draw_payments(taxis, taxi, year, rng)
    del taxi

    miles = draw_miles(pickup, dropoff, rng)
    del dropoff
    seconds = draw_seconds(miles, hour, rng)
    del hour
    fare, tips, total = out["fare"], out["tips"], out["trip_total"]
    fare[:] = np.minimum(meter_fare(miles, seconds), NUMERIC_MAX["fare"])
    tips[:] = np.minimum(draw_tips(fare, payment, rng),
                         np.minimum(NUMERIC_MAX["tips"], NUMERIC_MAX["trip_total"] - fare))
    total[:] = np.minimum(fare + tips + draw_extras(pickup, rng), NUMERIC_MAX["trip_total"])
    del pickup
    out["trip_seconds"][:] = with_unknowns(
        np.minimum(np.rint(seconds), NUMERIC_MAX["trip_seconds"]), UNKNOWN_NUMERIC_RATE, rng)
    del seconds
    out["trip_miles"][:] = with_unknowns(
        np.minimum(np.rint(miles), NUMERIC_MAX["trip_miles"]), UNKNOWN_NUMERIC_RATE, rng)
    return pd.DataFrame(table.T, columns=names, copy=False)


def simulate_years(n_private: int, n_public: int,
                   seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(private, public) years; each year draws from its own child of ``SeedSequence(seed)``."""
    public_seed, private_seed = np.random.SeedSequence(seed).spawn(2)
    private = simulate_trips(n_private, np.random.default_rng(private_seed), "private")
    public = simulate_trips(n_public, np.random.default_rng(public_seed), "public")
    return private, public
