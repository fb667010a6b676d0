"""What a raw CSV column looks like: the class of each value and the type the column can take.

Algorithms
----------
- **Value classes** (:func:`value_classes`): every present (non-missing, see :func:`present`)
  value (blanks stripped) gets exactly one class of :data:`CLASSES`, the first (most specific)
  it fits. A value fits a class when it has the class's shape (a regular expression of
  :data:`SHAPES`) and parses: :func:`pandas.to_numeric` for numbers (finite; ``integer`` when
  whole), :func:`pandas.to_datetime` with the class's format (``errors="coerce"``) for dates
  and times, pandas' ISO parser for ``ISO8601`` (``Z`` and offsets allowed). All steps are
  vectorised and each parser sees only the not-yet-classified values of its shape (a failing
  ``to_datetime`` costs about 2 s per 10^6 values; a shape test 0.2 s). Numbers are tried
  first: no number has a date shape, so the order changes nothing but time. Whatever is left
  is ``text``.
- **Type choice** (:func:`choose_type`): from a histogram of classes, exact or noisy
  (negative counts clipped to 0), the first type of :data:`TYPES` whose covered classes
  (:data:`COVERS`) hold at least ``min_fit`` of the mass; ``text`` when none does. Pure
  post-processing: given a DP release of the class counts it costs no further budget.
  :data:`TYPES` order (most specific first): the single date formats (days, then months), then
  ``ISO8601`` (date-times, which also covers plain ISO dates), ``mixed`` (every date class),
  the two times of day, ``integer``, ``number`` (covers integers), ``text`` (covers all).

Privacy: nothing here is randomised. The class histogram of a column is a count query with
L1 sensitivity 1 per row a person contributes (a row's value is in exactly one class), so a
caller releases it with ``Releaser.laplace(..., sensitivity=bound)`` and passes the noisy
counts to :func:`choose_type`.

The older exponential-mechanism scores (:func:`type_misfits`, :func:`type_scores`,
:data:`SCORE_SENSITIVITY`) are kept for :mod:`dp_arena.data.propose` and are computed over the
same :data:`TYPES` from the value classes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dp_arena.data.datetimes import ISO8601, MIXED, MIXED_FORMATS, parse_format
from dp_arena.data.datetimes import SHAPES as DATE_SHAPES

#: Date classes (a strftime pattern, or ``ISO8601`` for date-times), tried in this order: the
#: formats a ``mixed`` column may hold.
DATE_CLASSES: tuple[str, ...] = MIXED_FORMATS
TIME_CLASSES = ("%H:%M", "%H:%M:%S")
#: Value classes, most specific first; a value's class is the first it fits.
CLASSES: tuple[str, ...] = (*DATE_CLASSES, *TIME_CLASSES, "integer", "number", "text")
#: The shape (regular expression, matched on stripped text) a value of each class has.
SHAPES: dict[str, str] = {
    **DATE_SHAPES,
    "number": r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$",
}

_INDEX = {c: i for i, c in enumerate(CLASSES)}
#: Candidate column types, most specific first (:func:`choose_type` takes the first that fits).
TYPES: tuple[str, ...] = ("%Y-%m-%d", "%m/%d/%Y", "%b %d %Y", "%b-%Y", "%Y-%m", "%B %Y",
                          ISO8601, MIXED, *TIME_CLASSES, "integer", "number", "text")
#: Which classes (indices into :data:`CLASSES`) parse as each type.
COVERS: dict[str, frozenset[int]] = {
    **{t: frozenset({_INDEX[t]}) for t in (*DATE_CLASSES, *TIME_CLASSES) if t != ISO8601},
    ISO8601: frozenset({_INDEX[ISO8601], _INDEX["%Y-%m-%d"]}),
    MIXED: frozenset(_INDEX[c] for c in DATE_CLASSES),
    "integer": frozenset({_INDEX["integer"]}),
    "number": frozenset({_INDEX["integer"], _INDEX["number"]}),
    "text": frozenset(range(len(CLASSES))),
}
#: Datetime resolution of each date/time type. Date-times get ``hour``, not ``minute``: a year
#: is 8,760 hours but 525,600 minutes, too many codes for marginal-based mechanisms when the
#: column has no bins.
RESOLUTION: dict[str, str] = {
    "%Y-%m-%d": "day", "%m/%d/%Y": "day", "%b %d %Y": "day", MIXED: "day",
    "%b-%Y": "month", "%Y-%m": "month", "%B %Y": "month",
    ISO8601: "hour", "%H:%M": "hour_of_day", "%H:%M:%S": "hour_of_day",
}
#: Score penalty (share of present values) of the less specific types in :func:`type_scores`.
PENALTY = {"number": 0.1, "text": 0.5}


def present(values: pd.Series) -> pd.Series:
    """The non-missing values (NaN and blank strings are missing)."""
    s = values[values.notna()]
    if s.dtype == object or pd.api.types.is_string_dtype(s.dtype):
        s = s[s.astype(str).str.strip() != ""]
    return s


def as_numbers(values: pd.Series) -> pd.Series:
    return pd.to_numeric(values, errors="coerce")


def value_classes(values: pd.Series) -> np.ndarray:
    """For each present value of ``values`` (in :func:`present` order), the index in
    :data:`CLASSES` of the first class it fits (int64 array)."""
    text = present(values).astype(str).str.strip().reset_index(drop=True)
    out = np.full(len(text), _INDEX["text"], dtype=np.int64)
    numeric = np.flatnonzero(text.str.match(SHAPES["number"]).to_numpy(dtype=bool))
    nums = pd.to_numeric(text.iloc[numeric], errors="coerce").to_numpy(dtype=float)
    finite = np.isfinite(nums)
    whole = finite & (nums == np.floor(np.where(finite, nums, 0.0)))
    out[numeric[whole]] = _INDEX["integer"]
    out[numeric[finite & ~whole]] = _INDEX["number"]
    todo = text.str.contains(r"\d", regex=True).to_numpy(dtype=bool, copy=True)
    todo[numeric[finite]] = False
    for name in (*DATE_CLASSES, *TIME_CLASSES):
        if not todo.any():
            break
        where = np.flatnonzero(todo)[fits_class(text[todo], name)]
        out[where] = _INDEX[name]
        todo[where] = False
    return out


def fits_class(text: pd.Series, name: str) -> np.ndarray:
    """Which stripped strings have the shape of the date/time class ``name`` and parse as it
    (boolean array)."""
    shaped = text.str.match(SHAPES[name]).to_numpy(dtype=bool)
    ok = np.zeros(len(text), dtype=bool)
    if shaped.any():
        ok[shaped] = parse_format(text[shaped], name).notna().to_numpy()
    return ok


def class_counts(values: pd.Series) -> np.ndarray:
    """How many present values fall in each class of :data:`CLASSES` (float array)."""
    return np.bincount(value_classes(values), minlength=len(CLASSES)).astype(float)


def covered(class_counts: np.ndarray, type_name: str) -> float:
    """Mass of the classes that parse as ``type_name``."""
    return float(np.asarray(class_counts, dtype=float)[sorted(COVERS[type_name])].sum())


def choose_type(class_counts: np.ndarray, min_fit: float = 0.99) -> str:
    """The first type of :data:`TYPES` whose covered mass is at least ``min_fit`` of the
    total, after clipping negative counts to 0; ``text`` when none does or nothing is left.
    ``class_counts`` has one (exact or noisy) count per :data:`CLASSES` entry."""
    counts = np.clip(np.asarray(class_counts, dtype=float), 0.0, None)
    if counts.shape != (len(CLASSES),):
        raise ValueError(f"expected {len(CLASSES)} class counts, got shape {counts.shape}")
    total = counts.sum()
    if total <= 0:
        return "text"
    for type_name in TYPES:
        if covered(counts, type_name) >= min_fit * total:
            return type_name
    return "text"


def type_misfits(values: pd.Series) -> dict[str, int]:
    """Per candidate type of :data:`TYPES`, how many present values do not parse as it."""
    counts = class_counts(values)
    n = int(counts.sum())
    return {t: n - int(covered(counts, t)) for t in TYPES}


def type_scores(misfits: dict[str, int], n_present: int) -> np.ndarray:
    """Exponential-mechanism scores, one per :data:`TYPES` entry (higher is better):
    ``-(misfits + penalty * n_present)``. Adding or removing one row changes each score by at
    most ``1 + max(PENALTY) = 1.5`` (:data:`SCORE_SENSITIVITY`)."""
    return np.array([-(misfits[t] + PENALTY.get(t, 0.0) * n_present) for t in TYPES], dtype=float)


SCORE_SENSITIVITY = 1.0 + max(PENALTY.values())


def resolution_of(type_name: str) -> str | None:
    """The datetime resolution of a date/time type (None for integer, number, text)."""
    return RESOLUTION.get(type_name)
