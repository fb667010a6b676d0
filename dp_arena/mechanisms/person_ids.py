"""Person ids for synthetic rows of user-level data: which synthetic rows belong to one person.

Row-level synthesizers (the PGM family, ``independent``) produce rows without persons; the
challenge's HOC score and any per-person statistic then depend on how rows are grouped into
persons. Three ways, all post-processing of synthetic rows, public data and, for the last,
one noisy count:

- :func:`dp_arena.mechanisms.base.assign_ids` (``public_sizes``): sizes from the public
  rows-per-person distribution, rows grouped at random (the baseline's way).
- :func:`ids_from_public_groups` (``public_groups``, the Minutemen write-up): the rows of each
  (pickup area, shift) group take the ids of the public rows of the same group.
- :func:`ids_from_public_profiles` (``public_profiles``): ``n_people`` synthetic persons, each
  a copy of a public person's *profile* (its rows' values of a few profile columns, e.g.
  pickup area and shift) scaled to the synthetic row count; rows are matched to persons with
  the same profile values, so persons keep the locality of real ones (a taxi works a few
  areas and shifts). The number of persons should come from :func:`noisy_person_count`
  (public data's count drifts from the private one; HOC punishes a wrong count).

Privacy argument
----------------
:func:`noisy_person_count` is the only function here that reads private data: the number of
distinct persons, whose sensitivity is 1 when one person is added or removed (the user-level
neighbouring relation), released with Gaussian noise ``sigma`` and charged to the ledger as
one Gaussian release of sensitivity 1. Everything else reads synthetic rows (already private),
public data and that noisy count: post-processing, no budget.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dp_arena.data.datasets import Dataset, count_persons
from dp_arena.errors import ConfigError
from dp_arena.privacy.release import Releaser

from .base import assign_ids, fresh_ids


def noisy_person_count(data: Dataset, sigma: float, release: Releaser) -> float:
    """The number of distinct persons in ``data.private`` plus ``N(0, sigma^2)``: one Gaussian
    release of L2 sensitivity 1 (one person changes the count by 1)."""
    if data.unit != "user" or data.id_column is None:
        raise ConfigError("a person count needs user-level data with an id column",
                          "use it only when the dataset's unit is user")
    true_count = count_persons(data)
    return float(release.gaussian(
        "person count", [true_count], 1.0, sigma, query="person count",
        note="distinct persons; sensitivity 1 under adding or removing one person")[0])


def apportion(weights: np.ndarray, total: int, cap: int | None,
              rng: np.random.Generator) -> np.ndarray:
    """Integer sizes in ``[1, cap]`` summing to ``total``, as nearly proportional to
    ``weights`` (> 0) as those bounds allow: the real sizes ``clip(scale * weights, 1, cap)``
    with the scale that makes them sum to ``total`` (bisection; the sum grows with the scale),
    then largest-remainder rounding with random tie-breaks.

    Needs ``len(weights) <= total <= len(weights) * cap``.
    """
    w = np.asarray(weights, dtype=float)
    n = len(w)
    hi = float(cap) if cap else float(total)
    if n == 0 or total < n or total > n * hi:
        raise ValueError(f"cannot split {total} rows into {n} persons of 1..{hi:g} rows")

    def sizes_at(scale: float) -> np.ndarray:
        return np.clip(scale * w, 1.0, hi)

    low, high = 0.0, total / w.min()  # sums n (<= total) and n * hi (>= total)
    for _ in range(200):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if sizes_at(mid).sum() < total else (low, mid)
    real = sizes_at(high)
    sizes = np.minimum(np.floor(real + 1e-9), hi).astype(np.int64)
    short = total - int(sizes.sum())
    if short > 0:  # largest remainders first, random among equals, only below the cap
        room = np.flatnonzero(sizes < hi)
        key = np.lexsort((rng.random(len(room)), -(real[room] - sizes[room])))
        sizes[room[key[:short]]] += 1
    elif short < 0:  # real sizes a hair above total after the 1e-9 guard: trim the largest
        key = np.lexsort((rng.random(n), -(sizes - 1)))
        sizes[key[:-short]] -= 1
    return sizes


def value_codes(a: pd.DataFrame, b: pd.DataFrame, columns: list[str]
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(codes_a, codes_b, n_values)``: per column of ``columns`` (axis 1), an integer code
    for each row of ``a`` and of ``b`` (equal values, equal codes), and each column's number
    of distinct values."""
    codes_a = np.zeros((len(a), len(columns)), dtype=np.int64)
    codes_b = np.zeros((len(b), len(columns)), dtype=np.int64)
    n_values = np.ones(len(columns), dtype=np.int64)
    for j, col in enumerate(columns):
        factor, uniques = pd.factorize(pd.concat([a[col], b[col]], ignore_index=True))
        codes_a[:, j], codes_b[:, j] = factor[:len(a)], factor[len(a):]
        n_values[j] = max(len(uniques), 1)
    return codes_a, codes_b, n_values


def level_key(codes: np.ndarray, n_values: np.ndarray, level: list[int]) -> np.ndarray:
    """One int64 key per row of ``codes`` for its values of the columns ``level`` (mixed
    radix; all zeros for no column)."""
    key = np.zeros(len(codes), dtype=np.int64)
    for j in level:
        key = key * n_values[j] + codes[:, j]
    return key


def match_by_key(row_keys: np.ndarray, slot_keys: np.ndarray,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A random maximum matching of rows to slots with equal keys: ``(rows, slots)``, index
    arrays of equal length (per key, ``min(#rows, #slots)`` pairs)."""
    def key_and_rank(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        order = np.lexsort((rng.random(len(keys)), keys))  # by key, random within a key
        sorted_keys = keys[order].astype(np.int64)
        rank = np.arange(len(keys)) - np.searchsorted(sorted_keys, sorted_keys, side="left")
        return order, sorted_keys, rank

    row_order, row_sorted, row_rank = key_and_rank(row_keys)
    slot_order, slot_sorted, slot_rank = key_and_rank(slot_keys)
    radix = max(len(row_keys), len(slot_keys)) + 1  # ranks are below this
    row_packed = row_sorted * radix + row_rank
    slot_packed = slot_sorted * radix + slot_rank
    _, row_at, slot_at = np.intersect1d(row_packed, slot_packed, assume_unique=True,
                                        return_indices=True)
    return row_order[row_at], slot_order[slot_at]


def profile_levels(n_columns: int) -> list[list[int]]:
    """Matching levels over ``n_columns`` profile columns (by position), strictest first: all
    of them, then each column alone, then none (any slot)."""
    levels = [list(range(n_columns))]
    if n_columns > 1:
        levels += [[j] for j in range(n_columns)]
    if n_columns:
        levels.append([])
    return levels


def ids_from_public_profiles(out: pd.DataFrame, data: Dataset, n_people: float | None,
                             profile: list[str], rng: np.random.Generator) -> np.ndarray:
    """Person ids for the synthetic rows ``out``: ``n_people`` persons (rounded, kept within
    what the row count and ``max_records_per_individual`` allow; ``None``: the row count over
    the public mean rows per person, no budget) whose sizes and ``profile`` values copy public
    persons.

    Each synthetic person copies a public person drawn at random (the template); sizes are the
    templates' row counts scaled to sum to ``len(out)`` (:func:`apportion`), and each person's
    *slots* are its template's rows (a random subset when scaled down, repeated when scaled
    up). Synthetic rows are matched at random to slots with the same values of all
    ``profile`` columns, the rest to slots with the same value of one column, then to any
    slot (:func:`match_by_key`). Without public persons every person is equally likely to
    get each row. Reads synthetic rows, public data and the given count only.
    """
    id_col = data.schema.id_column
    if id_col is None:
        raise ConfigError("person ids need a schema with an id column", "set the id column")
    n_rows = len(out)
    if n_rows == 0:
        return np.empty(0, dtype=np.int64)
    cap = data.max_records_per_individual
    public = data.public
    has_public = public is not None and id_col in public and len(public) > 0
    if n_people is None:  # public rows per person, no budget
        mean = 1.0
        if has_public:
            mean = float(public.groupby(id_col).size().mean())  # type: ignore[union-attr]
        n_people = n_rows / max(mean, 1.0)
    fewest = math.ceil(n_rows / cap) if cap else 1
    people = int(min(max(round(n_people), fewest, 1), n_rows))
    if not has_public:
        sizes = apportion(np.ones(people), n_rows, cap, rng)
        person = rng.permutation(np.repeat(np.arange(people), sizes))
        return fresh_ids(people, data, rng)[person]

    columns = [c for c in profile if c in out and c in public]  # type: ignore[operator]
    pub = public[[id_col, *columns]]  # type: ignore[index]
    pub = pub.iloc[rng.permutation(len(pub))]
    pub = pub.iloc[np.argsort(pub[id_col].to_numpy(), kind="stable")]  # shuffled within person
    pub_ids = pub[id_col].to_numpy()
    starts = np.flatnonzero(np.r_[True, pub_ids[1:] != pub_ids[:-1]])
    lengths = np.diff(np.r_[starts, len(pub)])
    template = rng.integers(len(starts), size=people)
    sizes = apportion(lengths[template], n_rows, cap, rng)
    slot_person = np.repeat(np.arange(people), sizes)
    within = np.arange(n_rows) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    slot_rows = starts[template][slot_person] + within % lengths[template][slot_person]
    row_codes, slot_codes, n_values = value_codes(out, pub.iloc[slot_rows], columns)

    person = np.full(n_rows, -1, dtype=np.int64)
    used = np.zeros(n_rows, dtype=bool)
    for level in profile_levels(len(columns)):
        free_rows, free_slots = np.flatnonzero(person < 0), np.flatnonzero(~used)
        if not len(free_rows):
            break
        r, s = match_by_key(level_key(row_codes[free_rows], n_values, level),
                            level_key(slot_codes[free_slots], n_values, level), rng)
        person[free_rows[r]] = slot_person[free_slots[s]]
        used[free_slots[s]] = True
    return fresh_ids(people, data, rng)[person]


def ids_from_public_groups(out: pd.DataFrame, data: Dataset, group_cols: list[str],
                           rng: np.random.Generator) -> np.ndarray:
    """Person ids lent by public rows: the synthetic rows of each group (e.g. pickup area x
    shift) take, in random order, the ids of the public rows of the same group (cycling when
    the synthetic group is larger); rows of groups absent from the public data get ids as
    :func:`dp_arena.mechanisms.base.assign_ids` does. Public ids are then replaced by fresh distinct
    ids in the id column's range, and no person gets more than the dataset's
    ``max_records_per_individual`` rows (overflow rows become new persons)."""
    id_col = data.schema.id_column
    public = data.public
    assert id_col is not None and public is not None
    lent = np.full(len(out), -1, dtype=np.int64)
    pub_groups = public.groupby(group_cols, sort=False)[id_col]
    pool = {key: vals.to_numpy() for key, vals in pub_groups}
    for key, idx in out.groupby(group_cols, sort=False).indices.items():
        ids = pool.get(key)
        if ids is None or not len(ids):
            continue
        order = rng.permutation(len(ids))
        reps = math.ceil(len(idx) / len(ids))
        lent[idx] = np.tile(ids[order], reps)[:len(idx)]
    # fresh labels for the lent public ids, keeping the grouping
    _, person = np.unique(lent, return_inverse=True)
    person = person.astype(np.int64)
    has_id = lent >= 0
    person[~has_id] = -1
    cap = data.max_records_per_individual
    if cap:
        rank = pd.Series(person).groupby(person).cumcount().to_numpy()
        over = has_id & (rank >= cap)
        person[over] = -1
    next_id = int(person.max()) + 1 if (person >= 0).any() else 0
    orphans = np.flatnonzero(person < 0)
    if len(orphans):
        sizes = assign_ids(len(orphans), data, rng)
        _, local = np.unique(sizes, return_inverse=True)
        person[orphans] = next_id + local.astype(np.int64)
    return fresh_ids(int(person.max()) + 1, data, rng)[person]
