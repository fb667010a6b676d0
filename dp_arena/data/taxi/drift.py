"""Year-to-year drift of the simulated taxi city (``taxi_sim``): a process over every structure
a mechanism can copy from the public year, each size argued from evidence.

The simulator's *base* year is the real 2013-2016 sample as calibrated (its trips' mean year,
:data:`BASE_YEAR`). Every other year is the base moved by ``t = year - BASE_YEAR`` years of
drift, times the run's drift size ``d`` (``dataset.drift``: 1 = the argued sizes, 0 = no drift,
so the public year is the scoring year redrawn):

- **Trends** (deterministic, linear in ``t``): the cash share, the share of trips touching an
  airport and the share of pickups downtown follow the real sample's own least-squares lines
  (:data:`SHARE_SLOPES`, per year; ``benchmarks/calibrate_taxi_sim.py`` recomputes them);
  fares grow by :data:`FARE_LOG_SLOPE` a year (the sample's log-fare slope), tip shares by
  :data:`TIP_SHARE_LOG_SLOPE`, the card tip rate by :data:`CARD_TIP_RATE_SLOPE`; trips per
  taxi-week and the company mix move as the City's yearly totals say (anchored at 2016; see
  :mod:`dp_arena.data.taxi.sim`).
- **Random walks** (Gaussian increments with variance ``(d * size)^2`` per year, drawn from
  the world's own seed, so the 2019 and 2020 years share their first years of steps):
  a log effect per community area on trips from and to it (:data:`AREA_LOG_SD` per year by
  zone, from the City's per-area pickups Sep-Nov 2015 vs 2016, :data:`AREA_SEP_NOV_2015_2016`:
  the trip-weighted spread of the areas' log growth around their zone's); a log effect per
  (pickup zone, dropoff zone) cell (:data:`PAIR_LOG_SD`) and per (pickup zone, hour) cell, the
  shift profile per area (:data:`HOUR_LOG_SD`), both fitted so a 2-year random walk
  reproduces the real sample's 2013-vs-2015 total variation distance at the slices' sizes
  (sampling noise included; ``benchmarks/drift_taxi_sim.py`` prints the evidence).

Sources: the City of Chicago Taxi Trips data as aggregated by the repository
toddwschneider/chicago-taxi-data (MIT licence), ``data/community_areas_annual_growth.csv``
(pickups per area, Sep-Nov 2015 and 2016) and ``data/community_area_totals.csv`` (pickups per
area, 2013 to November 2016), at commit 2a3b664b45312a497470e41b820083ab774b46fe.

Not drifted, for lack of evidence (the sample has no taxi id): the taxi-level traits' spreads
(home and hour tilts, length trait, cash propensity) and company loyalty; trip-level
conditionals of miles and seconds given the distance class.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

#: Mean trip year of the real sample the base year is calibrated to (15,002 trips, 2013-2016).
BASE_YEAR = 2014.128
#: Calendar year of each simulated year.
CALENDAR_YEAR: dict[str, float] = {"base": BASE_YEAR, "2016": 2016.0, "private": 2016.0,
                                   "public": 2019.0, "2020": 2020.0}
#: The random walks' grid: increments between consecutive points (the years a world uses).
WALK_YEARS: tuple[float, ...] = (BASE_YEAR, 2016.0, 2019.0, 2020.0)

#: Real sample's least-squares slope per year of each trip share (cash, touches an airport,
#: picked up downtown), and its fit at the sample's mean year (the pooled share).
SHARE_SLOPES: dict[str, float] = {"cash": -0.06607, "airport": 0.00919, "downtown": 0.01292}
#: Real sample: slope of log(fare) on the trip's year (fares > 0), of the card trips' tipped
#: indicator, and of log(tip / fare) over tipped card trips.
FARE_LOG_SLOPE = 0.0213
CARD_TIP_RATE_SLOPE = 0.0057
TIP_SHARE_LOG_SLOPE = 0.0037

#: Per-year log sd of an area's trips, by zone (downtown, near downtown, airports, rest): the
#: trip-weighted sd of log(pickups Sep-Nov 2016 / Sep-Nov 2015) around the zone's own.
AREA_LOG_SD: tuple[float, ...] = (0.040, 0.126, 0.070, 0.154)
#: Per-year log sd of a (pickup zone, dropoff zone) cell: a 2-year walk of 0.121 reproduces
#: the sample's 2013-vs-2015 zone x zone TVD 0.052 (same-population null 0.027 +- 0.006).
PAIR_LOG_SD = 0.086
#: Per-year log sd of a (pickup zone, hour) cell: a 2-year walk of 0.088 reproduces the
#: sample's 2013-vs-2015 zone x hour TVD 0.082 (null 0.074 +- 0.006: within noise, so this is
#: the point estimate, not a detected drift).
HOUR_LOG_SD = 0.062

N_ZONES = 4
N_AREA_CODES = 78
N_HOURS = 24

AREA_SEP_NOV_2015_2016: dict[int, tuple[int, int]] = {
    1: (20319, 11998), 2: (20188, 13217), 3: (83290, 49258), 4: (23493, 13393),
    5: (28798, 15127), 6: (333232, 196032), 7: (250672, 146076), 8: (1814924, 1282666),
    9: (148, 127), 10: (3494, 2067), 11: (8313, 6355), 12: (1050, 811), 13: (2947, 1958),
    14: (11857, 7456), 15: (3856, 3045), 16: (18841, 12725), 17: (1185, 448), 18: (241, 77),
    19: (1627, 1071), 20: (842, 560), 21: (13869, 7457), 22: (52338, 26078), 23: (2395, 1564),
    24: (163100, 85393), 25: (2679, 626), 26: (367, 135), 27: (838, 622), 28: (467459, 334848),
    29: (1766, 1170), 30: (1098, 599), 31: (4839, 2468), 32: (1233935, 945945),
    33: (134935, 103322), 34: (5495, 3609), 35: (7223, 3143), 36: (730, 428), 37: (343, 191),
    38: (1825, 1107), 39: (5809, 3119), 40: (584, 311), 41: (19502, 10027), 42: (1716, 756),
    43: (1766, 917), 44: (1465, 782), 45: (291, 130), 46: (448, 192), 47: (61, 35),
    48: (271, 129), 49: (1868, 980), 50: (72, 39), 51: (193, 149), 52: (80, 28), 53: (168, 69),
    54: (20, 8), 55: (38, 44), 56: (121942, 74553), 57: (363, 164), 58: (871, 433),
    59: (3546, 3112), 60: (2052, 1069), 61: (849, 471), 62: (391, 186), 63: (264, 126),
    64: (1174, 199), 65: (276, 120), 66: (399, 159), 67: (370, 191), 68: (556, 234),
    69: (757, 449), 70: (312, 186), 71: (453, 281), 72: (130, 65), 73: (254, 164),
    74: (35, 17), 75: (129, 110), 76: (419722, 303696), 77: (58147, 33738),
}
AREA_PICKUPS_2013_2016: dict[int, int] = {
    1: 352562, 2: 338942, 3: 1545830, 4: 456702, 5: 627140, 6: 6466521, 7: 5194354,
    8: 29242787, 9: 2945, 10: 47125, 11: 118344, 12: 20922, 13: 54082, 14: 204555, 15: 72558,
    16: 361753, 17: 16478, 18: 5258, 19: 27721, 20: 14002, 21: 271543, 22: 1136880, 23: 40110,
    24: 3414749, 25: 46609, 26: 5746, 27: 14085, 28: 7684181, 29: 13205, 30: 15665, 31: 90237,
    32: 19192786, 33: 2015385, 34: 101473, 35: 118413, 36: 11875, 37: 4812, 38: 27982,
    39: 102312, 40: 9228, 41: 344843, 42: 32161, 43: 30798, 44: 19379, 45: 4071, 46: 6422,
    47: 880, 48: 5336, 49: 14590, 50: 1433, 51: 3243, 52: 707, 53: 2160, 54: 409, 55: 554,
    56: 1480058, 57: 6720, 58: 13863, 59: 74688, 60: 37808, 61: 12404, 62: 6133, 63: 4416,
    64: 8861, 65: 4563, 66: 5816, 67: 5170, 68: 8459, 69: 13223, 70: 4955, 71: 6332, 72: 2072,
    73: 3445, 74: 478, 75: 2089, 76: 5223492, 77: 1000794,
}


@dataclass(frozen=True)
class Fields:
    """The random walks at one year: log effects per area code (78,), per (zone, zone) (4, 4)
    and per (zone, hour) (4, 24)."""

    area: np.ndarray
    pair: np.ndarray
    hour: np.ndarray


def years_from_base(year: str) -> float:
    """``t``: calendar years between the base year and ``year``."""
    return CALENDAR_YEAR[year] - BASE_YEAR


def share_at(name: str, pooled: float, year: str, drift: float) -> float:
    """A trend share at ``year``: the pooled (base) share plus ``drift * t`` years of its
    real slope, clipped to [0.01, 0.99]."""
    return float(np.clip(pooled + drift * SHARE_SLOPES[name] * years_from_base(year),
                         0.01, 0.99))


def zone_of_code(codes: np.ndarray) -> np.ndarray:
    """Zone (0 downtown, 1 near downtown, 2 airports, 3 rest incl. unknown) of area codes."""
    codes = np.asarray(codes)
    return np.select([np.isin(codes, (8, 32)), np.isin(codes, (6, 7, 24, 28, 33)),
                      np.isin(codes, (56, 76))], [0, 1, 2], 3)


@lru_cache(maxsize=32)
def fields(year: str, drift: float, seed: int) -> Fields:
    """The random walks at ``year`` for a world of drift size ``drift`` and seed ``seed``:
    standard-normal increments for each step of :data:`WALK_YEARS` (drawn in order from
    ``default_rng(seed)``, so every year of one world shares the earlier steps) scaled by
    ``drift * size * sqrt(step years)``, summed up to ``year``. Read-only (cached)."""
    rng = np.random.default_rng(seed)
    target = CALENDAR_YEAR[year]
    area_sd = np.asarray(AREA_LOG_SD)[zone_of_code(np.arange(N_AREA_CODES))]
    area, pair, hour = (np.zeros(N_AREA_CODES), np.zeros((N_ZONES, N_ZONES)),
                        np.zeros((N_ZONES, N_HOURS)))
    for start, end in zip(WALK_YEARS[:-1], WALK_YEARS[1:]):
        steps = (rng.standard_normal(N_AREA_CODES), rng.standard_normal((N_ZONES, N_ZONES)),
                 rng.standard_normal((N_ZONES, N_HOURS)))
        if end > target:
            break
        scale = drift * np.sqrt(end - start)
        area = area + scale * area_sd * steps[0]
        pair = pair + scale * PAIR_LOG_SD * steps[1]
        hour = hour + scale * HOUR_LOG_SD * steps[2]
    out = Fields(area, pair, hour)
    for a in (out.area, out.pair, out.hour):
        a.setflags(write=False)
    return out


def pair_multiplier(f: Fields) -> np.ndarray:
    """(78, 78) multipliers of the pickup x dropoff weights: exp(area[p] + area[d] +
    pair[zone p, zone d])."""
    zone = zone_of_code(np.arange(N_AREA_CODES))
    return np.exp(f.area[:, None] + f.area[None, :] + f.pair[zone][:, zone])


def hour_multiplier(f: Fields, hour_profile: np.ndarray) -> np.ndarray:
    """(4, 24) multipliers of a zone's pickups by start hour, exp(hour[z, h]) normalised so
    each zone keeps its total over the city's ``hour_profile`` (the field moves when a zone's
    trips start, not how many it has)."""
    m = np.exp(f.hour)
    return m / (m @ hour_profile)[:, None]


def expected_empty_groups(area_shares: np.ndarray, shift_shares: np.ndarray,
                          n_trips: int) -> float:
    """Expected (pickup area, shift) groups with no trip among ``n_trips`` independent trips
    whose area and shift are independent with the given shares: sum of (1 - p_a q_s)^n."""
    p = np.outer(np.asarray(area_shares, float), np.asarray(shift_shares, float)).ravel()
    return float(np.exp(n_trips * np.log1p(-np.minimum(p, 1 - 1e-15))).sum())
