"""What a raw CSV column looks like: the value types it can parse as, for schema proposals.

Candidate types, most specific first: each date/time format of :data:`DATE_FORMATS`,
``integer``, ``number``, ``text``. :func:`type_misfits` counts, per candidate, the present
(non-missing) values that do not parse as it. The proposal (:mod:`harness.data.propose`) picks a
type from these counts: exactly for public data or the ``--from-private`` opt-in, with the
exponential mechanism otherwise.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: (format, datetime resolution) for date/time strings, tried in order.
DATE_FORMATS = (("%Y-%m-%d", "day"), ("%Y-%m-%d %H:%M:%S", "hour"), ("%Y-%m-%d %H:%M", "hour"),
                ("%m/%d/%Y", "day"), ("%H:%M", "hour_of_day"), ("%H:%M:%S", "hour_of_day"))
TYPES = (*(f for f, _ in DATE_FORMATS), "integer", "number", "text")
#: Score penalty (share of present values) of the less specific types: text wins only when
#: many values fail every other type, number only when many fail integer.
PENALTY = {"number": 0.1, "text": 0.5}


def present(values: pd.Series) -> pd.Series:
    """The non-missing values (NaN and blank strings are missing)."""
    s = values[values.notna()]
    if s.dtype == object:
        s = s[s.astype(str).str.strip() != ""]
    return s


def as_numbers(values: pd.Series) -> pd.Series:
    return pd.to_numeric(values, errors="coerce")


def type_misfits(values: pd.Series) -> dict[str, int]:
    """Per candidate type, how many present values do not parse as it."""
    s = present(values)
    text = s.astype(str).str.strip()
    out: dict[str, int] = {}
    for fmt, _res in DATE_FORMATS:
        out[fmt] = int(pd.to_datetime(text, format=fmt, errors="coerce").isna().sum())
    nums = as_numbers(text)
    finite = nums.notna() & np.isfinite(nums.fillna(0))
    out["integer"] = int((~(finite & (nums == np.floor(nums.fillna(0))))).sum())
    out["number"] = int((~finite).sum())
    out["text"] = 0
    return out


def type_scores(misfits: dict[str, int], n_present: int) -> np.ndarray:
    """Exponential-mechanism scores, one per :data:`TYPES` entry (higher is better):
    ``-(misfits + penalty * n_present)``. Adding or removing one row changes each score by at
    most ``1 + max(PENALTY) = 1.5`` (:data:`SCORE_SENSITIVITY`)."""
    return np.array([-(misfits[t] + PENALTY.get(t, 0.0) * n_present) for t in TYPES], dtype=float)


SCORE_SENSITIVITY = 1.0 + max(PENALTY.values())


def resolution_of(type_name: str) -> str | None:
    """The datetime resolution of a date format type (None for integer, number, text)."""
    return dict(DATE_FORMATS).get(type_name)
