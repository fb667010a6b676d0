"""Chicago's 77 community areas as the taxi simulator places them: a rough centroid per area
(miles east and north of the Loop) and the *distance class* of an area pair (an unknown end,
the same area, or a straight-line distance band), by which the simulator and
``benchmarks/fit_taxi_sim_tables.py`` read the real trips' miles, seconds and fares."""

from __future__ import annotations

import numpy as np

N_AREA_CODES = 78  # index 0 = unknown (-1), index k = community area k
#: Straight-line distance bands (miles) between area centroids of :func:`distance_class`.
DISTANCE_BANDS: tuple[float, ...] = (1.5, 3.0, 6.0, 12.0)

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


def distance_class(pickup: np.ndarray, dropoff: np.ndarray) -> np.ndarray:
    """Distance class of area pairs (code indices): 0 an unknown end, 1 the same area,
    2.. the straight-line distance band (:data:`DISTANCE_BANDS`)."""
    pickup, dropoff = np.asarray(pickup), np.asarray(dropoff)
    band = 2 + np.searchsorted(np.asarray(DISTANCE_BANDS),
                               np.nan_to_num(area_distances()[pickup, dropoff]), side="right")
    return np.where((pickup == 0) | (dropoff == 0), 0, np.where(pickup == dropoff, 1, band))
