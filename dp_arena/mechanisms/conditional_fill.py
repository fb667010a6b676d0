"""Fill columns of a synthetic table from conditional distributions fitted on *public* data.

Pure functions, no privacy cost: the tables are counts of the public part only, and sampling
them for a synthetic frame is post-processing of whatever the frame was built from.

Usage::

    steps = [FillStep("fare", ("shift", "pickup", "dropoff")),
             FillStep("tips", ("shift", "pickup", "dropoff", "fare"),
                      fallbacks=(("shift", "pickup", "dropoff"),))]
    model = fit_conditionals(public, steps)
    synthetic = sample_conditionals(model, synthetic, rng)   # adds fare, then tips

Each :class:`FillStep` samples one column given conditioning columns that the synthetic frame
already has (its own columns or ones filled by an earlier step). A synthetic row whose
conditioning combination never occurs publicly (or occurs fewer than ``min_count`` times) falls
back to the step's ``fallbacks`` in order, and finally to the column's public marginal, which
always exists. Sampled values are public values, so they are inside the schema's domain
whenever the public part is; :func:`conform_to_schema` rounds and clips anyway.

How it is vectorised
--------------------
- Conditioning keys: every conditioning column is coded by ``searchsorted`` into its sorted
  public values; the codes are packed one column at a time, ``key * n_values + code``, and
  compacted after each column into the dense codes of the combinations the public part has
  (another ``searchsorted``). Packed keys therefore never overflow, whatever the domain sizes,
  and a combination unseen publicly gets code -1 at the first column that makes it unseen.
- Tables: (group, value) pairs are packed into one integer and counted with ``np.unique``;
  the counts, sorted by group then value, are cumulated once over the whole table
  ("grouped cumulative sums"). A row of group ``g`` draws an integer ``r`` uniform in
  ``[0, rows in g)`` and takes the first value whose cumulative count exceeds
  ``(rows before g) + r``: one ``searchsorted`` for all rows, exact integer arithmetic,
  probabilities exactly count / group total.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from dp_arena.data.schema import Schema

__all__ = [
    "FillStep", "KeyCoder", "ConditionalTable", "ConditionalModel", "fit_key_coder",
    "fit_table", "fit_conditionals", "sample_conditionals", "conform_to_schema",
    "enforce_shift_times", "SPRINT3_LOCATION", "sprint3_fill_steps",
]


# ----- specification ----------------------------------------------------------------------
@dataclass(frozen=True)
class FillStep:
    """Sample ``column`` given ``given``; where that combination is unseen publicly try each
    of ``fallbacks`` in order, then the column's marginal (always last, implicitly)."""

    column: str
    given: tuple[str, ...] = ()
    fallbacks: tuple[tuple[str, ...], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "given", tuple(self.given))
        object.__setattr__(self, "fallbacks", tuple(tuple(f) for f in self.fallbacks))
        if self.column in self.given or any(self.column in f for f in self.fallbacks):
            raise ValueError(f"fill step {self.column!r} conditions on itself")

    @property
    def levels(self) -> tuple[tuple[str, ...], ...]:
        """Conditioning sets in the order they are tried, duplicates removed, marginal last."""
        out: list[tuple[str, ...]] = []
        for level in (self.given, *self.fallbacks, ()):
            if level not in out:
                out.append(level)
        return tuple(out)


# ----- keys -------------------------------------------------------------------------------
def sorted_lookup(sorted_values: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Index of each ``x`` in ``sorted_values`` (unique, sorted), -1 where absent."""
    if len(sorted_values) == 0:
        return np.full(len(x), -1, dtype=np.int64)
    idx = np.searchsorted(sorted_values, x)
    safe = np.minimum(idx, len(sorted_values) - 1)
    return np.where(sorted_values[safe] == x, safe, -1).astype(np.int64)


@dataclass(frozen=True)
class KeyCoder:
    """Dense codes of the combinations of ``columns`` seen in a (public) frame.

    ``values[j]`` are the sorted public values of ``columns[j]``; ``prefix_keys[j]`` the sorted
    packed keys of the combinations of ``columns[:j + 1]`` seen publicly.
    """

    columns: tuple[str, ...]
    values: tuple[np.ndarray, ...]
    prefix_keys: tuple[np.ndarray, ...]

    @property
    def n_groups(self) -> int:
        return len(self.prefix_keys[-1]) if self.columns else 1

    def codes(self, frame: pd.DataFrame) -> np.ndarray:
        """Group code per row of ``frame`` (0..n_groups-1), -1 where the combination is not
        in the public frame."""
        n = len(frame)
        if not self.columns:
            return np.zeros(n, dtype=np.int64)
        key = np.zeros(n, dtype=np.int64)
        for col, vals, seen in zip(self.columns, self.values, self.prefix_keys):
            code = sorted_lookup(vals, frame[col].to_numpy())
            packed = key * len(vals) + code
            key = np.where((key >= 0) & (code >= 0), sorted_lookup(seen, packed), -1)
        return key


def fit_key_coder(public: pd.DataFrame, columns: Sequence[str]) -> KeyCoder:
    """The :class:`KeyCoder` of ``columns`` over ``public``."""
    columns = tuple(columns)
    values, prefix = [], []
    key = np.zeros(len(public), dtype=np.int64)
    for col in columns:
        vals, code = np.unique(public[col].to_numpy(), return_inverse=True)
        seen, key = np.unique(key * len(vals) + code.ravel(), return_inverse=True)
        key = key.ravel().astype(np.int64)
        values.append(vals)
        prefix.append(seen)
    return KeyCoder(columns, tuple(values), tuple(prefix))


# ----- one conditional table ----------------------------------------------------------------
@dataclass(frozen=True)
class ConditionalTable:
    """Public counts of ``column`` per combination of ``given`` (see module docstring).

    Group ``g``'s values are ``values[starts[g]:starts[g + 1]]`` with counts
    ``counts[starts[g]:starts[g + 1]]``; ``cumulative`` is ``cumsum(counts)`` over the whole
    table and ``before[g]`` the rows of the groups before ``g``.
    """

    column: str
    given: tuple[str, ...]
    coder: KeyCoder
    values: np.ndarray
    counts: np.ndarray
    starts: np.ndarray
    cumulative: np.ndarray
    before: np.ndarray
    totals: np.ndarray

    @property
    def n_groups(self) -> int:
        return len(self.totals)

    def group_codes(self, frame: pd.DataFrame, min_count: int = 1) -> np.ndarray:
        """Group per row of ``frame``; -1 where the combination has < ``min_count`` public rows."""
        g = self.coder.codes(frame)
        if min_count > 1:
            g = np.where((g >= 0) & (self.totals[np.maximum(g, 0)] >= min_count), g, -1)
        return g

    def sample(self, groups: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One value per entry of ``groups`` (all >= 0), drawn with probability
        count / group total."""
        groups = np.asarray(groups, dtype=np.int64)
        if len(groups) == 0:
            return self.values[:0].copy()
        r = rng.integers(0, self.totals[groups])
        return self.values[np.searchsorted(self.cumulative, self.before[groups] + r, side="right")]

    def distribution(self, combination: Sequence) -> dict:
        """``{value: probability}`` for one combination of ``given`` values (``()`` for the
        marginal); empty when the combination is unseen publicly."""
        frame = pd.DataFrame({c: [v] for c, v in zip(self.given, combination)}) \
            if self.given else pd.DataFrame(index=[0])
        g = int(self.coder.codes(frame)[0])
        if g < 0:
            return {}
        lo, hi = self.starts[g], self.starts[g + 1]
        return {_plain(v): float(c) / float(self.totals[g])
                for v, c in zip(self.values[lo:hi], self.counts[lo:hi])}

    def as_frame(self) -> pd.DataFrame:
        """The table in long form: the given columns, the value, count and probability."""
        group_of = np.repeat(np.arange(self.n_groups), np.diff(self.starts))
        combos = _decode_groups(self.coder, group_of)
        return pd.DataFrame({**combos, self.column: self.values, "count": self.counts,
                             "probability": self.counts / self.totals[group_of]})


def fit_table(public: pd.DataFrame, column: str, given: Sequence[str]) -> ConditionalTable:
    """Count ``column`` per combination of ``given`` in ``public``."""
    if len(public) == 0:
        raise ValueError("cannot fit a conditional table on an empty frame")
    coder = fit_key_coder(public, given)
    group = coder.codes(public)
    vals, vcode = np.unique(public[column].to_numpy(), return_inverse=True)
    pairs, counts = np.unique(group * len(vals) + vcode.ravel(), return_counts=True)
    pair_group = pairs // len(vals)
    counts = counts.astype(np.int64)
    starts = np.searchsorted(pair_group, np.arange(coder.n_groups + 1)).astype(np.int64)
    cumulative = np.cumsum(counts)
    before = np.concatenate([[0], cumulative])[starts[:-1]]
    totals = np.bincount(pair_group, weights=counts, minlength=coder.n_groups).astype(np.int64)
    return ConditionalTable(column, tuple(given), coder, vals[pairs % len(vals)], counts,
                            starts, cumulative, before, totals)


def _decode_groups(coder: KeyCoder, groups: np.ndarray) -> dict[str, np.ndarray]:
    """The ``given`` values of dense group codes (inverse of :meth:`KeyCoder.codes`)."""
    out: dict[str, np.ndarray] = {}
    key = np.asarray(groups, dtype=np.int64)
    for j in range(len(coder.columns) - 1, -1, -1):
        packed = coder.prefix_keys[j][key]
        n = len(coder.values[j])
        out[coder.columns[j]] = coder.values[j][packed % n]
        key = packed // n
    return {c: out[c] for c in coder.columns}


# ----- a chain of steps -------------------------------------------------------------------
@dataclass(frozen=True)
class ConditionalModel:
    """Fitted tables of every step and level (``tables[i][j]`` = step i, level j)."""

    steps: tuple[FillStep, ...]
    tables: tuple[tuple[ConditionalTable, ...], ...]
    min_count: int = 1

    def table(self, column: str, given: Sequence[str] = ()) -> ConditionalTable:
        for step, tables in zip(self.steps, self.tables):
            for t in tables:
                if step.column == column and t.given == tuple(given):
                    return t
        raise KeyError((column, tuple(given)))


def fit_conditionals(public: pd.DataFrame, steps: Iterable[FillStep],
                     min_count: int = 1) -> ConditionalModel:
    """Fit every level of every step on ``public``.

    ``min_count``: a combination seen fewer times than this counts as unseen (falls back).
    """
    steps = tuple(steps)
    if min_count < 1:
        raise ValueError("min_count must be >= 1")
    needed = {c for s in steps for level in s.levels for c in (s.column, *level)}
    missing = sorted(needed - set(public.columns))
    if missing:
        raise ValueError(f"the public frame has no column(s) {missing}")
    tables = tuple(tuple(fit_table(public, s.column, level) for level in s.levels)
                   for s in steps)
    return ConditionalModel(steps, tables, min_count)


def sample_conditionals(model: ConditionalModel, frame: pd.DataFrame,
                        rng: np.random.Generator, return_levels: bool = False
                        ) -> pd.DataFrame | tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """A copy of ``frame`` with every step's column added (overwritten if present), in order.

    With ``return_levels``, also ``{column: level index per row}`` (0 = ``given``, then the
    fallbacks, the last index = marginal).
    """
    out = frame.copy()
    levels_used: dict[str, np.ndarray] = {}
    available = set(out.columns)
    for step, tables in zip(model.steps, model.tables):
        needed = sorted({c for level in step.levels for c in level} - available)
        if needed:
            raise ValueError(f"fill step {step.column!r} conditions on {needed}, which the "
                             "frame does not have and no earlier step fills")
        values = None
        chosen = np.full(len(out), -1, dtype=np.int64)
        todo = np.arange(len(out))
        for j, table in enumerate(tables):
            if len(todo) == 0:
                break
            last = j == len(tables) - 1
            g = table.group_codes(out.iloc[todo] if len(todo) < len(out) else out,
                              1 if last else model.min_count)
            hit = g >= 0
            drawn = table.sample(g[hit], rng)
            if values is None:
                values = np.empty(len(out), dtype=drawn.dtype)
            values[todo[hit]] = drawn
            chosen[todo[hit]] = j
            todo = todo[~hit]
        if values is None:  # an empty frame
            values = tables[-1].values[:0]
        out[step.column] = values
        levels_used[step.column] = chosen
        available.add(step.column)
    return (out, levels_used) if return_levels else out


# ----- schema and the Sprint 3 chain --------------------------------------------------------
def conform_to_schema(frame: pd.DataFrame, schema: Schema) -> pd.DataFrame:
    """Numeric schema columns of ``frame`` rounded (integer dtypes) and clipped to
    ``[min, max]``; other columns unchanged. Returns a new frame."""
    out = frame.copy()
    for col in schema.columns:
        if col.kind != "numeric" or col.name not in out:
            continue
        x = out[col.name].to_numpy().astype(float)
        x = np.clip(x, float(col.min), float(col.max))  # type: ignore[arg-type]
        out[col.name] = np.rint(x).astype(np.int64) if col.is_integer else x
    return out


#: The location columns of a Sprint 3 trip.
SPRINT3_LOCATION: tuple[str, str, str] = ("shift", "pickup_community_area",
                                          "dropoff_community_area")


def sprint3_fill_steps(location: Sequence[str] = SPRINT3_LOCATION) -> list[FillStep]:
    """The GooseDP chain for the non-location columns of a Sprint 3 trip (in this order):
    fare | loc; tips | loc, fare; trip_total | fare, tips; trip_seconds | loc, fare;
    trip_miles | loc, fare; payment_type | fare, tips, trip_total; then trip_hour_of_day |
    shift and trip_day_of_week | shift. Every step falls back to ``loc`` then the marginal.
    Follow with :func:`enforce_shift_times`."""
    loc = tuple(location)
    fb = (loc,)
    return [
        FillStep("fare", loc),
        FillStep("tips", (*loc, "fare"), fb),
        FillStep("trip_total", ("fare", "tips"), fb),
        FillStep("trip_seconds", (*loc, "fare"), fb),
        FillStep("trip_miles", (*loc, "fare"), fb),
        FillStep("payment_type", ("fare", "tips", "trip_total"), fb),
        FillStep("trip_hour_of_day", ("shift",)),
        FillStep("trip_day_of_week", ("shift",)),
    ]


def enforce_shift_times(frame: pd.DataFrame, rng: np.random.Generator,
                        shifts_per_day: int = 3) -> pd.DataFrame:
    """Make day and hour agree with ``shift = day * 3 + hour // 8`` (in place; returns frame):
    day = shift // 3; an hour outside the shift's 8-hour block (only possible when the shift
    was unseen publicly and the hour came from the marginal) is redrawn uniformly in the block.
    """
    hours = 24 // shifts_per_day
    shift = frame["shift"].to_numpy().astype(np.int64)
    block = shift % shifts_per_day
    hour = frame["trip_hour_of_day"].to_numpy().astype(np.int64)
    bad = hour // hours != block
    hour = np.where(bad, block * hours + rng.integers(0, hours, size=len(hour)), hour)
    frame["trip_hour_of_day"] = hour
    frame["trip_day_of_week"] = shift // shifts_per_day
    return frame


def _plain(v):
    return v.item() if isinstance(v, np.generic) else v
