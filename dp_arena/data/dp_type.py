"""The type of a private column, chosen by DP: one Laplace histogram of its value classes.

Algorithm (:func:`dp_type`)
---------------------------
Every present value of the column falls in exactly one class of the fixed public list
:data:`dp_arena.data.infer.CLASSES` (date formats, times of day, integers, decimals, text), and
every missing value in one more cell. A person's rows change this histogram by at most
``bound`` in L1 (``bound`` rows per person), so Laplace noise of scale ``bound / epsilon`` on
every cell (the domain is fixed and public: no cell exists in one neighbour only) is
``epsilon``-DP, pure. Everything after the release is post-processing:

1. **Noise floor** (:func:`floored`): a cell counts only above ``scale * ln(cells / beta)``, so
   with probability ``1 - beta / 2`` no empty class passes (Laplace tail ``exp(-t/scale)/2``
   per cell, union bound); the positive noise of 13 empty cells would otherwise add up to a
   share that makes every column text.
2. **Type**: :func:`dp_arena.data.infer.choose_type` on the floored counts: the most specific
   type whose classes hold 99% of the remaining mass. A text column is read as a date only if
   99% of its noisy mass parses as one: at these scales the chance is about ``exp(-n/scale)``.
3. **Missing values** (:func:`without_code`): the column gets a missing code only when the
   noisy count of rows the type leaves without a code (the missing cell plus the classes the
   type does not parse) passes the noise floor of that sum; a Yes/No column without missing
   values stays binary, and no mechanism can invent a missing cell in it.
4. **Fallbacks**: when no class passes the floor, the broad family (numbers, dates, times) whose
   summed count passes a floor for a sum (:func:`family_type`), else text, which loses nothing;
   an integer type whose non-integer class reads above 1% of the column plus one noise scale
   becomes a number (:func:`whole_numbers`: an integer type would lose every decimal).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dp_arena.data.datetimes import MIXED
from dp_arena.data.infer import (
    CLASSES,
    COVERS,
    DATE_CLASSES,
    TIME_CLASSES,
    choose_type,
    present,
    value_classes,
)
from dp_arena.privacy.release import Releaser

#: chance that some empty value class passes the type histogram's noise floor (per column: at
#: 0.01, one proposal in 20 on an 11-column table typed some column as text)
TYPE_BETA = 1e-3


def dp_type(name: str, values: pd.Series, releaser: Releaser, epsilon: float,
            bound: int) -> tuple[str, float, bool]:
    """The column's type from a Laplace histogram of its value classes (module docstring,
    step 1), the noisy count of present values and whether the column has missing values
    (:func:`has_missing`; both post-processing)."""
    classes = value_classes(values)
    counts = np.bincount(classes, minlength=len(CLASSES)).astype(float)
    missing = float(len(values) - len(classes))
    scale = bound / epsilon
    noisy = releaser.laplace(f"{name}: type", np.append(counts, missing), sensitivity=bound,
                             scale=scale, note=f"{len(CLASSES)} public value classes + missing")
    classes_noisy = noisy[:-1]
    total = max(float(classes_noisy.sum()), 0.0)
    above = floored(classes_noisy, scale)
    chosen = choose_type(above) if above.any() else family_type(classes_noisy, scale)
    if chosen == "integer" and not whole_numbers(classes_noisy, scale, total):
        chosen = "number"
    return chosen, total, without_code(noisy, chosen, scale)


def without_code(noisy: np.ndarray, type_name: str, scale: float,
                 beta: float = TYPE_BETA) -> bool:
    """Whether the rows the chosen type leaves without a code (missing, or of a class it does
    not parse: the ``N`` of an integer column) pass the noise floor of a sum of ``m`` cells,
    ``scale * (ln(1 / (2 beta)) + m - 1)`` (the conservative sum bound of
    :func:`family_type`). Post-processing of the type histogram (``noisy``: its class cells,
    then the missing cell)."""
    outside = [i for i in range(len(CLASSES)) if i not in COVERS[type_name]]
    cells = len(outside) + 1
    mass = float(noisy[-1] + noisy[outside].sum())
    return has_missing(mass, scale, beta, cells)


def dp_missing(name: str, values: pd.Series, releaser: Releaser, epsilon: float,
               bound: int) -> bool:
    """Whether a column whose type a hint fixed has missing values: a Laplace histogram of two
    public cells (present, missing; L1 sensitivity ``bound``), then :func:`has_missing`."""
    missing = float(len(values) - len(present(values)))
    noisy = releaser.laplace(f"{name}: missing", np.array([len(values) - missing, missing]),
                             sensitivity=bound, scale=bound / epsilon,
                             note="present and missing values")
    return has_missing(float(noisy[1]), bound / epsilon)


def has_missing(noisy_missing: float, scale: float, beta: float = TYPE_BETA,
                cells: int = 1) -> bool:
    """Whether a noisy count of missing values (a sum of ``cells`` Laplace cells) says the
    column has some: above the noise floor ``scale * (ln(1 / (2 beta)) + cells - 1)`` (one
    cell: a column without missing values passes with probability ``beta``). Post-processing. A column whose few missing values stay under the
    floor gets no missing code: loading drops those rows, counts them and refuses above
    ``dataset.max_loss`` with the fix (``allow_missing`` as a hint)."""
    return noisy_missing > scale * (math.log(1.0 / (2.0 * beta)) + cells - 1)


#: classes that make a family (the broad kind of a column), for :func:`family_type`
FAMILIES = {"integer": ("integer", "number"), MIXED: DATE_CLASSES, "%H:%M:%S": TIME_CLASSES}


def family_type(noisy: np.ndarray, scale: float, beta: float = TYPE_BETA) -> str:
    """The type of a column none of whose classes passed the noise floor: the first family
    (numbers, dates, times of day) whose summed noisy count passes a floor for a sum of ``k``
    Laplace draws (``scale * (ln(families / beta) + k)``, conservative: the sum's tail is
    lighter than that of ``k`` scales of one draw), typed broadly (integer, to be refined by
    :func:`whole_numbers`; ``mixed`` dates, which parse every date class; times with seconds,
    which parse both time classes); else text. Post-processing of the released counts: a
    numeric column split between whole and decimal numbers (the taxi miles at ``--epsilon
    0.1``: 34% / 66% of 15,002 rows, each under the floor of about 10,400) is still a number."""
    for type_name, members in FAMILIES.items():
        total = float(sum(noisy[CLASSES.index(c)] for c in members))
        if total > scale * (math.log(len(FAMILIES) / beta) + len(members)):
            return type_name
    return "text"


def whole_numbers(noisy: np.ndarray, scale: float, total: float) -> bool:
    """Whether the noisy count of non-integer numbers stays under 1% of the column and one
    noise scale: the noise floor hides a class of fewer than ``scale * ln(cells / beta)``
    values, and an integer type would lose every such value (a rainfall column of 90% zeros
    and 10% decimals), so its count is read raw for this one choice (post-processing)."""
    return float(noisy[CLASSES.index("number")]) <= 0.01 * total + scale


def floored(noisy: np.ndarray, scale: float, beta: float = TYPE_BETA) -> np.ndarray:
    """Noisy class counts with every count under ``scale * ln(cells / beta)`` set to 0: an
    empty class passes with probability at most ``beta / 2`` over all cells (Laplace tail
    ``exp(-t / scale) / 2`` per cell, union bound), so the noise of the empty classes does not
    add up to a share that makes :func:`choose_type` fall back to text (13 empty cells at
    scale 1,100 would add about 7,000 rows of positive noise once clipped)."""
    return np.where(noisy > scale * math.log(len(noisy) / beta), noisy, 0.0)
