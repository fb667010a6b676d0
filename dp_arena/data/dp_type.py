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
3. **Fallbacks**: when no class passes the floor, the broad family (numbers, dates, times) whose
   summed count passes a floor for a sum (:func:`family_type`), else text, which loses nothing;
   an integer type whose non-integer class reads above 1% of the column plus one noise scale
   becomes a number (:func:`whole_numbers`: an integer type would lose every decimal).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dp_arena.data.datetimes import MIXED
from dp_arena.data.infer import CLASSES, DATE_CLASSES, TIME_CLASSES, choose_type, value_classes
from dp_arena.privacy.release import Releaser

#: chance that some empty value class passes the type histogram's noise floor (per column: at
#: 0.01, one proposal in 20 on an 11-column table typed some column as text)
TYPE_BETA = 1e-3


def dp_type(name: str, values: pd.Series, releaser: Releaser, epsilon: float,
            bound: int) -> tuple[str, float]:
    """The column's type from a Laplace histogram of its value classes (module docstring,
    step 1), and the noisy count of present values (post-processing)."""
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
    return chosen, total


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
