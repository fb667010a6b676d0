"""Who drives a simulated trip and how it is paid, by place and time (``taxi_sim``):
the company mix and the cash share per pickup zone and 8-hour block, fitted from the real
sample by ``benchmarks/fit_taxi_sim_tables.py`` (tables in :mod:`dp_arena.data.taxi.sim_tables`).

Algorithms
----------
- **Zones** (:func:`pickup_zone`): the 77 community areas in four zones the 15,002-trip sample
  can support (each holds at least 1,000 real trips): downtown (the Loop 32, Near North 8),
  near downtown (6, 7, 24, 28, 33), the airports (O'Hare 76, Midway 56), the rest of the city
  together with unknown (-1). A single area outside downtown has too few trips for a mix.
- **Company classes**: 0 = unknown company (34% of real trips record none), 1..R = the named
  companies with at least ``MIN_NAMED_TRIPS`` real trips, in order of trips (a few
  affiliations hold most trips), R + 1 = the small companies (owner-operators), pooled.
- **Company mix by zone and block** (:func:`company_mix`): hierarchical shrinkage of the real
  counts, stated rule: the zone's mix is its counts plus ``SHRINK_TRIPS`` (200) pseudo-trips
  of the city's mix; the (zone, block) mix is its counts plus 200 pseudo-trips of the zone's.
  A cell with thousands of trips keeps its own mix; a sparse one falls back to its zone.
- **Codes** (:func:`company_codes`): class 0 -> code 0, class r -> ``NAMED_CODES[r - 1]``, the
  small companies -> one of ``N_SMALL_COMPANIES`` codes, uniformly (that number gives the
  sample's count of distinct small companies among its 15,002 trips in expectation, trips
  being independent there; simulated taxis are loyal, so a simulated year shows fewer).
- **Cash** (:func:`cash_log_odds`): log-odds of paying cash = year base + the fitted zone
  offset + the fitted company-class offset (a logistic regression on the real trips, classes
  with fewer than 500 trips pooled) + the taxi's random effect; the base is solved (bisection,
  Gauss-Hermite over the random effect) so the drawn trips' expected cash share is the year's.
"""

from __future__ import annotations

import numpy as np

from dp_arena.data.taxi import sim_tables as T

DOWNTOWN_AREAS: tuple[int, ...] = (8, 32)
NEAR_DOWNTOWN_AREAS: tuple[int, ...] = (6, 7, 24, 28, 33)
AIRPORT_AREAS: tuple[int, ...] = (56, 76)
ZONE_NAMES: tuple[str, ...] = ("downtown", "near downtown", "airports", "rest of city")
N_BLOCKS = 3  # 8-hour blocks of the day, as in the challenge's shift
SHRINK_TRIPS = 200.0
MIN_NAMED_TRIPS = 10
MIN_CASH_CLASS_TRIPS = 500
N_CODES = 101
#: Codes of the named company classes 1..R (a fixed scramble of 1..100: a code says nothing
#: about a company's size, as the challenge's alphabetical coding).
CODE_ORDER: tuple[int, ...] = tuple(1 + (37 * r + 11) % 100 for r in range(100))


def pickup_zone(area_values: np.ndarray) -> np.ndarray:
    """Zone index (0..3, :data:`ZONE_NAMES`) of pickup areas given as schema values
    (-1, 1..77) or code indices (0 = unknown, 1..77): both agree on 1..77."""
    area = np.asarray(area_values)
    return np.select([np.isin(area, DOWNTOWN_AREAS), np.isin(area, NEAR_DOWNTOWN_AREAS),
                      np.isin(area, AIRPORT_AREAS)], [0, 1, 2], 3)


def class_counts() -> np.ndarray:
    """(zones, blocks, classes) real trips per company class."""
    table = np.zeros((len(ZONE_NAMES), N_BLOCKS, len(T.COMPANY_CLASS_TRIPS)))
    for (zone, block), counts in T.COMPANY_COUNTS_BY_ZONE_BLOCK.items():
        table[zone, block] = counts
    return table


def shrunk(counts: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """``counts`` (last axis) plus :data:`SHRINK_TRIPS` pseudo-trips of ``prior``, normalised."""
    mixed = counts + SHRINK_TRIPS * prior
    return mixed / mixed.sum(axis=-1, keepdims=True)


def company_mix(class_factor: np.ndarray | None = None) -> np.ndarray:
    """(zones, blocks, classes) company-class probabilities (see the module docstring);
    ``class_factor`` (classes,) multiplies the classes' weights (a year's drift)."""
    counts = class_counts()
    city = counts.sum(axis=(0, 1))
    city = city / city.sum()
    zone = shrunk(counts.sum(axis=1), city)
    mix = shrunk(counts, zone[:, None, :])
    if class_factor is not None:
        mix = mix * np.asarray(class_factor)[None, None, :]
        mix = mix / mix.sum(axis=-1, keepdims=True)
    return mix


def company_codes(classes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Company codes (0..100) of company classes; small companies drawn uniformly among
    :data:`~dp_arena.data.taxi.sim_tables.N_SMALL_COMPANIES` codes."""
    named = len(T.COMPANY_CLASS_TRIPS) - 2
    small = np.asarray(CODE_ORDER[named:named + T.N_SMALL_COMPANIES])
    lookup = np.array([0, *CODE_ORDER[:named]])
    out = lookup[np.minimum(classes, named)]
    is_small = classes == named + 1
    out[is_small] = small[rng.integers(0, len(small), size=int(is_small.sum()))]
    return out.astype(np.int64)


def company_class_of_code(codes: np.ndarray) -> np.ndarray:
    """Inverse of :func:`company_codes`: the class of each code (unused codes: small)."""
    named = len(T.COMPANY_CLASS_TRIPS) - 2
    lookup = np.full(N_CODES, named + 1)
    lookup[0] = 0
    lookup[np.asarray(CODE_ORDER[:named])] = np.arange(1, named + 1)
    return lookup[np.asarray(codes)]


def cash_offsets(zone: np.ndarray, company_class: np.ndarray) -> np.ndarray:
    """Fitted log-odds offsets of cash per trip: zone offset + company-class offset."""
    zone_offset = np.asarray(T.CASH_ZONE_OFFSETS)[zone]
    class_offset = np.asarray(T.CASH_CLASS_OFFSETS)[company_class]
    return zone_offset + class_offset


def solve_base(share: float, offsets: np.ndarray, effect_sd: float) -> float:
    """Base log-odds ``b`` with mean over trips of ``E[sigmoid(b + offset + e)] = share``,
    ``e ~ Normal(0, effect_sd)`` (Gauss-Hermite over ``e``, bisection over ``b``)."""
    values, weights = np.unique(np.round(offsets, 6), return_counts=True)
    weights = weights / weights.sum()
    nodes, gauss = np.polynomial.hermite_e.hermegauss(40)
    gauss = gauss / gauss.sum()
    lo, hi = -20.0, 20.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        p = 1.0 / (1.0 + np.exp(-(mid + values[:, None] + effect_sd * nodes[None, :])))
        mean = float(weights @ (p @ gauss))
        lo, hi = (mid, hi) if mean < share else (lo, mid)
    return 0.5 * (lo + hi)
