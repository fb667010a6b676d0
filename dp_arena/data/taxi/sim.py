"""Simulated Chicago taxi trips in the NIST Sprint 3 schema (the embedded ``taxi_sim`` data).

The private year is calibrated to real Chicago trips: the city-wide tables in
:mod:`dp_arena.data.taxi.sim_tables` (pickup x dropoff counts, day x hour counts, payment mix,
tip rates and tip shares, quantiles of miles, seconds and fare by distance class with their
copula correlations, speed by hour, the recorded-zero miles share) are aggregated from the
15,002 public trips of the City of Chicago open data sample (2013-2016) by
``benchmarks/fit_taxi_sim_tables.py``; ``benchmarks/calibrate_taxi_sim.py`` reports the fit
(total variation distances against the real sample).

Algorithms
----------
Taxis (a *taxi* is a taxi-week, the challenge's ``taxi_id``). Each taxi draws **continuous
latent traits**, so taxis form a continuum, not a few kinds:

- trips ~ ``ceil(LogNormal(log(median), sigma))`` clipped to ``[1, MAX_TRIPS_PER_TAXI]`` (200),
  a heavy tail of busy taxis; taxis are drawn until the total reaches ``n_trips`` and the last
  taxi is cut so the total is exact;
- a *home area* drawn from the city's pickup distribution and a *home tilt* ~ Beta(1.5, 6):
  each trip starts at the home area with probability = tilt, else from the city's pickup
  distribution (so the pickup marginal is the city's, in expectation, exactly);
- a *shift centre* (a continuous hour: an hour from the city's hour profile + U(0, 1)) and an
  *hour tilt* ~ Beta(1.5, 4): with probability = tilt a trip's hour is
  ``floor(centre + Normal(0, 1.2)) mod 24``, else it keeps the city's day x hour draw;
- a *length trait* ~ Normal(0, 1) tilting its trips toward long or short ones (below);
- a *cash propensity*: a Normal(0, 1.2) random effect on the log-odds of paying cash;
- a *home company* drawn from the real company mix of its home area's zone and its shift
  centre's 8-hour block (:mod:`dp_arena.data.taxi.sim_mix`: a few affiliations and "no company
  recorded" hold most trips, then a tail of small companies), which it drives for on
  :data:`HOME_COMPANY_SHARE` of its trips (company loyalty); its other trips take a company
  from the mix of the trip's own zone and block.

Trips (vectorised over all trips):

- day of week (0 = Monday) and hour from the real day x hour table (then the hour tilt);
  ``shift = day * 3 + hour // 8`` (the challenge's 8-hour block of the week);
- pickup as above; dropoff given pickup from the real pickup -> dropoff counts smoothed with
  5% of the independent (pickup marginal x dropoff marginal) table (plus half a pseudo-trip per
  area so every area can occur); -1 = unknown / outside the city, as in the real data;
- miles, seconds and fare: inverse-CDF draws from the real quantiles of the trip's *distance
  class* (:mod:`dp_arena.data.taxi.geography`: unknown end, same area, or the straight-line
  distance between the areas' rough centroids in five bands), linked by a Gaussian copula
  fitted to the real within-class normal scores: seconds follow miles (correlation ~0.43) and the
  hour's slowness (inverse real median speed of the hour); fare follows miles and seconds (the
  meter charges distance and time). A taxi's *length trait* (a standard normal, weight 0.4 in
  the miles score) makes some taxis run long trips; all scores stay standard normal, so the
  real marginals hold. Recorded miles are 0 on
  :data:`~dp_arena.data.taxi.sim_tables.MILES_ZERO_SHARE` of trips (27% of the real trips record
  0 miles), seconds unknown (-1) on a real share;
- payment: cash with log-odds = the year's base (solved so the year's cash share is met) + the
  real sample's offsets of the pickup zone (airports pay cash least, outer areas most) and of
  the company class (logistic fit) + the taxi's propensity; else the real non-cash mix;
  tips: tipped at the real
  rate of the payment type (about 95% of card trips, almost no cash trips: cash tips are not
  recorded), tip = fare * a draw from the real tip / fare quantiles, at least $1;
- ``trip_total`` = fare + tips + extras (random extras, an airport pickup surcharge, rare
  tolls), so ``trip_total >= fare + tips``; every value is an integer clipped to the schema.

Rows are shuffled (not grouped by taxi). Randomness: :func:`simulate_trips` draws only from
the ``rng`` it is given; :func:`simulate_years` spawns two child seeds of ``SeedSequence(seed)``
for the years and takes the fourth for the world's random walks (:func:`world_of`).

Years, scoring years and what the choices rest on: docs/datasets.md, "The simulator's years
and assumptions" (the 2020 shock's sources and labelled assumptions are there, and in
:data:`YEAR_2020_ASSUMPTIONS`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np
import pandas as pd
from scipy.special import ndtr

from dp_arena.data.taxi import drift as D
from dp_arena.data.taxi import sim_mix as M
from dp_arena.data.taxi import sim_tables as T
from dp_arena.data.taxi.geography import DISTANCE_BANDS, N_AREA_CODES, distance_class
from dp_arena.data.taxi.sprint3 import MAX_TRIPS_PER_TAXI, NUMERIC_MAX, taxi_schema
from dp_arena.errors import ConfigError

Year = Literal["public", "private", "2016", "2020", "base"]
#: ``private`` is the default scoring year, ``2016``; ``base`` is the drift-free year the
#: tables are calibrated to (the real sample's mean year,
#: :data:`~dp_arena.data.taxi.drift.BASE_YEAR`).
YEARS: tuple[str, ...] = ("public", "private", "2016", "2020", "base")
SCORING_YEARS: tuple[str, ...] = ("2016", "2020")
DEFAULT_SCORING_YEAR = "2016"

# ----- geography --------------------------------------------------------------------------
O_HARE, MIDWAY = 76, 56
AIRPORTS: tuple[int, ...] = (O_HARE, MIDWAY)

# ----- companies (mix by zone and block: dp_arena.data.taxi.sim_mix) ----------------------
HOME_COMPANY_SHARE = 0.95

# ----- traits, payments, money ------------------------------------------------------------
CASH = 0
HOME_TILT_BETA: tuple[float, float] = (1.5, 6.0)
HOUR_TILT_BETA: tuple[float, float] = (1.5, 4.0)
SHIFT_SPREAD_HOURS = 1.2
LENGTH_TRAIT_WEIGHT = 0.4  # share of a trip's length score set by its taxi (correlation)
HOUR_SLOWNESS_WEIGHT = 0.15  # how much the hour's slowness moves the trip's seconds score
CASH_EFFECT_SD = 1.2
PAIR_SMOOTHING = 0.05  # share of the independent pickup x dropoff table in the transitions
AREA_PSEUDO_TRIPS = 0.5
AIRPORT_SURCHARGE = 4


#: Downtown: the Loop (32) and the Near North Side (8), where most real pickups are.
DOWNTOWN: tuple[int, ...] = (8, 32)
#: The public year's shares, extrapolated three years past 2016 from the real sample's own
#: 2013-2016 trends (least-squares line of each trip's indicator on its year; recomputed from
#: the shared sample by ``benchmarks/calibrate_taxi_sim.py`` and guarded by a test): cash
#: trips 66% pooled -> 34%, trips touching an airport 11.6% -> 16.1%, pickups downtown
#: 54.7% -> 61.0%.
PUBLIC_YEAR_TRENDS: dict[str, float] = {"cash": 0.34, "airport": 0.161, "downtown": 0.61}


@dataclass(frozen=True)
class YearParams:
    """What differs between the private (2013-2016) and the public (2016-2019) year."""

    trips_median: float  # median trips per taxi-week
    trips_sigma: float  # log-normal sigma of trips per taxi-week
    cash_share: float | None  # None: the real sample's share
    airport_share: float | None  # share of trips touching O'Hare or Midway (None: real)
    downtown_share: float | None  # share of pickups in the Loop or Near North (None: real)
    company_growth: dict[int, float]  # company *class* -> weight multiplier (0 = absent)
    id_range: tuple[int, int]  # inclusive taxi_id range
    hour_factor: tuple[float, ...] = (1.0,) * 24  # multiplies the real trips per start hour
    fare_factor: float = 1.0  # multiplies every fare quantile (fares over time)
    tip_share_factor: float = 1.0  # multiplies every tip / fare quantile
    card_tip_rate: float | None = None  # tipped share of card trips (None: the real one)


@dataclass(frozen=True)
class World:
    """One simulated city over its years: the drift size (``dataset.drift``; 1 = the argued
    sizes of :mod:`dp_arena.data.taxi.drift`, 0 = every year is the base year) and the seed of
    its random walks (fixed by the data's seed, shared by all its years)."""

    drift: float = 1.0
    seed: int = 0


def real_cash_share() -> float:
    """Share of cash trips in the real sample."""
    return T.PAYMENT_COUNTS[CASH] / sum(T.PAYMENT_COUNTS.values())


#: 2020 against 2019 (sources in the module docstring): all taxi trips 16.5M -> 3.89M, airport
#: passengers O'Hare + Midway 105.4M -> 39.8M (-62%).
TAXI_TRIPS_2019, TAXI_TRIPS_2020 = 16.5e6, 3.89e6
AIRPORT_PASSENGERS_2019, AIRPORT_PASSENGERS_2020 = 84.6e6 + 20.8e6, 30.9e6 + 8.9e6
#: Labelled assumptions of the 2020 preset (see the module docstring).
YEAR_2020_ASSUMPTIONS: dict[str, float] = {
    "cash": 0.27, "downtown": 0.50, "night_factor": 0.6, "trips_median": 5.0,
    "airport": round(PUBLIC_YEAR_TRENDS["airport"] * (AIRPORT_PASSENGERS_2020
                                                      / AIRPORT_PASSENGERS_2019)
                     / (TAXI_TRIPS_2020 / TAXI_TRIPS_2019), 3),
}
NIGHT_HOURS: tuple[int, ...] = (22, 23, 0, 1, 2, 3, 4)
#: Trips per taxi-week, anchored at 2016 (assumption, module docstring): median 12 in 2016, 8
#: in 2019; a drifted year moves ``drift * (year - 2016) / 3`` of the way in log.
TRIPS_MEDIAN_2016, TRIPS_MEDIAN_2019 = 12.0, 8.0
#: The 2019 company growth factors by class, anchored at 2016 (assumption, module docstring).
COMPANY_GROWTH_2019: dict[int, float] = {**{c: 0.0 for c in (8, 9, 10)}, 11: 0.5,
                                         1: 1.5, 2: 1.5, 3: 1.4, 4: 1.3, 5: 1.3}
ID_RANGES: dict[str, tuple[int, int]] = {"public": (1_000_000, 5_499_999)}
PRIVATE_ID_RANGE = (5_500_000, 9_999_999)
YEAR_2020_COMPANY_GROWTH: dict[int, float] = {**{c: 0.0 for c in (8, 9, 10)}, 11: 0.25,
                                              1: 1.5, 2: 1.5, 3: 1.4, 4: 1.3, 5: 1.3}


def pooled_share(name: str) -> float:
    """The real sample's pooled share of a trend indicator (the base year's)."""
    if name == "cash":
        return real_cash_share()
    joint = real_pair_table()
    joint /= joint.sum()
    codes = np.arange(N_AREA_CODES)
    if name == "airport":
        airport = np.isin(codes, AIRPORTS)
        return float(joint[airport[:, None] | airport[None, :]].sum())
    return float(joint[np.isin(codes, DOWNTOWN)].sum())


@lru_cache(maxsize=64)
def year_params(year: str, world: World = World()) -> YearParams:
    """The parameters of ``year`` in ``world`` (module docstring "Years"): the base year moved
    ``world.drift`` times the argued drift (:mod:`dp_arena.data.taxi.drift`); ``2020`` adds the
    pandemic shock's labelled assumptions (:data:`YEAR_2020_ASSUMPTIONS`) on top."""
    d = world.drift
    t = D.years_from_base(year)
    since_2016 = d * (D.CALENDAR_YEAR[year] - 2016.0) / 3.0
    shares = {name: D.share_at(name, pooled_share(name), year, d)
              for name in ("cash", "airport", "downtown")}
    growth = ({c: g ** since_2016 for c, g in COMPANY_GROWTH_2019.items()}
              if since_2016 > 0 else {})
    params = YearParams(
        trips_median=TRIPS_MEDIAN_2016 * (TRIPS_MEDIAN_2019 / TRIPS_MEDIAN_2016) ** since_2016,
        trips_sigma=1.15, cash_share=shares["cash"], airport_share=shares["airport"],
        downtown_share=shares["downtown"], company_growth=growth,
        id_range=ID_RANGES.get(year, PRIVATE_ID_RANGE),
        fare_factor=float(np.exp(d * D.FARE_LOG_SLOPE * t)),
        tip_share_factor=float(np.exp(d * D.TIP_SHARE_LOG_SLOPE * t)),
        card_tip_rate=float(np.clip(T.TIP_RATE[1] + d * D.CARD_TIP_RATE_SLOPE * t, 0, 0.995)),
    )
    if year != "2020":
        return params
    return YearParams(
        trips_median=YEAR_2020_ASSUMPTIONS["trips_median"], trips_sigma=1.15,
        cash_share=YEAR_2020_ASSUMPTIONS["cash"], airport_share=YEAR_2020_ASSUMPTIONS["airport"],
        downtown_share=YEAR_2020_ASSUMPTIONS["downtown"],
        company_growth=YEAR_2020_COMPANY_GROWTH, id_range=PRIVATE_ID_RANGE,
        hour_factor=tuple(YEAR_2020_ASSUMPTIONS["night_factor"] if h in NIGHT_HOURS else 1.0
                          for h in range(24)),
        fare_factor=params.fare_factor, tip_share_factor=params.tip_share_factor,
        card_tip_rate=params.card_tip_rate)


# ----- city structure (fixed, from the tables) --------------------------------------------
def area_code_to_value(codes: np.ndarray) -> np.ndarray:
    """Area code index (0..77) -> schema value (-1, 1..77)."""
    return np.where(codes == 0, -1, codes)


def real_pair_table() -> np.ndarray:
    """(78, 78) real trips per (pickup, dropoff) code index."""
    table = np.zeros((N_AREA_CODES, N_AREA_CODES))
    for (pickup, dropoff), n in T.PAIR_COUNTS.items():
        table[pickup, dropoff] = n
    return table


@lru_cache(maxsize=1)
def base_pair_table() -> np.ndarray:
    """(78, 78) the base year's pickup x dropoff distribution: the real table smoothed with
    :data:`PAIR_SMOOTHING` of its independent version (half a pseudo-trip per area), its rows
    then scaled so the pickup shares of the 77 areas are the City's (all pickups 2013-2016,
    :data:`~dp_arena.data.taxi.drift.AREA_PICKUPS_2013_2016`; the sample's 15,002 trips cannot
    tell how rare the rarest areas are, which sets how many (area, shift) groups a year
    leaves empty), unknown pickups keeping the sample's share. Read-only (cached)."""
    real = real_pair_table()
    real /= real.sum()
    pickup = real.sum(axis=1) + AREA_PSEUDO_TRIPS / T.N_REAL_TRIPS
    dropoff = real.sum(axis=0) + AREA_PSEUDO_TRIPS / T.N_REAL_TRIPS
    joint = (1 - PAIR_SMOOTHING) * real \
        + PAIR_SMOOTHING * np.outer(pickup / pickup.sum(), dropoff / dropoff.sum())
    joint /= joint.sum()
    city = np.zeros(N_AREA_CODES)
    for area, trips in D.AREA_PICKUPS_2013_2016.items():
        city[area] = trips
    rows = joint.sum(axis=1)
    target = np.r_[rows[0], (1 - rows[0]) * city[1:] / city[1:].sum()]
    joint = joint * (target / rows)[:, None]
    joint.setflags(write=False)
    return joint


@lru_cache(maxsize=32)
def pair_distribution(year: Year, world: World = World()) -> np.ndarray:
    """(78, 78) joint pickup x dropoff distribution of the year: the base table
    (:func:`base_pair_table`) times the year's drift field
    (:func:`dp_arena.data.taxi.drift.pair_multiplier`), raked so trips touching an airport
    and pickups downtown have the year's shares. Read-only (cached)."""
    f = D.fields(year, world.drift, world.seed)
    joint = base_pair_table() * D.pair_multiplier(f)
    joint = with_shares(joint / joint.sum(), year_params(year, world))
    joint.setflags(write=False)
    return joint


def with_shares(joint: np.ndarray, params: YearParams, sweeps: int = 50) -> np.ndarray:
    """``joint`` (pickup x dropoff, sums to 1) raked so trips touching an airport and pickups
    downtown have the year's shares (iterative proportional fitting over the two indicators;
    a share of ``None`` is left as it is)."""
    codes = np.arange(N_AREA_CODES)
    airport = np.isin(codes, AIRPORTS)
    touches_airport = airport[:, None] | airport[None, :]
    downtown = np.broadcast_to(np.isin(codes, DOWNTOWN)[:, None], joint.shape)
    out = joint.copy()
    targets = [(mask, share) for mask, share in ((touches_airport, params.airport_share),
                                                 (downtown, params.downtown_share))
               if share is not None]
    for _ in range(sweeps if targets else 0):
        for mask, share in targets:
            inside = out[mask].sum()
            out[mask] *= share / inside
            out[~mask] *= (1 - share) / (1 - inside)
    return out / out.sum()


def year_company_mix(year: Year, world: World = World()) -> np.ndarray:
    """(zones, blocks, classes) company-class mix of the year: the real mix by pickup zone and
    8-hour block (:func:`dp_arena.data.taxi.sim_mix.company_mix`) with the year's growth."""
    factor = np.ones(len(T.COMPANY_CLASS_TRIPS))
    for company_class, growth in year_params(year, world).company_growth.items():
        factor[company_class] *= growth
    return M.company_mix(factor)


def draw_company_classes(zone: np.ndarray, block: np.ndarray, year: Year,
                         rng: np.random.Generator, world: World = World()) -> np.ndarray:
    """One company class per (zone, block) entry, from the year's mix."""
    mix = year_company_mix(year, world)
    rows = zone * M.N_BLOCKS + block
    return sample_rows(row_cdfs(mix.reshape(-1, mix.shape[-1])), mix.shape[-1], rows, rng)


# ----- vectorised sampling helpers --------------------------------------------------------
def row_cdfs(probabilities: np.ndarray) -> np.ndarray:
    """Flattened row-wise CDFs of a (rows, k) probability matrix, row r offset by r, so one
    ``searchsorted`` samples every row (see :func:`sample_rows`). All-zero rows are uniform."""
    p = np.where(probabilities.sum(axis=1, keepdims=True) > 0, probabilities, 1.0)
    p = p / p.sum(axis=1, keepdims=True)
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


def sample_categorical(p: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` indices drawn from the probability vector ``p`` (inverse CDF)."""
    cdf = np.cumsum(p / p.sum())
    return np.minimum(np.searchsorted(cdf, rng.random(size), side="right"), len(p) - 1)


def quantile_draws(table: np.ndarray, rows: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF draws: row ``rows[i]`` of a (rows, levels) quantile table at ``u[i]``,
    linear between :data:`~dp_arena.data.taxi.sim_tables.QUANTILE_LEVELS`, clamped at the
    ends."""
    levels = np.asarray(T.QUANTILE_LEVELS)
    upper = np.clip(np.searchsorted(levels, u, side="right"), 1, len(levels) - 1)
    lo_q, hi_q = table[rows, upper - 1], table[rows, upper]
    frac = np.clip((u - levels[upper - 1]) / (levels[upper] - levels[upper - 1]), 0.0, 1.0)
    return lo_q + frac * (hi_q - lo_q)


def class_quantile_table(quantiles: dict[int, tuple[float, ...]]) -> np.ndarray:
    """(classes, levels) quantiles by distance class; a class the real sample lacks uses the
    nearest fitted class below it."""
    n_classes = 2 + len(DISTANCE_BANDS) + 1
    table = np.empty((n_classes, len(T.QUANTILE_LEVELS)))
    fitted = sorted(quantiles)
    for c in range(n_classes):
        source = max([f for f in fitted if f <= c], default=fitted[0])
        table[c] = quantiles[source]
    return table


def hour_slowness_score() -> np.ndarray:
    """(24,) standardised log slowness (inverse real median speed) of each hour: mean 0 and
    variance 1 over the real hour profile."""
    log_slowness = -np.log(np.asarray(T.HOURLY_MPH))
    mean = hour_profile("base") @ log_slowness
    sd = np.sqrt(hour_profile("base") @ (log_slowness - mean) ** 2)
    return (log_slowness - mean) / sd


# ----- taxis ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Taxis:
    """Per-taxi traits (arrays of length = number of taxis)."""

    taxi_id: np.ndarray
    trips: np.ndarray
    home_company: np.ndarray
    home_area: np.ndarray  # code index 0..77
    home_tilt: np.ndarray
    shift_centre: np.ndarray  # continuous hour in [0, 24)
    hour_tilt: np.ndarray
    length_z: np.ndarray  # standard normal trip-length trait
    cash_effect: np.ndarray


def draw_trip_counts(n_trips: int, params: YearParams, rng: np.random.Generator) -> np.ndarray:
    """Heavy-tailed trips per taxi (ceil log-normal, clipped to [1, 200]) drawn in batches
    until they cover ``n_trips``; the last taxi is cut so they sum to exactly ``n_trips``."""
    counts, total = [], 0
    while total < n_trips:
        batch = (n_trips - total) // 10 + 16
        c = np.ceil(rng.lognormal(np.log(params.trips_median), params.trips_sigma, size=batch))
        c = np.clip(c, 1, MAX_TRIPS_PER_TAXI).astype(np.int64)
        counts.append(c)
        total += int(c.sum())
    trips = np.concatenate(counts)
    cumulative = np.cumsum(trips)
    n_taxis = int(np.searchsorted(cumulative, n_trips)) + 1
    trips = trips[:n_taxis].copy()
    trips[-1] -= int(cumulative[n_taxis - 1]) - n_trips
    return trips


def draw_taxi_ids(n_taxis: int, params: YearParams, rng: np.random.Generator) -> np.ndarray:
    """Distinct taxi ids in the year's id range."""
    lo, hi = params.id_range
    if n_taxis > hi - lo + 1:
        raise ConfigError(f"taxi_sim: {n_taxis} taxis do not fit the id range [{lo}, {hi}]",
                          "simulate fewer trips")
    return rng.choice(hi - lo + 1, size=n_taxis, replace=False).astype(np.int64) + lo


def hour_profile(year: Year = "base", world: World = World()) -> np.ndarray:
    """(24,) share of trips by start hour: the real one times the year's hour factor."""
    counts = day_hour_weights(year, world).sum(axis=0)
    return counts / counts.sum()


def day_hour_weights(year: Year, world: World = World()) -> np.ndarray:
    """(7, 24) real trips per (day, hour) times the year's hour factor."""
    return np.asarray(T.DAY_HOUR_COUNTS, dtype=float) * np.asarray(
        year_params(year, world).hour_factor)[None, :]


def area_hour_weights(year: Year, world: World = World()) -> np.ndarray:
    """(24, 78) pickup weights of a city (non-home) trip by start hour: the year's pickup
    shares times its zone's hour multiplier (:func:`dp_arena.data.taxi.drift.hour_multiplier`:
    the shift profile per area drifts)."""
    pickup = pair_distribution(year, world).sum(axis=1)
    hours = D.hour_multiplier(D.fields(year, world.drift, world.seed), hour_profile(year, world))
    return pickup[None, :] * hours[D.zone_of_code(np.arange(N_AREA_CODES))].T


def draw_taxis(n_trips: int, year: Year, rng: np.random.Generator,
               world: World = World()) -> Taxis:
    """All taxis of a year with their traits; trip counts sum to ``n_trips``."""
    params = year_params(year, world)
    trips = draw_trip_counts(n_trips, params, rng)
    n = len(trips)
    taxi_id = draw_taxi_ids(n, params, rng)
    home_area = sample_categorical(pair_distribution(year, world).sum(axis=1), n, rng)
    shift_centre = sample_categorical(hour_profile(year, world), n, rng) + rng.random(n)
    classes = draw_company_classes(M.pickup_zone(home_area),
                                   shift_centre.astype(np.int64) // 8, year, rng, world)
    return Taxis(
        taxi_id=taxi_id,
        trips=trips,
        home_company=M.company_codes(classes, rng),
        home_area=home_area,
        home_tilt=rng.beta(*HOME_TILT_BETA, size=n),
        shift_centre=shift_centre,
        hour_tilt=rng.beta(*HOUR_TILT_BETA, size=n),
        length_z=rng.standard_normal(n),
        cash_effect=rng.normal(0.0, CASH_EFFECT_SD, size=n),
    )


# ----- trips ------------------------------------------------------------------------------
def draw_times(taxis: Taxis, taxi: np.ndarray, year: Year, rng: np.random.Generator,
               world: World = World()) -> tuple[np.ndarray, np.ndarray]:
    """(day of week, hour) per trip: the real day x hour table (times the year's hour factor),
    the hour replaced by one near the taxi's shift centre with probability = its hour tilt."""
    n = len(taxi)
    slot = sample_categorical(day_hour_weights(year, world).ravel(), n, rng)
    day, hour = slot // 24, slot % 24
    own = np.floor(taxis.shift_centre[taxi] + rng.normal(0.0, SHIFT_SPREAD_HOURS, size=n))
    use_own = rng.random(n) < taxis.hour_tilt[taxi]
    return day, np.where(use_own, own.astype(np.int64) % 24, hour)


def shift_index(day: np.ndarray, hour: np.ndarray) -> np.ndarray:
    """The challenge's shift: 8-hour block of the week, ``day * 3 + hour // 8`` (0..20)."""
    return day * 3 + hour // 8


def draw_companies(taxis: Taxis, taxi: np.ndarray, pickup: np.ndarray, hour: np.ndarray,
                   year: Year, rng: np.random.Generator, world: World = World()) -> np.ndarray:
    """The taxi's home company on :data:`HOME_COMPANY_SHARE` of its trips, otherwise a company
    from the year's mix of the trip's pickup zone and 8-hour block."""
    other = M.company_codes(draw_company_classes(M.pickup_zone(pickup), hour // 8, year, rng,
                                                 world), rng)
    return np.where(rng.random(len(taxi)) < HOME_COMPANY_SHARE,
                    taxis.home_company[taxi], other).astype(np.int64)


def draw_areas(taxis: Taxis, taxi: np.ndarray, hour: np.ndarray, year: Year,
               rng: np.random.Generator, world: World = World()
               ) -> tuple[np.ndarray, np.ndarray]:
    """(pickup, dropoff) code indices per trip (0 = unknown): pickup the taxi's home area with
    probability = its home tilt, else the city's at the trip's start hour
    (:func:`area_hour_weights`); dropoff from the pickup's row."""
    joint = pair_distribution(year, world)
    n = len(taxi)
    city = sample_rows(row_cdfs(area_hour_weights(year, world)), N_AREA_CODES, hour, rng)
    pickup = np.where(rng.random(n) < taxis.home_tilt[taxi], taxis.home_area[taxi], city)
    dropoff = sample_rows(row_cdfs(joint), N_AREA_CODES, pickup, rng)
    return pickup, dropoff


def draw_distance_time_fare(pickup: np.ndarray, dropoff: np.ndarray, hour: np.ndarray,
                            length_z: np.ndarray, rng: np.random.Generator,
                            fare_factor: float = 1.0
                            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(true miles, seconds, fare) per trip (floats): inverse-CDF draws from the real quantiles
    of the pair's distance class, linked by a Gaussian copula fitted to the real within-class
    normal scores (seconds ~ miles; fare ~ miles + seconds). The miles score mixes the taxi's
    length trait ``length_z`` (weight :data:`LENGTH_TRAIT_WEIGHT`) and the seconds score the
    hour's standardised slowness (weight :data:`HOUR_SLOWNESS_WEIGHT`); every score stays
    standard normal (the hour one to two moments), so the real marginals are kept."""
    cls = distance_class(pickup, dropoff)
    n, rho, w = len(cls), T.MILES_SECONDS_COPULA, LENGTH_TRAIT_WEIGHT
    z_miles = w * length_z + np.sqrt(1.0 - w ** 2) * rng.standard_normal(n)
    h = HOUR_SLOWNESS_WEIGHT
    z_seconds = rho * z_miles + h * hour_slowness_score()[hour] \
        + np.sqrt(1.0 - rho ** 2 - h ** 2) * rng.standard_normal(n)
    a, b = T.FARE_COPULA_MILES, T.FARE_COPULA_SECONDS
    z_fare = a * z_miles + b * z_seconds
    z_fare += np.sqrt(max(1.0 - (a ** 2 + b ** 2 + 2 * a * b * rho), 0.0)) \
        * rng.standard_normal(n)
    miles = quantile_draws(class_quantile_table(T.MILES_QUANTILES), cls, ndtr(z_miles))
    seconds = quantile_draws(class_quantile_table(T.TRIP_SECONDS_QUANTILES), cls,
                             ndtr(z_seconds))
    fare = quantile_draws(class_quantile_table(T.FARE_QUANTILES), cls, ndtr(z_fare))
    return miles, seconds, fare * fare_factor


def draw_payments(taxis: Taxis, taxi: np.ndarray, pickup: np.ndarray, company: np.ndarray,
                  year: Year, rng: np.random.Generator, world: World = World()) -> np.ndarray:
    """Payment type per trip: cash with log-odds = the year's base + the real offsets of the
    pickup zone and company class + the taxi's propensity (:mod:`dp_arena.data.taxi.sim_mix`),
    else the real non-cash mix."""
    params = year_params(year, world)
    share = real_cash_share() if params.cash_share is None else params.cash_share
    offsets = M.cash_offsets(M.pickup_zone(pickup), M.company_class_of_code(company))
    log_odds = M.solve_base(share, offsets, CASH_EFFECT_SD) + offsets + taxis.cash_effect[taxi]
    is_cash = rng.random(len(taxi)) < 1.0 / (1.0 + np.exp(-log_odds))
    types = np.array([t for t in T.PAYMENT_COUNTS if t != CASH])
    mix = np.array([T.PAYMENT_COUNTS[t] for t in types], dtype=float)
    other = types[sample_categorical(mix, len(taxi), rng)]
    return np.where(is_cash, CASH, other).astype(np.int64)


def draw_tips(fare: np.ndarray, payment: np.ndarray, rng: np.random.Generator,
              params: YearParams | None = None) -> np.ndarray:
    """Whole-dollar tips: tipped at the real rate of the payment type, the real tip / fare
    share, at least $1."""
    probability = np.zeros(len(fare))
    for payment_type, p in T.TIP_RATE.items():
        if payment_type == 1 and params is not None and params.card_tip_rate is not None:
            p = params.card_tip_rate
        probability[payment == payment_type] = p
    tipped = rng.random(len(fare)) < probability
    share = np.interp(rng.random(len(fare)), T.QUANTILE_LEVELS, T.TIP_SHARE_QUANTILES)
    if params is not None:
        share = share * params.tip_share_factor
    return np.where(tipped, np.maximum(np.rint(fare * share), 1), 0).astype(np.int64)


def draw_extras(pickup: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Whole-dollar extras: random extras, an airport pickup surcharge, rare tolls."""
    n = len(pickup)
    extras = np.where(rng.random(n) < 0.3, rng.integers(1, 6, size=n), 0)
    extras += np.where(np.isin(pickup, AIRPORTS), AIRPORT_SURCHARGE, 0)
    extras += np.where(rng.random(n) < 0.003, np.rint(rng.gamma(2.0, 3.0, size=n)), 0).astype(
        np.int64)
    return extras.astype(np.int64)


def with_value(values: np.ndarray, value: int, rate: float,
               rng: np.random.Generator) -> np.ndarray:
    """``values`` with a random ``rate`` share replaced by ``value``."""
    return np.where(rng.random(len(values)) < rate, value, values)


def check_arguments(n_trips: int, rng: np.random.Generator, year: str) -> None:
    """One clear error for bad arguments of :func:`simulate_trips`."""
    if isinstance(n_trips, bool) or not isinstance(n_trips, (int, np.integer)) or n_trips < 1:
        raise ConfigError(f"taxi_sim: n_trips must be a positive integer (got {n_trips!r})",
                          "ask for e.g. 50000 trips")
    if year not in YEARS:
        raise ConfigError(f"taxi_sim: unknown year {year!r}", f"use one of {list(YEARS)}")
    if not isinstance(rng, np.random.Generator):
        raise ConfigError("taxi_sim: rng must be a numpy.random.Generator",
                          "pass numpy.random.default_rng(seed)")


def simulate_trips(n_trips: int, rng: np.random.Generator, year: Year,
                   world: World = World()) -> pd.DataFrame:
    """``n_trips`` simulated trips of one year, in the Sprint 3 schema's column order, int64.

    Draws only from ``rng``; see the module docstring for the model.
    """
    check_arguments(n_trips, rng, year)
    n_trips = int(n_trips)
    params = year_params(year, world)
    taxis = draw_taxis(n_trips, year, rng, world)
    taxi = rng.permutation(np.repeat(np.arange(len(taxis.trips)), taxis.trips))

    # One int64 block, filled column by column, becomes the frame without a copy.
    names = taxi_schema().names
    table = np.empty((len(names), n_trips), dtype=np.int64)
    out = dict(zip(names, table))
    out["taxi_id"][:] = taxis.taxi_id[taxi]

    day, hour = draw_times(taxis, taxi, year, rng, world)
    out["trip_day_of_week"][:], out["trip_hour_of_day"][:] = day, hour
    out["shift"][:] = shift_index(day, hour)
    del day
    pickup, dropoff = draw_areas(taxis, taxi, hour, year, rng, world)
    out["pickup_community_area"][:] = area_code_to_value(pickup)
    out["dropoff_community_area"][:] = area_code_to_value(dropoff)
    company = out["company_id"]
    company[:] = draw_companies(taxis, taxi, pickup, hour, year, rng, world)
    payment = out["payment_type"]
    payment[:] = draw_payments(taxis, taxi, pickup, company, year, rng, world)

    miles, seconds, fare_value = draw_distance_time_fare(pickup, dropoff, hour,
                                                         taxis.length_z[taxi], rng,
                                                         params.fare_factor)
    del dropoff, taxi, hour
    fare, tips, total = out["fare"], out["tips"], out["trip_total"]
    fare[:] = np.clip(np.rint(fare_value), 0, NUMERIC_MAX["fare"])
    del fare_value
    tips[:] = np.minimum(draw_tips(fare, payment, rng, params),
                         np.minimum(NUMERIC_MAX["tips"], NUMERIC_MAX["trip_total"] - fare))
    total[:] = np.minimum(fare + tips + draw_extras(pickup, rng), NUMERIC_MAX["trip_total"])
    del pickup
    out["trip_seconds"][:] = with_value(np.minimum(np.rint(seconds), NUMERIC_MAX["trip_seconds"]),
                                        -1, T.SECONDS_UNKNOWN_SHARE, rng)
    del seconds
    out["trip_miles"][:] = with_value(np.minimum(np.rint(miles), NUMERIC_MAX["trip_miles"]), 0,
                                      T.MILES_ZERO_SHARE, rng)
    return pd.DataFrame(table.T, columns=names, copy=False)


def world_of(seed: int, drift: float = 1.0) -> World:
    """The world of data seed ``seed``: its random walks draw from the fourth child of
    ``SeedSequence(seed)`` (the first two simulate the years, the third held-out taxis)."""
    child = np.random.SeedSequence(seed).spawn(4)[3]
    return World(drift=float(drift), seed=int(child.generate_state(1)[0]))


def check_drift(drift: float) -> None:
    """One clear error for a bad drift size."""
    if isinstance(drift, bool) or not isinstance(drift, (int, float)) or not 0 <= drift <= 5:
        raise ConfigError(f"taxi_sim: dataset.drift must be a number in [0, 5] (got {drift!r})",
                          "use 1 (the argued drift), 0 (no drift) or e.g. 2")


def simulate_years(n_private: int, n_public: int, seed: int,
                   scoring_year: str = DEFAULT_SCORING_YEAR, drift: float = 1.0
                   ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(private, public) years: the private year is the scoring-year preset
    (:data:`SCORING_YEARS`), the public one 2019, both of the world :func:`world_of`
    ``(seed, drift)``; each year draws from its own child of ``SeedSequence(seed)``."""
    scoring_year = str(scoring_year)
    if scoring_year not in SCORING_YEARS:
        raise ConfigError(f"taxi_sim: unknown scoring year {scoring_year!r}",
                          f"use one of {list(SCORING_YEARS)} (dataset.scoring_year)")
    check_drift(drift)
    world = world_of(seed, drift)
    public_seed, private_seed = np.random.SeedSequence(seed).spawn(2)
    private = simulate_trips(n_private, np.random.default_rng(private_seed), scoring_year, world)
    public = simulate_trips(n_public, np.random.default_rng(public_seed), "public", world)
    return private, public
